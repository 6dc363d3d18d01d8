// Active messages after IBM LAPI (include/iris/am.h): the operations the
// MPIX_ bindings call, and the one packet handler the dispatch table names.
//
// An operation's way:
//   origin   am_send / am_put / am_get (send.cpp): an op with an id, its
//            stream cut into active packets to the target's VC, queued per
//            peer when the transport is full (pushed by progress); put and
//            get to a peer on this node go by the transport's peer_access
//            (CMA) and need no target thread (shared.cpp)
//   target   am_on_packet (receive.cpp): a message runs the header handler
//            at its first packet, its data goes where the handler said, the
//            completion handler runs, the target counter counts, an ack goes
//            back; a put lands in exposed memory (exposure.cpp) or is
//            refused; a get is answered from exposed memory
//   origin   the ack: the completion counter counts, the op ends; a refusal
//            is kept for the MPIX_Am_fence that covers the op
//
// Handlers run under the call lock, inside progress (any thread that polls,
// or the progress thread: progress_thread.cpp). Sends they make are only
// queued, and pushed after the handler returns: a handler never blocks and
// a message's packets are never interleaved with another's (the target
// keeps one stream in flight per peer).
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/core/packet.hpp"
#include "device/core/vc.hpp"
#include "include/mpi.h"

namespace iris::device {

// Registers `fn`; its id in `*handler` (0, 1, ... in registration order).
int am_register(MPIX_Am_header_fn *fn, int *handler);
// How many handlers are registered.
int am_handlers();

// The operations, arguments checked by the binding. `target` is a world
// rank; `comm_rank` the origin's rank in `comm` and `context` its context.
// Each returns MPI_SUCCESS or an error class (the binding raises it).
struct am_route {
  int target_world;
  int comm_handle;
  std::uint32_t context;
  int comm_rank;
};
int am_send(const am_route &to, int handler, const void *uhdr, int uhdr_len, const void *data,
            std::size_t data_len, std::uint64_t target_counter, iris_counter *origin_counter,
            iris_counter *completion_counter);
// As am_send, for a message whose end the caller learns otherwise (its
// handler answers it, or it is an answer): no am_fence step goes after it.
int am_request(const am_route &to, int handler, const void *uhdr, int uhdr_len, const void *data,
               std::size_t data_len, iris_counter *origin_counter);
int am_put(const am_route &to, const void *origin, std::size_t bytes, std::uint64_t target_addr,
           std::uint64_t target_counter, iris_counter *origin_counter,
           iris_counter *completion_counter);
int am_get(const am_route &to, void *origin, std::size_t bytes, std::uint64_t target_addr,
           std::uint64_t target_counter, iris_counter *origin_counter);
// The device's own header handlers (the one-sided layer's), apart from
// the program's: ids from am_internal_handlers up, in registration order,
// which every process makes in the same order. am_send takes them as it
// takes the program's ids.
inline constexpr int am_internal_handlers = 1 << 30;
int am_register_internal(MPIX_Am_header_fn *fn);
// Where this process's memory [address, address + bytes) of world rank
// `target` is mapped here (a block of its MPI_Alloc_mem that it exposed),
// or nullptr: reach it by am_put and am_get.
std::byte *am_mapped(int target, std::uint64_t address, std::size_t bytes);
// A put (`write`) or get without a target counter that lands where the
// last one to `target` (world rank) did, in memory mapped here, while the
// target's exposures have not changed: done with one copy, the statistics
// counted. false: nothing was done (take am_put or am_get).
bool am_mapped_hit(int target, bool write, void *local, std::size_t bytes, std::uint64_t address);
// Waits until every op started here to world rank `target` (-1: to all)
// has completed there. Returns MPI_SUCCESS or the class of the first
// refusal among them (then forgotten), with its reason in `why`.
int am_fence(int target, const char **why);
// Waits until every op started here to world rank `target` has left this
// process (its origin buffer is free again); not for its completion
// there. A message sent after it is handled there after its bytes landed.
void am_sent(int target);

// Recovery: world rank `w` died (known here now). Every op of this process
// to it ends with MPIX_ERR_PROC_FAILED (its counters lose their count, the
// next fence covering it reports it), what was queued for it is dropped,
// and the stream arriving from it is forgotten (its target counter loses).
void am_peer_failed(int w);

// The dispatch table's handler of packet_type::active.
const char *am_on_packet(vc &from, const packet_header &h, const std::byte *payload);

// Whether the active-message layer has started (a handler registered,
// memory exposed, an op started): only then is anything of it kept.
bool am_started();
// At MPI_Init, before the PMI commit: puts this process's card (where its
// exposure table lives, for peers that check it by shared memory).
void am_card_put();
// After MPIX_Expose or MPIX_Conceal changed this process's table: the
// version peers on this node check moves.
void am_exposures_changed();
// At the end of MPI_Init: starts the progress thread under
// IRIS_ASYNC_PROGRESS=on.
void am_init_done();
// At the end of MPIX_Am_register and MPIX_Expose: starts it under auto.
void am_progress_wanted();
// MPI_Alloc_mem and MPI_Free_mem (memory.cpp). am_alloc_mem gives a block
// the ranks of this node map (from am_block_min bytes, when there are such
// ranks and /dev/shm has room), else nullptr (the binding allocates
// plainly); am_free_mem frees one (false: not a block). am_block_of says
// which block [base, base + bytes) lies in, for MPIX_Expose. At
// MPI_Finalize am_blocks_close removes their names from /dev/shm.
inline constexpr std::size_t am_block_min = 4096;
void *am_alloc_mem(std::size_t bytes);
bool am_free_mem(void *base);
bool am_block_of(const void *base, std::size_t bytes, std::uint64_t &key, std::uint64_t &offset,
                 std::uint64_t &block_bytes);
void am_blocks_close();

// What MPIX_Stat_get reports of this layer by name: am_messages, am_puts,
// am_gets (started here), am_shared (puts and gets done without the
// target: by peer_access or in a mapped block), am_mapped (of those, in a
// block), am_pulled (messages whose data the target read); false for other names.
bool am_statistic(const char *name, std::uint64_t &value);
// At MPI_Finalize, before the last barrier: waits for every op started
// here, stops the progress thread; after it: drops the layer's state.
void am_quiesce();
void am_close();

}  // namespace iris::device
