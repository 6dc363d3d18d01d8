// A virtual connection: everything this process keeps about one peer. The
// protocol state lives here; how packets reach the peer is its transport's
// business, chosen once at setup (device/transport.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/base/threading.hpp"
#include "device/core/match.hpp"
#include "device/core/packet.hpp"
#include "device/core/request.hpp"

namespace iris::device {

class transport;

// A count that one thread writes (the call lock's holder) and others read
// without a lock: relaxed loads and stores, plain moves on x86. A copy (vector
// growth at setup) starts at zero.
class shared_count {
 public:
  shared_count() = default;
  shared_count(const shared_count &) {}
  shared_count &operator=(const shared_count &) { return *this; }
  ~shared_count() = default;
  int get() const { return n_.load(std::memory_order_relaxed); }
  void add(int d) { n_.store(n_.load(std::memory_order_relaxed) + d, std::memory_order_relaxed); }

 private:
  std::atomic<int> n_{0};
};

// A count any thread may add to and one thread takes whole (read-modify-
// write atomics). A copy (vector growth at setup) starts at zero.
class owed_count {
 public:
  owed_count() = default;
  owed_count(const owed_count &) {}
  owed_count &operator=(const owed_count &) { return *this; }
  ~owed_count() = default;
  int get() const { return n_.load(std::memory_order_relaxed); }
  // Returns the count after adding `d`.
  int add(int d) { return n_.fetch_add(d, std::memory_order_relaxed) + d; }
  int take() { return n_.exchange(0, std::memory_order_relaxed); }

 private:
  std::atomic<int> n_{0};
};

// MPI_THREAD_MULTIPLE: the rendezvous requests of one peer whose data
// packets threads move without the call lock: receives streaming in, which
// any reader of the peer's records may deliver (vc::streaming_aside; added
// by whoever answers the RTS, found and removed by the readers), and sends
// streaming out, which any holder of the VC's send_lock may write
// (vc::sending_aside; added by the call lock's holder as the RTS goes out).
// A leaf lock of its own guards the array, and the count is read without
// it, so a VC with none costs one load. A request that finds it full
// streams as under the call lock.
class aside_streams {
 public:
  static constexpr int capacity = 8;
  aside_streams() = default;
  // A copy (vector growth at setup) is a new, empty one.
  aside_streams(const aside_streams &) {}
  aside_streams &operator=(const aside_streams &) { return *this; }
  ~aside_streams() = default;

  bool empty() const { return count_.load(std::memory_order_relaxed) == 0; }
  // Whether `r` joined (false: full).
  bool add(request *r) {
    const lock_if held(lock_, true);
    const int n = count_.load(std::memory_order_relaxed);
    if (n == capacity) return false;
    streams_[n] = r;
    count_.store(n + 1, std::memory_order_relaxed);
    return true;
  }
  // The receive of wire id `id` (request_id), or nullptr.
  request *find(std::uint64_t id) {
    if (empty()) return nullptr;
    const lock_if held(lock_, true);
    for (int i = 0, n = count_.load(std::memory_order_relaxed); i < n; ++i) {
      if (request_id(*streams_[i]) == id) return streams_[i];
    }
    return nullptr;
  }
  bool holds(const request &r) { return find(request_id(r)) != nullptr; }
  // The first that `pred` accepts, or nullptr.
  template <typename Pred>
  request *find_if(Pred pred) {
    if (empty()) return nullptr;
    const lock_if held(lock_, true);
    for (int i = 0, n = count_.load(std::memory_order_relaxed); i < n; ++i) {
      if (pred(*streams_[i])) return streams_[i];
    }
    return nullptr;
  }
  void remove(const request *r) {
    const lock_if held(lock_, true);
    const int n = count_.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) {
      if (streams_[i] == r) {
        streams_[i] = streams_[n - 1];
        count_.store(n - 1, std::memory_order_relaxed);
        return;
      }
    }
  }

 private:
  spin_lock lock_;
  std::atomic<int> count_{0};
  request *streams_[capacity] = {};
};

