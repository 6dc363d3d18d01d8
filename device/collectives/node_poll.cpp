// The nonblocking collectives through the node segment (node.hpp): each
// call is a step that a poll moves on and that never waits.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/collectives/node.hpp"
#include "device/collectives/node_segment.hpp"
#include "device/transports/node_memory.hpp"
#include "include/mpi.h"

namespace iris::device {

using namespace node_detail;

bool node_fits_slot(const node_collectives &nc, std::size_t bytes) {
  return bytes <= nc.slot;
}

std::uint64_t node_step_begin(node_collectives &nc) {
  if (nc.nbc_pending == 0) nc.finished = nc.step;  // the steps before were blocking
  ++nc.nbc_pending;
  return ++nc.step;
}

namespace {

// Whether nonblocking step s may post: this rank finished its step s - 1
// (steps stay in order on each rank), and when it writes its slot (or its
// byte count) slot_free; `readers` as node.cpp's wait_slot_free.
bool may_post(node_collectives &nc, std::uint64_t s, bool writes_slot, int readers = all_ranks) {
  if (nc.finished < s - 1) return false;
  if (!writes_slot) return true;
  if (!slot_free(nc, s)) return false;
  nc.slot_readers[s & 1U] = readers;  // this step's
  return true;
}

// Whether every rank posted step s (then every rank finished s - 1).
bool all_posted(node_collectives &nc, std::uint64_t s) {
  for (int r = 0; r < nc.size; ++r) {
    if (nc.lines[r].posted.load(std::memory_order_acquire) < s) return false;
  }
  nc.known_done = std::max(nc.known_done, s - 1);
  return true;
}

// Whether every rank finished step s (nothing of this rank's is read then).
bool all_done(node_collectives &nc, std::uint64_t s) {
  for (int r = 0; r < nc.size; ++r) {
    if (nc.lines[r].done.load(std::memory_order_acquire) < s) return false;
  }
  nc.known_done = s;
  return true;
}

void finish_nonblocking(node_collectives &nc, std::uint64_t s) {
  nc.mine().done.store(s, std::memory_order_release);
  nc.finished = s;
  --nc.nbc_pending;
}

// The phases of a nonblocking step (its `phase`, kept by the caller).
// to_gather + k (node_reduce_poll) and to_take + k (node_exchange_poll):
// k ranks' parts taken.
enum : int { to_post, to_fold, to_end, to_gather, to_take };

// Finishes step s once every rank is done with it (phase to_end).
bool finish_when_all_done(node_collectives &nc, std::uint64_t s) {
  if (!all_done(nc, s)) return false;
  finish_nonblocking(nc, s);
  return true;
}

// This rank's step s once it took all it needed: finished at once when its
// own data (`bytes`) fit its slot; else the others read them where they
// lie, and the step finishes once every rank is done (phase to_end).
bool finish_posted(node_collectives &nc, std::uint64_t s, std::size_t bytes, int &phase) {
  if (bytes <= nc.slot) {
    finish_nonblocking(nc, s);
    return true;
  }
  nc.mine().done.store(s, std::memory_order_release);
  phase = to_end;
  return finish_when_all_done(nc, s);
}

}  // namespace

bool node_reduce_poll(node_collectives &nc, std::uint64_t s, int &phase, const void *in, void *out,
                      std::size_t count, int type, std::int64_t extent, int op, int root,
                      int &err) {
  rank_line &me = nc.mine();
  const std::size_t bytes = count * static_cast<std::size_t>(extent);
  const bool large = bytes > nc.slot;
  const bool gets_result = root < 0 || nc.rank == root;
  // Large, as node_reduce's: rank r folds share r of every rank's data
  // (read in place); a Reduce's other ranks write theirs into the root's
  // receive buffer, an Allreduce's ranks read the others' shares. The step
  // ends when every rank is done reading (this rank's buffers stay
  // published). A Reduce below reduce_split_min folds at the root alone.
  const bool split = large && (root < 0 || bytes >= reduce_split_min);
  auto *result = static_cast<std::byte *>(out);
  const auto share = [&](int r) { return share_of(nc, count, r); };
  const fold f{nc, s, static_cast<const std::byte *>(in), extent, type, op, large};
  if (phase == to_post) {
    if (!may_post(nc, s, true, !large && root >= 0 ? root : all_ranks)) return false;
    post_reduction(nc, s, in, out, bytes, large);
    if (!gets_result && !large) {  // the root reads the slot before it is used again
      err = MPI_SUCCESS;
      finish_nonblocking(nc, s);
      return true;
    }
    phase = to_fold;
  }
  if (phase == to_fold) {
    if (!all_posted(nc, s)) return false;
    const bool same = same_bytes(nc, s, bytes);
    // A Reduce's other ranks say nothing of a mismatch, as through messages.
    err = same || !gets_result ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
    if (!large) {
      if (same && !f.range(0, count, result)) err = MPI_ERR_OTHER;
      finish_nonblocking(nc, s);
      return true;
    }
    const std::size_t mine_at = share(nc.rank) * static_cast<std::size_t>(extent);
    if (!same || !split) {
      fold whole = f;  // as node_reduce: the others go once their data are read
      whole.read_all = &me.done;
      if (same && gets_result && !whole.range(0, count, result)) err = MPI_ERR_OTHER;
    } else if (root >= 0 && nc.rank != root) {
      if (f.range_to(share(nc.rank), share(nc.rank + 1), nc.lines[root])) {
        me.reduced.store(s, std::memory_order_release);
      } else {
        err = MPI_ERR_OTHER;
      }
    } else {
      if (!f.range(share(nc.rank), share(nc.rank + 1), result + mine_at)) err = MPI_ERR_OTHER;
      me.reduced.store(s, std::memory_order_release);
      if (root < 0) phase = to_gather + 1;  // then the share of rank + 1, rank + 2, ...
    }
    if (phase == to_fold) {
      me.done.store(s, std::memory_order_release);
      phase = to_end;
    }
  }
  // to_gather + k (an Allreduce): the share of rank + k is next.
  while (phase > to_gather && phase < to_gather + nc.size) {
    const int r = (nc.rank + phase - to_gather) % nc.size;
    const rank_line &l = nc.lines[r];
    if (l.reduced.load(std::memory_order_acquire) < s) return false;
    const std::size_t at = share(r) * static_cast<std::size_t>(extent);
    const std::size_t len = (share(r + 1) - share(r)) * static_cast<std::size_t>(extent);
    if (!node_memory_read(l.pid, l.out + at, result + at, len)) err = MPI_ERR_OTHER;
    if (++phase == to_gather + nc.size) {
      me.done.store(s, std::memory_order_release);
      phase = to_end;
    }
  }
  if (!finish_when_all_done(nc, s)) return false;
  if (split && root == nc.rank && err == MPI_SUCCESS && !shares_written(nc, s, root)) {
    err = MPI_ERR_OTHER;
  }
  return true;
}

bool node_bcast_poll(node_collectives &nc, std::uint64_t s, const typed_buffer &data, int root,
                     int &phase, std::vector<std::byte> &packed, int &err) {
  if (nc.rank == root) {
    if (phase == to_post) {
      if (!may_post(nc, s, true)) return false;
      // As node_bcast's root: above a slot the others read the data where
      // it lies (or in `packed`), and the step ends when every rank is done.
      publish(nc, s, data, false, packed);
      return finish_posted(nc, s, data.packed_bytes(), phase);
    }
    return finish_when_all_done(nc, s);
  }
  const rank_line &from = nc.lines[root];
  if (!may_post(nc, s, false) || from.posted.load(std::memory_order_acquire) < s) return false;
  std::size_t root_bytes = 0;
  err = take_broadcast(nc, s, root, data, root_bytes, packed);
  finish_nonblocking(nc, s);
  return true;
}

bool node_exchange_poll(node_collectives &nc, std::uint64_t s, int &phase, const typed_buffer &mine,
                        bool aside, const typed_buffer &recv, bool personal, bool own_in_place,
                        const typed_buffer *blocks, node_exchange_state &state, int &err) {
  if (phase == to_post) {
    if (!may_post(nc, s, true)) return false;
    publish(nc, s, mine, aside, state.packed);
    err = MPI_SUCCESS;
    // A large step reads each rank's data as soon as it has posted, in any
    // order (as node_exchange: in rank order, one rank still waiting for a
    // core held back the reads of all after it: 8 ranks, 1 MiB blocks,
    // Ialltoall 1.2x Alltoall), counting the ranks read in the phase:
    // to_take + k.
    phase = mine.packed_bytes() <= nc.slot ? to_fold : to_take;
    if (phase == to_take) state.taken.assign(static_cast<std::size_t>(nc.size), 0);
  }
  if (phase == to_fold) {
    if (!all_posted(nc, s)) return false;
    err = exchange_take(nc, s, recv, personal, own_in_place, blocks);
    return finish_posted(nc, s, mine.packed_bytes(), phase);
  }
  if (phase >= to_take) {
    std::vector<std::byte> scratch;
    for (int k = 0; k < nc.size && phase < to_take + nc.size; ++k) {
      const int r = (nc.rank + 1 + k) % nc.size;
      char &taken = state.taken[static_cast<std::size_t>(r)];
      if (taken != 0 ||
          !exchange_take_from(nc, s, r, recv, personal, own_in_place, blocks, scratch, err)) {
        continue;
      }
      taken = 1;
      ++phase;
    }
    if (phase < to_take + nc.size) return false;
    nc.known_done = std::max(nc.known_done, s - 1);
    return finish_posted(nc, s, mine.packed_bytes(), phase);
  }
  return finish_when_all_done(nc, s);
}

bool node_alltoallv_post_poll(node_collectives &nc, std::uint64_t s, const typed_buffer *out,
                              std::size_t read_from, std::vector<int> &to_message, bool &exposed) {
  if (!may_post(nc, s, true)) return false;
  exposed = post_table_run(nc, s, out, nc.rank, to_message, read_from);
  return true;
}

bool node_alltoallv_take_poll(node_collectives &nc, std::uint64_t s, const typed_buffer *in,
                              bool as_posted, std::vector<char> &taken,
                              std::vector<int> &from_message, int &err) {
  if (!as_posted && !all_posted(nc, s)) return false;
  return take_posted_blocks(nc, s, in, taken, from_message, err);
}

bool node_alltoallv_end_poll(node_collectives &nc, std::uint64_t s, bool exposed) {
  if (!exposed) {
    finish_nonblocking(nc, s);  // everything was in its slot
    return true;
  }
  nc.mine().done.store(s, std::memory_order_release);  // its blocks are read where they lie
  return finish_when_all_done(nc, s);
}

bool node_gatherv_post_poll(node_collectives &nc, std::uint64_t s, const typed_buffer &mine,
                            bool by_message, int root) {
  if (!may_post(nc, s, true, root)) return false;
  if (by_message) {
    rank_line &me = nc.mine();
    me.bytes[s & 1U] = mine.packed_bytes() | message_mark;
    me.posted.store(s, std::memory_order_release);
  } else {
    std::vector<std::byte> unused;  // a block that fits a slot is packed there
    publish(nc, s, mine, false, unused);
  }
  if (nc.rank != root) finish_nonblocking(nc, s);  // the root reads the slot before reuse
  return true;
}

bool node_gatherv_end_poll(node_collectives &nc, std::uint64_t s, int root,
                           const typed_buffer *blocks, int &err) {
  if (!all_posted(nc, s)) return false;
  err = gatherv_take_posted(nc, s, root, blocks);
  finish_nonblocking(nc, s);
  return true;
}

bool node_gather_poll(node_collectives &nc, std::uint64_t s, int &phase, const typed_buffer &mine,
                      const typed_buffer *recv, int root, bool own_in_place, int &err) {
  if (phase == to_post) {
    if (!may_post(nc, s, true, root)) return false;
    std::vector<std::byte> unused;  // a block that fits a slot is packed there
    publish(nc, s, mine, false, unused);
    err = MPI_SUCCESS;
    if (nc.rank != root) {  // the root reads the slot before it is used again
      finish_nonblocking(nc, s);
      return true;
    }
    phase = to_fold;
  }
  if (!all_posted(nc, s)) return false;
  err = gather_take(nc, s, *recv, own_in_place);
  finish_nonblocking(nc, s);
  return true;
}

bool node_scatter_poll(node_collectives &nc, std::uint64_t s, int &phase, const typed_buffer *all,
                       const typed_buffer *recv, int root, std::vector<std::byte> &packed,
                       int &err) {
  if (nc.rank != root) {
    if (!may_post(nc, s, false) || nc.lines[root].posted.load(std::memory_order_acquire) < s) {
      return false;
    }
    err = scatter_take(nc, s, root, *recv);
    finish_nonblocking(nc, s);
    return true;
  }
  if (phase == to_post) {
    if (!may_post(nc, s, true)) return false;
    publish(nc, s, *all, false, packed);
    err = recv != nullptr ? scatter_take(nc, s, root, *recv) : MPI_SUCCESS;
    return finish_posted(nc, s, all->packed_bytes(), phase);
  }
  return finish_when_all_done(nc, s);
}

bool node_barrier_poll(node_collectives &nc, std::uint64_t s, int &phase) {
  if (phase == to_post) {
    if (!may_post(nc, s, false)) return false;
    nc.mine().posted.store(s, std::memory_order_release);
    phase = to_fold;
  }
  if (!all_posted(nc, s)) return false;
  finish_nonblocking(nc, s);
  return true;
}

}  // namespace iris::device
