// The origin's side of active messages: ops, their packets, the queues per
// peer, and completion (am.hpp has the way of an op).
#include <algorithm>
#include <cstring>

#include "device/am/am.hpp"
#include "device/am/exposure.hpp"
#include "device/am/state.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

am_state *am = nullptr;

am_state &am_state_get() {
  if (am == nullptr) {
    am = new am_state;
    am->peers.resize(static_cast<std::size_t>(rt->size));
    am->pull_min = rt->config.am_pull_min;
    am->async = rt->config.async_progress;
  }
  return *am;
}

bool am_started() {
  return am != nullptr;
}

std::uint64_t am_op_new(am_state &s) {
  std::uint32_t slot = 0;
  if (!s.free_ops.empty()) {
    slot = s.free_ops.back();
    s.free_ops.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(s.ops.size());
    s.ops.emplace_back();
  }
  am_op &op = s.ops[slot];
  const std::uint32_t generation = op.generation + 1;
  op = am_op{};
  op.slot = slot;
  op.generation = generation;
  op.live = true;
  return am_op_id(s, op);
}

am_op *am_op_find(am_state &s, std::uint64_t id) {
  const std::uint64_t slot = (id & 0xffffffffU);
  if (slot == 0 || slot > s.ops.size()) return nullptr;
  am_op &op = s.ops[slot - 1];
  return op.live && op.generation == (id >> 32) ? &op : nullptr;
}

void am_op_free(am_state &s, std::uint64_t id) {
  am_op *op = am_op_find(s, id);
  if (op == nullptr) return;
  op->live = false;
  op->head.clear();
  op->head.shrink_to_fit();
  s.free_ops.push_back(static_cast<std::uint32_t>((id & 0xffffffffU) - 1));
}

std::size_t am_piece(const vc &v) {
  // What one packet may carry: an eager message's payload or a rendezvous
  // fragment's, whichever is larger, less the step. Oneself: any size.
  if (!v.flow_controlled) return std::size_t{1} << 20;
  const std::size_t payload = std::max(v.eager_limit, v.fragment);
  return payload > sizeof(active_payload) ? payload - sizeof(active_payload) : 0;
}

namespace {

void waiting_add(am_state &s, int peer) {
  am_peer &p = s.peers[static_cast<std::size_t>(peer)];
  if (p.on_list) return;
  p.on_list = true;
  s.waiting.push_back(peer);
  progress_added.active = am_push;
}

xfer packet_send(vc &to, const active_payload &step, std::span<const iovec> rest,
                 std::size_t bytes) {
  packet_header h{};
  h.type = packet_type::active;
  h.source = rt->rank;
  h.length = sizeof(active_payload) + bytes;
  iovec parts[2] = {{const_cast<active_payload *>(&step), sizeof(step)}, {}};
  std::size_t n = 1;
  if (rest.size() == 1) {
    parts[n++] = rest[0];
    return to.via->send(to, h, {parts, n});
  }
  if (rest.empty()) return to.via->send(to, h, {parts, n});
  // The step and two parts of stream: one part too many for a transport;
  // joined (only a message's first piece that holds its user header and
  // the start of its data).
  std::vector<std::byte> joined(sizeof(step) + bytes);
  std::memcpy(joined.data(), &step, sizeof(step));
  std::size_t at = sizeof(step);
  for (const iovec &part : rest) {
    std::memcpy(joined.data() + at, part.iov_base, part.iov_len);
    at += part.iov_len;
  }
  const iovec whole{joined.data() + sizeof(step), bytes};
  iovec two[2] = {{joined.data(), sizeof(step)}, whole};
  return to.via->send(to, h, {two, 2});
}

// Sends the next piece of op `op`'s stream. done: sent (maybe the last);
// retry: the transport is full.
xfer piece_send(am_state &s, am_op &op) {
  vc &to = rt->vcs[static_cast<std::size_t>(op.target)];
  const std::uint64_t total = op.pulled ? op.head.size() : op.step.total;
  const std::uint64_t left = total - op.sent;
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, am_piece(to)));
  active_payload step = op.step;
  step.offset = op.sent;
  iovec rest[2];
  std::size_t parts = 0;
  std::uint64_t at = op.sent;
  std::size_t want = n;
  if (at < op.head.size() && want > 0) {
    const std::size_t from_head = std::min<std::size_t>(want, op.head.size() - at);
    rest[parts++] = {op.head.data() + at, from_head};
    at += from_head;
    want -= from_head;
  }
  if (want > 0) {
    rest[parts++] = {const_cast<std::byte *>(op.data + (at - op.head.size())), want};
  }
  const xfer sent = packet_send(to, step, {rest, parts}, n);
  (void)s;
  if (sent == xfer::done) {
    op.sent += n;
    op.first_sent = true;
  }
  return sent;
}

