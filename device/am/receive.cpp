// The target's side of active messages, and the origin's answers (a get's
// data, acks): am_on_packet, after the gate (packet_check) and the one
// dispatch table. Every field of a step is checked here before use; a
// malformed packet is refused with a reason (the transport ends the job
// naming the peer), an op the target will not do is answered with a
// refusal that the origin's fence reports.
#include <algorithm>
#include <cstring>

#include "device/am/am.hpp"
#include "device/am/exposure.hpp"
#include "device/am/state.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

const char *am_refusal_text(std::uint32_t reason) {
  switch (static_cast<am_refusal>(reason)) {
    case am_refusal::none:
      return "no refusal";
    case am_refusal::range:
      return "the target address range lies outside the memory the target exposed "
             "(MPIX_Expose)";
    case am_refusal::counter:
      return "the target counter address names no counter alive at the target";
    case am_refusal::handler:
      return "the handler id is not registered at the target";
    case am_refusal::comm:
      return "the communicator is not known at the target";
    case am_refusal::pull:
      return "the target could not read the message's data from the origin";
  }
  return "refused at the target";
}

namespace {

void ack(am_state &s, int peer, std::uint64_t op, int status, am_refusal reason) {
  active_payload step{};
  step.kind = active_kind::ack;
  step.op = op;
  step.status = status;
  step.reason = static_cast<std::uint32_t>(reason);
  am_control(s, peer, step);
}

// The end of a message or put: the completion handler, the target
// counter, the ack.
void stream_end(am_state &s, int peer, am_incoming &in) {
  int status = in.status;
  am_refusal reason =
      status == MPI_SUCCESS ? am_refusal::none : static_cast<am_refusal>(in.first.reason);
  if (status == MPI_SUCCESS && in.completion != nullptr)
    in.completion(in.comm_handle, in.user_info);
  if (status == MPI_SUCCESS && in.first.counter != 0) {
    iris_counter *c = counter_at(in.first.counter);
    if (c == nullptr) {
      status = MPI_ERR_ARG;
      reason = am_refusal::counter;
    }
    counter_bump(c);
  }
  const std::uint64_t op = in.first.op;
  const bool wanted = (in.first.flags & active_ack) != 0;
  in = am_incoming{};
  // An origin that asked for none learns of success from its next fence.
  if (wanted || status != MPI_SUCCESS) ack(s, peer, op, status, reason);
}

void refuse(am_incoming &in, int status, am_refusal reason) {
  if (in.status != MPI_SUCCESS) return;
  in.status = status;
  in.first.reason = static_cast<std::uint32_t>(reason);
}

// A message's first packet: which handler, which communicator, from whom.
void message_begin(am_state &s, int peer, am_incoming &in) {
  const active_payload &step = in.first;
  if (am_handler_of(s, step.handler) == nullptr) {
    refuse(in, MPI_ERR_ARG, am_refusal::handler);
    return;
  }
  const communicator *comm = comm_of_context(step.context);
  if (comm == nullptr || step.origin < 0 || step.origin >= comm->size ||
      comm->world_rank[static_cast<std::size_t>(step.origin)] != peer) {
    refuse(in, MPI_ERR_COMM, am_refusal::comm);
    return;
  }
  in.comm_handle = comm->handle;
}

// The header handler, once the user header is here; then a pulled
// message's data, read from the origin.
void message_handle(am_state &s, vc &from, am_incoming &in) {
  in.handled = true;
  if (in.status != MPI_SUCCESS) return;
  const active_payload &step = in.first;
  const std::uint64_t data_len = step.total - step.uhdr_length;
  MPIX_Am_header_fn *fn = am_handler_of(s, step.handler);
  in.into =
      static_cast<std::byte *>(fn(in.comm_handle, step.origin, in.uhdr.data(), step.uhdr_length,
                                  static_cast<MPI_Aint>(data_len), &in.completion, &in.user_info));
  if ((step.flags & active_pull) != 0 && in.into != nullptr && data_len != 0) {
    if (from.via->peer_access(from, false, step.address, in.into,
                              static_cast<std::size_t>(data_len)) != xfer::done) {
      refuse(in, MPI_ERR_OTHER, am_refusal::pull);
    }
  }
}

// One piece of a message's or a put's stream.
const char *stream_piece(am_state &s, vc &from, const active_payload &step, const std::byte *bytes,
                         std::size_t n) {
  const int peer = from.world_rank;
  am_incoming &in = s.peers[static_cast<std::size_t>(peer)].incoming;
  if (step.offset == 0) {
    if (in.active) return "a new active-message stream before the last one ended";
    if (step.total > max_message_length) return "active-message stream of an impossible length";
    if (step.kind == active_kind::message &&
        (step.uhdr_length > MPIX_AM_UHDR_MAX || step.uhdr_length > step.total)) {
      return "active message whose user header is longer than allowed or than the message";
    }
    in = am_incoming{};
    in.active = true;
    in.first = step;
    in.first.reason = 0;
    if (step.kind == active_kind::message) {
      message_begin(s, peer, in);
    } else if (!exposed_here(step.address, step.total)) {
      refuse(in, MPI_ERR_RMA_RANGE, am_refusal::range);
    } else {
      in.into = reinterpret_cast<std::byte *>(static_cast<std::uintptr_t>(step.address));
    }
  } else if (!in.active || in.first.op != step.op || in.first.kind != step.kind ||
             in.received != step.offset) {
    return "active-message stream piece out of order";
  }
  const std::uint64_t uhdr_len = in.first.kind == active_kind::message ? in.first.uhdr_length : 0;
  const std::uint64_t stream = (in.first.flags & active_pull) != 0 ? uhdr_len : in.first.total;
  if (n > stream - in.received) return "active-message stream longer than it said";
  if (in.received < uhdr_len) {
    const std::size_t take =
        static_cast<std::size_t>(std::min<std::uint64_t>(n, uhdr_len - in.received));
    in.uhdr.insert(in.uhdr.end(), bytes, bytes + take);
    in.received += take;
    bytes += take;
    n -= take;
  }
  if (in.first.kind == active_kind::message && !in.handled && in.received >= uhdr_len) {
    message_handle(s, from, in);
  }
  if (n > 0 && in.into != nullptr && in.status == MPI_SUCCESS) {
    std::memcpy(in.into + (in.received - uhdr_len), bytes, n);
  }
  in.received += n;
  if (in.received == stream) stream_end(s, peer, in);
  return nullptr;
}

// A get: answered with the bytes as a stream of get_data pieces, or refused.
void get_serve(am_state &s, int peer, const active_payload &step) {
  am_refusal reason = am_refusal::none;
  int status = MPI_SUCCESS;
  if (step.total > max_message_length || !exposed_here(step.address, step.total)) {
    status = MPI_ERR_RMA_RANGE;
    reason = am_refusal::range;
  } else if (step.counter != 0 && counter_at(step.counter) == nullptr) {
    status = MPI_ERR_ARG;
    reason = am_refusal::counter;
  }
  if (status != MPI_SUCCESS) {
    ack(s, peer, step.op, status, reason);
    return;
  }
  const std::uint64_t id = am_op_new(s);
  am_op &reply = *am_op_find(s, id);
  reply.kind = active_kind::get_data;
  reply.target = peer;
  reply.step.kind = active_kind::get_data;
  reply.step.op = step.op;
  reply.step.total = step.total;
  reply.step.counter = step.counter;
  reply.data = reinterpret_cast<const std::byte *>(static_cast<std::uintptr_t>(step.address));
  am_stream(s, id);
}

// The origin's: a piece of what its get asked for.
const char *get_data(am_state &s, int peer, const active_payload &step, const std::byte *bytes,
                     std::size_t n) {
  am_op *op = am_op_find(s, step.op);
  if (op == nullptr || op->kind != active_kind::get || op->target != peer) {
    return "get data for no get of this process";
  }
  if (step.offset != op->received || n > op->step.total - op->received) {
    return "get data out of order or longer than asked";
  }
  if (n > 0) std::memcpy(op->into + op->received, bytes, n);
  op->received += n;
  if (op->received == op->step.total) am_op_complete(s, step.op, MPI_SUCCESS, nullptr);
  return nullptr;
}

const char *dispatch(am_state &s, vc &from, const active_payload &step, const std::byte *bytes,
                     std::size_t n) {
  const int peer = from.world_rank;
  switch (step.kind) {
    case active_kind::message:
    case active_kind::put:
      return stream_piece(s, from, step, bytes, n);
    case active_kind::get:
      if (n != 0) return "get with a payload";
      get_serve(s, peer, step);
      return nullptr;
    case active_kind::get_data:
      return get_data(s, peer, step, bytes, n);
    case active_kind::notify: {
      if (n != 0) return "notify with a payload";
      iris_counter *c = counter_at(step.counter);
      counter_bump(c);
      ack(s, peer, step.op, c != nullptr ? MPI_SUCCESS : MPI_ERR_ARG,
          c != nullptr ? am_refusal::none : am_refusal::counter);
      return nullptr;
    }
    case active_kind::fence:
      // Every earlier step of this origin's came before it and is done.
      if (n != 0) return "fence with a payload";
      ack(s, peer, step.op, MPI_SUCCESS, am_refusal::none);
      return nullptr;
    case active_kind::ack: {
      if (n != 0) return "ack with a payload";
      if (step.status < MPI_SUCCESS || step.status > MPI_ERR_LASTCODE) {
        return "ack with an unknown status";
      }
      const am_op *op = am_op_find(s, step.op);
      if (op == nullptr && step.status != MPI_SUCCESS) {
        // A refusal of an op that asked for no ack (already ended here):
        // kept for the fence, which comes after it.
        am_refusal_keep(s, peer, step.status, am_refusal_text(step.reason));
        return nullptr;
      }
      if (op == nullptr || op->target != peer || op->kind == active_kind::get_data) {
        return "ack for no operation of this process";
      }
      am_op_complete(s, step.op, step.status, am_refusal_text(step.reason));
      return nullptr;
    }
  }
  return "unknown active-message step";
}

}  // namespace

const char *am_on_packet(vc &from, const packet_header &h, const std::byte *payload) {
  am_state &s = am_state_get();
  active_payload step;
  std::memcpy(&step, payload, sizeof(step));
  // Sends made while this runs (acks, handlers' own) are queued and pushed
  // by the progress step after the poll, never from inside it.
  ++s.handler_depth;
  const char *why = dispatch(s, from, step, payload + sizeof(step),
                             static_cast<std::size_t>(h.length) - sizeof(step));
  --s.handler_depth;
  return why;
}

}  // namespace iris::device
