// The shared-memory transports, for ranks on this node. Both read
// rendezvous data in one copy with CMA (shm/cma.hpp) when the kernel
// permits and the engine choice says so, else the device pipelines it
// through the transport (CTS + data). Non-contiguous data is read the same
// way, a vector of iovecs at a time (read_scattered), when the device finds
// its blocks large enough.
//
// shm_transport (nodes of at most IRIS_SHM_DENSE_RANKS ranks): one ring per
// ordered pair of local ranks in the node's segment (shm/segment.hpp),
// reserved at start-up, drained at most `budget` records per peer per poll.
//
// shm_queue_transport (larger nodes): each rank has one receive queue in the
// node segment (shm/node.hpp) that every local sender writes to; a pair
// that gets busy takes a ring from the node's pool and announces it through
// the queue, after everything it queued before. A poll looks at the queue
// and at the rings announced to this rank: O(active channels), not O(ranks).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/core/transport.hpp"
#include "device/core/vc.hpp"
#include "device/protocols/engine_choice.hpp"
#include "device/transports/liveness.hpp"
#include "device/transports/shm_common.hpp"
#include "shm/bell.hpp"
#include "shm/node.hpp"
#include "shm/queue.hpp"
#include "shm/ring.hpp"
#include "shm/segment.hpp"

namespace iris::device {

// This rank's doorbell (shm/bell.hpp) and the sleeper's half of its pair:
// marked asleep, the heavy fence (then the caller polls once more), the
// futex until a sender rings or the timeout passes, marked awake.
class sleeper_bell {
 public:
  void attach(shm::bell &b) { bell_ = &b; }
  bool held() const { return bell_ != nullptr; }
  bool begin() {
    bell_->asleep.store(1, std::memory_order_relaxed);
    if (shm::heavy_fence()) return true;
    bell_->asleep.store(0, std::memory_order_relaxed);
    return false;
  }
  bool wait(int timeout_ms) { return shm::bell_wait(*bell_, timeout_ms); }
  void end() { bell_->asleep.store(0, std::memory_order_relaxed); }
  // From any thread: rings it, as a sender would.
  void ring() { shm::bell_wake(*bell_); }
  shm::bell &own() { return *bell_; }

 private:
  shm::bell *bell_ = nullptr;
};

// Recovery: starts `watch` over the local peers (world rank, bell) whose
// CMA cards the launcher has, in any order.
void start_watch(liveness_watch &watch, const std::vector<std::pair<int, shm::bell *>> &peers);
// MPI_Finalize: this rank finished (its bell says so), and the watch stops.
void finish_watch(sleeper_bell &own, liveness_watch &watch);

class shm_transport : public transport {
 public:
  // Before the PMI fence: the node's first local rank creates the segment,
  // and every rank puts its CMA probe card. Throws shm::error.
  shm_transport(runtime &r, std::vector<int> local_ranks, int local_index);
  // After the fence: attaches the segment, probes CMA with one peer, and
  // takes the VCs of the other local ranks.
  void connect(runtime &r);

  std::string_view name() const override { return "shm"; }
  xfer send(vc &to, const packet_header &h, std::span<const iovec> payload) override;
  xfer send_filled(vc &to, const packet_header &h, std::size_t bytes, const payload_filler &f,
                   std::byte *staging) override;
  int poll(int budget) override;
  void expose(vc &to, request &r, rts_payload &where) override;
  xfer read(vc &from, const rts_payload &where, std::byte *to, std::size_t bytes,
            std::uint64_t cookie) override;
  bool times_streams() const override;
  void stream_timed(vc &from, std::size_t bytes, std::size_t timed, std::uint64_t ns) override;
  void alone_timed(vc &from, std::size_t bytes, std::uint64_t ns) override;
  void expose_layout(vc &to, rts_payload &where, const void *base, const void *layout,
                     std::size_t layout_bytes) override;
  std::size_t scattered_min_block() const override;
  bool reads_scattered(vc &from, std::size_t bytes) override;
  xfer read_scattered(vc &from, const rts_payload &where, read_plan &plan) override;
  xfer peer_access(vc &peer, bool write, std::uint64_t address, void *local,
                   std::size_t bytes) override {
    auto &p = peers_[static_cast<std::size_t>(peer.slot)];
    return cma_peer_access(p.cma, p.pid, p.world_rank, write, address, local, bytes);
  }
  bool peer_accessible(const vc &peer) const override {
    return peers_[static_cast<std::size_t>(peer.slot)].cma;
  }
  void *block_alloc(std::size_t bytes, std::uint64_t key) override {
    return blocks_.alloc(bytes, key);
  }
  void block_unlink(std::uint64_t key) override { blocks_.unlink(key); }
  std::byte *peer_block(vc &peer, std::uint64_t key, std::size_t bytes) override {
    return blocks_.peer(peer.world_rank, key, bytes);
  }
  std::atomic<std::uint64_t> *published_word() override {
    return bell_.held() ? &bell_.own().published : nullptr;
  }
  const std::atomic<std::uint64_t> *peer_published_word(const vc &peer) const override {
    return &peers_[static_cast<std::size_t>(peer.slot)].bell->published;
  }
  std::string describe() const override;
  std::string statistics() const override;
  bool statistic(std::string_view name, std::uint64_t &value) const override;
  bool wakes_sleepers() const override { return bells_; }
  bool holds_bell() const override { return bell_.held(); }
  bool sleep_begin() override { return bell_.begin(); }
  bool sleep_wait(int timeout_ms) override { return bell_.wait(timeout_ms); }
  void sleep_end() override { bell_.end(); }
  void wake_self() override {
    if (bell_.held()) bell_.ring();
  }
  void watch_peers() override;
  // Marks this rank finished on its bell (its process may end now), and
  // stops the liveness watch.
  void finalize() override { finish_watch(bell_, watch_); }