// An op's stream went out whole.
void stream_sent(am_state &s, am_op &op) {
  const std::uint64_t id = am_op_id(s, op);
  if (op.kind == active_kind::get_data) {
    // The bytes of a get are on their way: the target counter of the get
    // (this process's) counts, and the reply needs no ack.
    counter_bump(counter_at(op.step.counter));
    am_op_free(s, id);
    return;
  }
  // The origin buffer may be reused (a pulled message's only after the ack).
  if (!op.pulled) counter_bump(op.origin_counter);
  // Nobody waits for its ack: it ends here (a fence asks the target).
  if (!op.acked) am_op_free(s, id);
}

// Pushes peer `peer`'s queue: control steps first, then streams in turn.
// Returns the packets sent; `blocked` when the transport refused one.
int peer_push(am_state &s, int peer, bool &blocked) {
  am_peer &p = s.peers[static_cast<std::size_t>(peer)];
  vc &to = rt->vcs[static_cast<std::size_t>(peer)];
  int sent = 0;
  blocked = false;
  while (!p.control.empty()) {
    if (packet_send(to, p.control.front(), {}, 0) != xfer::done) {
      blocked = true;
      return sent;
    }
    p.control.pop_front();
    ++sent;
  }
  while (!p.streams.empty()) {
    am_op *op = am_op_find(s, p.streams.front());
    if (op == nullptr) {
      p.streams.pop_front();
      continue;
    }
    const std::uint64_t total = op->pulled ? op->head.size() : op->step.total;
    // An empty stream (a message of nothing, a put of 0 bytes) is one packet.
    while (!op->first_sent || op->sent < total) {
      if (piece_send(s, *op) != xfer::done) {
        blocked = true;
        return sent;
      }
      ++sent;
    }
    p.streams.pop_front();
    stream_sent(s, *op);
  }
  return sent;
}

}  // namespace

int am_push() {
  if (am == nullptr) return 0;
  am_state &s = *am;
  ++s.pushing;
  int events = 0;
  std::size_t kept = 0;
  // Peers added while pushing (a self send's handler queuing more) land
  // past the end and are pushed in this pass too.
  for (std::size_t i = 0; i < s.waiting.size(); ++i) {
    const int peer = s.waiting[i];
    bool blocked = false;
    events += peer_push(s, peer, blocked);
    am_peer &p = s.peers[static_cast<std::size_t>(peer)];
    if (!p.control.empty() || !p.streams.empty()) {
      s.waiting[kept++] = peer;
    } else {
      p.on_list = false;
    }
  }
  s.waiting.resize(kept);
  if (s.waiting.empty()) progress_added.active = nullptr;
  --s.pushing;
  return events;
}

void am_control(am_state &s, int peer, const active_payload &step) {
  s.peers[static_cast<std::size_t>(peer)].control.push_back(step);
  waiting_add(s, peer);
  if (s.handler_depth == 0 && s.pushing == 0) (void)am_push();
}

void am_stream(am_state &s, std::uint64_t id) {
  am_op *op = am_op_find(s, id);
  s.peers[static_cast<std::size_t>(op->target)].streams.push_back(id);
  waiting_add(s, op->target);
  if (s.handler_depth == 0 && s.pushing == 0) (void)am_push();
}

void am_refusal_keep(am_state &s, int peer, int status, const char *why) {
  am_peer &p = s.peers[static_cast<std::size_t>(peer)];
  if (status != MPI_SUCCESS && p.refused == MPI_SUCCESS) {
    p.refused = status;
    p.refused_why = why != nullptr ? why : "refused at the target";
  }
}

void am_op_complete(am_state &s, std::uint64_t id, int status, const char *why) {
  am_op *op = am_op_find(s, id);
  if (op == nullptr) return;
  am_peer &p = s.peers[static_cast<std::size_t>(op->target)];
  am_refusal_keep(s, op->target, status, why);
  // A pulled message's buffer was read by the target; a get's bytes are
  // here (or refused): the origin counter counts now.
  if (op->pulled || op->kind == active_kind::get) counter_bump(op->origin_counter);
  counter_bump(op->completion_counter);
  --p.outstanding;
  --s.outstanding;
  am_op_free(s, id);
}

