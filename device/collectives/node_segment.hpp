// The node segment's layout, and what the blocking calls (node.cpp) and the
// nonblocking polls (node_poll.cpp) share of its steps. Private to
// device/collectives: the rest of the device sees node.hpp only.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/collectives/node.hpp"
#include "device/protocols/typed.hpp"

namespace iris::device {
namespace node_detail {

constexpr std::size_t cache_line = 64;
// In node_collectives::slot_readers: every rank may read.
constexpr int all_ranks = -1;
// A large reduction reads another rank's data this much at a time.
constexpr std::size_t large_chunk = 64 * 1024;
// The smallest Reduce whose ranks fold a share each (below, the root folds).
constexpr std::size_t reduce_split_min = 256 * 1024;
// In a Bcast root's byte count: it failed before (a level across nodes).
constexpr std::uint64_t failed_mark = std::uint64_t{1} << 63;
// In a Gatherv rank's byte count: its block goes to the root as a message.
constexpr std::uint64_t message_mark = node_gatherv_message;
// In an Alltoallv table's offset: the block is read in place, at the address
// the rest of the entry holds (user space addresses stay below 2^47).
constexpr std::uint64_t in_place_mark = std::uint64_t{1} << 61;

// The barrier: ranks count themselves in; once all of barrier b are in,
// rank 0 releases it. `revoked`, on a line of its own (read at every idle
// look of a wait, written once): set by the first rank that leaves a wait
// because the communicator was revoked, before it leaves (node_call).
struct alignas(cache_line) barrier_lines {
  std::atomic<std::uint64_t> arrived;
  char pad[cache_line - sizeof(std::atomic<std::uint64_t>)];
  std::atomic<std::uint64_t> released;
  char pad2[cache_line - sizeof(std::atomic<std::uint64_t>)];
  std::atomic<std::uint32_t> revoked;
};

// Written by its rank only, read by every other.
struct alignas(cache_line) rank_line {
  std::atomic<std::uint64_t> posted;   // the last step whose data this rank wrote
  std::atomic<std::uint64_t> reduced;  // the last step whose share of a reduction it made
  std::atomic<std::uint64_t> done;     // the last step whose reads this rank finished
  std::uint64_t bytes[2];              // the byte count of its data, by step parity
  // A large step's buffers, in this rank's address space (read with CMA);
  // a large step ends when every rank is done, so one pair suffices.
  std::uint64_t in;
  std::uint64_t out;
  std::int64_t pid;
};

static_assert(sizeof(rank_line) == cache_line);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

}  // namespace node_detail

struct node_collectives {
  void *base = nullptr;
  std::size_t mapped = 0;
  std::size_t slot = 0;
  int size = 0;
  int rank = 0;
  node_detail::barrier_lines *bar = nullptr;
  node_detail::rank_line *lines = nullptr;
  std::byte *slots = nullptr;
  bool cma = false;  // every rank may read every other's memory
  // Three chunks: what a large step reads, this rank's own, and a fold
  // on its way to another rank (fold::range_to).
  std::vector<std::byte> scratch;
  std::uint64_t step = 0;        // steps this rank has begun
  std::uint64_t barriers = 0;    // barriers this rank has begun
  std::uint64_t known_done = 0;  // every rank's `done` is at least this
  // By step parity: who read this rank's slot and byte count at the last
  // step that wrote them: one rank (a Gather's, Gatherv's or small
  // Reduce's root), or node_detail::all_ranks. The next step of that
  // parity waits for those readers only (a rank other than a Gather's root
  // read every rank's line each call: 0.17-0.25 us a call at 4 ranks
  // against 0.07-0.10).
  int slot_readers[2] = {-1, -1};
  // Each rank's `done` as last loaded here (a reader's line is loaded when
  // what was seen before does not cover the step: every other call).
  std::vector<std::uint64_t> seen_done;
  int nbc_pending = 0;         // nonblocking steps begun and not finished
  std::uint64_t finished = 0;  // this rank finished every step up to this one
  // The communicator whose revocation ends this segment's waits: its own,
  // or for a node level of a hierarchy, the communicator across nodes (the
  // one revocations name). Communicators live until MPI_Finalize.
  const communicator *served = nullptr;

