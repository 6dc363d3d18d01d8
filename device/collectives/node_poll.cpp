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
// byte count) every rank finished s - 2, the step that used them last.
bool may_post(node_collectives &nc, std::uint64_t s, bool writes_slot) {
  if (nc.finished < s - 1) return false;
  if (!writes_slot || s <= 2 || nc.known_done >= s - 2) return true;
  for (int r = 0; r < nc.size; ++r) {
    if (nc.lines[r].done.load(std::memory_order_acquire) < s - 2) return false;
  }
  nc.known_done = s - 2;
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
enum : int { to_post, to_fold, to_end, to_gather };

}  // namespace

bool node_allreduce_poll(node_collectives &nc, std::uint64_t s, int &phase, const void *in,
                         void *out, std::size_t count, int type, std::int64_t extent, int op,
                         int &err) {
  rank_line &me = nc.mine();
  const std::size_t bytes = count * static_cast<std::size_t>(extent);
  const bool large = bytes > nc.slot;
  auto *result = static_cast<std::byte *>(out);
  // Large, as node_reduce's: rank r folds share r of every rank's data
  // (read in place), then reads the others' shares; the step ends when
  // every rank is done reading (this rank's buffers stay published).
  const auto share = [&](int r) { return share_of(nc, count, r); };
  const fold f{nc, s, static_cast<const std::byte *>(in), extent, type, op, large};
  if (phase == to_post) {
    if (!may_post(nc, s, true)) return false;
    post_reduction(nc, s, in, bytes, large);
    phase = to_fold;
  }
  if (phase == to_fold) {
    if (!all_posted(nc, s)) return false;
    const bool same = same_bytes(nc, s, bytes);
    err = same ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
    if (same && !large && !f.range(0, count, result)) err = MPI_ERR_OTHER;
    if (!same || !large) {
      if (!large) {
        finish_nonblocking(nc, s);
        return true;
      }
      me.done.store(s, std::memory_order_release);  // nobody reads anything
      phase = to_end;
    } else {
      const std::size_t mine_at = share(nc.rank) * static_cast<std::size_t>(extent);
      me.out = reinterpret_cast<std::uintptr_t>(result);
      if (!f.range(share(nc.rank), share(nc.rank + 1), result + mine_at)) err = MPI_ERR_OTHER;
      me.reduced.store(s, std::memory_order_release);
      phase = to_gather + 1;  // then the share of rank + 1, rank + 2, ...
    }
  }
  // to_gather + k: the share of rank + k is next.
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
  if (phase == to_end) {
    if (!all_done(nc, s)) return false;
    finish_nonblocking(nc, s);
  }
  return true;
}

bool node_bcast_poll(node_collectives &nc, std::uint64_t s, const typed_buffer &data, int root,
                     int &phase, std::vector<std::byte> &packed, int &err) {
  rank_line &me = nc.mine();
  if (nc.rank == root) {
    if (phase == to_post) {
      if (!may_post(nc, s, true)) return false;
      // As node_bcast's root: above a slot the others read the data where
      // it lies (or in `packed`), and the step ends when every rank is done.
      publish(nc, s, data, false, packed);
      if (data.packed_bytes() <= nc.slot) {
        finish_nonblocking(nc, s);
        return true;
      }
      me.done.store(s, std::memory_order_release);
      phase = to_end;
    }
    if (!all_done(nc, s)) return false;
    finish_nonblocking(nc, s);
    return true;
  }
  const rank_line &from = nc.lines[root];
  if (!may_post(nc, s, false) || from.posted.load(std::memory_order_acquire) < s) return false;
  std::size_t root_bytes = 0;
  err = take_broadcast(nc, s, root, data, root_bytes, packed);
  finish_nonblocking(nc, s);
  return true;
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
