// How each derived datatype was made (MPI_Type_get_envelope and
// MPI_Type_get_contents): the combiner and the arguments of its
// constructor, recorded when it is made and forgotten when it is freed.
// Inner derived types are held as private copies, so that the user may
// free them; Type_get_contents hands out new copies of those, as the
// standard says.
#pragma once

#include <vector>

#include "include/mpi.h"

namespace iris::api {

struct envelope {
  int combiner = MPI_COMBINER_NAMED;
  std::vector<int> ints;
  std::vector<MPI_Aint> aints;
  std::vector<MPI_Datatype> types;  // predefined ones as given, derived ones private copies
  // A _c constructor's arguments past 2^31-1 (MPI_Type_get_contents_c's
  // large counts); a record with any has no int form (MPI_Type_get_envelope
  // says MPI_ERR_VALUE_TOO_LARGE).
  std::vector<MPI_Count> counts;
};

// Records how `made` was built (inner derived types are copied), replacing
// any record it had.
void envelope_record(MPI_Datatype made, int combiner, std::vector<int> ints,
                     std::vector<MPI_Aint> aints, const std::vector<MPI_Datatype> &types,
                     std::vector<MPI_Count> counts = {});
// For a constructor's return: records when `err` is MPI_SUCCESS, then
// returns `err`.
int envelope_made(int err, const MPI_Datatype *made, int combiner, std::vector<int> ints,
                  std::vector<MPI_Aint> aints, const std::vector<MPI_Datatype> &types);
// The record of `type`, or nullptr (predefined types, or made before
// recording).
const envelope *envelope_of(MPI_Datatype type);
// MPI_Type_free.
void envelope_forget(MPI_Datatype type);

// Frees a derived type's handle (device::dtype_release), with its object at
// once when no operation is pending in the process (no live request).
void type_release(MPI_Datatype type);
// For a subarray or darray record: the offsets of its elements, in extents
// of its old type, in typemap order (types_array.cpp). False for others.
bool array_offsets(const envelope &e, std::vector<MPI_Aint> &out);

}  // namespace iris::api