 private:
  struct peer {
    int world_rank = 0;
    shm::bell *bell = nullptr;  // rung after every send
    shm::ring_sender tx;
    shm::ring_receiver rx;
    bool cma = false;               // this peer's memory can be read
    std::int64_t pid = 0;           // for peer_access: 0 not looked up yet, -1 none
    engine_choice engines;          // under `auto`: CMA or the pipeline, learned
    flow alone_kind = flow::alone;  // of the message alone being timed (alone_timed)
    // MULTIPLE: held by whoever reads `rx` (drain, shared or aside)
    // once aside passes are on (aside_).
    spin_lock rx_lock;
  };
  // One pass over `p`'s ring as `P` reads it (shm_common.hpp). `locked`:
  // a shared pass takes p.rx_lock (once aside passes are on); an aside pass
  // is called with it held.
  template <pass P>
  int drain(peer &p, int budget, bool locked);
  // What drain reads of one record: the header, the payload and its length.
  struct ring_packet {
    packet_header h;
    const std::byte *payload;
    std::size_t length;
  };
  ring_packet unpack(const peer &p, const shm::record_view &record) const;
  // Whether a message of `bytes` from `p` is read with CMA: the rule (cma_chosen), and under `auto`
  // what the peer's messages of its `kind` of traffic have shown (set here).
  bool cma_wanted(peer &p, vc &from, std::size_t bytes, flow &kind);
  // Whether another record from `p` waits behind the one being handled
  // (or, outside drain, any record).
  bool next_waiting(peer &p);

  std::vector<int> local_ranks_;  // world ranks on this node, ascending
  int local_index_ = 0;
  std::string name_;
  std::optional<shm::segment> segment_;
  sleeper_bell bell_;               // this rank's, on the segment
  bool bells_ = false;              // registered for the sleepers' fence (shm/bell.hpp)
  std::vector<peer> peers_;         // indexed by vc.slot
  const peer *draining_ = nullptr;  // whose ring drain() is reading
  std::uint64_t cma_messages_ = 0;  // rendezvous messages read with CMA
  fan_in_watch fan_in_;             // whether rendezvous messages come from several peers
  aside_switch aside_;    // MULTIPLE: whether threads without the call lock read the rings
  block_maps blocks_;     // MPI_Alloc_mem's blocks (transport::block_alloc)
  liveness_watch watch_;  // recovery: the peers' processes (liveness.hpp)

