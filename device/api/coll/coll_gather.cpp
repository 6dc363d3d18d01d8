// MPI collectives that move blocks without combining them: Gather(v),
// Scatter(v), Allgather(v), Alltoall(v). See coll.hpp for the rules every
// collective here follows.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "device/api/coll/coll.hpp"
#include "device/api/coll/nbc.hpp"
#include "device/collectives/node.hpp"
#include "device/protocols/cancel.hpp"

using namespace iris;
namespace nbc = iris::api::nbc;
using iris::api::communicator;
namespace coll = iris::api::coll;

namespace iris::api::coll {

int check_vector(const char *call, const communicator &comm, const void *buf, const int counts[],
                 const int displs[], MPI_Datatype type, typed_buffer &out) {
  if (counts == nullptr || displs == nullptr) {
    return device::error_raise(&comm, call, MPI_ERR_ARG, "%s is NULL",
                               counts == nullptr ? "the counts array" : "the displacements array");
  }
  for (int i = 0; i < comm.size; ++i) {
    if (counts[i] < 0) {
      return device::error_raise(&comm, call, MPI_ERR_COUNT, "negative count %d for rank %d",
                                 counts[i], i);
    }
    if (int err = api::check_typed_buffer(call, comm, buf, counts[i], type, out)) return err;
  }
  out.count = 0;
  return MPI_SUCCESS;
}

// Vranks count from root. A non-root rank vr heads the subtree of vranks
// [vr, vr + lowest_bit(vr)), cut at size; root heads all of them. Blocks
// travel packed, in vrank order.
int gather_tree(const channel &ch, const typed_buffer &mine, const typed_buffer *out,
                std::size_t block, int root) {
  const int size = ch.comm.size;
  const int vr = (ch.comm.rank - root + size) % size;
  const int subtree = vr == 0 ? size : std::min(lowest_bit(vr), size - vr);
  // Root 0 with a contiguous receive buffer gathers straight into it;
  // everyone else into a buffer.
  const bool direct =
      vr == 0 && root == 0 && typed_buffer{out->base, out->count * size, out->type}.contiguous();
  std::vector<std::byte> tmp;
  std::byte *buf = static_cast<std::byte *>(direct ? out->base : nullptr);
  if (!direct) {
    tmp.resize(static_cast<std::size_t>(subtree) * block);
    buf = tmp.data();
  }
  int err = MPI_SUCCESS;
  if (mine.packed_bytes() <= block) {
    device::typed_pack(mine, buf);
  } else {  // root's own block is longer than a receive block: truncated
    std::vector<std::byte> whole(mine.packed_bytes());
    device::typed_pack(mine, whole.data());
    std::memcpy(buf, whole.data(), block);
    err = MPI_ERR_TRUNCATE;
  }
  int have = 1;
  for (int mask = 1; mask < size; mask <<= 1) {
    if ((vr & mask) != 0) {
      return send(ch, bytes(buf, static_cast<std::size_t>(have) * block),
                  (vr - mask + root) % size);
    }
    if (vr + mask < size) {
      const int n = std::min(mask, size - vr - mask);
      if (int got = recv(ch,
                         bytes(buf + static_cast<std::size_t>(mask) * block,
                               static_cast<std::size_t>(n) * block),
                         (vr + mask + root) % size)) {
        return got;
      }
      have += n;
    }
  }
  if (!direct) {  // vrank v is rank (v + root) % size
    for (int v = 0; v < size; ++v) {
      device::typed_unpack(buf + static_cast<std::size_t>(v) * block, block,
                           out->block((v + root) % size));
    }
  }
  return err;
}

int scatter_tree(const channel &ch, const typed_buffer *in, const typed_buffer *mine,
                 std::size_t block, int root) {
  const int size = ch.comm.size;
  const int vr = (ch.comm.rank - root + size) % size;
  const int subtree = vr == 0 ? size : std::min(lowest_bit(vr), size - vr);
  std::vector<std::byte> tmp;
  const std::byte *buf = nullptr;
  int mask = 1;
  if (vr == 0) {
    while (mask < size) mask <<= 1;
    if (root == 0 && typed_buffer{in->base, in->count * size, in->type}.contiguous()) {
      buf = static_cast<const std::byte *>(in->base);
    } else {  // packed in vrank order: vrank v is rank (v + root) % size
      tmp.resize(static_cast<std::size_t>(size) * block);
      for (int v = 0; v < size; ++v) {
        device::typed_pack(in->block((v + root) % size),
                           tmp.data() + static_cast<std::size_t>(v) * block);
      }
      buf = tmp.data();
    }
  } else {
    mask = lowest_bit(vr);
    tmp.resize(static_cast<std::size_t>(subtree) * block);
    if (int err = recv(ch, bytes(tmp.data(), tmp.size()), (vr - mask + root) % size)) return err;
    buf = tmp.data();
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask >= size) continue;
    const int n = std::min(mask, size - vr - mask);
    if (int err = send(ch,
                       bytes(buf + static_cast<std::size_t>(mask) * block,
                             static_cast<std::size_t>(n) * block),
                       (vr + mask + root) % size)) {
      return err;
    }
  }
  if (mine != nullptr) device::typed_unpack(buf, block, *mine);
  return MPI_SUCCESS;
}

}  // namespace iris::api::coll