namespace {

// A new op to `to`, counted as outstanding there.
am_op &op_start(am_state &s, const am_route &to, active_kind kind, std::uint64_t &id) {
  id = am_op_new(s);
  am_op &op = *am_op_find(s, id);
  op.kind = kind;
  op.target = to.target_world;
  op.step.kind = kind;
  op.step.op = id;
  op.step.context = to.context;
  op.step.origin = to.comm_rank;
  return op;
}

// An op whose end this process waits for: an ack, or a get's data.
void op_awaited(am_state &s, am_op &op) {
  op.acked = true;
  ++s.peers[static_cast<std::size_t>(op.target)].outstanding;
  ++s.outstanding;
}

// A message or put: acked when the origin needs to know it ended there
// (a completion counter, or a pulled message's origin counter); else it
// ends when sent and a fence asks, unless `answered` (am_request: the
// caller learns its end otherwise).
void op_ack_if_needed(am_state &s, am_op &op, bool answered = false) {
  if (op.completion_counter != nullptr || op.pulled) {
    op.step.flags |= active_ack;
    op_awaited(s, op);
  } else {
    // Known to a fence from now, while still queued: the fence's own step
    // goes out behind it.
    op.acked = false;
    if (!answered) s.peers[static_cast<std::size_t>(op.target)].unfenced = true;
  }
}

int message_send(const am_route &to, int handler, const void *uhdr, int uhdr_len, const void *data,
                 std::size_t data_len, std::uint64_t target_counter, iris_counter *origin_counter,
                 iris_counter *completion_counter, bool answered) {
  am_state &s = am_state_get();
  std::uint64_t id = 0;
  am_op &op = op_start(s, to, active_kind::message, id);
  const auto *h = static_cast<const std::byte *>(uhdr);
  op.head.assign(h, h + uhdr_len);
  op.data = static_cast<const std::byte *>(data);
  op.step.handler = handler;
  op.step.uhdr_length = static_cast<std::uint16_t>(uhdr_len);
  op.step.total = static_cast<std::uint64_t>(uhdr_len) + data_len;
  op.step.counter = target_counter;
  op.origin_counter = origin_counter;
  op.completion_counter = completion_counter;
  vc &v = rt->vcs[static_cast<std::size_t>(to.target_world)];
  // Large data the target can read itself goes by its header alone.
  if (data_len >= s.pull_min && data_len > 0 && v.via->peer_accessible(v)) {
    op.pulled = true;
    op.step.flags |= active_pull;
    op.step.address = reinterpret_cast<std::uintptr_t>(data);
    ++s.stats_pulled;
  }
  ++s.stats_messages;
  op_ack_if_needed(s, op, answered);
  am_stream(s, id);
  return MPI_SUCCESS;
}

}  // namespace

int am_send(const am_route &to, int handler, const void *uhdr, int uhdr_len, const void *data,
            std::size_t data_len, std::uint64_t target_counter, iris_counter *origin_counter,
            iris_counter *completion_counter) {
  return message_send(to, handler, uhdr, uhdr_len, data, data_len, target_counter, origin_counter,
                      completion_counter, false);
}

int am_request(const am_route &to, int handler, const void *uhdr, int uhdr_len, const void *data,
               std::size_t data_len, iris_counter *origin_counter) {
  return message_send(to, handler, uhdr, uhdr_len, data, data_len, 0, origin_counter, nullptr,
                      true);
}

int am_put(const am_route &to, const void *origin, std::size_t bytes, std::uint64_t target_addr,
           std::uint64_t target_counter, iris_counter *origin_counter,
           iris_counter *completion_counter) {
  am_state &s = am_state_get();
  ++s.stats_puts;
  if (target_counter == 0 &&
      am_shared_direct(s, to.target_world, true, const_cast<void *>(origin), bytes, target_addr)) {
    counter_bump(origin_counter);
    counter_bump(completion_counter);
    return MPI_SUCCESS;
  }
  std::uint64_t id = 0;
  am_op &op = op_start(s, to, active_kind::put, id);
  op.data = static_cast<const std::byte *>(origin);
  op.step.total = bytes;
  op.step.address = target_addr;
  op.step.counter = target_counter;
  op.origin_counter = origin_counter;
  op.completion_counter = completion_counter;
  op_awaited(s, op);  // by shared memory: until done, or its notify's ack
  if (am_shared_put(s, op)) return MPI_SUCCESS;
  // As packets: the awaiting is undone for an op that wants no ack.
  --s.peers[static_cast<std::size_t>(op.target)].outstanding;
  --s.outstanding;
  op_ack_if_needed(s, op);
  am_stream(s, id);
  return MPI_SUCCESS;
}

