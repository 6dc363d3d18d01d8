#include "device/packet.hpp"

namespace iris::device {

const char *packet_check(const packet_header &h, std::size_t payload, int world_size) {
  if (h.flags != 0) return "unknown flags";
  if (h.source < 0 || h.source >= world_size) return "source rank out of range";
  if (h.tag < 0) return "negative tag";
  if (h.length > max_message_length) return "impossible message length";
  switch (h.type) {
    case packet_type::eager:
      if (payload != h.length) return "eager payload length differs from the message length";
      return nullptr;
    case packet_type::eager_first:
      if (payload == 0 || payload >= h.length) return "first fragment length out of range";
      return nullptr;
    case packet_type::eager_more:
      if (payload == 0 || h.offset == 0 || h.offset > h.length || payload > h.length - h.offset) {
        return "fragment outside its message";
      }
      return nullptr;
  }
  return "unknown packet type";
}

}  // namespace iris::device
