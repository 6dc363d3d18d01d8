// Collectives among one node's ranks through a shared segment (node.hpp):
// its making, and the blocking calls (node_poll.cpp has the nonblocking).
#include "device/collectives/node.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "device/base/threading.hpp"
#include "device/collectives/node_segment.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"
#include "device/transports/node_memory.hpp"

namespace iris::device {

using namespace node_detail;

namespace {

// Polls until done() holds, spinning first, then yielding the core. Never
// sleeps on the transport's bell: what it waits for is a store to shared
// memory, which no packet announces. A revocation of the communicator,
// which a poll may bring, ends the wait (node_revocation, node.hpp): the
// rank waited for may never come. Read under the call lock, as it is set.
template <typename Done>
void wait_shared(const node_collectives &nc, Done done) {
  int idle = 0;
  while (!done()) {
    const int polled = progress_poll();
    if (node_revoked(nc)) [[unlikely]] {
      // Told before this rank leaves: a rank reading what it published
      // (a large step's buffers) may then fail, and says why (node_call).
      nc.bar->revoked.store(1, std::memory_order_release);
      throw node_revocation{};
    }
    if (polled > 0) {
      idle = 0;
      continue;
    }
    if (++idle <= rt->shared_spin_limit) {
      if (call_guard == call_guarding::locked) call_lock_pause(false);
      continue;
    }
    if (call_guard == call_guarding::locked) {
      call_lock_pause(true);
    } else {
      sched_yield();
    }
  }
}

// Before this rank writes its slot (and byte count) for step s: waits
// until slot_free; `readers`: who reads them at step s.
void wait_slot_free(node_collectives &nc, std::uint64_t s, int readers = all_ranks) {
  if (!slot_free(nc, s)) wait_shared(nc, [&] { return slot_free(nc, s); });
  nc.slot_readers[s & 1U] = readers;
}

// Waits until every rank posted step s. A rank posts a step only after it
// finished the one before, so every rank is done with s - 1 then.
void wait_all_posted(node_collectives &nc, std::uint64_t s) {
  for (int r = 0; r < nc.size; ++r) {
    const rank_line &l = nc.lines[r];
    wait_shared(nc, [&] { return l.posted.load(std::memory_order_acquire) >= s; });
  }
  nc.known_done = std::max(nc.known_done, s - 1);
}

// Takes the next step for a blocking call. Behind pending nonblocking
// steps (all earlier ones), waits until this rank finished them (polling
// moves them on): a rank posts and finishes its steps in order, which
// wait_all_posted relies on, and a large step's buffers stay published
// until every rank is done reading them.
std::uint64_t begin_step(node_collectives &nc) {
  if (nc.nbc_pending > 0) wait_shared(nc, [&] { return nc.nbc_pending == 0; });
  return ++nc.step;
}

std::size_t slot_for(int size) {
  const std::int64_t asked = rt->config.coll_shm_slot;
  if (asked >= 0) return std::max<std::size_t>(cache_line, static_cast<std::size_t>(asked));
  const std::size_t share = (std::size_t{1} << 20) / static_cast<std::size_t>(size);
  return std::clamp<std::size_t>(share, 4096, 16384) / cache_line * cache_line;
}

bool eligible(const communicator &c) {
  if (!rt->config.coll_shm || !rt->transport_config.shm.enabled || c.inter || c.size < 2) {
    return false;
  }
  const int node = rt->pmi->node_of(rt->rank);
  return std::all_of(c.world_rank.begin(), c.world_rank.end(),
                     [&](int w) { return w >= 0 && w < rt->size && rt->pmi->node_of(w) == node; });
}

// This rank's line before the segment is shared: its pid, and the address
// of that pid in its own mapping for the others' CMA probe.
void line_setup(rank_line &mine) {
  mine.pid = getpid();
  mine.in = reinterpret_cast<std::uintptr_t>(&mine.pid);
}

// Whether this rank may read rank `r`'s memory: one word through CMA.
bool cma_probe(const rank_line &theirs) {
  std::int64_t word = 0;
  return node_memory_read(theirs.pid, theirs.in, &word, sizeof word) && word == theirs.pid;
}

// The answers of the making rounds: bit 0 the segment, bit 1 CMA.
constexpr int have_segment = 1;
constexpr int have_cma = 2;

// Rank 0 makes the segment and tells every rank whether it did; each maps
// it, writes its line, probes CMA to rank 0 and answers; rank 0 probes CMA
// to each, removes the name and tells every rank whether all have the
// segment and CMA both ways. Three linear rounds on the collective context,
// once per communicator.
node_collectives *make_node_collectives(communicator &c) {
  const std::size_t slot = slot_for(c.size);
  const std::size_t lines_end =
      sizeof(barrier_lines) + static_cast<std::size_t>(c.size) * sizeof(rank_line);
  const std::size_t bytes = lines_end + static_cast<std::size_t>(c.size) * 2 * slot;
  const std::string name = node_memory_prefix() + "coll" + std::to_string(c.context) + "-" +
                           std::to_string(c.world_rank[0]);
  const std::uint32_t context = c.collective_context();
  const auto line_of = [&](void *base, int r) {
    return reinterpret_cast<rank_line *>(static_cast<std::byte *>(base) + sizeof(barrier_lines)) +
           r;
  };
  const bool try_cma = rt->config.coll_cma;
  void *base = nullptr;
  std::string why;
  int ok = 0;
  if (c.rank == 0) {
    base = node_memory_create(name, bytes, why);
    if (base != nullptr) {
      line_setup(*line_of(base, 0));
      ok = have_segment | (try_cma ? have_cma : 0);
    }
    for (int r = 1; r < c.size; ++r) {
      request_wait_release(send_start(c, context, &ok, sizeof ok, r, tag_node_coll_made));
    }
    for (int r = 1; r < c.size; ++r) {
      int answer = 0;
      request_wait_release(recv_start(c, context, &answer, sizeof answer, r, tag_node_coll_mapped));
      if ((answer & have_segment) == 0 && (ok & have_segment) != 0) {
        ok = 0;
        why = "rank " + std::to_string(r) + " could not map " + name;
      }
      if ((answer & have_cma) == 0 || (ok != 0 && !cma_probe(*line_of(base, r)))) {
        ok &= ~have_cma;
      }
    }
    if (base != nullptr) node_memory_remove(name);
    for (int r = 1; r < c.size; ++r) {
      request_wait_release(send_start(c, context, &ok, sizeof ok, r, tag_node_coll_ready));
    }
  } else {
    request_wait_release(recv_start(c, context, &ok, sizeof ok, 0, tag_node_coll_made));
    if ((ok & have_segment) != 0) base = node_memory_map(name, bytes);
    int answer = 0;
    if (base != nullptr) {
      line_setup(*line_of(base, c.rank));
      answer = have_segment | ((ok & have_cma) != 0 && cma_probe(*line_of(base, 0)) ? have_cma : 0);
    }
    request_wait_release(send_start(c, context, &answer, sizeof answer, 0, tag_node_coll_mapped));
    request_wait_release(recv_start(c, context, &ok, sizeof ok, 0, tag_node_coll_ready));
    if ((ok & have_segment) == 0 && why.empty()) why = "rank 0 could not make or share " + name;
  }
  if ((ok & have_segment) == 0) {
    if (base != nullptr) node_memory_unmap(base, bytes);
    if (rt->config.debug) {
      std::fprintf(stderr,
                   "iris: rank %d: the collectives of a communicator of %d ranks go through "
                   "messages: %s\n",
                   rt->rank, c.size, why.c_str());
    }
    return nullptr;
  }
  auto *nc = new node_collectives;
  nc->base = base;
  nc->mapped = bytes;
  nc->slot = slot;
  nc->size = c.size;
  nc->rank = c.rank;
  nc->served = &c;
  nc->bar = static_cast<barrier_lines *>(base);
  nc->lines = line_of(base, 0);
  nc->slots = static_cast<std::byte *>(base) + lines_end;
  nc->cma = (ok & have_cma) != 0;
  if (nc->cma) nc->scratch.resize(3 * large_chunk);
  nc->seen_done.assign(static_cast<std::size_t>(c.size), 0);
  return nc;
}

}  // namespace

node_collectives *node_collectives_of(communicator &comm) {
  // A revoked communicator's collectives go by messages, which the
  // revocation refuses (protocols/recovery.hpp).
  if (comm.revoked) [[unlikely]] {
    return nullptr;
  }
  if (comm.node_coll_state == 0) {
    node_collectives *nc = eligible(comm) ? make_node_collectives(comm) : nullptr;
    comm.node_coll_state = nc != nullptr ? 1 : -1;
    if (nc != nullptr) comm.node_coll.reset(nc, node_collectives_free);
  }
  return comm.node_coll_state == 1 ? comm.node_coll.get() : nullptr;
}

node_collectives *node_collectives_made(const communicator &comm) {
  return comm.node_coll_state == 1 ? comm.node_coll.get() : nullptr;
}

void node_collectives_free(node_collectives *nc) {
  if (nc == nullptr) return;
  node_memory_unmap(nc->base, nc->mapped);
  delete nc;
}

bool node_revoked(const node_collectives &nc) {
  return nc.served->revoked || nc.bar->revoked.load(std::memory_order_acquire) != 0;
}

void node_serves(node_collectives &nc, const communicator &across) {
  nc.served = &across;
}

bool node_takes(const node_collectives &nc, std::size_t bytes) {
  return bytes <= nc.slot || nc.cma;
}

// Rank 0 releases, not the last to arrive: it leaves first, so that what
// it does next (a Bcast's or a Scatter's root posts its data) is there when
// the others come out. 8-byte Bcast after a barrier at 4 ranks: 1.75 us
// with the last arriver releasing, 0.07 with rank 0; the barrier alone
// takes ~0.5 us longer at 4 ranks (bench/results/2026-11-30-issue43-barrier-root.md).
void node_barrier(node_collectives &nc) {
  const std::uint64_t b = ++nc.barriers;
  const std::uint64_t everyone = b * static_cast<std::uint64_t>(nc.size);
  nc.bar->arrived.fetch_add(1, std::memory_order_acq_rel);
  if (nc.rank == 0) {
    wait_shared(nc, [&] { return nc.bar->arrived.load(std::memory_order_acquire) >= everyone; });
    nc.bar->released.store(b, std::memory_order_release);
    return;
  }
  wait_shared(nc, [&] { return nc.bar->released.load(std::memory_order_acquire) >= b; });
}

namespace {

// A large step ends when every rank has read what it needed of the others'
// buffers: each rank's buffers may change once the call returns.
void end_large_step(node_collectives &nc, std::uint64_t s) {
  nc.mine().done.store(s, std::memory_order_release);
  for (int r = 0; r < nc.size; ++r) {
    const rank_line &l = nc.lines[r];
    wait_shared(nc, [&] { return l.done.load(std::memory_order_acquire) >= s; });
  }
  nc.known_done = s;
}

}  // namespace

int node_detail::take_broadcast(const node_collectives &nc, std::uint64_t s, int root,
                                const typed_buffer &data, std::size_t &root_bytes,
                                std::vector<std::byte> &scratch) {
  const std::uint64_t heard = nc.lines[root].bytes[s & 1U];
  const std::size_t bytes = data.packed_bytes();
  root_bytes = heard & ~failed_mark;
  const int err =
      root_bytes == bytes && (heard & failed_mark) == 0 ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
  const bool read =
      read_posted(nc, s, root, 0, std::min(root_bytes, bytes), root_bytes > nc.slot, data, scratch);
  return read ? err : MPI_ERR_OTHER;
}

int node_bcast(node_collectives &nc, const typed_buffer &data, int root, std::size_t &root_bytes,
               bool failed) {
  const std::uint64_t s = begin_step(nc);
  const std::size_t bytes = data.packed_bytes();
  rank_line &me = nc.mine();
  std::vector<std::byte> packed;
  if (nc.rank == root) {
    root_bytes = bytes;
    // Also a large step: its byte count goes where step s - 2's went.
    wait_slot_free(nc, s);
    // The byte count carries the mark of a root that failed before.
    publish(nc, s, data, false, packed, failed ? failed_mark : 0);
    if (bytes <= nc.slot) {
      me.done.store(s, std::memory_order_release);
    } else {
      end_large_step(nc, s);  // the others read the data where it lies
    }
    return MPI_SUCCESS;
  }
  const rank_line &from = nc.lines[root];
  wait_shared(nc, [&] { return from.posted.load(std::memory_order_acquire) >= s; });
  const int err = take_broadcast(nc, s, root, data, root_bytes, packed);
  me.done.store(s, std::memory_order_release);
  return err;
}

int node_reduce(node_collectives &nc, const void *in, void *out, std::size_t count, int type,
                std::int64_t extent, int op, int root) {
  const std::uint64_t s = begin_step(nc);
  const std::size_t bytes = count * static_cast<std::size_t>(extent);
  const bool large = bytes > nc.slot;
  const bool gets_result = root < 0 || nc.rank == root;
  rank_line &me = nc.mine();
  // Also a large step: its byte count goes where step s - 2's went. A
  // small Reduce's root alone reads the slots.
  wait_slot_free(nc, s, !large && root >= 0 ? root : all_ranks);
  post_reduction(nc, s, in, out, bytes, large);
  if (!gets_result && !large) {
    me.done.store(s, std::memory_order_release);
    return MPI_SUCCESS;
  }
  wait_all_posted(nc, s);
  if (!same_bytes(nc, s, bytes)) {
    // Nobody reads anything: every rank that sees the counts stops here
    // (a Reduce's other ranks say nothing, as through messages).
    if (large) {
      end_large_step(nc, s);
    } else {
      me.done.store(s, std::memory_order_release);
    }
    return gets_result ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
  }
  const fold f{nc, s, static_cast<const std::byte *>(in), extent, type, op, large};
  auto *result = static_cast<std::byte *>(out);
  // A Reduce below reduce_split_min folds at the root alone: split, it
  // was slower (64 KiB 1.4x Open MPI when the root read the shares, 1.1-1.5x
  // with them written, as below; 1.0x whole), above it the ranks' shares
  // run at once (1 MiB at 8 ranks 993 -> 716 us). The root lets the others
  // go once it has read their data, before its last ops.
  if (large && root >= 0 && bytes < reduce_split_min) {
    bool ok = true;
    if (gets_result) {
      fold whole = f;
      whole.read_all = &me.done;
      ok = whole.range(0, count, result);
    }
    end_large_step(nc, s);
    return ok ? MPI_SUCCESS : MPI_ERR_OTHER;
  }
  if (!large) {
    const bool ok = f.range(0, count, result);
    me.done.store(s, std::memory_order_release);
    return ok ? MPI_SUCCESS : MPI_ERR_OTHER;
  }
  // Large: rank r folds its share of the elements, read from every rank.
  // Each element is folded by one rank, so all get the same bits.
  const auto share = [&](int r) { return share_of(nc, count, r); };
  const std::size_t mine_at = share(nc.rank) * static_cast<std::size_t>(extent);
  if (root >= 0) {
    // A Reduce: the other ranks write their shares into the root's receive
    // buffer as they fold them, and the root reads nothing at the end
    // (1 MiB, us: 2 ranks 137 -> 83, 4 ranks 313 -> 241, 8 ranks 660 -> 531,
    // where Open MPI took 100, 272-365 and 1025).
    bool ok = nc.rank == root ? f.range(share(nc.rank), share(nc.rank + 1), result + mine_at)
                              : f.range_to(share(nc.rank), share(nc.rank + 1), nc.lines[root]);
    if (ok && nc.rank != root) me.reduced.store(s, std::memory_order_release);
    end_large_step(nc, s);
    if (nc.rank == root) ok = ok && shares_written(nc, s, root);
    return ok ? MPI_SUCCESS : MPI_ERR_OTHER;
  }
  // An Allreduce: each rank stores `reduced` once its share is in its
  // receive buffer, then reads the others' shares from theirs.
  bool ok = f.range(share(nc.rank), share(nc.rank + 1), result + mine_at);
  me.reduced.store(s, std::memory_order_release);
  for (int k = 1; k < nc.size; ++k) {
    const int r = (nc.rank + k) % nc.size;
    const rank_line &l = nc.lines[r];
    wait_shared(nc, [&] { return l.reduced.load(std::memory_order_acquire) >= s; });
    const std::size_t at = share(r) * static_cast<std::size_t>(extent);
    const std::size_t len = (share(r + 1) - share(r)) * static_cast<std::size_t>(extent);
    ok = node_memory_read(l.pid, l.out + at, result + at, len) && ok;
  }
  end_large_step(nc, s);
  return ok ? MPI_SUCCESS : MPI_ERR_OTHER;
}

void node_detail::publish(node_collectives &nc, std::uint64_t s, const typed_buffer &data,
                          bool aside, std::vector<std::byte> &packed, std::uint64_t mark) {
  const std::size_t bytes = data.packed_bytes();
  rank_line &me = nc.mine();
  if (bytes <= nc.slot) {
    typed_pack(data, nc.slot_of(nc.rank, s));
  } else if (data.contiguous() && !aside) {
    me.in = reinterpret_cast<std::uintptr_t>(data.base);
  } else {
    packed.resize(bytes);
    typed_pack(data, packed.data());
    me.in = reinterpret_cast<std::uintptr_t>(packed.data());
  }
  me.bytes[s & 1U] = bytes | mark;
  me.posted.store(s, std::memory_order_release);
}

bool node_detail::read_posted(const node_collectives &nc, std::uint64_t s, int r, std::size_t at,
                              std::size_t len, bool large, const typed_buffer &to,
                              std::vector<std::byte> &scratch) {
  if (!large) {
    typed_unpack(nc.slot_of(r, s) + at, len, to);
    return true;
  }
  const rank_line &l = nc.lines[r];
  if (r == nc.rank) {  // in this process: no system call
    typed_unpack(reinterpret_cast<const std::byte *>(l.in) + at, len, to);
    return true;
  }
  if (to.contiguous()) return node_memory_read(l.pid, l.in + at, to.base, len);
  scratch.resize(len);
  if (!node_memory_read(l.pid, l.in + at, scratch.data(), len)) return false;
  typed_unpack(scratch.data(), len, to);
  return true;
}

// Bytes [at, at + to.packed_bytes()) of rank r's posted data, unpacked into `to`.
bool node_detail::take_data(const node_collectives &nc, std::uint64_t s, int r, std::size_t at,
                            const typed_buffer &to, std::vector<std::byte> &scratch) {
  return read_posted(nc, s, r, at, to.packed_bytes(), nc.lines[r].bytes[s & 1U] > nc.slot, to,
                     scratch);
}

int node_detail::exchange_take(const node_collectives &nc, std::uint64_t s,
                               const typed_buffer &recv, bool personal, bool own_in_place,
                               const typed_buffer *blocks) {
  const std::size_t block = recv.packed_bytes();
  const auto to = [&](int r) { return blocks != nullptr ? blocks[r] : recv.block(r); };
  if (blocks != nullptr) {
    for (int r = 0; r < nc.size; ++r) {
      if (nc.lines[r].bytes[s & 1U] != blocks[r].packed_bytes()) return MPI_ERR_TRUNCATE;
    }
  } else if (!same_bytes(nc, s, personal ? block * static_cast<std::size_t>(nc.size) : block)) {
    return MPI_ERR_TRUNCATE;
  }
  std::vector<std::byte> scratch;
  const std::size_t at = personal ? block * static_cast<std::size_t>(nc.rank) : 0;
  bool ok = true;
  // Each rank starts with the next one's data, so that no rank's memory
  // is read by all at once.
  for (int k = 0; k < nc.size; ++k) {
    const int r = (nc.rank + 1 + k) % nc.size;
    if (r == nc.rank && own_in_place) continue;
    ok = take_data(nc, s, r, at, to(r), scratch) && ok;
  }
  return ok ? MPI_SUCCESS : MPI_ERR_OTHER;
}

bool node_detail::exchange_take_from(const node_collectives &nc, std::uint64_t s, int r,
                                     const typed_buffer &recv, bool personal, bool own_in_place,
                                     const typed_buffer *blocks, std::vector<std::byte> &scratch,
                                     int &err) {
  const rank_line &l = nc.lines[r];
  if (l.posted.load(std::memory_order_acquire) < s) return false;
  const std::size_t block = recv.packed_bytes();
  const std::size_t want = blocks != nullptr ? blocks[r].packed_bytes()
                           : personal        ? block * static_cast<std::size_t>(nc.size)
                                             : block;
  if (l.bytes[s & 1U] != want) err = MPI_ERR_TRUNCATE;
  if (err == MPI_ERR_TRUNCATE || (r == nc.rank && own_in_place)) return true;
  const std::size_t at = personal ? block * static_cast<std::size_t>(nc.rank) : 0;
  if (!take_data(nc, s, r, at, blocks != nullptr ? blocks[r] : recv.block(r), scratch)) {
    err = MPI_ERR_OTHER;
  }
  return true;
}

int node_detail::gather_take(const node_collectives &nc, std::uint64_t s, const typed_buffer &recv,
                             bool own_in_place) {
  if (!same_bytes(nc, s, recv.packed_bytes())) return MPI_ERR_TRUNCATE;
  std::vector<std::byte> scratch;
  bool ok = true;
  for (int r = 0; r < nc.size; ++r) {
    if (r == nc.rank && own_in_place) continue;
    ok = take_data(nc, s, r, 0, recv.block(r), scratch) && ok;
  }
  return ok ? MPI_SUCCESS : MPI_ERR_OTHER;
}

int node_detail::scatter_take(const node_collectives &nc, std::uint64_t s, int root,
                              const typed_buffer &recv) {
  const std::size_t block = recv.packed_bytes();
  const std::size_t at = block * static_cast<std::size_t>(nc.rank);
  // The root's own block: its run is its own, nothing to compare.
  if (nc.rank != root &&
      nc.lines[root].bytes[s & 1U] != block * static_cast<std::size_t>(nc.size)) {
    return MPI_ERR_TRUNCATE;
  }
  std::vector<std::byte> scratch;
  return take_data(nc, s, root, at, recv, scratch) ? MPI_SUCCESS : MPI_ERR_OTHER;
}

namespace {

// exchange_take, each rank's part taken as soon as that rank has posted
// (the next rank first), not once every rank has: the ranks still waiting
// for a core are read last, not waited for first.
int take_as_posted(node_collectives &nc, std::uint64_t s, const typed_buffer &recv, bool personal,
                   bool own_in_place, const typed_buffer *blocks) {
  std::vector<char> taken(static_cast<std::size_t>(nc.size), 0);
  std::vector<std::byte> scratch;
  int err = MPI_SUCCESS;
  for (int left = nc.size; left > 0;) {
    wait_shared(nc, [&] {
      bool took = false;
      for (int k = 0; k < nc.size; ++k) {
        const int r = (nc.rank + 1 + k) % nc.size;
        if (taken[static_cast<std::size_t>(r)] != 0 ||
            !exchange_take_from(nc, s, r, recv, personal, own_in_place, blocks, scratch, err)) {
          continue;
        }
        taken[static_cast<std::size_t>(r)] = 1;
        --left;
        took = true;
      }
      return took;
    });
  }
  nc.known_done = std::max(nc.known_done, s - 1);
  return err;
}

// Posts this rank's data for step s (publish), once its slot is free;
// `readers` as wait_slot_free's.
void post_data(node_collectives &nc, std::uint64_t s, const typed_buffer &data, bool aside,
               std::vector<std::byte> &packed, int readers = all_ranks) {
  wait_slot_free(nc, s, readers);
  publish(nc, s, data, aside, packed);
}

}  // namespace

int node_exchange(node_collectives &nc, const typed_buffer &mine, bool aside,
                  const typed_buffer &recv, bool personal, bool own_in_place,
                  const typed_buffer *blocks) {
  const std::uint64_t s = begin_step(nc);
  std::vector<std::byte> packed;
  post_data(nc, s, mine, aside, packed);
  int err = MPI_SUCCESS;
  if (mine.packed_bytes() <= nc.slot) {
    wait_all_posted(nc, s);
    err = exchange_take(nc, s, recv, personal, own_in_place, blocks);
    nc.mine().done.store(s, std::memory_order_release);
  } else {
    // A large step: as posted (1 MiB blocks, us: 8 ranks Alltoall 6216 ->
    // 5240, Allgather 4815 -> 4220; 4 ranks 935 -> 810, 719 -> 563). Small
    // steps keep the one wait for all: one by one was no faster.
    err = take_as_posted(nc, s, recv, personal, own_in_place, blocks);
    end_large_step(nc, s);
  }
  return err;
}

int node_gather(node_collectives &nc, const typed_buffer &mine, const typed_buffer *recv, int root,
                bool own_in_place) {
  const std::uint64_t s = begin_step(nc);
  std::vector<std::byte> packed;
  post_data(nc, s, mine, false, packed, root);
  rank_line &me = nc.mine();
  if (nc.rank != root) {
    me.done.store(s, std::memory_order_release);
    // The root reads a large block where it lies.
    if (mine.packed_bytes() > nc.slot) {
      const rank_line &l = nc.lines[root];
      wait_shared(nc, [&] { return l.done.load(std::memory_order_acquire) >= s; });
    }
    return MPI_SUCCESS;
  }
  // Large blocks as posted, as node_exchange (us, 8 ranks: 32 KiB blocks
  // 43.4 -> 35.1, 64 KiB 61.0 -> 48.3, 128 KiB 96.5 -> 76.2; 4 ranks 64
  // KiB 26.6 -> 22.4); from 256 KiB they go by messages (api/coll).
  int err = MPI_SUCCESS;
  if (mine.packed_bytes() > nc.slot) {
    err = take_as_posted(nc, s, *recv, false, own_in_place, nullptr);
  } else {
    wait_all_posted(nc, s);
    err = gather_take(nc, s, *recv, own_in_place);
  }
  me.done.store(s, std::memory_order_release);
  return err;
}

std::uint64_t node_gatherv_post(node_collectives &nc, const typed_buffer &mine, bool by_message,
                                int root, std::vector<std::byte> &packed) {
  const std::uint64_t s = begin_step(nc);
  if (by_message) {
    wait_slot_free(nc, s, root);
    rank_line &me = nc.mine();
    me.bytes[s & 1U] = mine.packed_bytes() | message_mark;
    me.posted.store(s, std::memory_order_release);
  } else {
    post_data(nc, s, mine, false, packed, root);
  }
  return s;
}

void node_gatherv_wait_all(node_collectives &nc, std::uint64_t s) {
  wait_all_posted(nc, s);
}

void node_wait(const node_collectives &nc, const std::function<bool()> &done) {
  wait_shared(nc, done);
}

bool node_gatherv_posted(const node_collectives &nc, std::uint64_t s, int r, std::uint64_t &bytes) {
  if (nc.lines[r].posted.load(std::memory_order_acquire) < s) return false;
  bytes = nc.lines[r].bytes[s & 1U];
  return true;
}

int node_gatherv_end(node_collectives &nc, std::uint64_t s, int root, const typed_buffer *blocks) {
  rank_line &me = nc.mine();
  if (nc.rank != root) {
    // Its block is in its slot or on its way as a message: nothing of it
    // is read where it lies.
    me.done.store(s, std::memory_order_release);
    return MPI_SUCCESS;
  }
  wait_all_posted(nc, s);  // seen already: sets known_done
  const int err = gatherv_take_posted(nc, s, root, blocks);
  me.done.store(s, std::memory_order_release);
  return err;
}

int node_detail::gatherv_take_posted(const node_collectives &nc, std::uint64_t s, int root,
                                     const typed_buffer *blocks) {
  std::vector<std::byte> scratch;
  int err = MPI_SUCCESS;
  for (int r = 0; r < nc.size; ++r) {
    const std::uint64_t bytes = nc.lines[r].bytes[s & 1U];
    if (r == root || (bytes & message_mark) != 0) continue;
    if (bytes != blocks[r].packed_bytes()) {
      err = MPI_ERR_TRUNCATE;
    } else if (!take_data(nc, s, r, 0, blocks[r], scratch) && err == MPI_SUCCESS) {
      err = MPI_ERR_OTHER;
    }
  }
  return err;
}

int node_scatterv(node_collectives &nc, const typed_buffer *blocks, const typed_buffer *recv,
                  int root, std::vector<int> &by_message, bool &comes_as_message) {
  const std::uint64_t s = begin_step(nc);
  rank_line &me = nc.mine();
  if (nc.rank == root) {
    // The others come as messages.
    wait_slot_free(nc, s);
    post_table_run(nc, s, blocks, root, by_message, SIZE_MAX);
    me.done.store(s, std::memory_order_release);  // the run is in the slot
    return MPI_SUCCESS;
  }
  const rank_line &from = nc.lines[root];
  wait_shared(nc, [&] { return from.posted.load(std::memory_order_acquire) >= s; });
  std::vector<std::byte> scratch;
  const int err = take_table_block(nc, s, root, *recv, comes_as_message, scratch);
  me.done.store(s, std::memory_order_release);
  return err;
}

std::uint64_t node_alltoallv_post(node_collectives &nc, const typed_buffer *out,
                                  std::size_t read_from, std::vector<int> &to_message,
                                  bool &exposed) {
  const std::uint64_t s = begin_step(nc);
  wait_slot_free(nc, s);
  exposed = post_table_run(nc, s, out, nc.rank, to_message, read_from);
  return s;
}

int node_alltoallv_take(node_collectives &nc, std::uint64_t s, const typed_buffer *from,
                        std::vector<int> &from_message) {
  std::vector<char> taken(static_cast<std::size_t>(nc.size), 0);
  int err = MPI_SUCCESS;
  if (!node_alltoallv_as_posted(nc, from)) wait_all_posted(nc, s);
  wait_shared(nc, [&] { return take_posted_blocks(nc, s, from, taken, from_message, err); });
  return err;
}

void node_alltoallv_end(node_collectives &nc, std::uint64_t s, bool exposed) {
  if (exposed) {
    end_large_step(nc, s);  // its blocks are read where they lie
  } else {
    nc.mine().done.store(s, std::memory_order_release);  // everything was in its slot
  }
}

int node_scatter(node_collectives &nc, const typed_buffer *all, const typed_buffer *recv,
                 int root) {
  const std::uint64_t s = begin_step(nc);
  rank_line &me = nc.mine();
  if (nc.rank == root) {
    std::vector<std::byte> packed;
    post_data(nc, s, *all, false, packed);
    const int err = recv != nullptr ? scatter_take(nc, s, root, *recv) : MPI_SUCCESS;
    if (all->packed_bytes() > nc.slot) {
      end_large_step(nc, s);  // the others read it where it lies
    } else {
      me.done.store(s, std::memory_order_release);
    }
    return err;
  }
  const rank_line &from = nc.lines[root];
  wait_shared(nc, [&] { return from.posted.load(std::memory_order_acquire) >= s; });
  const int err = scatter_take(nc, s, root, *recv);
  me.done.store(s, std::memory_order_release);
  return err;
}

}  // namespace iris::device
