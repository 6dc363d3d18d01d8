// The one dispatch (dispatch.cpp): every transport hands each packet it
// receives to packet_deliver (or, for a shared VC or a pass without the
// call lock, its two variants below).
#pragma once

#include <cstddef>

#include "device/core/packet.hpp"

namespace iris::device {

struct vc;

// The one gate and the one dispatch (dispatch.cpp): checks a packet that
// arrived from `from` (packet_check, then its context id), takes the credits
// it returns, and hands it to its protocol's handler. Returns nullptr, or why
// the packet was refused (it is then dropped). Every transport calls this
// for every packet it receives.
[[nodiscard]] const char *packet_deliver(vc &from, const packet_header &h, const std::byte *payload,
                                         std::size_t length);
// The same for a shared VC (vc.hpp, MPI_THREAD_MULTIPLE): the credits are
// taken under the VC's lock, since unlocked senders spend them.
[[nodiscard]] const char *packet_deliver_shared(vc &from, const packet_header &h,
                                                const std::byte *payload, std::size_t length);
// MPI_THREAD_MULTIPLE, from a thread polling without the call lock
// (transport::poll_aside): delivers `h` if it is a sound eager message
// that an aside receive takes (message_arrived_aside), with its credits
// taken under the VC's lock. False, having changed nothing, for any other
// packet, sound or not: the transport leaves it, and every one after it
// from that peer, to the call lock's poll, which checks and handles it.
[[nodiscard]] bool packet_deliver_aside(vc &from, const packet_header &h, const std::byte *payload,
                                        std::size_t length);

}  // namespace iris::device
