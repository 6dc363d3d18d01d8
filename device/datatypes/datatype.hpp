// Datatypes. The predefined ones carry their extent in the handle, so the
// send path reads the size of a message without a table lookup.
#pragma once

#include <cstddef>

namespace iris::device {

// Extent in bytes of a valid predefined datatype, or 0 for anything else.
std::size_t datatype_extent(int handle);
// The MPI name ("MPI_INT"), or nullptr for an unknown handle.
const char *datatype_name(int handle);
// Bytes of data (without padding) in one element, as MPI_Type_size reports.
int datatype_size(int handle);
// The predefined handle whose low byte is `index`, or 0 if there is none.
int datatype_handle(unsigned index);

}  // namespace iris::device
