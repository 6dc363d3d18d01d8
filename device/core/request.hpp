// Requests: one per nonblocking operation (and per blocking one that could
// not finish at once). They live in a pool and are named by int handles; on
// the wire they are named by ids that also carry a generation, so that a
// stale or forged id is refused instead of touching a reused request.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "device/base/handle.hpp"
#include "device/base/pool.hpp"
#include "device/core/match.hpp"
#include "device/core/packet.hpp"

namespace iris::device {

struct communicator;
struct dtype;
class schedule;

// Frees a collective's schedule (schedule.cpp).
void schedule_delete(schedule *s);

// coll: a nonblocking or persistent collective, run by its schedule.
enum class request_kind : std::uint8_t { send, recv, coll };

// What MPI_Start repeats for a persistent request.
// `ext`: a request whose operation is defined by a request_ext (partitioned).
enum class persistent_op : std::uint8_t { none, send, ssend, bsend, recv, coll, ext };
struct persistent_args {
  persistent_op op = persistent_op::none;
  void *buffer = nullptr;
  std::size_t bytes = 0;
  int peer = 0;  // rank in the communicator, or MPI_PROC_NULL / MPI_ANY_SOURCE
  int tag = 0;
  int count = 0;  // as given, for buffered sends that start again through MPI_Bsend
  int datatype = 0;
  int comm = 0;
};

enum class send_state : std::uint8_t {
  queued,      // its message packet waits for room in the send queue
  wait_ack,    // eager_sync sent; waits for sync_ack
  wait_reply,  // rts sent; waits for cts (pipeline) or fin (receiver read it)
  streaming,   // cts received; data fragments go out from the stream queue
  done,
};

struct request;
struct unexpected_msg;

// A request whose operation the device does not run itself (MPI_Isendrecv,
// generalized and partitioned requests, the buffer flushes): the completion
// bindings ask it instead of reading `complete` alone. Owned by its request
// (deleted when the request is released). Called only from bindings, under
// the caller's thread level, like the rest of the request.
struct request_ext {
  virtual ~request_ext() = default;
  // Advances or checks the operation; sets r.complete once it has finished.
  virtual void poll(request &r) = 0;
  // Hands back the outcome of a complete request (`status` is an MPI_Status
  // or nullptr) and returns its error class.
  virtual int finish(request &r, void *status) = 0;
  // MPI_Request_get_status of a complete request: the outcome as finish
  // gives it, but the request stays as it is.
  virtual int peek(request &r, void *status) = 0;
  // MPI_Cancel.
  virtual void cancel(request &r) = 0;
  // MPI_Request_free of a live request: true when it may be released now;
  // false when the extension releases it itself once its operation ends.
  virtual bool free(request &r) = 0;
  // After free: the error code freeing returned (a generalized request's
  // free function), which MPI_Request_free returns.
  virtual int freed_error() const { return 0; }
  // MPI_Start of a persistent extension (persistent_op::ext); an MPI error class.
  virtual int start(request &r) {
    (void)r;
    return 16;  // MPI_ERR_INTERN: not persistent
  }
};

struct request {
  request *next = nullptr;  // free list, posted queue, or a VC's send/stream queue
  request *prev = nullptr;
  std::uint32_t index = 0;
  // Bumped at every allocation, per request (a wire id names one use).
  std::uint32_t generation = 0;
  match_key key{};              // recv: pattern (may hold wildcards); send: the message's key
  std::uint64_t match_seq = 0;  // recv: when it was posted (matching.hpp)
  request_kind kind = request_kind::send;
  bool in_use = false;
  bool complete = false;
  bool synchronous = false;     // send: completes only once matched
  bool freed = false;           // MPI_Request_free: release once complete
  bool cancelled = false;       // the operation was cancelled
  bool cancel_pending = false;  // send: waiting for the receiver's cancel_reply
  bool active = false;          // persistent: started and not yet waited for
  // MULTIPLE: completed at once by send_unlocked and known to nobody else,
  // so its waiter recycles it into its thread's cache without the call lock
  // (request_cache_recycle); request_cancel clears it.
  bool at_once = false;
  // MULTIPLE: a receive of plain bytes posted without the call lock
  // (recv_unlocked), which a thread polling without it may deliver
  // (message_arrived_aside). Its completion is read with request_done
  // everywhere, and MPI_Request_free marks it under its context's lock.
  bool aside = false;
  // MULTIPLE: a rendezvous send of plain bytes whose data may be written
  // without the call lock (send_request; rendezvous.hpp, "aside sends"):
  // registered in its VC's `sending_aside` and not counted in
  // rt->rendezvous_sends. `stream_cleared`: its CTS came; it, `expected`,
  // `progress` and `peer_request` are then under the VC's send_lock.
  bool stream_aside = false;
  bool stream_cleared = false;
  // recv: counted in rt->pipeline_receives (its CTS went out, not aside);
  // a transport's read into `buffer` is under way (rendezvous_read_done
  // ends it). Recovery (protocols/recovery.hpp) reads both.
  bool piped = false;
  bool reading = false;
  // recv: a transport reads a data packet's body straight into `buffer`
  // (rendezvous_data_place) until it delivers the packet: a failure or
  // revocation that ends the receive meanwhile leaves its completion to
  // that delivery, unless the sender is dead (its connection gone).
  bool placing = false;
  persistent_args persistent;  // persistent.op != none: made by MPI_*_init
  // A non-contiguous datatype. A send of at most the eager limit travels
  // packed whole through `scratch` (freed with the request). Receives and
  // longer sends stream (`typed_stream`): `buffer` is unused, and each piece
  // is packed from, or unpacked into, the user's buffer (unpack_to,
  // unpack_count, unpack_type) at its offset in the message, `scratch`
  // holding one fragment (send) or nothing (receive). unpack_to may be
  // MPI_BOTTOM (address 0) under a type of absolute addresses. A streamed
  // send of large blocks also describes its layout at the start of `scratch`
  // for a receiver that reads it with single copies (rendezvous.cpp).
  void *scratch = nullptr;
  void *unpack_to = nullptr;
  bool typed_stream = false;
  int unpack_count = 0;
  const dtype *unpack_type = nullptr;  // kept alive even if the user frees the type
  send_state state = send_state::queued;
  packet_type protocol = packet_type::eager;  // send: eager, eager_sync or rts
  std::byte *buffer = nullptr;                // recv: where the data goes; send: the user's data
  std::size_t bytes = 0;                      // recv: capacity; send: message length
  std::size_t progress = 0;        // send: bytes streamed; recv: bytes arrived (rendezvous)
  std::size_t expected = 0;        // send: bytes the receiver wants; recv: bytes to arrive
  std::uint64_t peer_request = 0;  // the other side's request id (rendezvous)
  // A rendezvous send whose transport lets the receiver read `buffer` itself
  // keeps here what the transport needs to undo that (an RMA registration's
  // address and key); opaque to the device, which only calls conceal() while
  // `exposed` is set.
  struct exposure {
    bool exposed = false;
    std::uint64_t words[2] = {};
  } exposure;
  int peer = -1;  // world rank of the other side once known
  const communicator *comm = nullptr;
  schedule *sched = nullptr;  // coll: the steps it runs (owned)
  // The outcome, valid once complete.
  int status_source = 0;
  int status_tag = 0;
  int status_error = 0;
  std::size_t status_bytes = 0;
  request_ext *ext = nullptr;  // set: the operation is the extension's (see request_ext)
  // MULTIPLE: a receive matched without the call lock that took this
  // message, until the call lock's holder delivers it (recv_multiple.hpp).
  unexpected_msg *taken = nullptr;
  // MULTIPLE: the link of the call lock's hand-over stacks in
  // rendezvous.cpp (a receive whose CTS had no room, an aside send freed
  // before its last packet).
  request *cts_next = nullptr;
};

// MPI_THREAD_MULTIPLE: requests handed by threads without the call lock to
// its next holder, on a lock-free stack linked through `Link` (no thread
// waits on it). A push publishes the request's fields (release); the drain
// takes the whole stack (acquire), newest first, unlinking each before
// `fn` sees it; one load when empty.
template <request *request::*Link>
class handover_stack {
 public:
  void push(request &r) {
    request *head = top_.load(std::memory_order_relaxed);
    do {
      r.*Link = head;
    } while (!top_.compare_exchange_weak(head, &r, std::memory_order_release,
                                         std::memory_order_relaxed));
  }
  template <typename Fn>
  void drain(Fn fn) {
    if (top_.load(std::memory_order_relaxed) == nullptr) return;
    request *r = top_.exchange(nullptr, std::memory_order_acquire);
    while (r != nullptr) {
      request *next = r->*Link;
      r->*Link = nullptr;
      fn(*r);
      r = next;
    }
  }

