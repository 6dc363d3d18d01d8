// The shared-memory transport, for ranks on this node: one ring per ordered
// pair of local ranks in the node's segment (shm/segment.hpp), drained at
// most `budget` records per peer per poll; rendezvous data read in one copy
// with CMA (shm/cma.hpp) when the kernel permits and the engine choice says
// so, else pipelined through the ring by the device (CTS + data).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "device/transport.hpp"
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
  int poll(int budget) override;
  void expose(vc &to, request &r, rts_payload &where) override;
  xfer read(vc &from, const rts_payload &where, std::byte *to, std::size_t bytes,
            std::uint64_t cookie) override;
  std::string describe() const override;

 private:
  struct peer {
    int world_rank = 0;
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
  std::vector<peer> peers_;  // indexed by vc.slot
};

}  // namespace iris::device
