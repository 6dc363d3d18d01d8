// Info objects as other bindings use them (communicator hints): read the
// entries of a handle, make a new object from entries.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "device/core/comm.hpp"
#include "include/mpi.h"

namespace iris::api {

using info_entries = std::vector<std::pair<std::string, std::string>>;

// The entries of `info` (MPI_INFO_NULL: none). An invalid handle is
// MPI_ERR_INFO, raised on `c`'s handler.
int info_read(const char *call, const device::communicator *c, MPI_Info info, info_entries &out);
// The entries of `info` (MPI_INFO_NULL: none), or nullptr for an invalid
// handle, for a caller that raises the error on a handler of its own.
const info_entries *info_find(MPI_Info info);
// A new info object holding `entries`.
MPI_Info info_make(info_entries entries);

}  // namespace iris::api
