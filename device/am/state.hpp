// What the active-message layer keeps, private to device/am/. Everything
// here is the call lock's (below MULTIPLE without the progress thread: the
// one thread's), but for the counters (atomics: counter.hpp) and the
// exposure table (exposure.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "device/am/counter.hpp"
#include "device/core/packet.hpp"
#include "include/mpi.h"

namespace iris::device {

struct vc;

// Why a target refused an op (an ack's `reason`), for the origin's message.
enum class am_refusal : std::uint32_t {
  none = 0,
  range = 1,    // put or get outside the memory the target exposed
  counter = 2,  // the target counter address names no counter there
  handler = 3,  // the handler id is not registered there
  comm = 4,     // the communicator is not known there
  pull = 5,     // the target could not read the origin's data
};
const char *am_refusal_text(std::uint32_t reason);

// One operation this process started, until it completes.
struct am_op {
  std::uint32_t slot = 0;        // its index in am_state::ops
  std::uint32_t generation = 0;  // bumped when the slot is reused: stale ids miss
  bool live = false;
  active_kind kind = active_kind::message;  // message, put or get (notify for a CMA put's count)
  int target = 0;                           // world rank
  // What the packets carry: the first's step (offset 0), the stream's owned
  // head (a message's user header) and its borrowed rest (the data).
  active_payload step{};
  std::vector<std::byte> head;
  const std::byte *data = nullptr;
  std::uint64_t sent = 0;   // stream bytes handed to the transport
  bool first_sent = false;  // its first packet went (an empty stream has one)
  bool pulled = false;      // a message whose data the target reads itself
  bool acked = true;        // counted outstanding until its ack (else it ends once sent)
  // A get: where its bytes go, and how many came.
  std::byte *into = nullptr;
  std::uint64_t received = 0;
  iris_counter *origin_counter = nullptr;
  iris_counter *completion_counter = nullptr;
};

// An operation of another process's arriving here as a stream of packets
// (a message or a put), one at a time per peer: an origin sends each
// stream's packets in a row (one queue per peer, op after op).
struct am_incoming {
  bool active = false;
  active_payload first{};       // the step of its first packet
  std::uint64_t received = 0;   // stream bytes so far
  std::vector<std::byte> uhdr;  // a message's user header, while it comes in pieces
  std::byte *into = nullptr;    // where the data goes (nullptr: dropped)
  bool handled = false;         // the header handler ran
  int status = MPI_SUCCESS;     // a refusal: the rest is read and dropped
  MPIX_Am_completion_fn *completion = nullptr;
  void *user_info = nullptr;
  int comm_handle = 0;
};

// What one peer has waiting to go: steps of their own (acks, get requests,
// notifies: small, ahead of data) and ops whose streams go in turn.
struct am_peer {
  std::deque<active_payload> control;
  std::deque<std::uint64_t> streams;  // op ids, oldest first
  bool on_list = false;               // in am_state::waiting
  am_incoming incoming;
  int outstanding = 0;    // ops to this peer not complete yet (acks, gets, fences awaited)
  bool unfenced = false;  // ops went to it that sent no ack: a fence asks
  // The first refusal among its ops since the last fence that covered them.
  int refused = MPI_SUCCESS;
  std::string refused_why;
  // Put and get by shared memory (peer_access): where the peer's exposure
  // table lives in its process (0: not looked up; 1: no card), and the
  // copy read last with the version it had (the peer's published word).
  std::uint64_t exposure_address = 0;
  std::uint64_t table_version = UINT64_MAX;
  std::vector<std::uint64_t> table;  // slot_words words a slot (exposure.hpp)
  // The region the last mapped put or get landed in (am_mapped_hit):
  // [base, end) of the peer's, at `mapped` here, good while the peer's
  // published word still reads `version` (mapped nullptr: none).
  struct {
    const std::atomic<std::uint64_t> *word = nullptr;
    std::uint64_t version = 0, base = 0, end = 0;
    std::byte *mapped = nullptr;
  } hit;
};

// Ops answered from here (a get's data), pushed as streams like the
// process's own: they live in the same slots, with kind get_data.
struct am_state {
  std::vector<MPIX_Am_header_fn *> handlers;
  // Slots; an op id is (generation << 32) | (slot + 1). A deque: an op stays
  // where it is while others are added (a send to oneself runs handlers
  // that start ops while the sender still holds its own).
  std::deque<am_op> ops;
  std::vector<std::uint32_t> free_ops;
  std::vector<am_peer> peers;  // by world rank
  std::vector<int> waiting;    // peers with anything queued
  int handler_depth = 0;       // handlers running: sends only queue
  int pushing = 0;             // inside am_push: a send only queues
  int outstanding = 0;         // over every peer
  std::uint64_t pull_min = 0;  // IRIS_AM_PULL_MIN
  int async = 0;               // IRIS_ASYNC_PROGRESS: 0 auto, 1 on, 2 off
  std::uint64_t stats_messages = 0, stats_puts = 0, stats_gets = 0, stats_shared = 0,
                stats_mapped = 0, stats_pulled = 0, stats_fences = 0;
};

// The layer's state, made at the first use (am_state_get) and dropped at
// MPI_Finalize; nullptr before.
extern am_state *am;
am_state &am_state_get();

// A header handler by id, the program's or the device's (nullptr: none).
MPIX_Am_header_fn *am_handler_of(const am_state &s, int id);

// Slots.
std::uint64_t am_op_new(am_state &s);
am_op *am_op_find(am_state &s, std::uint64_t id);
void am_op_free(am_state &s, std::uint64_t id);
inline std::uint64_t am_op_id(const am_state &s, const am_op &op) {
  (void)s;
  return (std::uint64_t{op.generation} << 32) | (std::uint64_t{op.slot} + 1);
}

// The largest stream piece one active packet to `v` carries.
std::size_t am_piece(const vc &v);
// Queues a control step to world rank `peer` and pushes what it can.
void am_control(am_state &s, int peer, const active_payload &step);
// Queues op `id`'s stream to its target and pushes what it can.
void am_stream(am_state &s, std::uint64_t id);
// The progress step: pushes what every waiting peer has queued.
int am_push();
// An op has ended at its target (an ack, a get's last byte, a refusal).
void am_op_complete(am_state &s, std::uint64_t id, int status, const char *why);
// Keeps a refusal of world rank `peer`'s for the next fence that covers it.
void am_refusal_keep(am_state &s, int peer, int status, const char *why);

// Put and get by the transport's peer_access (shared.cpp): true when done
// so (the op then completes, or waits for its notify's ack); false: send
// packets.
bool am_shared_put(am_state &s, am_op &op);
// The same for a put (`write`) or get without a target counter, before any
// op is made: true when it is complete (or refused: kept for the fence).
bool am_shared_direct(am_state &s, int target, bool write, void *local, std::size_t bytes,
                      std::uint64_t address);
bool am_shared_get(am_state &s, am_op &op);

// The progress thread (progress_thread.cpp).
void async_progress_start();
void async_progress_stop();
bool async_progress_running();
// How many times the thread slept where a transport wakes it (a bell or
// the netmod's wait) rather than napping.
std::uint64_t async_progress_waits();

}  // namespace iris::device