 protected:
  // poll, giving credits back under each VC's lock (packet_deliver_shared),
  // each ring read under its rx_lock.
  int poll_shared(int budget);
  // poll_aside: each ring whose rx_lock is free, through drain<pass::aside>.
  int poll_unlocked(int budget);
};

// MPI_THREAD_MULTIPLE's pair rings, made instead of shm_transport when
// MPI_Init_thread asked for MULTIPLE (so that below it nothing tests for
// threads): a ring per ordered pair has one producer, this rank, and every
// write into it (and the credits at that peer) is under the VC's send_lock,
// so threads sending to different peers proceed at once (transport.hpp,
// concurrent_sends).
class shm_shared_transport final : public shm_transport {
 public:
  using shm_transport::shm_transport;
  bool concurrent_sends() const override { return true; }
  xfer send(vc &to, const packet_header &h, std::span<const iovec> payload) override {
    to.send_lock.lock();
    const xfer result = shm_transport::send(to, h, payload);
    to.send_lock.unlock();
    return result;
  }
  xfer send_filled(vc &to, const packet_header &h, std::size_t bytes, const payload_filler &f,
                   std::byte *staging) override {
    to.send_lock.lock();
    const xfer result = shm_transport::send_filled(to, h, bytes, f, staging);
    to.send_lock.unlock();
    return result;
  }
  xfer send_held(vc &to, const packet_header &h, std::span<const iovec> payload) override {
    return shm_transport::send(to, h, payload);
  }
  int poll(int budget) override { return poll_shared(budget); }
  int poll_aside(int budget) override { return poll_unlocked(budget); }
  // A peer's records all come through its ring, under its rx_lock once aside
  // passes are on.
  bool pipelines_aside(const vc &from, std::size_t bytes) const override;
  // A CTS comes through the peer's ring like any record, and a data packet
  // to it is a record written under its send_lock.
  bool streams_sends_aside(const vc &to) const override {
    (void)to;
    return true;
  }
};

class shm_queue_transport : public transport {
 public:
  // Before the PMI fence: the node's first local rank creates the segment
  // (queues reserved, pool not), and every rank puts its CMA probe card.
  // Throws shm::error.
  shm_queue_transport(runtime &r, std::vector<int> local_ranks, int local_index);
  // After the fence: attaches the segment, places this rank's queue on its
  // NUMA node, probes CMA with one peer, and takes the VCs of the other
  // local ranks.
  void connect(runtime &r);

  std::string_view name() const override { return "shm"; }
  xfer send(vc &to, const packet_header &h, std::span<const iovec> payload) override;
  int poll(int budget) override;
  void expose(vc &to, request &r, rts_payload &where) override;
  xfer read(vc &from, const rts_payload &where, std::byte *to, std::size_t bytes,
            std::uint64_t cookie) override;
  void expose_layout(vc &to, rts_payload &where, const void *base, const void *layout,
                     std::size_t layout_bytes) override;
  std::size_t scattered_min_block() const override;
  bool reads_scattered(vc &from, std::size_t bytes) override;
  xfer read_scattered(vc &from, const rts_payload &where, read_plan &plan) override;
  xfer peer_access(vc &peer, bool write, std::uint64_t address, void *local,
                   std::size_t bytes) override {
    auto &p = peers_[static_cast<std::size_t>(peer.slot)];
    return cma_peer_access(p.cma, p.pid, p.world_rank, write, address, local, bytes);
  }
  bool peer_accessible(const vc &peer) const override {
    return peers_[static_cast<std::size_t>(peer.slot)].cma;
  }
  void *block_alloc(std::size_t bytes, std::uint64_t key) override {
    return blocks_.alloc(bytes, key);
  }
  void block_unlink(std::uint64_t key) override { blocks_.unlink(key); }
  std::byte *peer_block(vc &peer, std::uint64_t key, std::size_t bytes) override {
    return blocks_.peer(peer.world_rank, key, bytes);
  }
  std::atomic<std::uint64_t> *published_word() override {
    return bell_.held() ? &bell_.own().published : nullptr;
  }
  const std::atomic<std::uint64_t> *peer_published_word(const vc &peer) const override {
    return &peers_[static_cast<std::size_t>(peer.slot)].bell->published;
  }
  std::string describe() const override;
  std::string statistics() const override;
  bool statistic(std::string_view name, std::uint64_t &value) const override;
  bool wakes_sleepers() const override { return bells_; }
  bool holds_bell() const override { return bell_.held(); }
  bool sleep_begin() override { return bell_.begin(); }
  bool sleep_wait(int timeout_ms) override { return bell_.wait(timeout_ms); }
  void sleep_end() override { bell_.end(); }
  void wake_self() override {
    if (bell_.held()) bell_.ring();
  }
  void watch_peers() override;
  // Marks this rank finished on its bell (its process may end now), and
  // stops the liveness watch.
  void finalize() override { finish_watch(bell_, watch_); }

