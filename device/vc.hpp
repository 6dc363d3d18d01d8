// A virtual connection: everything this process keeps about one peer. The
// protocol state lives here; how packets reach the peer is its transport's
// business, chosen once at setup (device/transport.hpp).
#pragma once

#include <cstddef>
#include <vector>

#include "device/match.hpp"
#include "device/packet.hpp"
#include "device/request.hpp"

namespace iris::device {

class transport;

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
  std::vector<packet_header> backlog;     // control packets that found the transport full
  bool on_sending_list = false;
  bool has_pending() const {
    return !send_queue.empty() || !stream_queue.empty() || !backlog.empty();
  }
};

}  // namespace iris::device
