// The sending side: protocol choice, message packets in send order, control
// packets ahead of everything, and eager credits.
//
// A message goes eager (one packet with its bytes) when it fits the eager
// limit and the sender holds a credit at the receiver; otherwise it goes by
// rendezvous (an RTS now, the data once matched). Running out of credits
// therefore never blocks a sender nor anything queued behind it.
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "device/dtype.hpp"
#include "device/errors.hpp"
#include "device/runtime.hpp"

namespace iris::device {
namespace {

packet_header message_header(packet_type type, const match_key &key, std::size_t length,
                             std::uint64_t sender_request) {
  packet_header h{};
  h.type = type;
  h.source = key.source;
  h.context = key.context;
  h.tag = key.tag;
  h.length = length;
  h.sender_request = sender_request;
  return h;
}

// Writes the message packet of a send. Returns false when there is no room
// now. It does not complete the request: the caller does that (message_sent)
// once the request is off any queue, since completing may release it.
bool message_write(vc &to, request &r) {
  const packet_header h = message_header(r.protocol, r.key, r.bytes, request_id(r));
  if (r.protocol == packet_type::rts) {
    rts_payload where{rt->pid, reinterpret_cast<std::uint64_t>(r.buffer), 0, 0, 0};
    // Over a netmod with RMA, the receiver reads the data itself. Exposed
    // once: a write that found no room comes back here.
    if (to.via == transport::net && rt->config.net_rma && !r.rma_exposed && r.bytes != 0) {
      r.rma_exposed = rt->net->rma_expose(r.buffer, r.bytes, r.region);
    }
    if (r.rma_exposed) where = {where.pid, where.address, 1, r.region.address, r.region.key};
    if (!packet_write(to, h, &where, sizeof(where))) return false;
    r.state = send_state::wait_reply;
    return true;
  }
  if (!packet_write(to, h, r.buffer, r.bytes)) return false;
  r.state = r.synchronous ? send_state::wait_ack : send_state::done;
  return true;
}

// An eager send is complete once written (a synchronous one waits for its
// sync_ack; a rendezvous one for cts or fin).
void message_sent(request &r) {
  if (r.state == send_state::done) request_complete(r);
}

void deliver_to_self(vc &self, const packet_header &h, const void *data, std::size_t bytes) {
  if (const char *why = packet_deliver(self, h, static_cast<const std::byte *>(data), bytes)) {
    fatal("send to self", "refused its own packet: %s", why);
  }
}

}  // namespace

bool packet_write(vc &to, packet_header h, const void *payload, std::size_t bytes) {
  const int give = std::min(to.owed, 0xffff);
  h.credits = static_cast<std::uint16_t>(give);
  if (to.via == transport::net) {
    const iovec parts[2] = {{&h, sizeof(h)}, {const_cast<void *>(payload), bytes}};
    if (rt->net->send(to.world_rank, parts) != netmod::send_status::done) return false;
  } else {
    std::byte *slot = to.tx.reserve(sizeof(h) + bytes);
    if (slot == nullptr) return false;
    std::memcpy(slot, &h, sizeof(h));
    if (bytes != 0) std::memcpy(slot + sizeof(h), payload, bytes);
    to.tx.commit();
  }
  to.owed -= give;
  return true;
}

void sending_list_add(vc &to) {
  if (to.on_sending_list) return;
  to.on_sending_list = true;
  rt->sending.push_back(&to);  // capacity reserved at init: no allocation
}

void control_send(vc &to, packet_header h) {
  if (to.via == transport::self) {
    deliver_to_self(to, h, nullptr, 0);
    return;
  }
  // Owed credits ride on whatever packet is written next: with a backlog, a
  // credit packet adds nothing but memory.
  if (h.type == packet_type::credit && !to.backlog.empty()) return;
  if (to.backlog.empty() && packet_write(to, h, nullptr, 0)) return;
  to.backlog.push_back(h);  // rare: only when the ring is full
  sending_list_add(to);
}

int send_push(vc &to) {
  int packets = 0;
  std::size_t sent = 0;
  while (sent < to.backlog.size() && packet_write(to, to.backlog[sent], nullptr, 0)) ++sent;
  to.backlog.erase(to.backlog.begin(), to.backlog.begin() + static_cast<std::ptrdiff_t>(sent));
  packets += static_cast<int>(sent);
  if (!to.backlog.empty()) return packets;
  while (request *r = to.send_queue.front()) {
    if (!message_write(to, *r)) return packets;
    to.send_queue.remove(r);
    message_sent(*r);
    ++packets;
  }
  return packets + rendezvous_push(to);
}

request *send_start(const communicator &comm, std::uint32_t context, const void *data,
                    std::size_t bytes, int dest, int tag, send_mode mode, bool need_request,
                    request *use) {
  need_request = need_request || use != nullptr;
  vc &to = rt->vcs[static_cast<std::size_t>(comm.world_rank[static_cast<std::size_t>(dest)])];
  const match_key key{context, comm.rank, tag};
  const bool synchronous = mode == send_mode::synchronous;
  const bool eager_size = bytes <= to.eager_limit;
  const int cost = credit_cost(bytes);
  // Short of credits: the receiver may have returned some that no poll has
  // read yet (a burst of nonblocking sends polls nothing). A few polls, while
  // they find anything, take them before the message falls back to
  // rendezvous (a netmod such as OFI may need more than one).
  if (eager_size && to.credits < cost && to.via != transport::self && !rt->polling) {
    for (int polls = 0; polls < 4 && to.credits < cost; ++polls) {
      if (progress_poll() == 0) break;
    }
  }
  // Fast path: a blocking send of an eager message with nothing queued ahead
  // of it goes straight into the ring, without a request.
  if (!need_request && !synchronous && to.via != transport::self && eager_size &&
      to.credits >= cost && to.send_queue.empty() &&
      packet_write(to, message_header(packet_type::eager, key, bytes, 0), data, bytes)) {
    to.credits -= cost;
    ++rt->stats.eager;
    return nullptr;
  }
  if (to.via == transport::self && !synchronous && !need_request) {
    // Messages to oneself are buffered: a send to self never waits.
    deliver_to_self(to, message_header(packet_type::eager, key, bytes, 0), data, bytes);
    return nullptr;
  }
  request *r = use != nullptr ? use : rt->requests.allocate(request_kind::send, &comm);
  r->key = key;
  r->buffer = const_cast<std::byte *>(static_cast<const std::byte *>(data));  // only read
  r->bytes = bytes;
  r->peer = to.world_rank;
  r->synchronous = synchronous;
  if (to.via == transport::self) {
    r->protocol = synchronous ? packet_type::eager_sync : packet_type::eager;
    // Set before delivery: the sync_ack may come back at once.
    r->state = synchronous ? send_state::wait_ack : send_state::done;
    if (!synchronous) request_complete(*r);
    deliver_to_self(to, message_header(r->protocol, key, bytes, request_id(*r)), data, bytes);
    return r;
  }
  if (eager_size && to.credits >= cost) {
    r->protocol = synchronous ? packet_type::eager_sync : packet_type::eager;
    to.credits -= cost;  // reserved now: the packet goes out in order, maybe later
    ++(synchronous ? rt->stats.eager_sync : rt->stats.eager);
  } else {
    r->protocol = packet_type::rts;
    ++rt->rendezvous_sends;
    rt->stats.credit_stalls += eager_size ? 1 : 0;
    ++rt->stats.rendezvous;
  }
  r->state = send_state::queued;
  // Nothing queued ahead of it: write it now, without touching the queues.
  if (to.send_queue.empty() && message_write(to, *r)) {
    message_sent(*r);
    return r;
  }
  to.send_queue.push_back(r);
  sending_list_add(to);
  send_push(to);
  return r;
}

void send_done(request &r) {
  if (r.protocol == packet_type::rts && r.state != send_state::done) --rt->rendezvous_sends;
  if (r.rma_exposed) {
    rt->net->rma_conceal(r.region);
    r.rma_exposed = false;
  }
  r.state = send_state::done;
  request_complete(r);
}

void request_complete(request &r) {
  if (r.cancel_pending) return;  // cancel_on_reply completes it
  r.complete = true;
  if (!r.freed) return;
  // Freed by the user: nobody will wait for it, so finish its work here.
  if (r.unpack_to != nullptr) {
    dtype_unpack_range(r.scratch, 0, r.status_bytes, r.unpack_to, r.unpack_count, *r.unpack_type);
  }
  rt->requests.release(&r);
}

const char *send_on_done(vc &from, const packet_header &h) {
  request *r = rt->requests.from_id(h.sender_request, request_kind::send);
  const send_state waiting =
      h.type == packet_type::fin ? send_state::wait_reply : send_state::wait_ack;
  if (r == nullptr || r->peer != from.world_rank || r->state != waiting) {
    return "completion for a send that is not waiting for one";
  }
  send_done(*r);
  return nullptr;
}

}  // namespace iris::device
