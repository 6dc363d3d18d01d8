// Collectives built on point-to-point: what coll.cpp (reductions, bcast),
// coll_gather.cpp (gather, scatter, allgather) and coll_alltoall.cpp share.
//
// Every collective runs on its communicator's collective context, so it never
// matches user messages, with one fixed tag per kind (100..999; the device's
// own collectives keep below 100). Ranks call collectives in the same order
// and messages between two ranks on one context do not overtake each other,
// so a fixed tag suffices even when one rank is already in the next call.
//
// Messages carry (buffer, count, datatype) to the device, which packs a
// non-contiguous datatype (device/typed.hpp); a block i of a gather or
// scatter lies at buf + i * count * extent, as MPI says. Data that only
// passes through a rank (the inner nodes of a tree) travels packed, as
// bytes. Reductions keep partial results in the type's own layout
// (device::typed_image), since a user op reads its operands that way, and go
// through device::op_apply, the one element loop.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <vector>

#include "device/api/check.hpp"
#include "device/datatypes/op.hpp"

namespace iris::device {
struct node_collectives;
}

namespace iris::api::coll {

using device::typed_buffer;

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
  // Across nodes (collectives/hierarchy.hpp): the leaders' Bcast, Reduce
  // and Allreduce, a Reduce's result from its node's leader to the root,
  // and the leaders' barrier (rounds from tag_levels_barrier up, 32 at most).
  tag_levels_bcast = 115,
  tag_levels_reduce = 116,
  tag_levels_allreduce = 117,
  tag_levels_to_root = 118,
  // Alltoallv through the node segment, its blocks past a slot in odd steps
  // (even steps: tag_alltoallv), so that a receive posted early for one step
  // can never meet the next step's message.
  tag_alltoallv_odd = 119,
  tag_levels_barrier = 120,
};

// One collective call's messages: its communicator and its tag.
struct channel {
  const communicator &comm;
  int tag;
};

