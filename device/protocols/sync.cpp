#include "device/protocols/sync.hpp"

#include "device/protocols/send.hpp"

namespace iris::device {

void sync_ack_send(vc &to, std::uint64_t sender_request) {
  packet_header h{};
  h.type = packet_type::sync_ack;
  h.sender_request = sender_request;
  control_send(to, h);
}

const char *sync_on_ack(vc &from, const packet_header &h, const std::byte *payload) {
  (void)payload;
  request *r = send_awaiting(from, h.sender_request, send_state::wait_ack);
  if (r == nullptr) return "sync_ack for a send that is not waiting for one";
  send_done(*r);
  return nullptr;
}

}  // namespace iris::device