namespace {

using device::typed_buffer;

// The root's blocks of a v-collective: on the stack up to 64 ranks, so
// that the small path through the node segment allocates nothing.
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

// Where a Gather on one node turns from the segment to messages all sent
// at once (one rank's block): at 1 MiB 400 against 463 us at 4 ranks, 550
// against 870 at 8; at 64 KiB the segment's 24 and 47 against 23 and 64;
// a tie at 128 KiB, messages 1.4-1.7x faster from 256 KiB
// (bench/results/2026-11-29-issue43-64-128-ranks.md).
constexpr std::size_t gather_linear_min = 256 * 1024;

// Block i of a v-variant: counts[i] elements at displs[i] extents into `buf`.
typed_buffer block_at(const typed_buffer &buf, const int displs[], const int counts[], int i) {
  return buf.slice(displs[i], counts[i]);
}

// Waits for every request; returns the first error.
int wait_all(std::vector<device::request *> &requests) {
  int first = MPI_SUCCESS;
  for (device::request *r : requests) {
    const int err = coll::wait(r);
    if (first == MPI_SUCCESS) first = err;
  }
  requests.clear();
  return first;
}

// Posts a receive or send and keeps its request; returns MPI_ERR_NO_MEM when
// the device could not pack.
int post_recv_into(const coll::channel &ch, const typed_buffer &where, int from,
                   std::vector<device::request *> &pending) {
  device::request *r = nullptr;
  const int err = coll::post_recv(ch, where, from, r);
  if (r != nullptr) pending.push_back(r);
  return err;
}

int post_send_from(const coll::channel &ch, const typed_buffer &what, int to,
                   std::vector<device::request *> &pending) {
  device::request *r = nullptr;
  const int err = coll::post_send(ch, what, to, r);
  if (r != nullptr) pending.push_back(r);
  return err;
}

// The send side of a rooted collective (gather): checked unless this is root
// passing MPI_IN_PLACE, which only root may.
int send_side_checks(const char *call, const communicator &c, const void *buf, int count,
                     MPI_Datatype type, bool is_root, typed_buffer &out) {
  if (coll::in_place(buf)) {
    return is_root ? MPI_SUCCESS : coll::error_in_place(call, c, "the send buffer off root");
  }
  return api::check_typed_buffer(call, c, buf, count, type, out);
}

// MPI_Gatherv on one node: each block through the segment (node_gatherv_post
// and _end), or as a message where the rank's own byte count says so
// (from gather_linear_min, as MPI_Gather, or past a slot without CMA).
// The root knows which from what each rank posted, so the two sides agree
// even where the program's counts do not: a message of another length is
// received aside and reported as MPI_ERR_TRUNCATE.
int gatherv_node_send(const coll::channel &ch, device::node_collectives &nc,
                      const typed_buffer &send, int root) {
  const std::size_t bytes = send.packed_bytes();
  const bool by_message = !device::node_fits_slot(nc, bytes);
  std::vector<std::byte> packed;
  const std::uint64_t s = device::node_gatherv_post(nc, send, by_message, packed);
  const int err = by_message ? coll::send(ch, send, root) : MPI_SUCCESS;
  const int ended = device::node_gatherv_end(nc, s, root, nullptr);
  return err != MPI_SUCCESS ? err : ended;
}

int gatherv_node_root(const coll::channel &ch, device::node_collectives &nc,
                      const typed_buffer *blocks, int root) {
  std::vector<std::byte> packed;
  const std::uint64_t s =
      device::node_gatherv_post(nc, device::typed_bytes(nullptr, 0), false, packed);
  // A message's receive is posted as soon as its rank has posted its
  // count, not once every rank has: the root reads the first ones while
  // the last arrive (waiting for all took 1 MiB blocks 25-40% longer).
  // Every message is received, whatever else failed: its sender waits for
  // the match.
  std::vector<device::request *> pending;
  std::vector<std::vector<std::byte>> aside;
  std::vector<char> seen(static_cast<std::size_t>(ch.comm.size), 0);
  int left = ch.comm.size - 1;
  int err = MPI_SUCCESS;
  const auto take_posted = [&] {
    for (int r = 0; r < ch.comm.size; ++r) {
      std::uint64_t posted = 0;
      if (r == root || seen[r] != 0 || !device::node_gatherv_posted(nc, s, r, posted)) continue;
      seen[r] = 1;
      --left;
      if ((posted & device::node_gatherv_message) == 0) continue;
      const std::size_t bytes = posted & ~device::node_gatherv_message;
      int posted_err = MPI_SUCCESS;
      if (bytes == blocks[r].packed_bytes()) {
        posted_err = post_recv_into(ch, blocks[r], r, pending);
      } else {
        aside.emplace_back(bytes);
        posted_err =
            post_recv_into(ch, device::typed_bytes(aside.back().data(), bytes), r, pending);
        if (posted_err == MPI_SUCCESS) posted_err = MPI_ERR_TRUNCATE;
      }
      if (err == MPI_SUCCESS) err = posted_err;
    }
    return left == 0;
  };
  bool messages_due = false;
  for (int r = 0; r < ch.comm.size; ++r) {
    messages_due =
        messages_due || (r != root && !device::node_fits_slot(nc, blocks[r].packed_bytes()));
  }
  if (!messages_due) device::node_gatherv_wait_all(nc, s);
  if (!take_posted()) device::node_wait(take_posted);
  const int ended = device::node_gatherv_end(nc, s, root, blocks);
  const int waited = wait_all(pending);
  if (err != MPI_SUCCESS) return err;
  return ended != MPI_SUCCESS ? ended : waited;
}

// MPI_Scatterv on one node: the root posts a table of every rank's block
// and the blocks that fit its slot with it (node_scatterv), the others as
// messages, which the table marks. nullptr: not this way (no segment, or
// the table alone would not fit a slot), the same answer at every rank.
device::node_collectives *scatterv_node_of(communicator &c) {
  device::node_collectives *nc = device::node_collectives_of(c);
  return nc != nullptr && device::node_scatterv_takes(*nc) ? nc : nullptr;
}

// Send and receive sides of an all-to-all collective with uniform counts.
// In place, `send` is left empty.
int all_checks(const char *call, MPI_Comm comm, const void *sendbuf, int sendcount,
               MPI_Datatype sendtype, const void *recvbuf, int recvcount, MPI_Datatype recvtype,
               communicator *&c, typed_buffer &send, typed_buffer &recv, bool all_to_all) {
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  if (int err = api::check_typed_buffer(call, *c, recvbuf, recvcount, recvtype, recv)) return err;
  if (coll::in_place(sendbuf)) return MPI_SUCCESS;
  if (int err = api::check_typed_buffer(call, *c, sendbuf, sendcount, sendtype, send)) return err;
  const int send_blocks = all_to_all ? c->size : 1;
  // The receive side is size blocks; the send side one (Allgather) or size
  // (Alltoall): `send_blocks`.
  return coll::check_no_alias(call, *c, {send.base, send.count * send_blocks, send.type},
                              {recv.base, recv.count * c->size, recv.type});
}

// Pairwise: in step s send to rank + s and receive from rank - s, so that
// every rank talks to a different peer in each step; each block moves
// once: the choice for large blocks. `to_block(r)` and `from_block(r)`: the
// block for and from rank r (Alltoall's by index, Alltoallv's by
// displacement); the rank's own block is the caller's.
template <typename To, typename From>
int exchange_pairwise(const coll::channel &ch, To to_block, From from_block) {
  const int n = ch.comm.size;
  const int me = ch.comm.rank;
  // Every step runs even after one failed (a truncated block): the peers
  // of the later steps wait for theirs.
  int err = MPI_SUCCESS;
  for (int s = 1; s < n; ++s) {
    const int to = (me + s) % n;
    const int from = (me - s + n) % n;
    const int step = coll::sendrecv(ch, to_block(to), to, from_block(from), from);
    if (err == MPI_SUCCESS) err = step;
  }
  return err;
}

// Linear: every receive and send posted at once (in pairwise order, so
// that the first blocks to go are the ones their peers take first), then
// waited for: no rank waits for one pair before the next. Ranks that
// choose differently (pairwise, linear) still meet: each pair exchanges one
// message each way on the same tag.
template <typename To, typename From>
int exchange_linear(const coll::channel &ch, To to_block, From from_block) {
  const int n = ch.comm.size;
  const int me = ch.comm.rank;
  std::vector<device::request *> pending;
  pending.reserve(2 * static_cast<std::size_t>(n));
  int err = MPI_SUCCESS;
  for (int s = 1; s < n && err == MPI_SUCCESS; ++s) {
    err = post_recv_into(ch, from_block((me - s + n) % n), (me - s + n) % n, pending);
  }
  for (int s = 1; s < n && err == MPI_SUCCESS; ++s) {
    err = post_send_from(ch, to_block((me + s) % n), (me + s) % n, pending);
  }
  const int waited = wait_all(pending);
  return err != MPI_SUCCESS ? err : waited;
}

}  // namespace

