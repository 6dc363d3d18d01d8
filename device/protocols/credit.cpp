// Eager flow control: the rules that are not inline in credit.hpp.
#include "device/protocols/credit.hpp"

#include "device/core/transport.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

bool credit_short_poll(vc &to, int cost) {
  // A send may be called from inside a poll (a handler answering): never
  // poll again from there.
  if (rt->polling) return false;
  // A netmod such as OFI may need more than one poll to read them.
  for (int polls = 0; polls < 4 && to.credits < cost; ++polls) {
    if (progress_poll() == 0) break;
  }
  return to.credits >= cost;
}

void credit_receive_shared(vc &from, const packet_header &h) {
  if (h.credits == 0) return;
  const vc_guard guard(from);
  const int credits = from.credits + h.credits;
  from.credits = credits < from.window ? credits : from.window;
}

void credit_packet_send(vc &from) {
  packet_header h{};
  h.type = packet_type::credit;
  ++rt->stats.credit_packets;
  control_send(from, h);
}

void credit_return_aside(vc &from, std::size_t length) {
  if (!from.flow_controlled) return;
  if (from.owed_aside.add(credit_cost(length)) * 4 < from.window) return;
  const int give = from.owed_aside.take();
  if (give == 0) return;  // another thread took them first
  packet_header h{};
  h.type = packet_type::credit;
  const int carried = give < 0xffff ? give : 0xffff;
  h.credits = static_cast<std::uint16_t>(carried);
  // send_held: what any thread may send (a netmod's send_concurrent).
  const vc_guard guard(from);
  if (from.via->send_held(from, h, {}) != xfer::done) {
    from.owed_aside.add(give);  // no room now: the next one, or the call lock's poll
    return;
  }
  if (give > carried) from.owed_aside.add(give - carried);
  ++from.aside_credit_packets;
}

const char *credit_on_packet(vc &from, const packet_header &h, const std::byte *payload) {
  (void)from, (void)h, (void)payload;
  return nullptr;
}

}  // namespace iris::device
