// The self transport: a packet to oneself is delivered at once, inside
// send(). Nothing is ever queued, so it is not flow-controlled: a message to
// oneself is always eager and buffered, and a send to self never waits.
#pragma once

#include "device/core/transport.hpp"

namespace iris::device {

class self_transport final : public transport {
 public:
  std::string_view name() const override { return "self"; }
  xfer send(vc &to, const packet_header &h, std::span<const iovec> payload) override;
  int poll(int budget) override {
    (void)budget;
    return 0;
  }
  bool flow_controlled() const override { return false; }
  bool wakes_sleepers() const override { return true; }  // nothing comes while one sleeps
};

}  // namespace iris::device
