// The sending side: protocol choice, message packets in send order, control
// packets ahead of everything.
//
// A message goes eager (one packet with its bytes) when it fits the eager
// limit and the sender holds its credits at the receiver (credit.hpp);
// otherwise it goes by rendezvous (an RTS now, the data once matched).
// Running out of credits therefore never blocks a sender nor anything queued
// behind it.
#include "device/protocols/send.hpp"

#include <algorithm>

#include "device/protocols/credit.hpp"
#include "device/protocols/eager.hpp"
#include "device/protocols/recovery.hpp"
#include "device/protocols/rendezvous.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"

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
// once the request is off any queue, since completing may release it. The
// state is set before the write: a transport that delivers at once (self)
// may bring the answer back before the write returns.
bool message_write(vc &to, request &r) {
  const packet_header h = message_header(r.protocol, r.key, r.bytes, request_id(r));
  if (r.protocol == packet_type::rts) {
    const rts_payload where = rendezvous_rts_payload(to, r);
    r.state = send_state::wait_reply;
    if (packet_write(to, h, &where, sizeof(where))) return true;
  } else {
    r.state = r.synchronous ? send_state::wait_ack : send_state::done;
    if (packet_write(to, h, r.buffer, r.bytes)) return true;
  }
  r.state = send_state::queued;
  return false;
}

// An eager send is complete once written (a synchronous one waits for its
// sync_ack; a rendezvous one for cts or fin).
void message_sent(request &r) {
  if (r.state == send_state::done) request_complete(r);
}

}  // namespace

bool packet_write_filled(vc &to, packet_header h, std::size_t bytes, const payload_filler &f,
                         std::byte *staging) {
  const int give = credit_piggyback(to);
  h.credits = static_cast<std::uint16_t>(give);
  if (to.via->send_filled(to, h, bytes, f, staging) != xfer::done) return false;
  to.owed -= give;
  return true;
}

namespace {

// progress_poll's step while rt->sending is not empty: each VC's queue
// pushed, and the VCs with nothing left taken off the list.
int sending_list_push() {
  int pushed = 0;
  for (std::size_t i = 0; i < rt->sending.size();) {
    vc *v = rt->sending[i];
    pushed += send_push(*v);
    if (!v->has_pending()) {
      v->on_sending_list = false;
      rt->sending[i] = rt->sending.back();
      rt->sending.pop_back();
    } else {
      ++i;
    }
  }
  return pushed;
}

}  // namespace

void sending_list_add(vc &to) {
  if (to.on_sending_list) return;
  to.on_sending_list = true;
  // Read first: a store each time would take the line from every poller.
  if (progress_added.push_sends == nullptr) progress_added.push_sends = sending_list_push;
  rt->sending.push_back(&to);  // capacity reserved at init: no allocation
}

void control_send(vc &to, packet_header h) {
  // Owed credits ride on whatever packet is written next: with a backlog, a
  // credit packet adds nothing but memory.
  if (h.type == packet_type::credit && !to.backlog.empty()) return;
  if (to.backlog.empty() && packet_write(to, h, nullptr, 0)) return;
  // A dead rank never makes room: what waited for it would keep
  // MPI_Finalize waiting for the backlog to empty (failure_known clears
  // the backlog only at the moment of the death).
  if (rt->troubled && recovery_failed(to.world_rank)) [[unlikely]]
    return;
  to.backlog.push_back(h);  // rare: only when the transport is full
  sending_list_add(to);
}

int send_push(vc &to) {
  int packets = 0;
  std::size_t sent = 0;
  packets += rendezvous_push_aside(to);  // one load when none
  while (sent < to.backlog.size() && packet_write(to, to.backlog[sent], nullptr, 0)) ++sent;
  to.backlog.erase(to.backlog.begin(), to.backlog.begin() + static_cast<std::ptrdiff_t>(sent));
  packets += static_cast<int>(sent);
  if (!to.backlog.empty()) return packets;
  while (request *r = to.send_queue.front()) {
    if (!message_write(to, *r)) return packets;
    to.send_queue.remove(r);
    to.queued_sends.add(-1);
    message_sent(*r);
    ++packets;
  }
  return packets + rendezvous_push(to);
}