struct vc {
  int world_rank = 0;
  transport *via = nullptr;               // reaches this peer; set at setup, never changes
  int slot = -1;                          // the transport's own index for this peer
  bool flow_controlled = true;            // eager credits and rendezvous apply (not to oneself)
  std::size_t fragment = 0;               // largest rendezvous data payload to this peer
  std::size_t eager_limit = 0;            // largest eager message to this peer
  int window = 0;                         // eager credit units this peer grants in all
  int credits = 0;                        // eager credit units we may still spend at it
  int owed = 0;                           // units we owe it (its eager messages we consumed)
  intrusive_queue<request> send_queue;    // message packets waiting, in send order
  intrusive_queue<request> stream_queue;  // rendezvous sends streaming data
  // The first `stream_width` of them take turns, a fragment each, as Open
  // MPI's ob1 interleaves its pending sends; `stream_turn` is the one whose
  // fragment goes next (rendezvous_push). The transport sets the width, by
  // what its streams measured (a window of sends of one buffer then reads
  // each piece of it while it is in the cache).
  std::size_t stream_width = 1;
  std::size_t stream_turn = 0;
  // Receives streaming in from this peer as data packets (the sender's
  // first few streams take turns), timed in runs for a transport that
  // learns which engine is faster (transport::times_streams): a run starts
  // at the first packet of a message that streams among others, or that
  // the transport asked to time (time_next_stream), and ends when a
  // message completes and none streams or 8 MiB have come: when it
  // started (0: none) and the bytes of the packets after its first.
  std::uint64_t stream_started = 0;
  std::size_t stream_bytes = 0;
  bool time_next_stream = false;
  // A message alone sent to the pipeline by such a transport: when the
  // engine was chosen (0: none), until the receive ends (alone_timed).
  std::uint64_t alone_started = 0;
  std::vector<packet_header> backlog;  // control packets that found the transport full
  bool on_sending_list = false;
  // MPI_THREAD_MULTIPLE (device/README.md, "Threads"). `shared` is set at
  // init under MULTIPLE when the transport lets sends to different peers run
  // at once (transport::concurrent_sends): then MPI_Send and MPI_Isend of an
  // eager message that goes out at once run without the call lock, under
  // `send_lock` (send_unlocked). `send_lock` guards `credits` and the
  // transport's send to this peer: the transport's send takes it, and so
  // does every other use of `credits` (credit_take, credit_receive_shared,
  // credit_refund). The rest (`owed`, the queues, the backlog) stays the
  // call lock's: an unlocked send piggybacks no credits and queues nothing.
  // The order: call lock -> one VC lock, never two at once, and nothing is
  // waited for while a VC lock is held.
  bool shared = false;
  spin_lock send_lock;
  shared_count queued_sends;         // requests in send_queue: an unlocked send must not pass them
  std::uint64_t unlocked_eager = 0;  // messages sent by send_unlocked (under send_lock)
  std::uint64_t aside_credit_packets = 0;  // sent by credit_return_aside (under send_lock)
  // Units owed for messages delivered without the call lock
  // (credit_return_aside): given back in a credit packet of their own, or
  // folded into `owed` by the call lock's poll (credit_fold).
  owed_count owed_aside;
  // Aside receives (request::aside) streaming in from this peer over a
  // transport that lets an aside pass deliver their data
  // (transport::pipelines_aside): delivered by whoever reads this peer's
  // records, under the lock that reads them, and neither counted among
  // `pipeline_receives` nor timed.
  aside_streams streaming_aside;
  shared_count aside_data;  // their packets delivered by aside passes (under the reading lock)
  // Rendezvous sends to this peer whose data any thread holding `send_lock`
  // may write (request::stream_aside; transport::streams_sends_aside), and
  // their data packets written without the call lock (under send_lock).
  aside_streams sending_aside;
  shared_count aside_sent;
  bool has_pending() const {
    return !send_queue.empty() || !stream_queue.empty() || !backlog.empty() ||
           !sending_aside.empty();
  }
};

// Holds `v.send_lock` when the VC is shared; nothing otherwise.
class vc_guard {
 public:
  explicit vc_guard(vc &v) : v_(v.shared ? &v : nullptr) {
    if (v_ != nullptr) v_->send_lock.lock();
  }
  ~vc_guard() {
    if (v_ != nullptr) v_->send_lock.unlock();
  }
  vc_guard(const vc_guard &) = delete;
  vc_guard &operator=(const vc_guard &) = delete;

 private:
  vc *v_;
};

}  // namespace iris::device
