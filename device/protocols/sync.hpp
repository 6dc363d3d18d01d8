// Synchronous sends (MPI_Ssend and friends) complete only once matched. An
// eager-sized one goes as eager_sync, and the receiver answers sync_ack when
// a receive takes it; a rendezvous one needs nothing more, since its data
// only moves once matched (its FIN completes it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/core/packet.hpp"
#include "device/core/vc.hpp"

namespace iris::device {

// Receiver: tells `to` that its synchronous send `sender_request` matched.
void sync_ack_send(vc &to, std::uint64_t sender_request);

// Sender: the handler of sync_ack packets, which complete the send.
const char *sync_on_ack(vc &from, const packet_header &h, const std::byte *payload);

}  // namespace iris::device
