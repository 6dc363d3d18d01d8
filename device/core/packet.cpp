// The one gate: packet_check, where bytes from outside become a header.
// The context id is checked, and the packet dispatched, by
// device/protocols/dispatch.cpp.
#include "device/core/packet.hpp"

namespace iris::device {

const char *packet_check(const packet_header &h, std::size_t payload, int world_size) {
  if (h.flags != 0) return "unknown flags";
  if (h.length > max_message_length) return "impossible length";
  if (is_message(h.type)) {
    if (h.source < 0 || h.source >= world_size) return "source rank out of range";
    if (h.tag < 0) return "negative tag";
  }
  switch (h.type) {
    case packet_type::eager:
    case packet_type::eager_sync:
      if (payload != h.length) return "eager payload length differs from the message length";
      if (h.type == packet_type::eager_sync && h.sender_request == 0) {
        return "synchronous message without a sender request";
      }
      return nullptr;
    case packet_type::rts:
      if (payload != sizeof(rts_payload)) return "rts without its payload";
      if (h.sender_request == 0) return "rts without a sender request";
      return nullptr;
    case packet_type::cts:
      if (payload != 0 || h.sender_request == 0 || h.receiver_request == 0) return "malformed cts";
      return nullptr;
    case packet_type::data:
      if (payload == 0 || payload != h.length || h.receiver_request == 0) {
        return "malformed data fragment";
      }
      return nullptr;
    case packet_type::fin:
    case packet_type::sync_ack:
      if (payload != 0 || h.sender_request == 0) return "completion without a request";
      return nullptr;
    case packet_type::credit:
      if (payload != 0) return "credit packet with a payload";
      return nullptr;
    case packet_type::cancel_send:
    case packet_type::cancel_reply:
      if (payload != 0 || h.sender_request == 0 || h.length > 1) return "malformed cancel";
      return nullptr;
    case packet_type::active:
      if (payload != h.length || payload < sizeof(active_payload)) {
        return "active packet shorter than its step or than its length";
      }
      return nullptr;
    case packet_type::port:
      if (payload != h.length) return "port packet whose payload differs from its length";
      if (h.source < static_cast<std::int32_t>(port_step::request) ||
          h.source > static_cast<std::int32_t>(port_step::withdraw) || h.tag < 0) {
        return "port packet of an unknown step or port";
      }
      return nullptr;
    case packet_type::recovery:
      if (payload != h.length) return "recovery packet whose payload differs from its length";
      if (h.tag < 1 || h.tag > 4) return "recovery packet of an unknown step";
      return nullptr;
  }
  return "unknown packet type";
}

}  // namespace iris::device