int am_get(const am_route &to, void *origin, std::size_t bytes, std::uint64_t target_addr,
           std::uint64_t target_counter, iris_counter *origin_counter) {
  am_state &s = am_state_get();
  ++s.stats_gets;
  if (target_counter == 0 &&
      am_shared_direct(s, to.target_world, false, origin, bytes, target_addr)) {
    counter_bump(origin_counter);
    return MPI_SUCCESS;
  }
  std::uint64_t id = 0;
  am_op &op = op_start(s, to, active_kind::get, id);
  op.into = static_cast<std::byte *>(origin);
  op.step.total = bytes;
  op.step.address = target_addr;
  op.step.counter = target_counter;
  op.origin_counter = origin_counter;
  op_awaited(s, op);
  if (am_shared_get(s, op)) return MPI_SUCCESS;
  am_control(s, to.target_world, op.step);
  return MPI_SUCCESS;
}

void am_sent(int target) {
  if (am == nullptr) return;
  am_state &s = *am;
  const am_peer &p = s.peers[static_cast<std::size_t>(target)];
  progress_until([&] { return p.streams.empty(); });
}

void am_peer_failed(int w) {
  // Active messages reach the world only (not processes of other jobs).
  if (am == nullptr || static_cast<std::size_t>(w) >= am->peers.size()) return;
  am_state &s = *am;
  am_peer &p = s.peers[static_cast<std::size_t>(w)];
  p.control.clear();
  p.streams.clear();
  // What it was sending here never ends: its completion handler never runs.
  if (p.incoming.active) counter_lose(counter_at(p.incoming.first.counter));
  p.incoming = am_incoming{};
  bool ended = p.unfenced;  // ops went that no ack will ever cover
  p.unfenced = false;
  for (am_op &op : s.ops) {
    if (!op.live || op.target != w) continue;
    const std::uint64_t id = am_op_id(s, op);
    if (op.kind != active_kind::get_data) {
      ended = true;
      // The origin counter counted if the stream left whole (a carried
      // message or put) or the bytes moved (a shared put or get nulls it).
      const std::uint64_t total = op.pulled ? op.head.size() : op.step.total;
      const bool left = op.first_sent && op.sent >= total;
      const bool counted = left && !op.pulled && op.kind != active_kind::get;
      if (!counted) counter_lose(op.origin_counter);
      counter_lose(op.completion_counter);
    }
    if (op.acked && op.kind != active_kind::get_data) {
      --p.outstanding;
      --s.outstanding;
    }
    am_op_free(s, id);
  }
  if (ended) {
    am_refusal_keep(s, w, MPIX_ERR_PROC_FAILED, "it died before they completed");
  }
}

int am_fence(int target, const char **why) {
  if (am == nullptr) return MPI_SUCCESS;
  am_state &s = *am;
  // Targets that ended ops without acks: a fence step after them, whose
  // ack says they are done there.
  const int from = target >= 0 ? target : 0;
  const int to = target >= 0 ? target + 1 : static_cast<int>(s.peers.size());
  for (int peer = from; peer < to; ++peer) {
    am_peer &p = s.peers[static_cast<std::size_t>(peer)];
    if (!p.unfenced) continue;
    p.unfenced = false;
    ++s.stats_fences;
    std::uint64_t id = 0;
    am_op &op = op_start(s, {peer, 0, 0, 0}, active_kind::fence, id);
    op_awaited(s, op);
    am_stream(s, id);
  }
  if (target >= 0) {
    progress_until([&] { return s.peers[static_cast<std::size_t>(target)].outstanding == 0; });
  } else {
    progress_until([&] { return s.outstanding == 0; });
  }
  const int first = target >= 0 ? target : 0;
  const int last = target >= 0 ? target + 1 : static_cast<int>(s.peers.size());
  int status = MPI_SUCCESS;
  static std::string reason;
  for (int peer = first; peer < last; ++peer) {
    am_peer &p = s.peers[static_cast<std::size_t>(peer)];
    if (p.refused != MPI_SUCCESS && status == MPI_SUCCESS) {
      status = p.refused;
      reason = "rank " + std::to_string(peer) + ": " + p.refused_why;
    }
    p.refused = MPI_SUCCESS;
  }
  *why = reason.c_str();
  return status;
}

}  // namespace iris::device
