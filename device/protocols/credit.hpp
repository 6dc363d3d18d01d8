// Eager flow control, every rule of it. A sender may have at most `window`
// units of eager data unreceived at one receiver; the receiver gives units
// back as it consumes messages, piggybacked on any packet going to the
// sender (the header's `credits` field) or in a credit packet once a quarter
// of the window is owed. So unexpected eager memory is bounded by the sum of
// the windows, and a streaming sender rarely runs dry. A message that does
// not fit the credits left goes by rendezvous instead, so a sender never
// waits for credits. Peers that are not flow-controlled (oneself) skip all
// of it.
#pragma once

#include <cstddef>

#include "device/core/packet.hpp"
#include "device/core/vc.hpp"

namespace iris::device {

// Credits count bytes in units of 64: a message costs one unit for its queue
// entry plus its payload rounded up to whole units.
inline constexpr std::size_t credit_unit = 64;
inline constexpr int credit_cost(std::size_t length) {
  return 1 + static_cast<int>((length + credit_unit - 1) / credit_unit);
}

// Sender: whether an eager message of `bytes` may go to `to` now. Short of
// credits, the receiver may have returned some that no poll has read yet (a
// burst of nonblocking sends polls nothing), so a few polls, while they find
// anything, come first.
bool credit_short_poll(vc &to, int cost);
inline bool credit_enough(vc &to, std::size_t bytes) {
  if (!to.flow_controlled) return true;
  if (bytes > to.eager_limit) return false;
  const int cost = credit_cost(bytes);
  return to.credits >= cost || credit_short_poll(to, cost);
}
// Sender: an eager message of `bytes` to `to` takes its credits (reserved
// when it is queued, so that it goes out in order, maybe later).
inline void credit_spend(vc &to, std::size_t bytes) {
  if (to.flow_controlled) to.credits -= credit_cost(bytes);
}
// Sender: a queued eager message was withdrawn before it left (MPI_Cancel).
inline void credit_refund(vc &to, std::size_t bytes) {
  const vc_guard guard(to);
  if (to.flow_controlled) to.credits += credit_cost(bytes);
}

// Sender: the credits `h` carries back from `from` (every packet may).
inline void credit_receive(vc &from, const packet_header &h) {
  // A peer can only return credits it was given.
  const int credits = from.credits + h.credits;
  from.credits = credits < from.window ? credits : from.window;
}
// The same for a shared VC (vc.hpp), under its lock: unlocked senders spend
// them (packet_deliver_shared).
void credit_receive_shared(vc &from, const packet_header &h);

// Receiver: the units owed to `to` that the packet being written carries.
inline int credit_piggyback(const vc &to) {
  return to.owed < 0xffff ? to.owed : 0xffff;
}

// Receiver: one eager message of `length` bytes from `from` was consumed
// (received, or withdrawn by its sender's cancel): its units go back.
// Inline: every eager message received returns its units; the credit
// packet (a quarter of the window owed) is out of line.
void credit_packet_send(vc &from);
inline void credit_return(vc &from, std::size_t length) {
  if (!from.flow_controlled) return;
  from.owed += credit_cost(length);
  // A quarter of the window owed and nothing going back: say so at once, so
  // that a streaming sender never runs dry.
  if (from.owed * 4 >= from.window) [[unlikely]] {
    credit_packet_send(from);
  }
}

// MPI_THREAD_MULTIPLE, without the call lock: the same for a message
// delivered by message_arrived_aside. Its units go to `from.owed_aside`;
// once a quarter of the window is there they go back at once in a credit
// packet of their own (it carries only units, so it may pass anything
// queued) through send_held under the VC's lock (what any thread may
// send), or stay there if the transport has no room now.
void credit_return_aside(vc &from, std::size_t length);
// Under the call lock: moves what `from.owed_aside` holds into `owed`, to
// ride on the next packet (a credit packet if a quarter of the window is
// owed). One relaxed load when there is nothing.
inline void credit_fold(vc &from) {
  if (from.owed_aside.get() == 0) return;
  from.owed += from.owed_aside.take();
  if (from.owed * 4 >= from.window) credit_packet_send(from);
}

// The credit packet's handler: its credits were taken at the gate.
const char *credit_on_packet(vc &from, const packet_header &h, const std::byte *payload);

}  // namespace iris::device