extern "C" {

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::igatherv("MPI_Gather", false, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                         nullptr, nullptr, recvtype, root, comm, MPI_INFO_NULL, nbc::mode::blocking,
                         nullptr);
  const char *call = "MPI_Gather";
  communicator *c = nullptr;
  typed_buffer send;
  typed_buffer recv;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  const bool is_root = c->rank == root;
  if (int err = send_side_checks(call, *c, sendbuf, sendcount, sendtype, is_root, send)) {
    return err;
  }
  std::size_t block = send.type != nullptr ? send.packed_bytes() : 0;
  if (is_root) {
    if (int err = api::check_typed_buffer(call, *c, recvbuf, recvcount, recvtype, recv)) {
      return err;
    }
    block = recv.packed_bytes();
    if (!coll::in_place(sendbuf)) {
      if (int err =
              coll::check_no_alias(call, *c, send, {recv.base, recv.count * c->size, recv.type})) {
        return err;
      }
    }
  }
  device::node_collectives *nc = device::node_collectives_of(*c);
  if (block == 0) return MPI_SUCCESS;
  const typed_buffer mine = coll::in_place(sendbuf) ? recv.block(root) : send;
  // From gather_linear_min a block on one node, every rank sends at once
  // (the nonblocking schedule, waited for here): the root reading every
  // block alone from the segment took 1.6x as long at 1 MiB and 8 ranks.
  if (nc != nullptr && block >= gather_linear_min) {
    return nbc::igatherv(call, false, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr,
                         nullptr, recvtype, root, comm, MPI_INFO_NULL, nbc::mode::blocking,
                         nullptr);
  }
  if (nc != nullptr && device::node_takes(*nc, block)) {
    return coll::result(
        call, *c,
        device::node_gather(*nc, mine, is_root ? &recv : nullptr, root, coll::in_place(sendbuf)));
  }
  const coll::channel ch{*c, coll::tag_gather};
  return coll::result(call, *c,
                      coll::gather_tree(ch, mine, is_root ? &recv : nullptr, block, root));
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::iscatterv("MPI_Scatter", false, sendbuf, sendcount, nullptr, nullptr, sendtype,
                          recvbuf, recvcount, recvtype, root, comm, MPI_INFO_NULL,
                          nbc::mode::blocking, nullptr);
  const char *call = "MPI_Scatter";
  communicator *c = nullptr;
  typed_buffer send;
  typed_buffer recv;
  std::size_t block = 0;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  const bool is_root = c->rank == root;
  const bool keep = is_root && coll::in_place(recvbuf);  // root's block stays in sendbuf
  if (coll::in_place(recvbuf) && !is_root) {
    return coll::error_in_place(call, *c, "the receive buffer off root");
  }
  if (!keep) {
    if (int err = api::check_typed_buffer(call, *c, recvbuf, recvcount, recvtype, recv)) {
      return err;
    }
    block = recv.packed_bytes();
  }
  if (is_root) {
    if (int err = api::check_typed_buffer(call, *c, sendbuf, sendcount, sendtype, send)) {
      return err;
    }
    block = send.packed_bytes();
    if (!keep) {
      if (int err =
              coll::check_no_alias(call, *c, {send.base, send.count * c->size, send.type}, recv)) {
        return err;
      }
    }
  }
  device::node_collectives *nc = device::node_collectives_of(*c);
  if (block == 0) return MPI_SUCCESS;
  if (nc != nullptr && device::node_takes(*nc, block * c->size)) {
    const typed_buffer all{send.base, send.count * c->size, send.type};
    return coll::result(
        call, *c,
        device::node_scatter(*nc, is_root ? &all : nullptr, keep ? nullptr : &recv, root));
  }
  const coll::channel ch{*c, coll::tag_scatter};
  return coll::result(
      call, *c,
      coll::scatter_tree(ch, is_root ? &send : nullptr, keep ? nullptr : &recv, block, root));
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::igatherv("MPI_Gatherv", true, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts,
                         displs, recvtype, root, comm, MPI_INFO_NULL, nbc::mode::blocking, nullptr);
  const char *call = "MPI_Gatherv";
  communicator *c = nullptr;
  typed_buffer send;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  const bool is_root = c->rank == root;
  if (int err = send_side_checks(call, *c, sendbuf, sendcount, sendtype, is_root, send)) {
    return err;
  }
  const coll::channel ch{*c, coll::tag_gatherv};
  if (!is_root) {
    device::node_collectives *nc = device::node_collectives_of(*c);
    if (nc == nullptr) return coll::result(call, *c, coll::send(ch, send, root));
    return coll::result(call, *c, gatherv_node_send(ch, *nc, send, root));
  }
  typed_buffer recv;
  if (int err = coll::check_vector(call, *c, recvbuf, recvcounts, displs, recvtype, recv)) {
    return err;
  }
  for (int i = 0; i < c->size && !coll::in_place(sendbuf); ++i) {  // as MPI_Gather
    if (int err = coll::check_no_alias(call, *c, send, block_at(recv, displs, recvcounts, i))) {
      return err;
    }
  }
  if (device::node_collectives *nc = device::node_collectives_of(*c)) {
    root_blocks blocks(c->size);
    for (int i = 0; i < c->size; ++i) blocks[i] = block_at(recv, displs, recvcounts, i);
    if (!coll::in_place(sendbuf)) device::typed_copy(send, blocks[root]);
    return coll::result(call, *c, gatherv_node_root(ch, *nc, blocks.data(), root));
  }
  // Linear: root posts every receive, then waits for them all.
  std::vector<device::request *> pending;
  int err = MPI_SUCCESS;
  for (int i = 0; i < c->size && err == MPI_SUCCESS; ++i) {
    const typed_buffer at = block_at(recv, displs, recvcounts, i);
    if (i == root) {
      if (!coll::in_place(sendbuf)) device::typed_copy(send, at);
      continue;
    }
    err = post_recv_into(ch, at, i, pending);
  }
  const int waited = wait_all(pending);
  return coll::result(call, *c, err != MPI_SUCCESS ? err : waited);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::iscatterv("MPI_Scatterv", true, sendbuf, 0, sendcounts, displs, sendtype, recvbuf,
                          recvcount, recvtype, root, comm, MPI_INFO_NULL, nbc::mode::blocking,
                          nullptr);
  const char *call = "MPI_Scatterv";
  communicator *c = nullptr;
  typed_buffer recv;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  const bool is_root = c->rank == root;
  const bool keep = is_root && coll::in_place(recvbuf);
  if (coll::in_place(recvbuf) && !is_root) {
    return coll::error_in_place(call, *c, "the receive buffer off root");
  }
  if (!keep) {
    if (int err = api::check_typed_buffer(call, *c, recvbuf, recvcount, recvtype, recv)) {
      return err;
    }
  }
  const coll::channel ch{*c, coll::tag_scatterv};
  device::node_collectives *nc = scatterv_node_of(*c);
  if (!is_root) {
    if (nc == nullptr) return coll::result(call, *c, coll::recv(ch, recv, root));
    std::vector<int> none;
    bool message = false;
    int err = device::node_scatterv(*nc, nullptr, &recv, root, none, message);
    if (message && err == MPI_SUCCESS) err = coll::recv(ch, recv, root);
    return coll::result(call, *c, err);
  }
  typed_buffer send;
  if (int err = coll::check_vector(call, *c, sendbuf, sendcounts, displs, sendtype, send)) {
    return err;
  }
  for (int i = 0; i < c->size && !keep; ++i) {  // as MPI_Scatter
    if (int err = coll::check_no_alias(call, *c, block_at(send, displs, sendcounts, i), recv)) {
      return err;
    }
  }
  std::vector<device::request *> pending;
  int err = MPI_SUCCESS;
  if (nc != nullptr) {
    root_blocks blocks(c->size);
    for (int i = 0; i < c->size; ++i) blocks[i] = block_at(send, displs, sendcounts, i);
    if (!keep) device::typed_copy(blocks[root], recv);
    std::vector<int> by_message;
    bool unused = false;
    err = device::node_scatterv(*nc, blocks.data(), nullptr, root, by_message, unused);
    // The blocks past the slot: their ranks wait for them whatever else
    // happened.
    for (const int r : by_message) {
      const int posted = post_send_from(ch, blocks[r], r, pending);
      if (err == MPI_SUCCESS) err = posted;
    }
    const int waited = wait_all(pending);
    return coll::result(call, *c, err != MPI_SUCCESS ? err : waited);
  }
  for (int i = 0; i < c->size && err == MPI_SUCCESS; ++i) {
    const typed_buffer at = block_at(send, displs, sendcounts, i);
    if (i == root) {
      if (!keep) device::typed_copy(at, recv);
      continue;
    }
    err = post_send_from(ch, at, i, pending);
  }
  const int waited = wait_all(pending);
  return coll::result(call, *c, err != MPI_SUCCESS ? err : waited);
}

