// The receiving side: message packets meet posted receives or wait on the
// unexpected queue; eager credits go back to their senders as messages are
// consumed; every packet is dispatched from here.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "device/errors.hpp"
#include "device/runtime.hpp"
#include "include/mpi.h"

namespace iris::device {
namespace {

// A receive has met a message of `length` bytes with envelope `key`.
void recv_matched(request &r, const match_key &key, std::size_t length) {
  r.status_source = key.source;
  r.status_tag = key.tag;
  r.status_bytes = std::min(length, r.bytes);
  r.status_error = length > r.bytes ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
}

}  // namespace

// One eager message of `from` has been consumed: its credit goes back,
// piggybacked on the next packet to `from`, or alone once half the window is
// owed.
void credit_return(vc &from, std::size_t length) {
  if (from.via == transport::self) return;
  from.owed += credit_cost(length);
  // A quarter of the window owed and nothing going back: say so at once, so
  // that a streaming sender never runs dry.
  if (from.owed * 4 >= from.window) {
    packet_header h{};
    h.type = packet_type::credit;
    ++rt->stats.credit_packets;
    control_send(from, h);
  }
}

namespace {

void sync_ack_send(vc &to, std::uint64_t sender_request) {
  packet_header h{};
  h.type = packet_type::sync_ack;
  h.sender_request = sender_request;
  control_send(to, h);
}

// A receive takes a message: its bytes (eager) or its RTS (rendezvous).
void message_into(request &r, vc &from, const match_key &key, packet_type type, std::size_t length,
                  std::uint64_t sender_request, const std::byte *data, const rts_payload &where) {
  recv_matched(r, key, length);
  if (type == packet_type::rts) {
    rendezvous_matched(r, from, sender_request, where);
    return;
  }
  if (r.status_bytes != 0) std::memcpy(r.buffer, data, r.status_bytes);
  request_complete(r);
  credit_return(from, length);
  if (type == packet_type::eager_sync) sync_ack_send(from, sender_request);
}

void unexpected_account(std::ptrdiff_t messages, std::ptrdiff_t bytes) {
  statistics &s = rt->stats;
  s.unexpected_depth =
      static_cast<std::size_t>(static_cast<std::ptrdiff_t>(s.unexpected_depth) + messages);
  s.unexpected_bytes =
      static_cast<std::size_t>(static_cast<std::ptrdiff_t>(s.unexpected_bytes) + bytes);
  s.unexpected_depth_peak = std::max(s.unexpected_depth_peak, s.unexpected_depth);
  s.unexpected_bytes_peak = std::max(s.unexpected_bytes_peak, s.unexpected_bytes);
}

// Bytes of eager data an unexpected message holds for a peer: what credits
// bound. Messages to oneself are the program's own buffering and not counted.
std::size_t held_bytes(const unexpected_msg &m) {
  return m.type == packet_type::rts || m.from == rt->rank ? 0 : m.length;
}

}  // namespace

void unexpected_free(unexpected_msg *m) {
  unexpected_account(-1, -static_cast<std::ptrdiff_t>(held_bytes(*m)));
  if (m->data != m->inline_data) std::free(m->data);
  m->claimed = false;
  rt->unexpected_pool.release(m);
}

namespace {

const char *message_arrived(vc &from, const packet_header &h, const std::byte *payload) {
  const match_key key{h.context, h.source, h.tag};
  rts_payload where{};
  if (h.type == packet_type::rts) std::memcpy(&where, payload, sizeof(where));
  if (request *r = match_oldest(rt->posted, key)) {
    message_into(*r, from, key, h.type, h.length, h.sender_request, payload, where);
    return nullptr;
  }
  unexpected_msg *m = rt->unexpected_pool.allocate();
  m->key = key;
  m->type = h.type;
  m->length = h.length;
  m->from = from.world_rank;
  m->sender_request = h.sender_request;
  m->rts = where;
  m->data = m->inline_data;
  if (h.type != packet_type::rts && h.length > unexpected_msg::inline_capacity) {
    m->data = static_cast<std::byte *>(std::malloc(h.length));
    if (m->data == nullptr) {
      fatal("progress", "out of memory holding an unexpected message of %zu bytes from rank %d",
            static_cast<std::size_t>(h.length), from.world_rank);
    }
  }
  if (h.type != packet_type::rts && h.length != 0) std::memcpy(m->data, payload, h.length);
  rt->unexpected.push_back(m);
  unexpected_account(1, static_cast<std::ptrdiff_t>(held_bytes(*m)));
  return nullptr;
}

}  // namespace

const char *packet_deliver(vc &from, const packet_header &h, const std::byte *payload,
                           std::size_t length) {
  if (const char *why = packet_check(h, length, rt->size)) return why;
  // A peer can only return credits it was given.
  from.credits = std::min(from.credits + h.credits, from.window);
  switch (h.type) {
    case packet_type::eager:
    case packet_type::eager_sync:
    case packet_type::rts:
      return message_arrived(from, h, payload);
    case packet_type::cts:
      return rendezvous_on_cts(from, h);
    case packet_type::data:
      return rendezvous_on_data(from, h, payload);
    case packet_type::fin:
    case packet_type::sync_ack:
      return send_on_done(from, h);
    case packet_type::credit:
      return nullptr;
    case packet_type::cancel_send:
      return cancel_on_request(from, h);
    case packet_type::cancel_reply:
      return cancel_on_reply(from, h);
  }
  return "unknown packet type";
}

request *recv_start(const communicator &comm, std::uint32_t context, void *data,
                    std::size_t capacity, int source, int tag, request *use) {
  request *r = use != nullptr ? use : rt->requests.allocate(request_kind::recv, &comm);
  r->key = match_key{context, source, tag};
  r->buffer = static_cast<std::byte *>(data);
  r->bytes = capacity;
  if (unexpected_msg *m = take_oldest_for_pattern(rt->unexpected, r->key)) {
    message_into(*r, rt->vcs[static_cast<std::size_t>(m->from)], m->key, m->type, m->length,
                 m->sender_request, m->data, m->rts);
    unexpected_free(m);
  } else {
    rt->posted.push_back(r);
  }
  return r;
}

unexpected_msg *message_claim(std::uint32_t context, int source, int tag) {
  unexpected_msg *m = take_oldest_for_pattern(rt->unexpected, match_key{context, source, tag});
  if (m != nullptr) m->claimed = true;
  return m;
}

unexpected_msg *message_from_handle(int handle) {
  const auto bits = static_cast<std::uint32_t>(handle);
  if ((bits >> 28) != (message_handle_kind >> 28) || (bits & 0x0fffffffU) == 0) return nullptr;
  unexpected_msg *m = rt->unexpected_pool.at((bits & 0x0fffffffU) - 1);
  return m != nullptr && m->claimed ? m : nullptr;
}

int message_handle(const unexpected_msg &m) {
  return message_handle_kind | static_cast<int>(m.index + 1);
}

request *recv_claimed(const communicator &comm, unexpected_msg *m, void *data,
                      std::size_t capacity) {
  request *r = rt->requests.allocate(request_kind::recv, &comm);
  r->key = m->key;
  r->buffer = static_cast<std::byte *>(data);
  r->bytes = capacity;
  message_into(*r, rt->vcs[static_cast<std::size_t>(m->from)], m->key, m->type, m->length,
               m->sender_request, m->data, m->rts);
  unexpected_free(m);
  return r;
}

const unexpected_msg *probe_find(std::uint32_t context, int source, int tag) {
  return find_oldest_for_pattern(rt->unexpected, match_key{context, source, tag});
}

void unexpected_release_all() {
  while (unexpected_msg *m = rt->unexpected.pop_front()) unexpected_free(m);
}

}  // namespace iris::device
