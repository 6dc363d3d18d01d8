#include "device/rendezvous.hpp"

#include <algorithm>
#include <cstring>

#include "device/dtype.hpp"
#include "device/recv.hpp"
#include "device/runtime.hpp"
#include "device/send.hpp"

namespace iris::device {
namespace {

void reply(vc &to, packet_type type, std::uint64_t sender_request, std::uint64_t receiver_request,
           std::size_t length) {
  packet_header h{};
  h.type = type;
  h.sender_request = sender_request;
  h.receiver_request = receiver_request;
  h.length = length;
  control_send(to, h);
}

// The data comes as data packets: CTS.
void ask_for_data(request &r, vc &from) {
  const std::size_t want = r.status_bytes;
  ++rt->stats.rendezvous_pipeline;
  ++rt->pipeline_receives;
  r.expected = want;
  r.progress = 0;
  reply(from, packet_type::cts, r.peer_request, request_id(r), want);
}

}  // namespace

rts_payload rendezvous_rts_payload(vc &to, request &r) {
  rts_payload where{};
  // A streamed typed send has no packed buffer to read: it names nothing,
  // and the receiver asks for data packets.
  if (!r.typed_stream) to.via->expose(to, r, where);
  return where;
}

const char *rendezvous_on_rts(vc &from, const packet_header &h, const std::byte *payload) {
  return message_arrived(from, h, payload);
}

void rendezvous_matched(request &r, vc &from, std::uint64_t sender_request,
                        const rts_payload &where) {
  const std::size_t want = r.status_bytes;  // what fits the receive buffer
  r.peer = from.world_rank;
  r.peer_request = sender_request;
  // A single-copy read needs a contiguous receive buffer and a sender that
  // named one; otherwise the data comes as packets.
  const bool named = where.pid != 0 || where.address != 0 || where.rma != 0;
  const xfer read = want == 0 ? xfer::done
                    : r.typed_stream || !named
                        ? xfer::retry
                        : from.via->read(from, where, r.buffer, want, request_id(r));
  switch (read) {
    case xfer::done:
      request_complete(r);
      reply(from, packet_type::fin, sender_request, 0, 0);
      return;
    case xfer::in_progress:
      return;  // rendezvous_read_done answers
    case xfer::retry:
      ask_for_data(r, from);
      return;
  }
}

void rendezvous_read_done(std::uint64_t receiver_request, const char *why) {
  request *r = rt->requests.from_id(receiver_request, request_kind::recv);
  if (r == nullptr || r->complete || r->peer < 0) return;  // cannot be: ours, started once
  vc &from = rt->vcs[static_cast<std::size_t>(r->peer)];
  if (why != nullptr) {
    ask_for_data(*r, from);  // the sender's data is still there
    return;
  }
  request_complete(*r);
  reply(from, packet_type::fin, r->peer_request, 0, 0);
}

const char *rendezvous_on_cts(vc &from, const packet_header &h, const std::byte *payload) {
  (void)payload;
  request *s = send_awaiting(from, h.sender_request, send_state::wait_reply);
  if (s == nullptr) return "cts for a send that is not waiting for one";
  s->expected = std::min<std::size_t>(h.length, s->bytes);
  s->peer_request = h.receiver_request;
  s->progress = 0;
  if (s->expected == 0) {
    send_done(*s);
    return nullptr;
  }
  s->state = send_state::streaming;
  from.stream_queue.push_back(s);
  sending_list_add(from);
  return nullptr;
}

const char *rendezvous_on_fin(vc &from, const packet_header &h, const std::byte *payload) {
  (void)payload;
  request *s = send_awaiting(from, h.sender_request, send_state::wait_reply);
  if (s == nullptr) return "fin for a send that is not waiting for one";
  send_done(*s);
  return nullptr;
}

namespace {

// The receive that data packet `h` continues, or nullptr.
request *data_receiver(const vc &from, const packet_header &h) {
  request *r = rt->requests.from_id(h.receiver_request, request_kind::recv);
  if (r == nullptr || r->complete || r->peer != from.world_rank || h.offset != r->progress ||
      h.length > r->expected - r->progress) {
    return nullptr;
  }
  return r;
}

}  // namespace

std::byte *rendezvous_data_place(const vc &from, const packet_header &h, std::size_t payload) {
  if (h.type != packet_type::data || h.length != payload) return nullptr;
  request *r = data_receiver(from, h);
  return r != nullptr && !r->typed_stream ? r->buffer + h.offset : nullptr;
}

const char *rendezvous_on_data(vc &from, const packet_header &h, const std::byte *payload) {
  request *r = data_receiver(from, h);
  if (r == nullptr) return "data for no receive, or out of sequence";
  if (r->typed_stream) {
    dtype_unpack_range(payload, h.offset, h.length, r->unpack_to, r->unpack_count, *r->unpack_type);
  } else if (payload != r->buffer + h.offset) {
    // A transport may have read the payload into its place already.
    std::memcpy(r->buffer + h.offset, payload, h.length);
  }
  r->progress += h.length;
  if (r->progress == r->expected) {
    --rt->pipeline_receives;
    request_complete(*r);
  }
  return nullptr;
}

namespace {

// Packs the next fragment of a streamed typed send (its length is what the
// header says: the rest, up to a fragment), straight into the transport's
// record where it has one, else into the send's scratch fragment.
void pack_fragment(const void *context, std::byte *out) {
  const request &s = *static_cast<const request *>(context);
  const std::size_t chunk =
      std::min(s.expected - s.progress, rt->vcs[static_cast<std::size_t>(s.peer)].fragment);
  dtype_pack_range(s.unpack_to, s.unpack_count, *s.unpack_type, s.progress, chunk, out);
}

}  // namespace

int rendezvous_push(vc &to) {
  int packets = 0;
  const std::size_t fragment = to.fragment;
  while (request *s = to.stream_queue.front()) {
    const std::size_t chunk = std::min(s->expected - s->progress, fragment);
    packet_header h{};
    h.type = packet_type::data;
    h.length = chunk;
    h.receiver_request = s->peer_request;
    h.offset = s->progress;
    // A typed send packs its fragment now (again after a retry).
    if (s->typed_stream ? !packet_write_filled(to, h, chunk, {pack_fragment, s},
                                               static_cast<std::byte *>(s->scratch))
                        : !packet_write(to, h, s->buffer + s->progress, chunk)) {
      break;
    }
    ++packets;
    s->progress += chunk;
    if (s->progress == s->expected) {
      to.stream_queue.remove(s);
      send_done(*s);
    }
  }
  return packets;
}

}  // namespace iris::device
