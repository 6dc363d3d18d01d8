// MPI collectives that move blocks without combining them: Gather(v),
// Scatter(v), Allgather(v) (Alltoall(v): coll_alltoall.cpp). See coll.hpp
// for the rules every collective here follows.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "device/api/coll/coll.hpp"
#include "device/api/coll/nbc.hpp"
#include "device/collectives/node.hpp"

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

int wait_all(std::vector<device::request *> &requests) {
  int first = MPI_SUCCESS;
  for (device::request *r : requests) {
    const int err = coll::wait(r);
    if (first == MPI_SUCCESS) first = err;
  }
  requests.clear();
  return first;
}

int post_gatherv_message(const coll::channel &ch, const typed_buffer &block, int from,
                         std::size_t bytes, std::vector<std::vector<std::byte>> &aside,
                         std::vector<device::request *> &pending) {
  if (bytes == block.packed_bytes()) return coll::post_recv_into(ch, block, from, pending);
  aside.emplace_back(bytes);
  const int err =
      coll::post_recv_into(ch, device::typed_bytes(aside.back().data(), bytes), from, pending);
  return err != MPI_SUCCESS ? err : MPI_ERR_TRUNCATE;
}

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

device::node_collectives *scatterv_node_of(communicator &c) {
  device::node_collectives *nc = device::node_collectives_of(c);
  return nc != nullptr && device::node_scatterv_takes(*nc) ? nc : nullptr;
}

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

}  // namespace iris::api::coll

namespace {

using device::typed_buffer;

// Where a Gather on one node turns from the segment to messages all sent
// at once (one rank's block): at 1 MiB 400 against 463 us at 4 ranks, 550
// against 870 at 8; at 64 KiB the segment's 24 and 47 against 23 and 64;
// a tie at 128 KiB, messages 1.4-1.7x faster from 256 KiB
// (bench/results/2026-11-29-issue43-64-128-ranks.md).
constexpr std::size_t gather_linear_min = 256 * 1024;

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
  return device::node_call(nc, [&] {
    const std::uint64_t s = device::node_gatherv_post(nc, send, by_message, root, packed);
    const int err = by_message ? coll::send(ch, send, root) : MPI_SUCCESS;
    const int ended = device::node_gatherv_end(nc, s, root, nullptr);
    return err != MPI_SUCCESS ? err : ended;
  });
}

