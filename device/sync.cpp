#include "device/sync.hpp"

#include "device/runtime.hpp"
#include "device/send.hpp"

namespace iris::device {

void sync_ack_send(vc &to, std::uint64_t sender_request) {
  packet_header h{};
  h.type = packet_type::sync_ack;
  h.sender_request = sender_request;
  control_send(to, h);
}

const char *sync_on_ack(vc &from, const packet_header &h, const std::byte *payload) {
  (void)payload;
  request *r = rt->requests.from_id(h.sender_request, request_kind::send);
  if (r == nullptr || r->peer != from.world_rank || r->state != send_state::wait_ack) {
    return "sync_ack for a send that is not waiting for one";
  }
  send_done(*r);
  return nullptr;
}

}  // namespace iris::device
