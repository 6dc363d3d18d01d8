#include "device/protocols/cancel.hpp"

#include "device/protocols/credit.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/errors.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {
namespace {

void cancelled_now(request &r) {
  r.cancelled = true;
  r.status_bytes = 0;
  if (r.kind == request_kind::send) {
    send_done(r);
  } else {
    request_complete(r);
  }
}

void reply(vc &to, std::uint64_t sender_request, bool withdrawn) {
  packet_header h{};
  h.type = packet_type::cancel_reply;
  h.sender_request = sender_request;
  h.length = withdrawn ? 1 : 0;
  control_send(to, h);
}

}  // namespace

void request_cancel(request &r) {
  if (r.kind == request_kind::recv && request_done(r)) return;  // too late
  if (r.kind == request_kind::recv) {
    if (rt->matching.withdraw(&r)) cancelled_now(r);  // still posted: nothing matched it
    return;
  }
  if (r.cancel_pending || r.cancelled) return;
  // No peer (MPI_PROC_NULL, Ibsend's own request), or a persistent request
  // not started: nothing is on its way.
  if (r.peer < 0 || (r.persistent.op != persistent_op::none && !r.active)) return;
  vc &to = rt->vcs[static_cast<std::size_t>(r.peer)];
  if (r.stream_aside) {
    // Its CTS may be taken, and its data written, without the call lock
    // (rendezvous.hpp, "aside sends"): too late once cleared; else it goes
    // on as any send, its CTS the call lock's.
    const vc_guard guard(to);
    if (r.stream_cleared) return;
    to.sending_aside.remove(&r);
  }
  if (r.state == send_state::queued) {
    to.send_queue.remove(&r);
    to.queued_sends.add(-1);
    if (r.protocol != packet_type::rts) credit_refund(to, r.bytes);  // never spent
    cancelled_now(r);
    return;
  }
  if (r.state == send_state::streaming) return;  // matched: too late
  if (r.state == send_state::done && (r.protocol == packet_type::rts || r.synchronous)) return;
  // Sent and maybe unmatched: ask the receiver.
  r.cancel_pending = true;
  r.complete = false;
  r.at_once = false;  // its waiter now finishes it under the call lock
  packet_header h{};
  h.type = packet_type::cancel_send;
  h.sender_request = request_id(r);
  control_send(to, h);
}

const char *cancel_on_request(vc &from, const packet_header &h, const std::byte *payload) {
  (void)payload;
  unexpected_msg *m = rt->matching.take_if([&](const unexpected_msg &u) {
    return u.from == from.world_rank && u.sender_request == h.sender_request;
  });
  if (m != nullptr) {
    if (m->type != packet_type::rts) credit_return(from, m->length);
    rt->matching.release(m);
  }
  reply(from, h.sender_request, m != nullptr);
  return nullptr;
}

const char *cancel_on_reply(vc &from, const packet_header &h, const std::byte *payload) {
  (void)payload;
  request *r = rt->requests.from_id(h.sender_request, request_kind::send);
  if (r == nullptr || r->peer != from.world_rank || !r->cancel_pending) {
    return "cancel answer for a send that asked none";
  }
  if (h.length == 1 && r->state != send_state::wait_reply && r->state != send_state::wait_ack &&
      r->state != send_state::done) {
    return "a send being streamed cannot have been withdrawn";
  }
  r->cancel_pending = false;
  if (h.length == 1) {
    cancelled_now(*r);
  } else if (r->state == send_state::done) {
    request_complete(*r);  // it finished while the question was out
  }
  return nullptr;
}

}  // namespace iris::device
