#include "device/protocols/port.hpp"

#include "device/protocols/send.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

bool port_send(vc &to, port_step step, int port, std::span<const std::byte> table) {
  packet_header h{};
  h.type = packet_type::port;
  h.source = static_cast<std::int32_t>(step);
  h.tag = port;
  h.length = table.size();
  return packet_write(to, h, table.data(), table.size());
}

// A request for a port that is not open is refused at once (an empty
// reply); a withdrawal takes back its connect's request if still waiting.
const char *port_on_packet(vc &from, const packet_header &h, const std::byte *payload) {
  const auto step = static_cast<port_step>(h.source);
  if (step == port_step::withdraw) {
    std::erase_if(rt->port_inbox, [&](const port_message &m) {
      return m.step == port_step::request && m.port == h.tag && m.from == from.world_rank;
    });
    return nullptr;
  }
  if (step == port_step::request && rt->ports_open.count(h.tag) == 0) {
    packet_header refusal{};
    refusal.type = packet_type::port;
    refusal.source = static_cast<std::int32_t>(port_step::reply);
    refusal.tag = h.tag;
    control_send(from, refusal);
    return nullptr;
  }
  rt->port_inbox.push_back(port_message{static_cast<port_step>(h.source), h.tag, from.world_rank,
                                        std::vector<std::byte>(payload, payload + h.length)});
  return nullptr;
}

}  // namespace iris::device
