// What the node segment's blocking calls (node.cpp) and nonblocking polls
// (node_poll.cpp) share of a step (node_segment.hpp): whether this rank's
// slot is free, posting a reduction's data, and the reduction's fold (each
// rank's share read in place, folded here, and for a Reduce written to the
// root).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "device/collectives/node.hpp"
#include "device/collectives/node_segment.hpp"
#include "device/datatypes/op.hpp"
#include "device/transports/node_memory.hpp"

namespace iris::device {

using namespace node_detail;

namespace node_detail {

void post_reduction(node_collectives &nc, std::uint64_t s, const void *in, void *out,
                    std::size_t bytes, bool large) {
  rank_line &me = nc.mine();
  if (large) {
    me.in = reinterpret_cast<std::uintptr_t>(in);
    me.out = reinterpret_cast<std::uintptr_t>(out);
  } else {
    std::memcpy(nc.slot_of(nc.rank, s), in, bytes);
  }
  me.bytes[s & 1U] = bytes;
  me.posted.store(s, std::memory_order_release);
}

bool same_bytes(const node_collectives &nc, std::uint64_t s, std::size_t bytes) {
  bool same = true;
  for (int r = 0; r < nc.size; ++r) same = same && nc.lines[r].bytes[s & 1U] == bytes;
  return same;
}

std::size_t share_of(const node_collectives &nc, std::size_t count, int r) {
  return count * static_cast<std::size_t>(r) / static_cast<std::size_t>(nc.size);
}

bool fold::fetch(int r, std::size_t first, std::size_t n, std::byte *to) const {
  const std::size_t at = first * static_cast<std::size_t>(extent);
  const std::size_t len = n * static_cast<std::size_t>(extent);
  if (!large) {
    std::memcpy(to, nc.slot_of(r, s) + at, len);
    return true;
  }
  if (r == nc.rank) {
    if (to != in + at) std::memmove(to, in + at, len);
    return true;
  }
  const rank_line &l = nc.lines[r];
  return node_memory_read(l.pid, l.in + at, to, len);
}

bool fold::into(std::size_t first, std::size_t n, std::byte *to, bool last) const {
  const std::size_t len = n * static_cast<std::size_t>(extent);
  const std::byte *own = in + first * static_cast<std::size_t>(extent);
  if (!large) {
    std::memcpy(to, nc.slot_of(nc.size - 1, s) + first * static_cast<std::size_t>(extent), len);
    for (int r = nc.size - 2; r >= 0; --r) {
      op_apply(op, nc.slot_of(r, s) + first * static_cast<std::size_t>(extent), to, n, type,
               extent);
    }
    return true;
  }
  std::byte *theirs = nc.scratch.data();
  std::byte *kept = theirs + large_chunk;
  if (own == to && nc.rank != nc.size - 1) {
    std::memcpy(kept, own, len);
    own = kept;
  }
  // The others' data are read from rank n - 1 down: the last read is of
  // rank 0, or 1 when this is rank 0.
  const int last_read = nc.rank == 0 ? 1 : 0;
  const auto read = [&](int r, std::byte *where) {
    const bool got = fetch(r, first, n, where);
    if (last && r == last_read && read_all != nullptr) {
      read_all->store(s, std::memory_order_release);
    }
    return got;
  };
  bool ok = read(nc.size - 1, to);
  for (int r = nc.size - 2; r >= 0; --r) {
    if (r == nc.rank) {
      op_apply(op, own, to, n, type, extent);
      continue;
    }
    ok = read(r, theirs) && ok;
    op_apply(op, theirs, to, n, type, extent);
  }
  return ok;
}

bool slot_free(node_collectives &nc, std::uint64_t s) {
  if (s <= 2 || nc.known_done >= s - 2) return true;
  // What is loaded is kept: ranks are often a step further than asked.
  const auto seen = [&](int r) {
    std::uint64_t &at = nc.seen_done[static_cast<std::size_t>(r)];
    if (at < s - 2) at = nc.lines[r].done.load(std::memory_order_acquire);
    return at;
  };
  const int last = nc.slot_readers[s & 1U];
  if (last != all_ranks) return seen(last) >= s - 2;
  std::uint64_t least = UINT64_MAX;
  for (int r = 0; r < nc.size; ++r) {
    least = std::min(least, seen(r));
    if (least < s - 2) return false;
  }
  nc.known_done = least;
  return true;
}

bool shares_written(const node_collectives &nc, std::uint64_t s, int root) {
  bool all = true;
  for (int r = 0; r < nc.size; ++r) {
    all = all && (r == root || nc.lines[r].reduced.load(std::memory_order_acquire) >= s);
  }
  return all;
}

bool fold::range_to(std::size_t first, std::size_t last, const rank_line &root) const {
  const auto e = static_cast<std::size_t>(extent);
  const std::size_t per = std::max<std::size_t>(1, large_chunk / e);
  std::byte *chunk = nc.scratch.data() + 2 * large_chunk;
  bool ok = true;
  for (std::size_t at = first; at < last && ok; at += per) {
    const std::size_t n = std::min(per, last - at);
    ok = into(at, n, chunk) && node_memory_write(root.pid, root.out + at * e, chunk, n * e);
  }
  return ok;
}

bool fold::range(std::size_t first, std::size_t last, std::byte *to) const {
  const std::size_t per =
      large ? std::max<std::size_t>(1, large_chunk / static_cast<std::size_t>(extent))
            : last - first;
  bool ok = true;
  for (std::size_t at = first; at < last; at += per) {
    const std::size_t n = std::min(per, last - at);
    ok = into(at, n, to + (at - first) * static_cast<std::size_t>(extent), at + n == last) && ok;
  }
  return ok;
}
}  // namespace node_detail

}  // namespace iris::device
