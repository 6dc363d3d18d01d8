// What the nonblocking, persistent and neighbourhood collective bindings
// share (nbc.cpp, nbc_move.cpp, nbc_init.cpp, neighbor.cpp). Each binding
// checks every argument first, then builds a device::schedule (which takes
// the communicator's next collective sequence number, so no check may fail
// after it) and hands it to a request: started at once (MPI_I*), at each
// MPI_Start (MPI_*_init), or waited for on the spot (the blocking
// Alltoallw and Neighbor_* calls).
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "device/api/coll/coll.hpp"
#include "device/collectives/node.hpp"
#include "device/collectives/schedule.hpp"

namespace iris::api::nbc {

using device::schedule;
using device::typed_buffer;

// How the schedule is used once built.
enum class mode : std::uint8_t { start, persistent, blocking };

// The request argument (not checked for blocking calls) and, for persistent
// ones, the info argument.
int check_request(const char *call, const communicator &c, mode m, MPI_Info info,
                  MPI_Request *request);

// Hands `s` to a new request as `m` says; for a blocking call waits for it
// and reports its error.
int post(const char *call, communicator &c, std::unique_ptr<schedule> s, mode m,
         MPI_Request *request);

// The node's segment of `c` for a nonblocking collective of `bytes` per
// rank (collectives/node.hpp): when an earlier blocking call made it and
// the data fit a slot (or, `large_too`, any size the segment takes: read
// in place with CMA); else nullptr (messages).
device::node_collectives *node_segment(const communicator &c, std::size_t bytes,
                                       bool large_too = false);

// Whether an Alltoall of `block` bytes a pair goes through the node segment
// `nc` (blocking and nonblocking alike): the n blocks fit a slot, or reading
// each block in place (one CMA call a block) is no slower than a message:
// blocks of at least alltoall_read_min, or above alltoall_read_ranks ranks
// n blocks of at least alltoall_read_all in all. Measured on 2 cores
// (bench/results/2026-11-30-issue43-alltoall-read.md), us, in place /
// linear messages: 4 ranks 8 KiB 19.4 / 8.9, 32 KiB 31.6 / 34.4; 8 ranks
// 4 KiB 73 / 26, 16 KiB 101 / 58, 32 KiB 138 / 142; 16 ranks 16 KiB 525 /
// 384, 32 KiB 880 / 1208; 32 ranks 4 KiB 1275 / 776, 8 KiB 1922 / 1922,
// 16 KiB 2701 / 4879; 64 ranks 1 KiB 2430 / 1490, 4 KiB 3400 / 10900
// (bench/README.md).
inline constexpr std::size_t alltoall_read_min = 32 * 1024;
inline constexpr int alltoall_read_ranks = 16;
inline constexpr std::size_t alltoall_read_all = 256 * 1024;
// The smallest block of an all-to-all among n ranks read in place (the
// rule above); Alltoallv's blocks past a slot follow it one by one.
inline std::size_t alltoall_read_from(int n) {
  if (n <= alltoall_read_ranks) return alltoall_read_min;
  const auto ranks = static_cast<std::size_t>(n);
  return std::min(alltoall_read_min, (alltoall_read_all + ranks - 1) / ranks);
}
bool alltoall_takes(const device::node_collectives &nc, std::size_t block, int n);

// The largest of `blocks`' packed sizes (0 for none): it decides how an
// Allgatherv goes through the segment, since every rank knows every block.
inline std::size_t largest_block(const std::vector<typed_buffer> &blocks) {
  std::size_t largest = 0;
  for (const typed_buffer &b : blocks) largest = std::max(largest, b.packed_bytes());
  return largest;
}

// The steps of a collective through the segment: a call that takes the
// step when the schedule starts (each MPI_Start of a persistent one takes
// another, in call order), then a poll step that asks
// `poll(segment, step, phase, err)` until it is done (`phase` starts at 0
// and is the poll's own).
template <typename Poll>
void node_steps(schedule &s, Poll poll) {
  struct call_state {
    std::shared_ptr<device::node_collectives> keep;  // mapped while the request lives
    Poll poll;
    std::uint64_t step = 0;
    int phase = 0;
  };
  auto state = std::make_shared<call_state>(s.comm().node_coll, std::move(poll));
  // The poll step owns the state; the call step, which the same schedule
  // holds, only points at it (a std::function keeps a pointer in place,
  // where a shared_ptr copy would be allocated: one malloc less a call).
  call_state *at = state.get();
  s.call([at](schedule &) {
    at->step = device::node_step_begin(*at->keep);
    at->phase = 0;
  });
  s.poll([state](int &err) {
    // A revoked communicator's segment: the other ranks may never post.
    if (device::node_revoked(*state->keep)) [[unlikely]] {
      err = MPI_ERR_REVOKED;
      return true;
    }
    const bool done = state->poll(*state->keep, state->step, state->phase, err);
    // A read that failed because a rank left on the revocation (node_call).
    if (err != MPI_SUCCESS && device::node_revoked(*state->keep)) err = MPI_ERR_REVOKED;
    return done;
  });
}

// Building blocks over s.group() (nbc.cpp). reduce_tree: binomial reduction
// of `src` towards `tree_root`, returning the buffer that holds the result
// there (rank order from tree_root, so a non-commutative op needs 0);
// bcast_tree: binomial broadcast of `buf` from `root`; barrier_rounds: a
// dissemination barrier.
typed_buffer reduce_tree(schedule &s, const typed_buffer &src, MPI_Op op, MPI_Datatype type,
                         int tree_root);
void bcast_tree(schedule &s, const typed_buffer &buf, int root);
void barrier_rounds(schedule &s);

// Allreduce by messages (nbc_allreduce.cpp). The algorithms, in the order
// of IRIS_COLL_ALLREDUCE's choices: recursive doubling, Rabenseifner's
// reduce-scatter by recursive halving then allgather, a ring.
enum class allreduce_algorithm : std::uint8_t { automatic, doubling, halving, ring };
// Where IRIS_COLL_ALLREDUCE=auto turns from doubling to halving (bytes of
// one rank's data); measured in bench/README.md.
inline constexpr std::size_t allreduce_large = 64 * 1024;
// The algorithm for `count` elements of `type` reduced by `op` over `c`:
// IRIS_COLL_ALLREDUCE, or by size under auto. A ring with a
// non-commutative op becomes halving; halving with fewer elements than the
// largest power of two within the size becomes doubling.
allreduce_algorithm allreduce_pick(const communicator &c, int count, const device::dtype &type,
                                   MPI_Op op);
// Adds to `s` the allreduce of `in` (the same buffer as `out` in place)
// into `out`, by `how` (never automatic).
void allreduce_schedule(schedule &s, const typed_buffer &in, const typed_buffer &out, MPI_Op op,
                        MPI_Datatype type, allreduce_algorithm how);

// True when `comm` names an intercommunicator (MPI initialised).
inline bool is_inter(MPI_Comm comm) {
  const communicator *c = device::rt != nullptr ? device::comm_lookup(comm) : nullptr;
  return c != nullptr && c->inter;
}

// The checked (buffer, count, datatype) as the device sees it.
inline typed_buffer typed(const void *buf, int count, MPI_Datatype type) {
  return {const_cast<void *>(buf), count, device::dtype_lookup(type)};
}

// Checks the typed buffers of a w-variant: counts[i] elements of types[i]
// at buf + displs[i] bytes, for i < n. Arrays may be NULL when n is 0.
template <typename Displ>
int check_w(const char *call, const communicator &c, int n, const void *buf, const int counts[],
            const Displ displs[], const MPI_Datatype types[]) {
  if (n == 0) return MPI_SUCCESS;
  if (counts == nullptr || displs == nullptr || types == nullptr) {
    return device::error_raise(&c, call, MPI_ERR_ARG,
                               "a counts, displacements or types array is NULL");
  }
  for (int i = 0; i < n; ++i) {
    typed_buffer tb;
    if (int err = api::check_typed_buffer(call, c, static_cast<const char *>(buf) + displs[i],
                                          counts[i], types[i], tb)) {
      return err;
    }
  }
  return MPI_SUCCESS;
}

// Block i of a w-variant.
template <typename Displ>
typed_buffer w_block(const void *buf, const int counts[], const Displ displs[],
                     const MPI_Datatype types[], int i) {
  return typed(static_cast<const char *>(buf) + displs[i], counts[i], types[i]);
}

// The collectives, shared by the I*, *_init and blocking bindings: the
// arguments of the MPI call, then (info, mode, request).
int ibarrier(const char *call, MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request);
int ibcast(const char *call, void *buffer, int count, MPI_Datatype datatype, int root,
           MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request);
int ireduce(const char *call, const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
            MPI_Op op, int root, MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request);
int iallreduce(const char *call, const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, mode m,
               MPI_Request *request);
int ireduce_scatter_block(const char *call, const void *sendbuf, void *recvbuf, int recvcount,
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, mode m,
                          MPI_Request *request);
int ireduce_scatter(const char *call, const void *sendbuf, void *recvbuf, const int recvcounts[],
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, mode m,
                    MPI_Request *request);
// Scan (inclusive) and Exscan.
int iscan(const char *call, bool inclusive, const void *sendbuf, void *recvbuf, int count,
          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, mode m,
          MPI_Request *request);
int igatherv(const char *call, bool vector, const void *sendbuf, int sendcount,
             MPI_Datatype sendtype, void *recvbuf, int recvcount, const int recvcounts[],
             const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
             mode m, MPI_Request *request);
int iscatterv(const char *call, bool vector, const void *sendbuf, int sendcount,
              const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf,
              int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, mode m,
              MPI_Request *request);
int iallgatherv(const char *call, bool vector, const void *sendbuf, int sendcount,
                MPI_Datatype sendtype, void *recvbuf, int recvcount, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, mode m,
                MPI_Request *request);
int ialltoall(const char *call, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
              void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
              mode m, MPI_Request *request);
int ialltoallv(const char *call, const void *sendbuf, const int sendcounts[], const int sdispls[],
               MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
               MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request);
// Displacements in bytes: int (MPI_Alltoallw) or MPI_Aint (MPI_Alltoallw_c,
// and Alltoallv_c past an int); both are instantiated.
template <typename Displ>
int ialltoallw(const char *call, const void *sendbuf, const int sendcounts[], const Displ sdispls[],
               const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
               const Displ rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
               mode m, MPI_Request *request);
// The neighbourhood collectives (neighbor.cpp). `kind` says which.
enum class neighbor_kind : std::uint8_t { allgather, allgatherv, alltoall, alltoallv, alltoallw };
struct neighbor_args {
  const void *sendbuf;
  int sendcount;
  const int *sendcounts;
  const int *sdispls;         // alltoallv: elements
  const MPI_Aint *sdispls_w;  // alltoallw: bytes
  MPI_Datatype sendtype;
  const MPI_Datatype *sendtypes;
  void *recvbuf;
  int recvcount;
  const int *recvcounts;
  const int *rdispls;
  const MPI_Aint *rdispls_w;
  MPI_Datatype recvtype;
  const MPI_Datatype *recvtypes;
};
int ineighbor(const char *call, neighbor_kind kind, const neighbor_args &a, MPI_Comm comm,
              MPI_Info info, mode m, MPI_Request *request);
// The arguments of the allgather(v) and alltoall forms, of alltoallv and of
// alltoallw.
neighbor_args neighbor_gather_args(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, int recvcount, const int recvcounts[],
                                   const int displs[], MPI_Datatype recvtype);
neighbor_args neighbor_alltoallv_args(const void *sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                      const int recvcounts[], const int rdispls[],
                                      MPI_Datatype recvtype);
neighbor_args neighbor_alltoallw_args(const void *sendbuf, const int sendcounts[],
                                      const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                      void *recvbuf, const int recvcounts[],
                                      const MPI_Aint rdispls[], const MPI_Datatype recvtypes[]);

// The same over an intercommunicator `c` (nbc_inter.cpp).
int inter_barrier(const char *call, communicator &c, MPI_Info info, mode m, MPI_Request *request);
int inter_bcast(const char *call, void *buffer, int count, MPI_Datatype datatype, int root,
                communicator &c, MPI_Info info, mode m, MPI_Request *request);
int inter_gatherv(const char *call, bool vector, const void *sendbuf, int sendcount,
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, const int recvcounts[],
                  const int displs[], MPI_Datatype recvtype, int root, communicator &c,
                  MPI_Info info, mode m, MPI_Request *request);
int inter_scatterv(const char *call, bool vector, const void *sendbuf, int sendcount,
                   const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root, communicator &c, MPI_Info info,
                   mode m, MPI_Request *request);
int inter_allgatherv(const char *call, bool vector, const void *sendbuf, int sendcount,
                     MPI_Datatype sendtype, void *recvbuf, int recvcount, const int recvcounts[],
                     const int displs[], MPI_Datatype recvtype, communicator &c, MPI_Info info,
                     mode m, MPI_Request *request);
int inter_alltoall(const char *call, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, int recvcount, MPI_Datatype recvtype, communicator &c,
                   MPI_Info info, mode m, MPI_Request *request);
int inter_alltoallv(const char *call, const void *sendbuf, const int sendcounts[],
                    const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                    communicator &c, MPI_Info info, mode m, MPI_Request *request);
template <typename Displ>
int inter_alltoallw(const char *call, const void *sendbuf, const int sendcounts[],
                    const Displ sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                    const int recvcounts[], const Displ rdispls[], const MPI_Datatype recvtypes[],
                    communicator &c, MPI_Info info, mode m, MPI_Request *request);
int inter_reduce(const char *call, const void *sendbuf, void *recvbuf, int count,
                 MPI_Datatype datatype, MPI_Op op, int root, communicator &c, MPI_Info info, mode m,
                 MPI_Request *request);
int inter_allreduce(const char *call, const void *sendbuf, void *recvbuf, int count,
                    MPI_Datatype datatype, MPI_Op op, communicator &c, MPI_Info info, mode m,
                    MPI_Request *request);
int inter_reduce_scatter_block(const char *call, const void *sendbuf, void *recvbuf, int recvcount,
                               MPI_Datatype datatype, MPI_Op op, communicator &c, MPI_Info info,
                               mode m, MPI_Request *request);
int inter_reduce_scatter(const char *call, const void *sendbuf, void *recvbuf,
                         const int recvcounts[], MPI_Datatype datatype, MPI_Op op, communicator &c,
                         MPI_Info info, mode m, MPI_Request *request);

}  // namespace iris::api::nbc