namespace {

// Under MULTIPLE, whether an eager message of `bytes` may go to the shared VC
// `to`, its credits taken if so: the check and the spend are one step under
// the VC lock, since an unlocked sender may spend between them. Short of
// credits, it polls as credit_short_poll does.
bool credit_take(vc &to, std::size_t bytes) {
  if (bytes > to.eager_limit) return false;
  const int cost = credit_cost(bytes);
  for (int polls = 0;; ++polls) {
    {
      const vc_guard guard(to);
      if (to.credits >= cost) {
        to.credits -= cost;
        return true;
      }
    }
    if (rt->polling || polls == 4 || progress_poll() == 0) return false;
  }
}

// The request of a send that did not go out without one (send_start,
// send_start_shared): eager when `eager` (its credits already taken), else
// by rendezvous; written now when nothing is queued ahead of it, else queued
// behind the rest.
[[gnu::always_inline]] inline request *send_request(vc &to, const communicator &comm,
                                                    const match_key &key, const void *data,
                                                    std::size_t bytes, bool synchronous, bool eager,
                                                    request *use) {
  request *r = use != nullptr ? use : rt->requests.allocate(request_kind::send, &comm);
  r->key = key;
  r->buffer = const_cast<std::byte *>(static_cast<const std::byte *>(data));  // only read
  r->bytes = bytes;
  r->peer = to.world_rank;
  r->synchronous = synchronous;
  if (eager) [[likely]] {
    r->protocol = synchronous ? packet_type::eager_sync : packet_type::eager;
    ++(synchronous ? rt->stats.eager_sync : rt->stats.eager);
  } else {
    r->protocol = packet_type::rts;
    rt->stats.credit_stalls += bytes <= to.eager_limit ? 1 : 0;
    ++rt->stats.rendezvous;
    ++rt->rendezvous_sends;
  }
  r->state = send_state::queued;
  // Nothing queued ahead of it: write it now, without touching the queues.
  if (to.send_queue.empty() && message_write(to, *r)) [[likely]] {
    message_sent(*r);
    return r;
  }
  to.send_queue.push_back(r);
  to.queued_sends.add(1);
  sending_list_add(to);
  send_push(to);
  return r;
}

// send_start to a shared VC (under MULTIPLE, with the call lock): as below,
// with the credits taken by credit_take.
[[gnu::noinline]] request *send_start_shared(vc &to, const communicator &comm, const match_key &key,
                                             const void *data, std::size_t bytes, send_mode mode,
                                             bool need_request, request *use) {
  const bool synchronous = mode == send_mode::synchronous;
  const bool eager = credit_take(to, bytes);
  if (!need_request && !synchronous && eager && to.send_queue.empty() &&
      packet_write(to, message_header(packet_type::eager, key, bytes, 0), data, bytes)) {
    ++rt->stats.eager;
    return nullptr;
  }
  return send_request(to, comm, key, data, bytes, synchronous, eager, use);
}

// A send that a failure or a revocation ends before it starts
// (recovery.hpp): a complete request with the error class.
[[gnu::cold]] request *refused(const communicator &comm, std::uint32_t context, int dest, int tag,
                               int error_class, request *use) {
  request *r = use != nullptr ? use : rt->requests.allocate(request_kind::send, &comm);
  r->key = match_key{context, comm.rank, tag};
  const int to = comm.world_rank[static_cast<std::size_t>(dest)];
  if (recovery_failed(to)) r->peer = to;
  r->state = send_state::done;
  r->status_error = error_class;
  request_complete(*r);
  return r;
}

}  // namespace