// MPI_ERR_NO_MEM when the device found no memory to pack a message.
inline int status_error(device::typed_status status) {
  return status == device::typed_status::done ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

inline int post_recv(const channel &ch, const typed_buffer &where, int from,
                     device::request *&out) {
  out = nullptr;
  return status_error(
      device::typed_recv_start(ch.comm, ch.comm.collective_context(), where, from, ch.tag, out));
}

inline int post_send(const channel &ch, const typed_buffer &what, int to, device::request *&out) {
  out = nullptr;
  return status_error(device::typed_send_start(ch.comm, ch.comm.collective_context(), what, to,
                                               ch.tag, device::send_mode::standard, true, out));
}

// Waits for `r` (nullptr: nothing), unpacks what it received and releases
// it. Returns its error class: MPI_ERR_TRUNCATE when ranks disagreed on a
// message's length.
inline int wait(device::request *r) {
  return device::typed_wait_release(r);
}

// Blocks until `what` may be reused. Large messages wait for the receiver to
// match, so the receiver must not be waiting for this rank first.
inline int send(const channel &ch, const typed_buffer &what, int to) {
  device::request *r = nullptr;
  if (int err =
          status_error(device::typed_send_start(ch.comm, ch.comm.collective_context(), what, to,
                                                ch.tag, device::send_mode::standard, false, r))) {
    return err;
  }
  return device::typed_wait_release(r);
}

inline int recv(const channel &ch, const typed_buffer &where, int from) {
  device::request *r = nullptr;
  if (int err = post_recv(ch, where, from, r)) return err;
  return wait(r);
}

// An exchange: the receive is posted before the send, so two ranks that
// exchange with each other never wait for each other.
inline int sendrecv(const channel &ch, const typed_buffer &out, int to, const typed_buffer &in,
                    int from) {
  device::request *r = nullptr;
  if (int err = post_recv(ch, in, from, r)) return err;
  const int sent = send(ch, out, to);
  const int got = wait(r);
  return sent != MPI_SUCCESS ? sent : got;
}

// As wait, for a receive whose message must fill `want` bytes exactly: a
// shorter one is MPI_ERR_TRUNCATE too (every rank passes the same count).
inline int wait_exact(device::request *r, std::size_t want) {
  if (r == nullptr) return MPI_SUCCESS;
  device::progress_until([r] { return r->complete; });
  const std::size_t got = r->status_bytes;
  const int err = wait(r);
  return err == MPI_SUCCESS && got < want ? MPI_ERR_TRUNCATE : err;
}

// Raw bytes (packed data passing through) as a message buffer.
inline typed_buffer bytes(const void *data, std::size_t n) {
  return device::typed_bytes(data, n);
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
// passed): a length mismatch between ranks, no memory to pack, or a node
// segment's read refused (collectives/node.hpp).
inline int result(const char *call, const communicator &comm, int err) {
  if (err == MPI_SUCCESS) return MPI_SUCCESS;
  if (err == MPI_ERR_PROC_FAILED || err == MPI_ERR_REVOKED) {
    return api::failure_raise(call, comm, err);  // protocols/recovery.hpp
  }
  if (err == MPI_ERR_NO_MEM) {
    return device::error_raise(&comm, call, err, "no memory to pack a message of its datatype");
  }
  if (err == MPI_ERR_OTHER) {
    return device::error_raise(&comm, call, err,
                               "the kernel refused a read or write of another rank's memory "
                               "(CMA) that it allowed when the communicator's node segment was "
                               "made");
  }
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

// MPI_Reduce_local (and its `_c` form) as `call`.
int reduce_local(const char *call, const void *inbuf, void *inoutbuf, int count,
                 MPI_Datatype datatype, MPI_Op op);

// MPI_ERR_BUFFER when the memory the data of `a` and of `b` span overlaps:
// the standard forbids aliasing an input and an output buffer.
int check_no_alias(const char *call, const communicator &comm, const typed_buffer &a,
                   const typed_buffer &b);

// MPI_IN_PLACE where this rank may not pass it.
int error_in_place(const char *call, const communicator &comm, const char *which);

// Checks a counts array (and a displacements array) of comm.size entries
// and their datatype, for the v-variants. `buf` NULL with a count > 0 is
// MPI_ERR_BUFFER. On success `out` is the buffer with the datatype (count 0).
int check_vector(const char *call, const communicator &comm, const void *buf, const int counts[],
                 const int displs[], MPI_Datatype type, typed_buffer &out);

// The block of rank i of a side with one block per rank (a rooted or
// all-to-all collective's): uniform, or the v-variant's counts and
// displacements.
inline typed_buffer block_of(const typed_buffer &side, bool vector, const int counts[],
                             const int displs[], int i) {
  return vector ? side.slice(displs[i], counts[i]) : side.block(i);
}

// Such a side, checked: uniform (count) or vector (counts, displs).
inline int check_side(const char *call, const communicator &c, bool vector, const void *buf,
                      int count, const int counts[], const int displs[], MPI_Datatype type,
                      typed_buffer &out) {
  if (vector) return check_vector(call, c, buf, counts, displs, type, out);
  return api::check_typed_buffer(call, c, buf, count, type, out);
}

// Binomial gather of one `block`-byte (packed) block per rank to `root`:
// `mine` is this rank's block, `out` (root only) receives the blocks in
// rank order, block i at out.block(i).
int gather_tree(const channel &ch, const typed_buffer &mine, const typed_buffer *out,
                std::size_t block, int root);
// Binomial scatter, the reverse: `in` (root only) holds the blocks in rank
// order; this rank's block lands in `mine` (skipped when nullptr).
int scatter_tree(const channel &ch, const typed_buffer *in, const typed_buffer *mine,
                 std::size_t block, int root);

// Block i of a v-variant: counts[i] elements at displs[i] extents into `buf`.
inline typed_buffer block_at(const typed_buffer &buf, const int displs[], const int counts[],
                             int i) {
  return buf.slice(displs[i], counts[i]);
}

// The blocks of a v-collective, one per rank: on the stack up to 64 ranks,
// so that the small path through the node segment allocates nothing.
class root_blocks {
 public:
  explicit root_blocks(int n) {
    if (n > inline_ranks) many_.resize(static_cast<std::size_t>(n));
  }
  typed_buffer *data() { return many_.empty() ? few_.data() : many_.data(); }
  typed_buffer &operator[](int i) { return data()[i]; }

 private:
  static constexpr int inline_ranks = 64;
  std::array<typed_buffer, inline_ranks> few_{};
  std::vector<typed_buffer> many_;
};

// Waits for every request; returns the first error.
int wait_all(std::vector<device::request *> &requests);

// Posts a receive or send and keeps its request in `pending`; returns
// MPI_ERR_NO_MEM when the device could not pack.
int post_recv_into(const channel &ch, const typed_buffer &where, int from,
                   std::vector<device::request *> &pending);
int post_send_from(const channel &ch, const typed_buffer &what, int to,
                   std::vector<device::request *> &pending);

// Gatherv's root (blocking and nonblocking): posts the receive of rank
// `from`'s block, which comes as a message of `bytes` (its posted count):
// into `block` when the lengths agree, else into a buffer kept in `aside`,
// returning MPI_ERR_TRUNCATE (the message is still taken: its sender waits
// for the match).
int post_gatherv_message(const channel &ch, const typed_buffer &block, int from, std::size_t bytes,
                         std::vector<std::vector<std::byte>> &aside,
                         std::vector<device::request *> &pending);

// Send and receive sides of an all-to-all collective with uniform counts
// (Allgather: one send block, Alltoall: `all_to_all`, size of them). In
// place, `send` is left empty.
int all_checks(const char *call, MPI_Comm comm, const void *sendbuf, int sendcount,
               MPI_Datatype sendtype, const void *recvbuf, int recvcount, MPI_Datatype recvtype,
               communicator *&c, typed_buffer &send, typed_buffer &recv, bool all_to_all);

// The node segment where a root's table of blocks (Scatterv, Alltoallv)
// goes through it: its blocks that fit the slot with it, the others as
// messages, which the table marks. nullptr: not this way (no segment, or
// the table alone would not fit a slot), the same answer at every rank.
device::node_collectives *scatterv_node_of(communicator &c);

// Alltoallv through the node segment (blocking and nonblocking): the
// blocks past a slot that are not read in place (node_alltoallv_reads)
// move as messages. alltoallv_post_early posts the receives of those too
// large for any slot before the runs are taken, into `early` (by rank,
// nullptr where none). Once the runs are taken, alltoallv_settle_early
// receives the blocks `from_message` lists: early, or posted now into
// `pending`; an early receive whose block came through the slot after all
// (an erroneous program: the sender's block is smaller) is withdrawn. Both
// return the first error.
int alltoallv_post_early(const channel &ch, device::node_collectives &nc, const typed_buffer in[],
                         std::size_t read_from, std::vector<device::request *> &early);
int alltoallv_settle_early(const channel &ch, const typed_buffer in[],
                           const std::vector<int> &from_message,
                           std::vector<device::request *> &early,
                           std::vector<device::request *> &pending);

// The blocking all-to-all of one block per rank each way, each block of its
// own type and length (MPI_Alltoallv, and MPI_Alltoallw over an
// intracommunicator): through the node segment (scatterv_node_of), else
// linear or pairwise messages as Alltoall picks by the largest block sent.
// This rank's own block is copied from out into in already.
int alltoall_blocks(const char *call, communicator &c, root_blocks &out, root_blocks &in);

}  // namespace iris::api::coll