 private:
  std::atomic<request *> top_{nullptr};
};

// A message that arrived before its receive was posted: an eager message with
// its bytes, or an RTS with where to fetch them.
struct unexpected_msg {
  static constexpr std::size_t inline_capacity = 192;

  unexpected_msg *next = nullptr;
  unexpected_msg *prev = nullptr;
  std::uint32_t index = 0;
  match_key key{};
  std::uint64_t match_seq = 0;  // when it arrived (matching.hpp)
  packet_type type = packet_type::eager;
  std::size_t length = 0;  // of the whole message
  int from = 0;            // sender's rank in the world
  std::uint64_t sender_request = 0;
  rts_payload rts{};
  bool claimed = false;  // taken by MPI_Mprobe: named by an MPI_Message handle
  bool held = false;     // its eager bytes count against the sender's credits
  // A claimed RTS that a revocation answered (comm_revoke): its sender no
  // longer waits for it, and its MPI_Mrecv ends with MPIX_ERR_REVOKED.
  bool refused = false;
  std::byte *data = nullptr;  // eager: inline_data, or a matcher buffer for longer messages
  std::byte inline_data[inline_capacity];
};

inline int request_handle(const request &r) {
  return handle_make(handle_kind::request, r.index + 1);
}

inline std::uint64_t request_id(const request &r) {
  return (std::uint64_t{r.generation} << 32) | (r.index + 1);
}

class request_pool {
 public:
  request *allocate(request_kind kind, const communicator *comm) {
    request *r = pool_.allocate();
    ++r->generation;  // the pool keeps it: per request, so a thread may bump it too
    r->kind = kind;
    r->comm = comm;
    r->in_use = true;
    return r;
  }
  [[gnu::always_inline]] void release(request *r) {
    // Only typed, extended and collective requests own anything.
    if (r->scratch != nullptr || r->ext != nullptr || r->sched != nullptr) [[unlikely]] {
      release_owned(r);
    }
    r->in_use = false;
    pool_.release(r);
  }
  // Readies a persistent request for another start: everything but its
  // identity and arguments is reset, and it gets a new generation so that
  // ids of the previous round are refused.
  void restart(request *r) {
    const request keep = *r;
    r->~request();
    new (r) request;
    r->index = keep.index;
    r->generation = keep.generation + 1;
    r->kind = keep.kind;
    r->comm = keep.comm;
    r->in_use = true;
    r->persistent = keep.persistent;
    r->ext = keep.ext;
    r->active = true;
  }
  // The live request named by `handle`, or nullptr.
  request *from_handle(int handle) const {
    if (!handle_is(handle, handle_kind::request) || handle_index(handle) == 0) return nullptr;
    request *r = pool_.at(handle_index(handle) - 1);
    return r != nullptr && r->in_use ? r : nullptr;
  }
  // The live request of `kind` named by a wire id, or nullptr.
  request *from_id(std::uint64_t id, request_kind kind) const {
    const auto index = static_cast<std::uint32_t>(id & 0xffffffffU);
    if (index == 0) return nullptr;
    request *r = pool_.at(index - 1);
    if (r == nullptr || !r->in_use || r->kind != kind) return nullptr;
    return r->generation == static_cast<std::uint32_t>(id >> 32) ? r : nullptr;
  }
  std::size_t live() const { return pool_.live(); }
  // Calls fn on every request in use (recovery: the requests a failure ends).
  template <typename Fn>
  void each_live(Fn fn) const {
    for (std::uint32_t i = 0, n = pool_.made(); i < n; ++i) {
      request *r = pool_.at(i);
      if (r != nullptr && r->in_use) fn(*r);
    }
  }

