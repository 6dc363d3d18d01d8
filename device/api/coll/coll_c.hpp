// What the large-count (`_c`) collective bindings share (coll_c.cpp,
// coll_vc.cpp). Each one turns its MPI_Count arguments into what the
// collective engine takes and calls the same nbc:: function as the int
// bindings (device/api/nbc.hpp), under its own name, so the checks, the
// algorithms and the schedules are those of the int calls.
//
// A count that fits an int passes unchanged; a larger one becomes one
// element of a temporary type (big_count, bigcount.hpp), which the
// reductions count as the elements it stands for (dtype::wide_of), so a
// predefined op or a user op sees the type the program passed. A count this
// rank does not read (the root's arguments on other ranks, the send side of
// MPI_IN_PLACE) is never converted. The arrays of the v- and w-variants
// become int arrays; an entry past 2^31-1 there is MPI_ERR_COUNT naming the
// call, the array and the entry.
#pragma once

#include <memory>
#include <vector>

#include "device/api/coll/nbc.hpp"
#include "device/api/types/bigcount.hpp"

namespace iris::api::coll_c {

// The communicator behind `comm`, or nullptr (the nbc:: call reports it).
const communicator *lookup(MPI_Comm comm);

// True when this rank reads the root's side of a rooted collective (the
// receive side of a gather, the send side of a scatter).
bool at_root(MPI_Comm comm, int root);
// True when this rank reads its own block's side of a rooted collective:
// every rank of an intracommunicator but a root passing MPI_IN_PLACE
// (`buf`), the ranks of the group that does not hold the root of an
// intercommunicator.
bool own_block(MPI_Comm comm, int root, const void *buf);

// `count` elements of `type` into `b` when this rank reads them (`used`);
// otherwise a count past an int becomes 0, which no rank looks at.
int count_arg(const char *call, MPI_Comm comm, MPI_Count count, MPI_Datatype type, bool used,
              big_count &b);

// An array argument of a v- or w-variant (counts or displacements) as ints.
class int_array {
 public:
  // The `n` entries of `in` (the argument `what` of `call`). NULL stays NULL
  // (the nbc:: call reports it where it matters).
  template <typename T>
  int set(const char *call, MPI_Comm comm, const T *in, int n, const char *what);
  const int *get() const { return null_ ? nullptr : values_.data(); }

 private:
  int raise(const char *call, MPI_Comm comm, const char *what, int i, long long value);
  std::vector<int> values_;
  bool null_ = true;
};

template <typename T>
int int_array::set(const char *call, MPI_Comm comm, const T *in, int n, const char *what) {
  null_ = in == nullptr;
  if (null_) return MPI_SUCCESS;
  values_.assign(static_cast<std::size_t>(n > 0 ? n : 1), 0);
  for (int i = 0; i < n; ++i) {
    if (!fits_int(in[i])) return raise(call, comm, what, i, static_cast<long long>(in[i]));
    values_[static_cast<std::size_t>(i)] = static_cast<int>(in[i]);
  }
  return MPI_SUCCESS;
}

// The blocks of a w-variant (Alltoallw_c; and Alltoallv_c, whose blocks
// become w-blocks once a count or displacement is past an int) as the int
// counts, types and MPI_Aint byte displacements ialltoallw takes: a count
// past an int becomes one element of a temporary type, which lives as long
// as any request that uses it.
class w_blocks {
 public:
  // Blocks i < n: counts[i] elements of types[i] at displs[i] bytes. NULL
  // arrays stay NULL (ialltoallw reports them).
  int set_w(const char *call, MPI_Comm comm, int n, const MPI_Count counts[],
            const MPI_Aint displs[], const MPI_Datatype types[]);
  // The same for a v-variant: counts[i] elements of `type` at displs[i]
  // extents of `type`.
  int set_v(const char *call, MPI_Comm comm, int n, const MPI_Count counts[],
            const MPI_Aint displs[], MPI_Datatype type);
  const int *counts() const { return null_ ? nullptr : counts_.data(); }
  const MPI_Aint *displs() const { return null_ ? nullptr : displs_.data(); }
  const MPI_Datatype *types() const { return null_ ? nullptr : types_.data(); }

 private:
  int block(const char *call, MPI_Comm comm, int i, MPI_Count count, MPI_Datatype type);
  std::vector<int> counts_;
  std::vector<MPI_Aint> displs_;
  std::vector<MPI_Datatype> types_;
  std::vector<std::unique_ptr<big_count>> made_;
  bool null_ = true;
};

// True when every entry of counts[0..n) and displs[0..n) fits an int.
bool all_fit(int n, const MPI_Count counts[], const MPI_Aint displs[]);

// Entries of the arrays of a v- or w-variant over `comm`: the ranks a block
// goes to or comes from (the remote group of an intercommunicator).
int peers(MPI_Comm comm);
// The same for a neighbourhood collective: its sources (`in`) or its
// destinations; 0 without a topology (the nbc:: call reports it).
int neighbors(MPI_Comm comm, bool in);

}  // namespace iris::api::coll_c
