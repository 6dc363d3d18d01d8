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

#include <optional>
#include <string>
#include <vector>

#include "device/transport.hpp"
#include "shm/bell.hpp"
#include "shm/node.hpp"
#include "shm/queue.hpp"
#include "shm/ring.hpp"
#include "shm/segment.hpp"

namespace iris::device {

class shm_transport final : public transport {
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
  void expose_layout(vc &to, rts_payload &where, const void *base, const void *layout,
                     std::size_t layout_bytes) override;
  bool reads_scattered(vc &from, std::size_t bytes) override;
  xfer read_scattered(vc &from, const rts_payload &where, read_plan &plan) override;
  std::string describe() const override;
  bool wakes_sleepers() const override { return bells_; }
  shm::bell *own_bell() const override { return own_bell_; }

 private:
  struct peer {
    int world_rank = 0;
    shm::bell *bell = nullptr;  // rung after every send
    shm::ring_sender tx;
    shm::ring_receiver rx;
    bool cma = false;  // this peer's memory can be read
  };
  int drain(peer &p, int budget);
  bool cma_wanted(std::size_t bytes) const;

  std::vector<int> local_ranks_;  // world ranks on this node, ascending
  int local_index_ = 0;
  std::string name_;
  std::optional<shm::segment> segment_;
  shm::bell *own_bell_ = nullptr;
  bool bells_ = false;       // registered for the sleepers' fence (shm/bell.hpp)
  std::vector<peer> peers_;  // indexed by vc.slot
};

class shm_queue_transport final : public transport {
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
  bool reads_scattered(vc &from, std::size_t bytes) override;
  xfer read_scattered(vc &from, const rts_payload &where, read_plan &plan) override;
  std::string describe() const override;
  std::string statistics() const override;
  bool wakes_sleepers() const override { return bells_; }
  shm::bell *own_bell() const override { return own_bell_; }

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
  };
  xfer send_queued(peer &p, const packet_header &h, std::span<const iovec> payload,
                   std::size_t bytes);
  void take_ring(peer &p);
  int drain_queue(int budget);
  int drain_ring(peer &p, int budget);
  void deliver(int world_rank, const std::byte *bytes, std::size_t length);
  bool cma_wanted(std::size_t bytes) const;

  std::vector<int> local_ranks_;  // world ranks on this node, ascending
  int local_index_ = 0;
  std::string name_;
  std::string placement_;  // what place_queue said
  shm::node_shape shape_;
  std::optional<shm::node_segment> segment_;
  shm::bell *own_bell_ = nullptr;
  bool bells_ = false;  // registered for the sleepers' fence (shm/bell.hpp)
  shm::queue_receiver inbox_;
  std::vector<peer> peers_;         // indexed by vc.slot
  std::vector<int> slot_of_local_;  // local index -> vc.slot (-1: this rank)
  std::vector<peer *> active_;      // peers whose announced rings this rank polls
  std::uint64_t busy_packets_ = 0;
  std::uint64_t rings_sent_ = 0, rings_refused_ = 0, queued_packets_ = 0;
};

}  // namespace iris::device
