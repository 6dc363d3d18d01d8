// The table runs of Scatterv and Alltoallv through the node segment
// (node_segment.hpp): a rank's table of (offset, bytes) per rank and the
// blocks that fit its slot, posted and taken without waiting; node.cpp's
// blocking calls and node_poll.cpp's polls wait around them.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "device/collectives/node.hpp"
#include "device/collectives/node_segment.hpp"
#include "device/transports/node_memory.hpp"
#include "include/mpi.h"

namespace iris::device {

using namespace node_detail;

namespace {
// node_scatterv's table: an (offset, bytes) pair per rank.
std::size_t scatterv_table(const node_collectives &nc) {
  return 2 * sizeof(std::uint64_t) * static_cast<std::size_t>(nc.size);
}
}  // namespace

bool node_scatterv_takes(const node_collectives &nc) {
  return node_fits_slot(nc, scatterv_table(nc));
}

// Writes the table of (offset, bytes) per rank and each of `blocks` that
// still fits, in rank order, straight into this rank's slot for step s
// (nothing allocated; node_fits_slot keeps the run within it), and posts
// it; `skip`'s block is left out. A block that does not fit is read in
// place by its rank when it is one run of at least `read_from` bytes and
// every rank may read every other's memory (its entry: in_place_mark and
// its address); otherwise it is marked (message_mark) and its rank added to
// `by_message`. Returns whether any block is read in place: this rank
// must then wait until every rank is done before its buffer may change.
// The caller made sure the slot is free (every rank finished step s - 2).
bool post_table_run(node_collectives &nc, std::uint64_t s, const typed_buffer *blocks, int skip,
                    std::vector<int> &by_message, std::size_t read_from) {
  rank_line &me = nc.mine();
  std::byte *const run = nc.slot_of(nc.rank, s);
  std::size_t total = scatterv_table(nc);
  bool exposed = false;
  for (int r = 0; r < nc.size; ++r) {
    const std::size_t bytes = r == skip ? 0 : blocks[r].packed_bytes();
    std::uint64_t entry[2] = {total, bytes};
    if (r != skip && !node_fits_slot(nc, total + bytes)) {
      if (nc.cma && bytes >= read_from && blocks[r].contiguous()) {
        entry[0] = in_place_mark | reinterpret_cast<std::uintptr_t>(blocks[r].base);
        exposed = true;
      } else {
        entry[0] = message_mark;
        by_message.push_back(r);
      }
    } else {
      if (r != skip) typed_pack(blocks[r], run + total);
      total += bytes;
    }
    std::memcpy(run + sizeof entry * static_cast<std::size_t>(r), entry, sizeof entry);
  }
  me.bytes[s & 1U] = total;
  me.posted.store(s, std::memory_order_release);
  return exposed;
}

// Takes this rank's block of rank `from`'s posted table run (post_table_run)
// into `to`: from the run, or read where it lies in `from`'s memory; or sets
// `as_message` when it comes as a message.
int take_table_block(const node_collectives &nc, std::uint64_t s, int from, const typed_buffer &to,
                     bool &as_message, std::vector<std::byte> &scratch) {
  std::uint64_t entry[2] = {0, 0};
  bool ok = take_data(nc, s, from, sizeof entry * static_cast<std::size_t>(nc.rank),
                      typed_bytes(entry, sizeof entry), scratch);
  as_message = ok && (entry[0] & message_mark) != 0;
  if (!ok) return MPI_ERR_OTHER;
  if (as_message) return MPI_SUCCESS;
  if (entry[1] != to.packed_bytes()) return MPI_ERR_TRUNCATE;
  if ((entry[0] & in_place_mark) == 0) {
    return take_data(nc, s, from, entry[0], to, scratch) ? MPI_SUCCESS : MPI_ERR_OTHER;
  }
  const std::uint64_t at = entry[0] & ~in_place_mark;
  const std::int64_t pid = nc.lines[from].pid;
  if (to.contiguous()) {
    return node_memory_read(pid, at, to.base, entry[1]) ? MPI_SUCCESS : MPI_ERR_OTHER;
  }
  scratch.resize(entry[1]);
  if (!node_memory_read(pid, at, scratch.data(), entry[1])) return MPI_ERR_OTHER;
  typed_unpack(scratch.data(), entry[1], to);
  return MPI_SUCCESS;
}

bool take_posted_blocks(node_collectives &nc, std::uint64_t s, const typed_buffer *from,
                        std::vector<char> &taken, std::vector<int> &from_message, int &err) {
  std::vector<std::byte> scratch;
  bool all = true;
  // Each rank starts with the next one's run, as node_exchange does.
  for (int k = 1; k < nc.size; ++k) {
    const int r = (nc.rank + k) % nc.size;
    if (taken[static_cast<std::size_t>(r)] != 0) continue;
    if (nc.lines[r].posted.load(std::memory_order_acquire) < s) {
      all = false;
      continue;
    }
    taken[static_cast<std::size_t>(r)] = 1;
    bool as_message = false;
    const int t = take_table_block(nc, s, r, from[r], as_message, scratch);
    if (as_message) from_message.push_back(r);
    if (err == MPI_SUCCESS) err = t;
  }
  if (all) nc.known_done = std::max(nc.known_done, s - 1);  // every rank posted s
  return all;
}

bool node_alltoallv_reads(const node_collectives &nc, std::size_t bytes, std::size_t read_from) {
  return nc.cma && bytes > node_alltoallv_room(nc) && bytes >= read_from;
}

std::size_t node_alltoallv_room(const node_collectives &nc) {
  return nc.slot - scatterv_table(nc);
}

bool node_alltoallv_as_posted(const node_collectives &nc, const typed_buffer *from) {
  const std::size_t room = node_alltoallv_room(nc);
  for (int r = 0; r < nc.size; ++r) {
    if (r != nc.rank && from[r].packed_bytes() > room) return true;
  }
  return false;
}

}  // namespace iris::device
