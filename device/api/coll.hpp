// Collectives built on point-to-point: what coll.cpp (reductions, bcast) and
// coll_gather.cpp (gather, scatter, allgather, alltoall) share.
//
// Every collective runs on its communicator's collective context, so it never
// matches user messages, with one fixed tag per kind (100..999; the device's
// own collectives keep below 100). Ranks call collectives in the same order
// and messages between two ranks on one context do not overtake each other,
// so a fixed tag suffices even when one rank is already in the next call.
//
// Only predefined (contiguous) datatypes exist: a message of `count` elements
// is count * extent bytes, and data moves as bytes. Reductions go through
// device::op_apply, the one element loop.
#pragma once

#include <cstddef>
#include <cstring>

#include "device/api/check.hpp"
#include "device/op.hpp"

namespace iris::api::coll {

enum tag : int {
  tag_bcast = 100,
  tag_reduce = 101,
  tag_allreduce = 102,
  tag_gather = 103,
  tag_gatherv = 104,
  tag_scatter = 105,
  tag_scatterv = 106,
  tag_allgather = 107,
  tag_allgatherv = 108,
  tag_alltoall = 109,
  tag_alltoallv = 110,
  tag_reduce_scatter_block = 111,
  tag_scan = 112,
  tag_exscan = 113,
  tag_reduce_scatter = 114,
};

// One collective call's messages: its communicator and its tag.
struct channel {
  const communicator &comm;
  int tag;
};

inline device::request *post_recv(const channel &ch, void *data, std::size_t bytes, int from) {
  return device::recv_start(ch.comm, ch.comm.collective_context(), data, bytes, from, ch.tag);
}

inline device::request *post_send(const channel &ch, const void *data, std::size_t bytes, int to) {
  return device::send_start(ch.comm, ch.comm.collective_context(), data, bytes, to, ch.tag,
                            device::send_mode::standard, true);
}

// Waits for `r` and releases it. Returns its error class: MPI_ERR_TRUNCATE
// when ranks disagreed on a message's length.
inline int wait(device::request *r) {
  if (r == nullptr) return MPI_SUCCESS;
  device::progress_until([r] { return r->complete; });
  const int err = r->status_error;
  device::rt->requests.release(r);
  return err;
}

// Blocks until `data` may be reused. Large messages wait for the receiver to
// match, so the receiver must not be waiting for this rank first.
inline void send(const channel &ch, const void *data, std::size_t bytes, int to) {
  device::request_wait_release(
      device::send_start(ch.comm, ch.comm.collective_context(), data, bytes, to, ch.tag));
}

inline int recv(const channel &ch, void *data, std::size_t bytes, int from) {
  return wait(post_recv(ch, data, bytes, from));
}

// An exchange: the receive is posted before the send, so two ranks that
// exchange with each other never wait for each other.
inline int sendrecv(const channel &ch, const void *out, std::size_t out_bytes, int to, void *in,
                    std::size_t in_bytes, int from) {
  device::request *r = post_recv(ch, in, in_bytes, from);
  send(ch, out, out_bytes, to);
  return wait(r);
}

// Copies between user buffers that may be the same (no-op then).
inline void copy_bytes(void *to, const void *from, std::size_t bytes) {
  if (to != from && bytes > 0) std::memmove(to, from, bytes);
}

inline bool in_place(const void *buf) {
  return buf == MPI_IN_PLACE;
}

// The lowest set bit of `v` (v > 0): the size of the binomial subtree a
// non-root rank heads.
inline int lowest_bit(int v) {
  return v & -v;
}

// Reports an error found while the messages moved (after the arguments
// passed): a length mismatch between ranks.
inline int result(const char *call, const communicator &comm, int err) {
  if (err == MPI_SUCCESS) return MPI_SUCCESS;
  return device::error_raise(&comm, call, err,
                             "a message was longer than its receive buffer: the ranks passed "
                             "counts or datatypes that do not match");
}

inline int check_root(const char *call, const communicator &comm, int root) {
  if (root >= 0 && root < comm.size) return MPI_SUCCESS;
  return device::error_raise(&comm, call, MPI_ERR_ROOT, "invalid root %d (communicator size %d)",
                             root, comm.size);
}

int check_op(const char *call, const communicator &comm, MPI_Op op, MPI_Datatype type);

// MPI_ERR_BUFFER when the byte ranges [a, a + a_bytes) and [b, b + b_bytes)
// overlap: the standard forbids aliasing an input and an output buffer.
int check_no_alias(const char *call, const communicator &comm, const void *a, std::size_t a_bytes,
                   const void *b, std::size_t b_bytes);

// MPI_IN_PLACE where this rank may not pass it.
int error_in_place(const char *call, const communicator &comm, const char *which);

// Checks a counts array (and a displacements array) of comm.size entries
// and their datatype, for the v-variants. `buf` NULL with a count > 0 is
// MPI_ERR_BUFFER.
int check_vector(const char *call, const communicator &comm, const void *buf, const int counts[],
                 const int displs[], MPI_Datatype type);

// Binomial gather of one `block`-byte block per rank to `root`: `mine` is
// this rank's block, `out` (root only) receives all blocks in rank order.
int gather_tree(const channel &ch, const void *mine, std::byte *out, std::size_t block, int root);
// Binomial scatter, the reverse: `in` (root only) holds the blocks in rank
// order; this rank's block lands in `mine` (skipped when nullptr).
int scatter_tree(const channel &ch, const std::byte *in, void *mine, std::size_t block, int root);

}  // namespace iris::api::coll
