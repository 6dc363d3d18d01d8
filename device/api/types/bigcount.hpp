// Large counts (the MPI-4 `_c` bindings): an MPI_Count of elements as what
// the int bindings take. A count that fits an int passes through unchanged
// (so the int binding checks it as usual); a larger one becomes one element
// of a temporary type covering all of them, built from contiguous pieces of
// 2^20 elements, so that no step walks more than about a million elements.
//
// Only dense types (their data one block: predefined types and contiguous
// runs of them) can be counted past 2^31-1: the flattened list of any other
// would need more entries than fit in memory. Such a count is MPI_ERR_COUNT
// with one line naming the call.
#pragma once

#include <climits>

#include "include/mpi.h"

namespace iris::api {

class big_count {
 public:
  big_count() = default;
  big_count(const big_count &) = delete;
  big_count &operator=(const big_count &) = delete;
  ~big_count();

  // Describes `count` elements of `type` for `call`; MPI_SUCCESS or the
  // error class (already reported through `comm`'s handler).
  int set(const char *call, MPI_Comm comm, MPI_Count count, MPI_Datatype type);

  int count() const { return count_; }
  // Hands the temporary type (if one was made) to the caller.
  MPI_Datatype release() {
    made_ = MPI_DATATYPE_NULL;
    return type_;
  }
  MPI_Datatype type() const { return type_; }

 private:
  int count_ = 0;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Datatype made_ = MPI_DATATYPE_NULL;  // the temporary type, freed with this
};

inline bool fits_int(MPI_Count n) {
  return n >= INT_MIN && n <= INT_MAX;
}

}  // namespace iris::api