 private:
  // How this rank sends to one peer.
  enum class route : std::uint8_t {
    queue,       // through the peer's queue, counting packets until busy
    announcing,  // a ring is taken; its announcement is not in the queue yet
    ring,        // through the pair ring, announced
    queue_only,  // the pool was spent or /dev/shm full: the queue for good
  };
  struct peer {
    int world_rank = 0;
    int local = 0;              // index on the node
    shm::bell *bell = nullptr;  // rung after every send
    shm::queue_sender queue;
    route via = route::queue;
    std::uint64_t queued = 0;       // packets sent through the queue
    std::uint64_t ring_offset = 0;  // of the ring taken (announcing, ring)
    shm::ring_sender tx;
    shm::ring_receiver rx;  // attached once the peer announced its ring
    bool cma = false;       // this peer's memory can be read
    std::int64_t pid = 0;   // for peer_access: 0 not looked up yet, -1 none
    // MULTIPLE: held by whoever reads `rx` once aside passes are on.
    spin_lock rx_lock;
  };
  xfer send_queued(peer &p, const packet_header &h, std::span<const iovec> payload,
                   std::size_t bytes);
  void take_ring(peer &p);
  // The call lock's poll (plain or shared: shm_common.hpp).
  template <pass P>
  int polled(int budget);
  // One pass over the queue and over one announced ring, as `P` reads
  // them: an aside pass holds inbox_lock_ or the ring's rx_lock, and takes
  // only packets (a ring's announcement is the call lock's poll's).
  template <pass P>
  int drain_queue(int budget);
  template <pass P>
  int drain_ring(peer &p, int budget);
  // One record's packet handed on (packet_hand_on).
  template <pass P>
  bool deliver(int world_rank, const std::byte *bytes, std::size_t length);
  bool cma_wanted(std::size_t bytes) const;

  std::vector<int> local_ranks_;  // world ranks on this node, ascending
  int local_index_ = 0;
  std::string name_;
  std::string placement_;  // what place_queue said
  shm::node_shape shape_;
  std::optional<shm::node_segment> segment_;
  sleeper_bell bell_;   // this rank's, in the node segment
  bool bells_ = false;  // registered for the sleepers' fence (shm/bell.hpp)
  shm::queue_receiver inbox_;
  std::vector<peer> peers_;         // indexed by vc.slot
  std::vector<int> slot_of_local_;  // local index -> vc.slot (-1: this rank)
  // The peers whose announced rings this rank polls, in the order of their
  // announcements: filled under the call lock, each entry before the count
  // that covers it (release), never moved, so that threads without the call
  // lock read them too (MULTIPLE's aside passes).
  std::unique_ptr<std::atomic<peer *>[]> announced_;
  std::atomic<std::size_t> announced_count_{0};
  aside_switch aside_;
  block_maps blocks_;     // MPI_Alloc_mem's blocks (transport::block_alloc)
  liveness_watch watch_;  // recovery: the peers' processes (liveness.hpp)
  spin_lock inbox_lock_;  // held by whoever reads inbox_ once aside passes are on
  std::uint64_t busy_packets_ = 0;
  std::uint64_t cma_messages_ = 0;  // rendezvous messages read with CMA

 protected:
  // poll, giving credits back under each VC's lock (packet_deliver_shared),
  // the queue and each ring read under their locks once aside passes are on.
  int poll_shared(int budget);
  // poll_aside: the queue, then each announced ring, whose lock is free.
  int poll_unlocked(int budget);
};

// MPI_THREAD_MULTIPLE's large-node transport, made instead of
// shm_queue_transport when MPI_Init_thread asked for MULTIPLE: all that
// this rank keeps for sending to one peer (its route, its packet count, its
// ring's producer side) is that peer's, written under the VC's send_lock;
// the peers' receive queues take many producers already, and the node's
// ring pool is taken with atomics (shm/node.hpp). So threads sending to
// different peers proceed at once, as over the pair rings.
class shm_queue_shared_transport final : public shm_queue_transport {
 public:
  using shm_queue_transport::shm_queue_transport;
  bool concurrent_sends() const override { return true; }
  xfer send(vc &to, const packet_header &h, std::span<const iovec> payload) override {
    to.send_lock.lock();
    const xfer result = shm_queue_transport::send(to, h, payload);
    to.send_lock.unlock();
    return result;
  }
  xfer send_held(vc &to, const packet_header &h, std::span<const iovec> payload) override {
    return shm_queue_transport::send(to, h, payload);
  }
  int poll(int budget) override { return poll_shared(budget); }
  int poll_aside(int budget) override { return poll_unlocked(budget); }
};

}  // namespace iris::device