  std::byte *slot_of(int r, std::uint64_t s) const {
    return slots + (static_cast<std::size_t>(r) * 2 + (s & 1U)) * slot;
  }
  node_detail::rank_line &mine() const { return lines[rank]; }
};

namespace node_detail {

// Posts this rank's data for step s without waiting: packed into its slot
// when they fit, else left where they lie (or packed into `packed` when
// `data` is not one run, or when `aside`: the buffer changes before the
// others read it); then its byte count (with `mark`) and `posted`. The
// caller made sure the slot is free (every rank finished step s - 2).
void publish(node_collectives &nc, std::uint64_t s, const typed_buffer &data, bool aside,
             std::vector<std::byte> &packed, std::uint64_t mark = 0);

// `len` bytes from `at` of rank r's posted data for step s, unpacked into
// `to`: from its slot, or (`large`) read where they lie, through `scratch`
// when `to` is not one run. False when the read failed.
bool read_posted(const node_collectives &nc, std::uint64_t s, int r, std::size_t at,
                 std::size_t len, bool large, const typed_buffer &to,
                 std::vector<std::byte> &scratch);

// Bytes [at, at + to.packed_bytes()) of rank r's posted data for step s,
// unpacked into `to` (read_posted, large when r posted more than a slot).
bool take_data(const node_collectives &nc, std::uint64_t s, int r, std::size_t at,
               const typed_buffer &to, std::vector<std::byte> &scratch);

// What a rank takes once every rank posted step s, with its error class
// (MPI_ERR_TRUNCATE when a rank posted another byte count than `recv`'s
// blocks take, MPI_ERR_OTHER when a read failed): Allgather, Allgatherv
// and Alltoall (node_exchange's arguments) and a Gather's root, every
// rank's block; Scatter, block `rank` of the root's run (the root too,
// once it posted).
int exchange_take(const node_collectives &nc, std::uint64_t s, const typed_buffer &recv,
                  bool personal, bool own_in_place, const typed_buffer *blocks);
// exchange_take's part from rank r alone, once r posted step s (false
// while it has not): a large step's reader takes each rank's data as soon
// as it is there, not once all are. `err` gathers the error class as
// exchange_take's (after MPI_ERR_TRUNCATE nothing more is read).
bool exchange_take_from(const node_collectives &nc, std::uint64_t s, int r,
                        const typed_buffer &recv, bool personal, bool own_in_place,
                        const typed_buffer *blocks, std::vector<std::byte> &scratch, int &err);
int gather_take(const node_collectives &nc, std::uint64_t s, const typed_buffer &recv,
                bool own_in_place);
int scatter_take(const node_collectives &nc, std::uint64_t s, int root, const typed_buffer &recv);

// A Bcast's rank other than the root, once the root posted step s: takes
// what fits of the root's data into `data` (`scratch` as read_posted's);
// `root_bytes` says the root's byte count. MPI_ERR_TRUNCATE when it differs
// from this rank's or the root failed before, MPI_ERR_OTHER when a read failed.
int take_broadcast(const node_collectives &nc, std::uint64_t s, int root, const typed_buffer &data,
                   std::size_t &root_bytes, std::vector<std::byte> &scratch);

// Posts this rank's data for reduction step s: copied into its slot, or
// (large) its address published for the others to read in place, with that
// of its receive buffer `out` (where a Reduce's other ranks write their
// shares of the root's result).
void post_reduction(node_collectives &nc, std::uint64_t s, const void *in, void *out,
                    std::size_t bytes, bool large);

// Whether this rank may write its slot and byte count for step s: whoever
// read them at the last step of this parity that wrote them (every rank,
// unless it noted one in slot_readers) has finished step s - 2. Keeps the
// `done` values it loads (seen_done; known_done when it looked at all).
bool slot_free(node_collectives &nc, std::uint64_t s);

// A large Reduce's root, once every rank is done with step s: whether every
// other rank wrote its share into the root's receive buffer (fold::range_to;
// a rank whose write failed does not say so, and returned MPI_ERR_OTHER).
bool shares_written(const node_collectives &nc, std::uint64_t s, int root);

// Whether every rank posted `bytes` for step s (once all posted).
bool same_bytes(const node_collectives &nc, std::uint64_t s, std::size_t bytes);

// The first element of rank r's share of a large reduction of `count`.
std::size_t share_of(const node_collectives &nc, std::size_t count, int r);

// Gatherv's root, once every rank posted step s: takes each block posted in
// a slot into blocks[r] (node_gatherv_end's work; MPI_ERR_TRUNCATE where a
// rank posted another byte count than blocks[r] takes).
int gatherv_take_posted(const node_collectives &nc, std::uint64_t s, int root,
                        const typed_buffer *blocks);

// One reduction through the segment: `count` elements of `extent` bytes.
struct fold {
  node_collectives &nc;
  std::uint64_t s;
  const std::byte *in;  // this rank's data
  std::int64_t extent;
  int type;
  int op;
  bool large;
  // When set, range() stores s there once it has read the last of the
  // others' data, before its last ops: a root folding alone lets the
  // others go then (its `done`).
  std::atomic<std::uint64_t> *read_all = nullptr;

  // Copies elements [first, first + n) of rank r's data to `to`.
  bool fetch(int r, std::size_t first, std::size_t n, std::byte *to) const;
  // Elements [first, first + n) of x0 o (x1 o (... o xn-1)) into `to`,
  // which may be this rank's own data (in place): then its part is kept
  // aside before `to` is written. `last`: the range's last chunk (read_all).
  bool into(std::size_t first, std::size_t n, std::byte *to, bool last = false) const;
  // The same over elements [first, last), a chunk at a time, into `to`
  // (where element `first` goes).
  bool range(std::size_t first, std::size_t last, std::byte *to) const;
  // The same, each chunk written where it goes in the receive buffer of
  // `root` (its rank_line's `out`, posted with its data), not kept here.
  bool range_to(std::size_t first, std::size_t last, const rank_line &root) const;
};

}  // namespace node_detail

// Scatterv's and Alltoallv's table runs (node_table.cpp): post_table_run
// writes this rank's table and the blocks that fit into its slot for step
// s (the caller made sure it is free) and posts it (`skip`'s block left
// out; a block past the slot is read in place when one run of at least
// `read_from` bytes, else listed in `by_message`), returning whether any is
// read in place; take_table_block takes this rank's block of rank `from`'s
// run into `to`, or sets `as_message`; take_posted_blocks does so for every
// other rank that posted step s and whose block is not taken yet (`taken`:
// a flag per rank), the next one first, listing in `from_message` those
// whose block comes as a message and keeping the first error in `err`;
// true once every block is taken.
bool post_table_run(node_collectives &nc, std::uint64_t s, const typed_buffer *blocks, int skip,
                    std::vector<int> &by_message, std::size_t read_from);
int take_table_block(const node_collectives &nc, std::uint64_t s, int from, const typed_buffer &to,
                     bool &as_message, std::vector<std::byte> &scratch);
bool take_posted_blocks(node_collectives &nc, std::uint64_t s, const typed_buffer *from,
                        std::vector<char> &taken, std::vector<int> &from_message, int &err);

}  // namespace iris::device
