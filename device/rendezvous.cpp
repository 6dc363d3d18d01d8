// Rendezvous: the sender's RTS waits for its match; then the receiver either
// reads the data straight from the sender's memory (cross-memory attach over
// shared memory, the netmod's RMA read over a network: single copy) and
// answers FIN, or answers CTS and the sender streams the data through the
// ring or the netmod in fragments (pipelined copy). Data only moves once
// matched, so unexpected rendezvous messages hold no buffer memory.
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "device/runtime.hpp"

namespace iris::device {
namespace {

// Under `auto`, one message alone goes through the pipeline: sender and
// receiver copy at the same time, which halves its latency. When a pipeline
// receive is already streaming, this rank is moving many messages at once:
// then a single copy by the receiver (CMA) moves more, except for very large
// messages while this rank sends nothing itself: CMA of a large buffer is
// slow on virtual machines, and the sender's idle core copies through the
// pipeline faster. Measured in bench/README.md.
bool cma_wanted(const vc &from, std::size_t bytes) {
  if (from.via != transport::shm || !from.cma_usable) return false;
  switch (rt->config.engine) {
    case rndv_engine::cma:
      return true;
    case rndv_engine::pipeline:
      return false;
    case rndv_engine::automatic:
      if (bytes < rt->config.cma_threshold || rt->pipeline_receives == 0) return false;
      return bytes < rt->config.pipeline_large || rt->rendezvous_sends > 0;
  }
  return false;
}

// Reads `bytes` from the sender's memory into `to`. False when the kernel
// refuses (ptrace policy, containers) or the read falls short.
bool cma_read(const rts_payload &where, std::byte *to, std::size_t bytes) {
  std::size_t done = 0;
  while (done < bytes) {
    iovec local{to + done, bytes - done};
    iovec remote{reinterpret_cast<void *>(where.address + done), bytes - done};
    const ssize_t n = process_vm_readv(static_cast<pid_t>(where.pid), &local, 1, &remote, 1, 0);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

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

void rendezvous_matched(request &r, vc &from, std::uint64_t sender_request,
                        const rts_payload &where) {
  const std::size_t want = r.status_bytes;  // what fits the receive buffer
  r.peer = from.world_rank;
  r.peer_request = sender_request;
  if (want == 0 || (cma_wanted(from, want) && cma_read(where, r.buffer, want))) {
    rt->stats.rendezvous_cma += want != 0 ? 1 : 0;
    request_complete(r);
    reply(from, packet_type::fin, sender_request, 0, 0);
    return;
  }
  // The kernel refused a read: stop trying with this peer.
  if (from.via == transport::shm && cma_wanted(from, want)) from.cma_usable = false;
  // The netmod reads the sender's exposed buffer; FIN once it is here. A
  // read it cannot start now goes the packet way instead of waiting.
  if (from.via == transport::net && where.rma == 1 &&
      rt->net->rma_read(from.world_rank, netmod::remote_region{where.rma_address, where.rma_key},
                        r.buffer, want, request_id(r)) == netmod::send_status::done) {
    return;
  }
  ask_for_data(r, from);
}

void rendezvous_read_done(std::uint64_t receiver_request, const char *why) {
  request *r = rt->requests.from_id(receiver_request, request_kind::recv);
  if (r == nullptr || r->complete || r->peer < 0) return;  // cannot be: ours, started once
  vc &from = rt->vcs[static_cast<std::size_t>(r->peer)];
  if (why != nullptr) {
    ask_for_data(*r, from);  // the sender's data is still there
    return;
  }
  ++rt->stats.rendezvous_rma;
  request_complete(*r);
  reply(from, packet_type::fin, r->peer_request, 0, 0);
}

const char *rendezvous_on_cts(vc &from, const packet_header &h) {
  request *s = rt->requests.from_id(h.sender_request, request_kind::send);
  if (s == nullptr || s->peer != from.world_rank || s->state != send_state::wait_reply) {
    return "cts for a send that is not waiting for one";
  }
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
  return r != nullptr ? r->buffer + h.offset : nullptr;
}

const char *rendezvous_on_data(vc &from, const packet_header &h, const std::byte *payload) {
  request *r = data_receiver(from, h);
  if (r == nullptr) return "data for no receive, or out of sequence";
  // A netmod may have read the payload into its place already.
  if (payload != r->buffer + h.offset) std::memcpy(r->buffer + h.offset, payload, h.length);
  r->progress += h.length;
  if (r->progress == r->expected) {
    --rt->pipeline_receives;
    request_complete(*r);
  }
  return nullptr;
}

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
    if (!packet_write(to, h, s->buffer + s->progress, chunk)) break;
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
