// Collectives among ranks that share one node, through shared memory: no
// packet moves on these paths. Each communicator whose ranks all live on this
// node (and may use shared memory) gets a segment at its first blocking
// collective: a barrier line, a control line per rank, and two slots per
// rank. A call that fits a slot is one step:
//
//   writer: waits until every rank finished the step that last used this
//           slot (two steps ago), writes its data and its byte count, then
//           raises its `posted` to the step number;
//   reader: waits for the writer's `posted`, reads, then raises its own
//           `done` to the step number.
//
// Steps alternate between a rank's two slots, so a rank may write the next
// step while slower ranks still read the last one. A call larger than a
// slot is a large step: each rank publishes its buffers' addresses instead,
// the others read them in place with CMA (a large Allreduce: each rank folds
// its share of the elements, then reads the others' shares), and the step
// ends when every rank is done reading. Without CMA, large calls, derived
// datatypes in reductions, and communicators that span nodes go through
// messages (api/coll/coll.cpp). Modelled on Open MPI's coll/sm and MPICH's
// release-gather; device/collectives/README.md has the design.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

#include "device/core/comm.hpp"
#include "device/protocols/typed.hpp"
#include "include/mpi.h"

namespace iris::device {

struct node_collectives;

// The node segment of `comm`, made on the first call (collective over comm:
// every rank calls it at its first blocking Barrier, Bcast, Reduce,
// Allreduce, Allgather(v), Alltoall, Gather(v) or Scatter); nullptr when the
// communicator cannot have one: it spans nodes, shared memory or
// IRIS_COLL_SHM is off, it has a process of another job, or the segment
// could not be made (a full /dev/shm: then every rank keeps to messages,
// and nothing is lost).
node_collectives *node_collectives_of(communicator &comm);

// A revocation (MPIX_Comm_revoke, here or at another rank) of the
// communicator a segment serves, met while this rank waits in it for a rank
// that will not come: the wait marks the segment revoked (every rank of the
// node sees it at its next look, before its own notice may have come) and
// throws node_revocation; node_call, around every call into the segment's
// blocking steps, returns MPI_ERR_REVOKED then. Nothing after the wait
// runs: the step's data are not read, and the segment is not used again
// (the communicator takes no more collectives). A call that failed
// otherwise while the segment is marked (a rank left while this one read
// its buffers) returns MPI_ERR_REVOKED too. A nonblocking step's poll asks
// node_revoked instead.
struct node_revocation {};
bool node_revoked(const node_collectives &nc);
template <typename Fn>
int node_call(const node_collectives &nc, Fn &&fn) {
  int err = 0;
  try {
    if constexpr (std::is_void_v<decltype(fn())>) {
      fn();
    } else {
      err = fn();
    }
  } catch (const node_revocation &) {
    return MPI_ERR_REVOKED;
  }
  return err != 0 && node_revoked(nc) ? MPI_ERR_REVOKED : err;
}
// A hierarchy's node level: its waits end when `across` (the communicator
// across nodes) is revoked.
void node_serves(node_collectives &nc, const communicator &across);
template <typename Fn>
int node_call(int revoked, Fn &&fn) {
  try {
    if constexpr (std::is_void_v<decltype(fn())>) {
      fn();
      return 0;
    } else {
      return fn();
    }
  } catch (const node_revocation &) {
    return revoked;
  }
}

// Whether a call of `bytes` per rank goes through the segment: it fits a
// slot, or every rank may read every other's memory (CMA) for a large one.
bool node_takes(const node_collectives &nc, std::size_t bytes);

// Blocks until every rank of the communicator has called it.
void node_barrier(node_collectives &nc);

// The root's packed bytes of `data` reach every rank (through the root's
// slot, or read in place when larger). MPI_ERR_TRUNCATE when this rank's
// byte count differs from the root's (what fits is delivered), or when the
// root says it `failed` (a leader that met an error at a level across
// nodes passes it on to its node); `root_bytes` then says the root's.
int node_bcast(node_collectives &nc, const typed_buffer &data, int root, std::size_t &root_bytes,
               bool failed = false);

// `count` elements of the predefined, gapless `type` from every rank's `in`
// combined with `op` in rank order (x0 o (x1 o ... o xn-1)), into `out` at
// `root`, or at every rank when root is -1. Every rank computes the same
// fold, so a floating-point result is the same bit for bit everywhere.
// MPI_ERR_TRUNCATE when the ranks' byte counts differ (every rank that sees
// them all: the root, or all of them).
int node_reduce(node_collectives &nc, const void *in, void *out, std::size_t count, int type,
                std::int64_t extent, int op, int root);

// Allgather (`personal` false) and Alltoall (true) through the segment:
// every rank posts `mine` (Allgather: its block; Alltoall: its n blocks in
// rank order, one packed run) and takes, from each rank r, its block (or
// block `rank` of r's run) into recv.block(r). `aside`: `mine` lies in the
// receive buffer (Alltoall in place), so a large one is copied first;
// `own_in_place`: this rank's block is already where it goes (Allgather in
// place). Allgatherv: `blocks` (n of them, each of its own size) says where
// each rank's block goes instead of recv.block(r). MPI_ERR_TRUNCATE when
// any rank posted another byte count than this rank's receive block for it
// takes.
int node_exchange(node_collectives &nc, const typed_buffer &mine, bool aside,
                  const typed_buffer &recv, bool personal, bool own_in_place,
                  const typed_buffer *blocks = nullptr);

// Gather: every rank posts `mine`; the root takes each rank's block into
// recv->block(r) (`recv` the root's only; `own_in_place`: the root's block
// is already there). A large block is read where it lies, so the others
// return once the root is done. MPI_ERR_TRUNCATE at the root when a rank
// posted another byte count than a receive block takes.
int node_gather(node_collectives &nc, const typed_buffer &mine, const typed_buffer *recv, int root,
                bool own_in_place);

// Gatherv, in steps around the blocks that go to the root as messages,
// which the caller moves. node_gatherv_post: every rank posts `mine`,
// which fits a slot (the root: anything, its own block is the caller's),
// or only its byte count when `by_message` (it then sends its block
// itself), without waiting for the others. node_gatherv_posted (the root): whether rank r has
// posted step s, and its byte count, node_gatherv_message set when its block comes as a message.
// node_gatherv_end, once the root has seen every rank post: the root takes each other block posted
// into blocks[r] (MPI_ERR_TRUNCATE where a rank posted another byte count than blocks[r] takes).
// `packed` is the caller's, kept until node_gatherv_end returns.
constexpr std::uint64_t node_gatherv_message = std::uint64_t{1} << 62;
std::uint64_t node_gatherv_post(node_collectives &nc, const typed_buffer &mine, bool by_message,
                                int root, std::vector<std::byte> &packed);
bool node_gatherv_posted(const node_collectives &nc, std::uint64_t s, int r, std::uint64_t &bytes);
// The root, when every block it expects fits a slot (no message is due in
// a correct program): waits until every rank posted step s, as the other
// steps wait (a device poll between every look took small blocks longer).
void node_gatherv_wait_all(node_collectives &nc, std::uint64_t s);
// Waits until done() holds as the node steps wait: polls the device, then
// yields, and never sleeps (what another rank posts in the segment rings
// no bell, so a sleeping rank would not see it).
void node_wait(const node_collectives &nc, const std::function<bool()> &done);
int node_gatherv_end(node_collectives &nc, std::uint64_t s, int root, const typed_buffer *blocks);

// Scatter: the root posts `all` (its n blocks in rank order, one packed
// run; the root's only); each rank takes block `rank` into `recv`
// (nullptr: the root keeps its block in place). MPI_ERR_TRUNCATE where the
// root's run is not n of this rank's blocks.
int node_scatter(node_collectives &nc, const typed_buffer *all, const typed_buffer *recv, int root);

// Scatterv: the root posts one run, a table of (offset, bytes) per rank
// then the blocks that fit a slot with it, packed in rank order; a block
// past that goes as a message, and its table entry says so
// (node_gatherv_message set in its offset). The root (`blocks` its n
// blocks; its own is the caller's) returns the ranks whose blocks the
// caller then sends, in `by_message`. Every other rank takes its block into
// `recv`, or learns that it comes as a message (the return's
// node_gatherv_message bit: the caller receives it). MPI_ERR_TRUNCATE
// where the root's block for this rank has another byte count than `recv`.
int node_scatterv(node_collectives &nc, const typed_buffer *blocks, const typed_buffer *recv,
                  int root, std::vector<int> &by_message, bool &comes_as_message);
// Whether the table of node_scatterv (16 bytes a rank) fits a slot: else
// Scatterv goes by messages. The same answer at every rank.
bool node_scatterv_takes(const node_collectives &nc);

// Alltoallv in two calls, so that the caller may start its messages in
// between. node_alltoallv_post: this rank posts a run as Scatterv's root
// does (`out` its n blocks, its own left out: the caller copies it); a
// block past its slot of at least `read_from` bytes in one run is read
// where it lies by its rank (`exposed` set), any other goes as a message,
// and `to_message` lists their ranks (the caller sends them).
// node_alltoallv_take: takes block `rank` of every other rank's run into
// from[r] (`recv`'s block r), and returns in `from_message` the ranks whose
// block comes as a message (the caller receives them).
// node_alltoallv_end: this rank is done with step s (its slot may be
// written again two steps on, so no rank starts step s + 2 before it);
// `exposed`: it also waits until every rank is done reading its blocks.
// The same condition as Scatterv's (node_scatterv_takes). MPI_ERR_TRUNCATE
// where a rank's block for this one has another byte count than from[r].
// node_alltoallv_room: the largest block that can go in a slot (a larger
// one is read in place or comes as a message). node_alltoallv_reads:
// whether a block of `bytes` from a sender whose block is one run is read
// in place (else, past the room, it comes as a message).
std::uint64_t node_alltoallv_post(node_collectives &nc, const typed_buffer *out,
                                  std::size_t read_from, std::vector<int> &to_message,
                                  bool &exposed);
int node_alltoallv_take(node_collectives &nc, std::uint64_t s, const typed_buffer *from,
                        std::vector<int> &from_message);
void node_alltoallv_end(node_collectives &nc, std::uint64_t s, bool exposed);
bool node_alltoallv_reads(const node_collectives &nc, std::size_t bytes, std::size_t read_from);
std::size_t node_alltoallv_room(const node_collectives &nc);
// Whether node_alltoallv_take takes each rank's block as soon as that rank
// posted, as node_exchange's large steps do (us, 8 ranks: 1 MiB blocks
// Alltoallv 6284 -> 5644, 64 KiB Alltoallw 330 -> 244; bench/results/
// 2026-12-01-issue43-alltoallv-as-posted.md): when a block it takes is past
// a slot. Else it waits for every rank first (4 ranks 1 KiB Alltoallw 3.5
// against 5.2 us one by one).
bool node_alltoallv_as_posted(const node_collectives &nc, const typed_buffer *from);

// The segment of `comm` if a blocking collective already made it, else
// nullptr (never makes one: a nonblocking call may not wait for the other
// ranks). Every rank gives the same answer at the same collective call.
node_collectives *node_collectives_made(const communicator &comm);

// Nonblocking Allreduce and Reduce through the segment (MPI_Iallreduce,
// MPI_Ireduce and their _init forms; above a slot a large step read in
// place, when node_takes); Bcast and Barrier below. node_step_begin takes
// the call's step when it starts, in call order with the blocking calls;
// node_reduce_poll then moves it on and never waits. It returns false
// until it is done, then `err` holds its error class (MPI_ERR_TRUNCATE
// when the ranks' byte counts differ, at the ranks that get the result). A
// rank runs its steps in order: a step posts only once this rank finished
// the one before, and a blocking call behind pending ones waits for them
// first (polling moves them on). Reduces as node_reduce (root -1: every
// rank gets the result in `out`). `phase` starts at 0 and is the poll's
// own.
bool node_fits_slot(const node_collectives &nc, std::size_t bytes);
std::uint64_t node_step_begin(node_collectives &nc);
bool node_reduce_poll(node_collectives &nc, std::uint64_t s, int &phase, const void *in, void *out,
                      std::size_t count, int type, std::int64_t extent, int op, int root, int &err);
// The same for MPI_Ibcast and MPI_Bcast_init (through the root's slot, or
// above a slot read in place, when node_takes: the root's step then ends
// when every rank has read; `packed` is the caller's, kept until the step
// is done, for data that is not one run; MPI_ERR_TRUNCATE where this rank's
// byte count differs from the root's, as node_bcast), and for MPI_Ibarrier
// and MPI_Barrier_init: a step without data, done once every rank has
// posted it.
bool node_bcast_poll(node_collectives &nc, std::uint64_t s, const typed_buffer &data, int root,
                     int &phase, std::vector<std::byte> &packed, int &err);
bool node_barrier_poll(node_collectives &nc, std::uint64_t s, int &phase);
// The same for MPI_Iallgather, MPI_Iallgatherv and MPI_Ialltoall
// (node_exchange's arguments), MPI_Igather (node_gather's) and MPI_Iscatter (node_scatter's),
// and their _init forms. Above a slot, Iallgather, Ialltoall and Iscatter
// are large steps read in place (CMA, when node_takes), which end for the
// rank whose data are read once every reader is done; `packed` (Iscatter's,
// and an exchange's in its `state`) is the caller's, kept until the step is
// done, for this rank's data when they are not one run (or `aside`).
// Igather takes blocks that fit a slot only (node_fits_slot): above, the
// root reading every block alone is slower than messages.
struct node_exchange_state {
  std::vector<std::byte> packed;
  std::vector<char> taken;  // a large step's: the ranks whose part this rank took
};
bool node_exchange_poll(node_collectives &nc, std::uint64_t s, int &phase, const typed_buffer &mine,
                        bool aside, const typed_buffer &recv, bool personal, bool own_in_place,
                        const typed_buffer *blocks, node_exchange_state &state, int &err);
bool node_gather_poll(node_collectives &nc, std::uint64_t s, int &phase, const typed_buffer &mine,
                      const typed_buffer *recv, int root, bool own_in_place, int &err);
bool node_scatter_poll(node_collectives &nc, std::uint64_t s, int &phase, const typed_buffer *all,
                       const typed_buffer *recv, int root, std::vector<std::byte> &packed,
                       int &err);

// MPI_Ialltoallv and its _init form in three polls, Alltoallv's steps
// (node_alltoallv_post's and _take's): node_alltoallv_post_poll posts this
// rank's run once step s may (`out` its blocks, its own left out; blocks of
// `read_from` bytes or more read in place, `exposed` set) and lists in
// `to_message` the ranks whose block goes as a message.
// node_alltoallv_take_poll takes this rank's block of each run into in[r]
// as soon as its rank posted when `as_posted` (node_alltoallv_as_posted's
// answer), else once every rank posted (`taken`: a flag per rank, cleared
// by the caller before the first poll), and lists in `from_message` the
// ranks whose block comes as a message (MPI_ERR_TRUNCATE in `err` as
// node_alltoallv_take); true once every block is taken. Then
// node_alltoallv_end_poll finishes the step: at once, or when `exposed`
// once every rank is done reading. false: not yet. The caller moves the
// messages.
bool node_alltoallv_post_poll(node_collectives &nc, std::uint64_t s, const typed_buffer *out,
                              std::size_t read_from, std::vector<int> &to_message, bool &exposed);
bool node_alltoallv_take_poll(node_collectives &nc, std::uint64_t s, const typed_buffer *in,
                              bool as_posted, std::vector<char> &taken,
                              std::vector<int> &from_message, int &err);
bool node_alltoallv_end_poll(node_collectives &nc, std::uint64_t s, bool exposed);

// MPI_Igatherv and its _init form in polls, Gatherv's steps
// (node_gatherv_post's): node_gatherv_post_poll posts this rank's block
// `mine` (the root: nothing) in its slot, or its byte count marked when
// `by_message`, once step s may; a rank other than the root then finishes
// the step (its block is in its slot or the caller sends it). The root
// then learns of each rank's block by node_gatherv_posted (posting the
// receives of those that come as messages) and, once every rank posted,
// node_gatherv_end_poll takes the rest into blocks[r] and finishes the
// step (MPI_ERR_TRUNCATE in `err` as node_gatherv_end). false: not yet.
bool node_gatherv_post_poll(node_collectives &nc, std::uint64_t s, const typed_buffer &mine,
                            bool by_message, int root);
bool node_gatherv_end_poll(node_collectives &nc, std::uint64_t s, int root,
                           const typed_buffer *blocks, int &err);

// Frees what node_collectives_of made (with the communicator).
void node_collectives_free(node_collectives *nc);

}  // namespace iris::device