namespace {

// IRIS_COLL_ALLGATHER's choices, and where auto turns from Bruck to the
// ring: one rank's block of 64 KiB (bench/README.md: Bruck 1.2-2.5 times
// faster below it at 4 and 8 ranks, the ring 1.07 times at 4 ranks there).
enum class allgather_algorithm { automatic = 0, ring = 1, bruck = 2 };
constexpr std::size_t allgather_bruck_max = 64 * 1024;

// Ring: in step s every rank passes on to its right the block it got in
// step s - 1 (its own first); after n - 1 steps it has them all. Each
// block crosses n - 1 links once: the choice for large blocks.
int allgather_ring(const coll::channel &ch, const typed_buffer &recv) {
  const int n = ch.comm.size;
  const int me = ch.comm.rank;
  int err = MPI_SUCCESS;
  for (int s = 0; s < n - 1 && err == MPI_SUCCESS; ++s) {
    const int give = (me - s + n) % n;
    const int take = (me - s - 1 + n) % n;
    err = coll::sendrecv(ch, recv.block(give), (me + 1) % n, recv.block(take), (me - 1 + n) % n);
  }
  return err;
}

// Bruck's: a rank holds blocks me, me + 1, ... (mod n), packed, in that
// order. In step k = 1, 2, 4, ... it sends the first min(k, n - k) it holds
// to rank me - k and appends as many from rank me + k, so after
// ceil(log2 n) steps it holds all n; then each goes to its place. Any n;
// the choice for small blocks, where the number of rounds is the cost.
int allgather_bruck(const coll::channel &ch, const typed_buffer &recv) {
  const int n = ch.comm.size;
  const int me = ch.comm.rank;
  const std::size_t block = recv.packed_bytes();
  const std::unique_ptr<std::byte[]> held(new (std::nothrow)
                                              std::byte[block * static_cast<std::size_t>(n)]);
  if (held == nullptr) return MPI_ERR_NO_MEM;
  device::typed_pack(recv.block(me), held.get());
  int err = MPI_SUCCESS;
  for (int k = 1; k < n && err == MPI_SUCCESS; k <<= 1) {
    const std::size_t bytes = static_cast<std::size_t>(std::min(k, n - k)) * block;
    err = coll::sendrecv(
        ch, device::typed_bytes(held.get(), bytes), (me - k + n) % n,
        device::typed_bytes(held.get() + static_cast<std::size_t>(k) * block, bytes), (me + k) % n);
  }
  if (err != MPI_SUCCESS) return err;
  for (int j = 1; j < n; ++j) {
    device::typed_unpack(held.get() + static_cast<std::size_t>(j) * block, block,
                         recv.block((me + j) % n));
  }
  return MPI_SUCCESS;
}

// IRIS_COLL_ALLTOALL's choices. auto (bench/README.md, measured at 4, 8
// and 16 ranks): linear, 1.2-5 times faster than pairwise exchange at every
// size and faster than Bruck's up to 8 ranks; Bruck's from 16 ranks for
// blocks up to 256 bytes, where it ties or wins (8 B at 16 ranks: 101 us
// against 154); pairwise exchange only for blocks from 32 KiB above 32
// ranks, where posting every transfer at once would flood the transports
// (MPICH's rule there).
enum class alltoall_algorithm { automatic = 0, pairwise = 1, bruck = 2, linear = 3 };
alltoall_algorithm alltoall_pick(std::size_t block, int n) {
  if (block <= 256 && n >= 16) return alltoall_algorithm::bruck;
  if (block >= 32 * 1024 && n > 32) return alltoall_algorithm::pairwise;
  return alltoall_algorithm::linear;
}

// Pairwise and linear (exchange_pairwise, exchange_linear: above, outside
// extern "C") over Alltoall's blocks by index.
int alltoall_pairwise(const coll::channel &ch, const typed_buffer &send, const typed_buffer &recv) {
  return exchange_pairwise(
      ch, [&](int r) { return send.block(r); }, [&](int r) { return recv.block(r); });
}

int alltoall_linear(const coll::channel &ch, const typed_buffer &send, const typed_buffer &recv) {
  return exchange_linear(
      ch, [&](int r) { return send.block(r); }, [&](int r) { return recv.block(r); });
}

// Bruck's: the blocks packed in the order me, me + 1, ... (mod n) of their
// destinations; in step k = 1, 2, 4, ... every block whose place i has bit
// k moves k ranks on (to rank me + k, from rank me - k), so after
// ceil(log2 n) steps place i holds the block rank me - i sent here. Each
// step moves about half the blocks: fewer rounds than pairwise for more
// bytes, the choice for small blocks. `block`: the packed bytes of one.
int alltoall_bruck(const coll::channel &ch, const typed_buffer &send, const typed_buffer &recv) {
  const int n = ch.comm.size;
  const int me = ch.comm.rank;
  const std::size_t block = recv.packed_bytes();
  const std::size_t all = block * static_cast<std::size_t>(n);
  // The blocks by place, then what one step sends and receives.
  const std::size_t half = block * static_cast<std::size_t>(n / 2 + 1);
  const std::unique_ptr<std::byte[]> room(new (std::nothrow) std::byte[all + 2 * half]);
  if (room == nullptr) return MPI_ERR_NO_MEM;
  std::byte *const places = room.get();
  std::byte *const out = places + all;
  std::byte *const in = out + half;
  const auto place = [&](int i) { return places + static_cast<std::size_t>(i) * block; };
  for (int i = 0; i < n; ++i) device::typed_pack(send.block((me + i) % n), place(i));
  int err = MPI_SUCCESS;
  for (int k = 1; k < n && err == MPI_SUCCESS; k <<= 1) {
    std::size_t bytes = 0;
    for (int i = k; i < n; ++i) {
      if ((i & k) == 0) continue;
      std::memcpy(out + bytes, place(i), block);
      bytes += block;
    }
    err = coll::sendrecv(ch, device::typed_bytes(out, bytes), (me + k) % n,
                         device::typed_bytes(in, bytes), (me - k + n) % n);
    bytes = 0;
    for (int i = k; i < n && err == MPI_SUCCESS; ++i) {
      if ((i & k) == 0) continue;
      std::memcpy(place(i), in + bytes, block);
      bytes += block;
    }
  }
  if (err != MPI_SUCCESS) return err;
  for (int i = 0; i < n; ++i) device::typed_unpack(place(i), block, recv.block((me - i + n) % n));
  return MPI_SUCCESS;
}

}  // namespace

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::iallgatherv("MPI_Allgather", false, sendbuf, sendcount, sendtype, recvbuf,
                            recvcount, nullptr, nullptr, recvtype, comm, MPI_INFO_NULL,
                            nbc::mode::blocking, nullptr);
  const char *call = "MPI_Allgather";
  communicator *c = nullptr;
  typed_buffer send;
  typed_buffer recv;
  if (int err = all_checks(call, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                           c, send, recv, false)) {
    return err;
  }
  auto chosen = static_cast<allgather_algorithm>(device::rt->config.coll_allgather);
  // A forced message algorithm skips shared memory.
  device::node_collectives *nc =
      chosen == allgather_algorithm::automatic ? device::node_collectives_of(*c) : nullptr;
  if (recv.packed_bytes() == 0) return MPI_SUCCESS;
  const bool in_place = coll::in_place(sendbuf);
  if (nc != nullptr && device::node_takes(*nc, recv.packed_bytes())) {
    return coll::result(call, *c,
                        device::node_exchange(*nc, in_place ? recv.block(c->rank) : send, false,
                                              recv, false, in_place));
  }
  if (!in_place) device::typed_copy(send, recv.block(c->rank));
  if (chosen == allgather_algorithm::automatic) {
    // Every rank receives the same bytes in a correct program: one choice.
    chosen = recv.packed_bytes() < allgather_bruck_max ? allgather_algorithm::bruck
                                                       : allgather_algorithm::ring;
  }
  const coll::channel ch{*c, coll::tag_allgather};
  return coll::result(
      call, *c,
      chosen == allgather_algorithm::bruck ? allgather_bruck(ch, recv) : allgather_ring(ch, recv));
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::iallgatherv("MPI_Allgatherv", true, sendbuf, sendcount, sendtype, recvbuf, 0,
                            recvcounts, displs, recvtype, comm, MPI_INFO_NULL, nbc::mode::blocking,
                            nullptr);
  const char *call = "MPI_Allgatherv";
  communicator *c = nullptr;
  typed_buffer recv;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  if (int err = coll::check_vector(call, *c, recvbuf, recvcounts, displs, recvtype, recv)) {
    return err;
  }
  const typed_buffer mine = block_at(recv, displs, recvcounts, c->rank);
  const bool in_place = coll::in_place(sendbuf);
  typed_buffer send;
  if (!in_place) {
    if (int err = api::check_typed_buffer(call, *c, sendbuf, sendcount, sendtype, send)) {
      return err;
    }
    if (int err = coll::check_no_alias(call, *c, send, mine)) {
      return err;
    }
  }
  const int n = c->size;
  // Through the node's segment when no algorithm is forced (as
  // MPI_Allgather): every rank posts its block, and takes every rank's
  // into its own place. The largest block decides (every rank knows them
  // all).
  const auto chosen = static_cast<allgather_algorithm>(device::rt->config.coll_allgather);
  device::node_collectives *nc =
      chosen == allgather_algorithm::automatic ? device::node_collectives_of(*c) : nullptr;
  if (nc != nullptr) {
    std::vector<typed_buffer> blocks(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r)
      blocks[static_cast<std::size_t>(r)] = block_at(recv, displs, recvcounts, r);
    const std::size_t largest = nbc::largest_block(blocks);
    if (largest == 0) return MPI_SUCCESS;
    if (device::node_takes(*nc, largest)) {
      return coll::result(call, *c,
                          device::node_exchange(*nc, in_place ? mine : send, false, recv, false,
                                                in_place, blocks.data()));
    }
  }
  if (!in_place) device::typed_copy(send, mine);
  // The same ring as MPI_Allgather, with blocks of their own sizes.
  const coll::channel ch{*c, coll::tag_allgatherv};
  int err = MPI_SUCCESS;
  for (int s = 0; s < n - 1 && err == MPI_SUCCESS; ++s) {
    const int give = (c->rank - s + n) % n;
    const int take = (c->rank - s - 1 + n) % n;
    err = coll::sendrecv(ch, block_at(recv, displs, recvcounts, give), (c->rank + 1) % n,
                         block_at(recv, displs, recvcounts, take), (c->rank - 1 + n) % n);
  }
  return coll::result(call, *c, err);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::ialltoall("MPI_Alltoall", sendbuf, sendcount, sendtype, recvbuf, recvcount,
                          recvtype, comm, MPI_INFO_NULL, nbc::mode::blocking, nullptr);
  const char *call = "MPI_Alltoall";
  communicator *c = nullptr;
  typed_buffer send;
  typed_buffer recv;
  if (int err = all_checks(call, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                           c, send, recv, true)) {
    return err;
  }
  auto chosen = static_cast<alltoall_algorithm>(device::rt->config.coll_alltoall);
  // A forced message algorithm skips shared memory.
  device::node_collectives *nc =
      chosen == alltoall_algorithm::automatic ? device::node_collectives_of(*c) : nullptr;
  if (recv.packed_bytes() == 0) return MPI_SUCCESS;
  const int n = c->size;
  if (nc != nullptr && nbc::alltoall_takes(*nc, recv.packed_bytes(), n)) {
    const bool in_place = coll::in_place(sendbuf);
    const typed_buffer all = in_place ? typed_buffer{recv.base, recv.count * n, recv.type}
                                      : typed_buffer{send.base, send.count * n, send.type};
    return coll::result(call, *c, device::node_exchange(*nc, all, in_place, recv, true, false));
  }
  // In place, the blocks to send are first copied out of the receive buffer
  // (its whole span, in its own layout).
  device::typed_image saved;
  if (coll::in_place(sendbuf)) {
    saved = device::typed_image({recv.base, recv.count * n, recv.type});
    send = {saved.origin(), recv.count, recv.type};
  }
  if (chosen == alltoall_algorithm::automatic) {
    // Every rank receives blocks of the same bytes in a correct program.
    chosen = alltoall_pick(recv.packed_bytes(), n);
  }
  const coll::channel ch{*c, coll::tag_alltoall};
  // Bruck's packs whole blocks: a send block of other bytes than a receive
  // block (an erroneous program) goes pairwise, where the receive says so.
  if (chosen == alltoall_algorithm::bruck && send.packed_bytes() == recv.packed_bytes()) {
    return coll::result(call, *c, alltoall_bruck(ch, send, recv));
  }
  device::typed_copy(send.block(c->rank), recv.block(c->rank));
  return coll::result(call, *c,
                      chosen == alltoall_algorithm::linear ? alltoall_linear(ch, send, recv)
                                                           : alltoall_pairwise(ch, send, recv));
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::ialltoallv("MPI_Alltoallv", sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                           recvcounts, rdispls, recvtype, comm, MPI_INFO_NULL, nbc::mode::blocking,
                           nullptr);
  const char *call = "MPI_Alltoallv";
  communicator *c = nullptr;
  typed_buffer recv;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  if (int err = coll::check_vector(call, *c, recvbuf, recvcounts, rdispls, recvtype, recv)) {
    return err;
  }
  const int n = c->size;
  // Each outgoing block. In place they are first packed out of the receive
  // buffer and travel as bytes.
  root_blocks out(n);
  std::vector<std::byte> saved;
  if (coll::in_place(sendbuf)) {
    std::size_t total = 0;
    for (int i = 0; i < n; ++i) total += block_at(recv, rdispls, recvcounts, i).packed_bytes();
    saved.resize(total);
    std::size_t at = 0;
    for (int i = 0; i < n; ++i) {
      const typed_buffer b = block_at(recv, rdispls, recvcounts, i);
      device::typed_pack(b, saved.data() + at);
      out[i] = coll::bytes(saved.data() + at, b.packed_bytes());
      at += b.packed_bytes();
    }
  } else {
    typed_buffer send;
    if (int err = coll::check_vector(call, *c, sendbuf, sendcounts, sdispls, sendtype, send)) {
      return err;
    }
    // One buffer for both is an overlap only where bytes move both ways:
    // with every count of one side zero (an empty allocation passed twice,
    // as bindings do) nothing is read or written there.
    const auto moves = [n](const int counts[]) {
      return std::any_of(counts, counts + n, [](int k) { return k > 0; });
    };
    if (sendbuf == recvbuf && sendbuf != nullptr && moves(sendcounts) && moves(recvcounts)) {
      return coll::check_no_alias(call, *c, coll::bytes(sendbuf, 1), coll::bytes(recvbuf, 1));
    }
    for (int i = 0; i < n; ++i) out[i] = block_at(send, sdispls, sendcounts, i);
  }
  const int me = c->rank;
  device::typed_copy(out[me], block_at(recv, rdispls, recvcounts, me));
  const coll::channel ch{*c, coll::tag_alltoallv};
  const auto to_block = [&](int r) { return out[r]; };
  const auto from_block = [&](int r) { return block_at(recv, rdispls, recvcounts, r); };
  auto chosen = static_cast<alltoall_algorithm>(device::rt->config.coll_alltoall);
  // On one node (a forced algorithm skips it): each rank's table and the
  // blocks that fit its slot through the segment, as Scatterv's root posts
  // them, each rank taking its block of every run; a block that does not
  // fit goes as a message (both sides learn which from the table).
  device::node_collectives *nc =
      chosen == alltoall_algorithm::automatic ? scatterv_node_of(*c) : nullptr;
  if (nc != nullptr) {
    root_blocks in(n);
    for (int i = 0; i < n; ++i) in[i] = from_block(i);
    std::vector<int> to_message;
    std::vector<int> from_message;
    // The blocks past a slot that are not read in place (blocks from
    // alltoall_read_from(n) in one run are, as Alltoall's: 8 ranks 64 KiB
    // 261 -> 247 us, 4 ranks 1 MiB 1100 -> 906) move as messages, started
    // before this rank waits for the others' runs: its sends, and its
    // receives of blocks too large for any slot (64 KiB blocks at 8 ranks:
    // 243 us by messages alone, 321-420 when they waited for the segment).
    // A receive posted early whose block came through the slot after all
    // (an erroneous program: the sender's block is smaller) is withdrawn
    // before this rank ends the step; the tags alternate by step, and no
    // rank starts the step after next before this one ends it, so it could
    // meet no other step's message.
    const std::size_t read_from = nbc::alltoall_read_from(n);
    bool exposed = false;
    const std::uint64_t step =
        device::node_alltoallv_post(*nc, out.data(), read_from, to_message, exposed);
    const coll::channel big{*c, (step & 1U) != 0 ? coll::tag_alltoallv_odd : coll::tag_alltoallv};
    const std::size_t room = device::node_alltoallv_room(*nc);
    std::vector<device::request *> pending;
    std::vector<device::request *> early(static_cast<std::size_t>(n));  // by rank
    int posted = MPI_SUCCESS;
    const auto keep = [&posted](int e) {
      if (posted == MPI_SUCCESS) posted = e;
    };
    for (int k = 1; k < n; ++k) {
      const int r = (me - k + n) % n;
      const std::size_t bytes = in[r].packed_bytes();
      if (bytes <= room || device::node_alltoallv_reads(*nc, bytes, read_from)) continue;
      keep(coll::post_recv(big, in[r], r, early[static_cast<std::size_t>(r)]));
    }
    for (const int r : to_message) keep(post_send_from(big, out[r], r, pending));
    const int err = device::node_alltoallv_take(*nc, step, in.data(), from_message);
    // The blocks that come as messages: received early, or now.
    for (const int r : from_message) {
      device::request *&q = early[static_cast<std::size_t>(r)];
      if (q != nullptr) {
        pending.push_back(std::exchange(q, nullptr));
      } else {
        keep(post_recv_into(big, in[r], r, pending));
      }
    }
    for (device::request *q : early) {
      if (q == nullptr) continue;
      device::request_cancel(*q);
      coll::wait(q);
    }
    device::node_alltoallv_end(*nc, step, exposed);
    const int waited = wait_all(pending);
    const int first = err != MPI_SUCCESS ? err : posted;
    return coll::result(call, *c, first != MPI_SUCCESS ? first : waited);
  }
  // As Alltoall chooses by its block (IRIS_COLL_ALLTOALL forces pairwise or
  // linear here too; Bruck's needs blocks of one size): by the largest block
  // this rank sends. Pairwise on a node of 8 oversubscribed ranks made every
  // step wait for its peer's turn on a core (8 B: 71 us, Open MPI 21).
  if (chosen != alltoall_algorithm::pairwise && chosen != alltoall_algorithm::linear) {
    std::size_t largest = 0;
    for (int i = 0; i < n; ++i) largest = std::max(largest, out[i].packed_bytes());
    chosen = alltoall_pick(largest, n) == alltoall_algorithm::pairwise
                 ? alltoall_algorithm::pairwise
                 : alltoall_algorithm::linear;
  }
  return coll::result(call, *c,
                      chosen == alltoall_algorithm::linear
                          ? exchange_linear(ch, to_block, from_block)
                          : exchange_pairwise(ch, to_block, from_block));
}

}  // extern "C"