bool send_unlocked(vc &to, const communicator &comm, std::uint32_t context, const void *data,
                   std::size_t bytes, int tag, request *r) {
  if (bytes > to.eager_limit) return false;
  const int cost = credit_cost(bytes);
  const match_key key{context, comm.rank, tag};
  if (r != nullptr) {
    r->comm = &comm;
    r->key = key;
    r->buffer = const_cast<std::byte *>(static_cast<const std::byte *>(data));  // only read
    r->bytes = bytes;
    r->peer = to.world_rank;
    r->protocol = packet_type::eager;
    r->state = send_state::done;
  }
  // No credits ride on it: what this rank owes `to` is the call lock's.
  const packet_header h =
      message_header(packet_type::eager, key, bytes, r != nullptr ? request_id(*r) : 0);
  const iovec part{const_cast<void *>(data), bytes};
  to.send_lock.lock();
  // Requests queued by the call lock's holder go first: they may be this
  // thread's own earlier sends.
  const bool sent = to.queued_sends.get() == 0 && to.credits >= cost &&
                    to.via->send_held(to, h, {&part, bytes != 0 ? 1U : 0U}) == xfer::done;
  if (sent) {
    to.credits -= cost;
    ++to.unlocked_eager;
  }
  to.send_lock.unlock();
  if (sent && r != nullptr) {
    r->complete = true;  // nobody else holds it yet
    r->at_once = true;
  }
  return sent;
}

request *send_start(const communicator &comm, std::uint32_t context, const void *data,
                    std::size_t bytes, int dest, int tag, send_mode mode, bool need_request,
                    request *use) {
  need_request = need_request || use != nullptr;
  vc &to = rt->vcs[static_cast<std::size_t>(comm.world_rank[static_cast<std::size_t>(dest)])];
  const match_key key{context, comm.rank, tag};
  // Short of credits, credit_enough polls: a failure may become known
  // there, so recovery's refusal is checked after it.
  const bool eager = !to.shared && credit_enough(to, bytes);
  if (rt->troubled) [[unlikely]] {
    if (const int refusal = recovery_refusal(comm, context, dest)) {
      return refused(comm, context, dest, tag, refusal, use);
    }
  }
  if (to.shared) [[unlikely]] {
    return send_start_shared(to, comm, key, data, bytes, mode, need_request, use);
  }
  const bool synchronous = mode == send_mode::synchronous;
  // Fast path: a blocking send of an eager message with nothing queued ahead
  // of it goes straight to the transport, without a request.
  if (!need_request && !synchronous && eager && to.send_queue.empty() &&
      packet_write(to, message_header(packet_type::eager, key, bytes, 0), data, bytes)) {
    credit_spend(to, bytes);
    ++rt->stats.eager;
    return nullptr;
  }
  // Credits reserved now: the packet goes out in order, maybe later.
  if (eager) credit_spend(to, bytes);
  return send_request(to, comm, key, data, bytes, synchronous, eager, use);
}

void send_join_aside(request &r) {
  // Its RTS went out and nothing answered it yet (a CTS the call lock's poll
  // read first made it a stream of the call lock's), and nothing else
  // holds it: no extension's part, not persistent, plain bytes.
  if (r.kind != request_kind::send || r.protocol != packet_type::rts ||
      r.state != send_state::wait_reply || r.ext != nullptr || r.bytes == 0 || r.typed_stream ||
      r.persistent.op != persistent_op::none || r.peer < 0) {
    return;
  }
  vc &to = rt->vcs[static_cast<std::size_t>(r.peer)];
  if (!to.shared || !to.via->streams_sends_aside(to) || !to.sending_aside.add(&r)) return;
  r.stream_aside = true;
  --rt->rendezvous_sends;
  ++rt->stats.rendezvous_send_aside;
  sending_list_add(to);
}

request *send_awaiting(const vc &from, std::uint64_t id, send_state state) {
  request *r = rt->requests.from_id(id, request_kind::send);
  return r != nullptr && r->peer == from.world_rank && r->state == state ? r : nullptr;
}

void send_done(request &r) {
  if (r.stream_aside) [[unlikely]] {
    vc &to = rt->vcs[static_cast<std::size_t>(r.peer)];
    const vc_guard guard(to);
    to.sending_aside.remove(&r);  // not cleared: answered by a FIN, an empty CTS or a cancel
  } else if (r.protocol == packet_type::rts && r.state != send_state::done) {
    --rt->rendezvous_sends;
  }
  if (r.exposure.exposed) rt->vcs[static_cast<std::size_t>(r.peer)].via->conceal(r);
  r.state = send_state::done;
  request_complete(r);
}

}  // namespace iris::device