int gatherv_node_root(const coll::channel &ch, device::node_collectives &nc,
                      const typed_buffer *blocks, int root) {
  std::vector<std::byte> packed;
  std::uint64_t s = 0;
  if (const int revoked = device::node_call(nc, [&] {
        s = device::node_gatherv_post(nc, device::typed_bytes(nullptr, 0), false, root, packed);
      })) {
    return revoked;  // nothing posted yet
  }
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
      const int posted_err = coll::post_gatherv_message(ch, blocks[r], r, bytes, aside, pending);
      if (err == MPI_SUCCESS) err = posted_err;
    }
    return left == 0;
  };
  bool messages_due = false;
  for (int r = 0; r < ch.comm.size; ++r) {
    messages_due =
        messages_due || (r != root && !device::node_fits_slot(nc, blocks[r].packed_bytes()));
  }
  // A revocation met in the segment has ended (failed) every receive
  // posted on the communicator: they are waited for all the same.
  const int ended = device::node_call(nc, [&] {
    if (!messages_due) device::node_gatherv_wait_all(nc, s);
    if (!take_posted()) device::node_wait(nc, take_posted);
    return device::node_gatherv_end(nc, s, root, blocks);
  });
  const int waited = coll::wait_all(pending);
  if (err != MPI_SUCCESS) return err;
  return ended != MPI_SUCCESS ? ended : waited;
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
    return coll::result(call, *c, device::node_call(*nc, [&] {
                          return device::node_gather(*nc, mine, is_root ? &recv : nullptr, root,
                                                     coll::in_place(sendbuf));
                        }));
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
    return coll::result(call, *c, device::node_call(*nc, [&] {
                          return device::node_scatter(*nc, is_root ? &all : nullptr,
                                                      keep ? nullptr : &recv, root);
                        }));
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
    if (int err =
            coll::check_no_alias(call, *c, send, coll::block_at(recv, displs, recvcounts, i))) {
      return err;
    }
  }
  if (device::node_collectives *nc = device::node_collectives_of(*c)) {
    coll::root_blocks blocks(c->size);
    for (int i = 0; i < c->size; ++i) blocks[i] = coll::block_at(recv, displs, recvcounts, i);
    if (!coll::in_place(sendbuf)) device::typed_copy(send, blocks[root]);
    return coll::result(call, *c, gatherv_node_root(ch, *nc, blocks.data(), root));
  }
  // Linear: root posts every receive, then waits for them all.
  std::vector<device::request *> pending;
  int err = MPI_SUCCESS;
  for (int i = 0; i < c->size && err == MPI_SUCCESS; ++i) {
    const typed_buffer at = coll::block_at(recv, displs, recvcounts, i);
    if (i == root) {
      if (!coll::in_place(sendbuf)) device::typed_copy(send, at);
      continue;
    }
    err = coll::post_recv_into(ch, at, i, pending);
  }
  const int waited = coll::wait_all(pending);
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
  device::node_collectives *nc = coll::scatterv_node_of(*c);
  if (!is_root) {
    if (nc == nullptr) return coll::result(call, *c, coll::recv(ch, recv, root));
    std::vector<int> none;
    bool message = false;
    int err = device::node_call(
        *nc, [&] { return device::node_scatterv(*nc, nullptr, &recv, root, none, message); });
    if (message && err == MPI_SUCCESS) err = coll::recv(ch, recv, root);
    return coll::result(call, *c, err);
  }
  typed_buffer send;
  if (int err = coll::check_vector(call, *c, sendbuf, sendcounts, displs, sendtype, send)) {
    return err;
  }
  for (int i = 0; i < c->size && !keep; ++i) {  // as MPI_Scatter
    if (int err =
            coll::check_no_alias(call, *c, coll::block_at(send, displs, sendcounts, i), recv)) {
      return err;
    }
  }
  std::vector<device::request *> pending;
  int err = MPI_SUCCESS;
  if (nc != nullptr) {
    coll::root_blocks blocks(c->size);
    for (int i = 0; i < c->size; ++i) blocks[i] = coll::block_at(send, displs, sendcounts, i);
    if (!keep) device::typed_copy(blocks[root], recv);
    std::vector<int> by_message;
    bool unused = false;
    err = device::node_call(*nc, [&] {
      return device::node_scatterv(*nc, blocks.data(), nullptr, root, by_message, unused);
    });
    // The blocks past the slot: their ranks wait for them whatever else
    // happened.
    for (const int r : by_message) {
      const int posted = coll::post_send_from(ch, blocks[r], r, pending);
      if (err == MPI_SUCCESS) err = posted;
    }
    const int waited = coll::wait_all(pending);
    return coll::result(call, *c, err != MPI_SUCCESS ? err : waited);
  }
  for (int i = 0; i < c->size && err == MPI_SUCCESS; ++i) {
    const typed_buffer at = coll::block_at(send, displs, sendcounts, i);
    if (i == root) {
      if (!keep) device::typed_copy(at, recv);
      continue;
    }
    err = coll::post_send_from(ch, at, i, pending);
  }
  const int waited = coll::wait_all(pending);
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
  if (int err = coll::all_checks(call, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                 recvtype, c, send, recv, false)) {
    return err;
  }
  auto chosen = static_cast<allgather_algorithm>(device::rt->config.coll_allgather);
  // A forced message algorithm skips shared memory.
  device::node_collectives *nc =
      chosen == allgather_algorithm::automatic ? device::node_collectives_of(*c) : nullptr;
  if (recv.packed_bytes() == 0) return MPI_SUCCESS;
  const bool in_place = coll::in_place(sendbuf);
  if (nc != nullptr && device::node_takes(*nc, recv.packed_bytes())) {
    return coll::result(call, *c, device::node_call(*nc, [&] {
                          return device::node_exchange(*nc, in_place ? recv.block(c->rank) : send,
                                                       false, recv, false, in_place);
                        }));
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
  const typed_buffer mine = coll::block_at(recv, displs, recvcounts, c->rank);
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
      blocks[static_cast<std::size_t>(r)] = coll::block_at(recv, displs, recvcounts, r);
    const std::size_t largest = nbc::largest_block(blocks);
    if (largest == 0) return MPI_SUCCESS;
    if (device::node_takes(*nc, largest)) {
      return coll::result(call, *c, device::node_call(*nc, [&] {
                            return device::node_exchange(*nc, in_place ? mine : send, false, recv,
                                                         false, in_place, blocks.data());
                          }));
    }
  }
  if (!in_place) device::typed_copy(send, mine);
  // The same ring as MPI_Allgather, with blocks of their own sizes.
  const coll::channel ch{*c, coll::tag_allgatherv};
  int err = MPI_SUCCESS;
  for (int s = 0; s < n - 1 && err == MPI_SUCCESS; ++s) {
    const int give = (c->rank - s + n) % n;
    const int take = (c->rank - s - 1 + n) % n;
    err = coll::sendrecv(ch, coll::block_at(recv, displs, recvcounts, give), (c->rank + 1) % n,
                         coll::block_at(recv, displs, recvcounts, take), (c->rank - 1 + n) % n);
  }
  return coll::result(call, *c, err);
}

}  // extern "C"
