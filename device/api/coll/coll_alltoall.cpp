// MPI_Alltoall and MPI_Alltoallv within one communicator: through the node
// segment where it takes them, else by messages (linear, pairwise or
// Bruck's; device/api/README.md says which when). See coll.hpp for the
// rules every collective here follows.
#include <algorithm>
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

namespace {

using device::typed_buffer;

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
    err = coll::post_recv_into(ch, from_block((me - s + n) % n), (me - s + n) % n, pending);
  }
  for (int s = 1; s < n && err == MPI_SUCCESS; ++s) {
    err = coll::post_send_from(ch, to_block((me + s) % n), (me + s) % n, pending);
  }
  const int waited = coll::wait_all(pending);
  return err != MPI_SUCCESS ? err : waited;
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

// Pairwise and linear over Alltoall's blocks by index.
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

// Alltoallv on one node: each rank's table and the blocks that fit its
// slot through the segment, as Scatterv's root posts them, each rank
// taking its block of every run; a block that does not fit goes as a
// message (both sides learn which from the table). `out` and `in`: the
// blocks to and from every rank, this rank's own already copied.
int alltoallv_node(const communicator &c, device::node_collectives &nc, coll::root_blocks &out,
                   coll::root_blocks &in) {
  const int n = c.size;
  std::vector<int> to_message;
  std::vector<int> from_message;
  // The blocks past a slot that are not read in place (blocks from
  // alltoall_read_from(n) in one run are, as Alltoall's: 8 ranks 64 KiB
  // 261 -> 247 us, 4 ranks 1 MiB 1100 -> 906) move as messages, started
  // before this rank waits for the others' runs: its sends, and its
  // receives of blocks too large for any slot (64 KiB blocks at 8 ranks:
  // 243 us by messages alone, 321-420 when they waited for the segment).
  // The tags alternate by step, and no rank starts the step after next
  // before this one ends it, so an early receive (withdrawn before this
  // rank ends the step if unused) could meet no other step's message.
  const std::size_t read_from = nbc::alltoall_read_from(n);
  bool exposed = false;
  std::uint64_t step = 0;
  if (const int revoked = device::node_call(nc, [&] {
        step = device::node_alltoallv_post(nc, out.data(), read_from, to_message, exposed);
      })) {
    return revoked;  // nothing posted yet
  }
  const coll::channel big{c, (step & 1U) != 0 ? coll::tag_alltoallv_odd : coll::tag_alltoallv};
  std::vector<device::request *> pending;
  std::vector<device::request *> early;
  int posted = coll::alltoallv_post_early(big, nc, in.data(), read_from, early);
  const auto keep = [&posted](int e) {
    if (posted == MPI_SUCCESS) posted = e;
  };
  for (const int r : to_message) keep(coll::post_send_from(big, out[r], r, pending));
  // A revocation met in the segment has ended (failed) every message
  // posted on the communicator: they are waited for all the same.
  int err = device::node_call(
      nc, [&] { return device::node_alltoallv_take(nc, step, in.data(), from_message); });
  keep(coll::alltoallv_settle_early(big, in.data(), from_message, early, pending));
  if (err != MPI_ERR_REVOKED &&
      device::node_call(nc, [&] { device::node_alltoallv_end(nc, step, exposed); })) {
    err = MPI_ERR_REVOKED;
  }
  const int waited = coll::wait_all(pending);
  const int first = err != MPI_SUCCESS ? err : posted;
  return first != MPI_SUCCESS ? first : waited;
}

}  // namespace

int iris::api::coll::alltoallv_post_early(const channel &ch, device::node_collectives &nc,
                                          const typed_buffer in[], std::size_t read_from,
                                          std::vector<device::request *> &early) {
  const int n = ch.comm.size;
  const std::size_t room = device::node_alltoallv_room(nc);
  early.assign(static_cast<std::size_t>(n), nullptr);
  int first = MPI_SUCCESS;
  for (int k = 1; k < n; ++k) {
    const int r = (ch.comm.rank - k + n) % n;
    const std::size_t bytes = in[r].packed_bytes();
    if (bytes <= room || device::node_alltoallv_reads(nc, bytes, read_from)) continue;
    const int err = post_recv(ch, in[r], r, early[static_cast<std::size_t>(r)]);
    if (first == MPI_SUCCESS) first = err;
  }
  return first;
}

int iris::api::coll::alltoallv_settle_early(const channel &ch, const typed_buffer in[],
                                            const std::vector<int> &from_message,
                                            std::vector<device::request *> &early,
                                            std::vector<device::request *> &pending) {
  int first = MPI_SUCCESS;
  for (const int r : from_message) {
    device::request *&q = early[static_cast<std::size_t>(r)];
    if (q != nullptr) {
      pending.push_back(std::exchange(q, nullptr));
      continue;
    }
    const int err = post_recv_into(ch, in[r], r, pending);
    if (first == MPI_SUCCESS) first = err;
  }
  for (device::request *&q : early) {
    if (q == nullptr) continue;
    device::request_cancel(*q);
    wait(std::exchange(q, nullptr));
  }
  return first;
}

int iris::api::coll::alltoall_blocks(const char *call, communicator &c, root_blocks &out,
                                     root_blocks &in) {
  const int n = c.size;
  auto chosen = static_cast<alltoall_algorithm>(device::rt->config.coll_alltoall);
  // On one node through the segment; a forced algorithm skips it.
  device::node_collectives *nc =
      chosen == alltoall_algorithm::automatic ? scatterv_node_of(c) : nullptr;
  if (nc != nullptr) return result(call, c, alltoallv_node(c, *nc, out, in));
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
  const channel ch{c, tag_alltoallv};
  const auto to_block = [&](int r) { return out[r]; };
  const auto from_block = [&](int r) { return in[r]; };
  return result(call, c,
                chosen == alltoall_algorithm::linear ? exchange_linear(ch, to_block, from_block)
                                                     : exchange_pairwise(ch, to_block, from_block));
}

extern "C" {

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
  if (int err = coll::all_checks(call, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                 recvtype, c, send, recv, true)) {
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
    return coll::result(call, *c, device::node_call(*nc, [&] {
                          return device::node_exchange(*nc, all, in_place, recv, true, false);
                        }));
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
  coll::root_blocks out(n);
  std::vector<std::byte> saved;
  if (coll::in_place(sendbuf)) {
    std::size_t total = 0;
    for (int i = 0; i < n; ++i)
      total += coll::block_at(recv, rdispls, recvcounts, i).packed_bytes();
    saved.resize(total);
    std::size_t at = 0;
    for (int i = 0; i < n; ++i) {
      const typed_buffer b = coll::block_at(recv, rdispls, recvcounts, i);
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
    for (int i = 0; i < n; ++i) out[i] = coll::block_at(send, sdispls, sendcounts, i);
  }
  coll::root_blocks in(n);
  for (int i = 0; i < n; ++i) in[i] = coll::block_at(recv, rdispls, recvcounts, i);
  device::typed_copy(out[c->rank], in[c->rank]);
  return coll::alltoall_blocks(call, *c, out, in);
}

}  // extern "C"