 private:
  // Frees what `r` owns: its scratch buffer, extension and schedule.
  [[gnu::noinline, gnu::cold]] static void release_owned(request *r) {
    std::free(r->scratch);
    r->scratch = nullptr;
    delete r->ext;
    r->ext = nullptr;
    if (r->sched != nullptr) {
      schedule_delete(r->sched);
      r->sched = nullptr;
    }
  }

  pool<request> pool_;
};

// The lifecycle (request.cpp): allocated by a send or receive, completed by
// its protocol, released by the binding that waits for it (or here, when the
// user freed it first).

// Marks `r` complete (while a cancel is pending, that waits for the answer);
// a request the user freed is released here (request_release_freed).
// Inline: every message completes one. The store is a release, after the
// status fields: under MULTIPLE a thread waiting without the call lock reads
// `complete` with request_done (an acquire) and may then read the outcome
// and recycle the request at once (wait.cpp, finish_at_once), so neither
// this nor any caller touches `r` after the store, unless the user freed it
// (then nobody waits for it). On x86 both are the plain `mov` they were
// (bench/results/, callgrind).
void request_release_freed(request &r);
inline void request_complete(request &r) {
  if (r.cancel_pending) [[unlikely]] {
    return;  // cancel_on_reply completes it
  }
  const bool freed = r.freed;
  std::atomic_ref<bool>(r.complete).store(true, std::memory_order_release);
  if (freed) [[unlikely]] {
    request_release_freed(r);
  }
}

// Whether `r` is complete, read without the call lock (MULTIPLE): an
// acquire load that pairs with request_complete's release, so the status
// fields written before it are seen.
inline bool request_done(const request &r) {
  return std::atomic_ref<bool>(const_cast<bool &>(r.complete)).load(std::memory_order_acquire);
}

// Waits for `r` to complete and releases it.
void request_wait_release(request *r);

// MPI_THREAD_MULTIPLE: each thread keeps a few fresh send requests, taken
// from the pool under the call lock, for its MPI_Isend calls that run
// without it (send_unlocked). A cache made under an earlier runtime (unit
// tests) is forgotten.
// Without a lock: one fresh send request, or nullptr when the cache is empty.
request *request_cache_take();
// Without a lock: gives back a request taken and not used.
void request_cache_put(request *r);
// Without a lock: takes back `r`, a request of this thread's completed at
// once (at_once) whose outcome has been read, as a fresh send request with
// a new generation. False (nothing done) when the cache is full or belongs
// to another runtime: then `r` goes back to the pool under the call lock.
bool request_cache_recycle(request *r);
// Without a lock: `r`, complete, its outcome read and its handle gone, which
// its thread's cache had no room for (request_cache_recycle), handed to the
// call lock's next holder to release (request_release_drain).
void request_release_later(request *r);
// Under the call lock: releases those (one load when none). Run with
// recv_taken_drain.
void request_release_drain();
// Under the call lock: fills this thread's cache.
void request_cache_fill();
// Under the call lock: returns this thread's cache to the pool (MPI_Finalize).
void request_cache_drop();

}  // namespace iris::device
