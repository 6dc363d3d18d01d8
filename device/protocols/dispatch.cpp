// The one dispatch table from packet type to the handler in its protocol's
// file, after the gate (packet_check, then the context id).
#include "device/protocols/dispatch.hpp"

#include <iterator>

#include "device/am/am.hpp"
#include "device/protocols/cancel.hpp"
#include "device/protocols/credit.hpp"
#include "device/protocols/eager.hpp"
#include "device/protocols/port.hpp"
#include "device/protocols/recovery.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/rendezvous.hpp"
#include "device/protocols/sync.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

namespace {

// Indexed by packet_type; entry 0 is no type.
constexpr packet_handler handlers[] = {
    nullptr,
    eager_on_message,    // eager
    eager_on_message,    // eager_sync
    rendezvous_on_rts,   // rts
    rendezvous_on_cts,   // cts
    rendezvous_on_data,  // data
    rendezvous_on_fin,   // fin
    credit_on_packet,    // credit
    sync_on_ack,         // sync_ack
    cancel_on_request,   // cancel_send
    cancel_on_reply,     // cancel_reply
    am_on_packet,        // active
    port_on_packet,      // port
    recovery_on_packet,  // recovery
};
static_assert(std::size(handlers) == static_cast<std::size_t>(packet_type::recovery) + 1,
              "every packet type has its handler");

// A message on a context this rank has not reached: every context below
// next_context was agreed here (or is predefined). A peer may already send
// on a context being agreed while this rank is still inside context_agree,
// so none is refused then. The nonblocking range (MPI_Comm_idup) is checked
// the same way against its own counter.
bool context_known(std::uint32_t context) {
  return context < rt->next_context || rt->agreeing > 0 ||
         (context >= first_nonblocking_context && context < rt->next_nonblocking_context);
}

// packet_check's verdict on the commonest packet, a plain eager message,
// in one pass of tests: true means sound; false, ask packet_check (which
// says why, or accepts every other type).
inline bool eager_sound(const packet_header &h, std::size_t payload, int world_size) {
  return h.type == packet_type::eager && h.flags == 0 && payload == h.length &&
         h.length <= max_message_length &&
         static_cast<std::uint32_t>(h.source) < static_cast<std::uint32_t>(world_size) &&
         h.tag >= 0;
}

template <bool Shared>
inline void credit_in(vc &from, const packet_header &h) {
  if (Shared) {
    credit_receive_shared(from, h);
  } else {
    credit_receive(from, h);
  }
}

// After a failure or revocation (protocols/recovery.hpp): what a dead rank
// sent before it died is dropped, its operations having ended here already;
// and an answer to an operation that a failure or revocation ended (a late
// CTS, data, FIN) finds nothing to answer and is dropped as well.
template <bool Shared>
[[gnu::cold]] const char *deliver_troubled(vc &from, const packet_header &h,
                                           const std::byte *payload) {
  const auto w = static_cast<std::size_t>(from.world_rank);
  if (w < rt->recovery.failed.size() && rt->recovery.failed[w] != 0) return nullptr;
  credit_in<Shared>(from, h);
  if (recovery_refuses(from, h)) return nullptr;
  const char *why = handlers[static_cast<std::size_t>(h.type)](from, h, payload);
  return is_message(h.type) || h.type == packet_type::recovery ? why : nullptr;
}

template <bool Shared>
inline const char *deliver(vc &from, const packet_header &h, const std::byte *payload,
                           std::size_t length) {
  if (!eager_sound(h, length, rt->source_bound())) [[unlikely]] {
    if (const char *why = packet_check(h, length, rt->source_bound())) return why;
  }
  if (is_message(h.type) && !context_known(h.context)) return "message for an unknown context id";
  if (rt->troubled) [[unlikely]] {
    return deliver_troubled<Shared>(from, h, payload);
  }
  credit_in<Shared>(from, h);
  // The small-message case called directly, so that it inlines; the table
  // serves every other type.
  if (h.type == packet_type::eager) return eager_on_message(from, h, payload);
  return handlers[static_cast<std::size_t>(h.type)](from, h, payload);
}

}  // namespace

const char *packet_deliver(vc &from, const packet_header &h, const std::byte *payload,
                           std::size_t length) {
  return deliver<false>(from, h, payload, length);
}

const char *packet_deliver_shared(vc &from, const packet_header &h, const std::byte *payload,
                                  std::size_t length) {
  return deliver<true>(from, h, payload, length);
}

namespace {

// packet_deliver_aside's other packets: an RTS, data of a receive in
// `from.streaming_aside`, the CTS of a send in `from.sending_aside`, or a
// credit packet (its credits are taken after, as every packet's).
bool deliver_aside_other(vc &from, const packet_header &h, const std::byte *payload,
                         std::size_t length) {
  switch (h.type) {
    case packet_type::data:
      return rendezvous_data_aside(from, h, payload, length);
    case packet_type::rts:
      return packet_check(h, length, rt->source_bound()) == nullptr &&
             rendezvous_rts_aside(from, h);
    case packet_type::cts:
      return packet_check(h, length, rt->source_bound()) == nullptr &&
             rendezvous_cts_aside(from, h);
    case packet_type::credit:
      return packet_check(h, length, rt->source_bound()) == nullptr;
    default:
      return false;
  }
}

}  // namespace

bool packet_deliver_aside(vc &from, const packet_header &h, const std::byte *payload,
                          std::size_t length) {
  if (eager_sound(h, length, rt->source_bound())) {
    if (!message_arrived_aside(from, h, payload)) return false;
  } else if (!deliver_aside_other(from, h, payload, length)) {
    return false;
  }
  credit_receive_shared(from, h);
  return true;
}

}  // namespace iris::device
