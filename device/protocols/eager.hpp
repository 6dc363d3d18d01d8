// Eager: a message of at most the eager limit travels whole in one packet
// (eager, or eager_sync for a synchronous send) as soon as it is sent; the
// receiver copies it into the matched receive, or holds it on the
// unexpected queue until one is posted. Credits (credit.hpp) bound what a
// sender may leave unexpected.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/core/packet.hpp"
#include "device/core/request.hpp"
#include "device/core/vc.hpp"

namespace iris::device {

// The handler of eager and eager_sync packets: the message meets a posted
// receive or waits on the unexpected queue.
const char *eager_on_message(vc &from, const packet_header &h, const std::byte *payload);

// A receive `r` has matched an eager message of `length` bytes from `from`
// whose bytes are at `data`: they are copied, the receive completes, the
// credits go back, and a synchronous sender is told (sync_ack).
void eager_matched(request &r, vc &from, packet_type type, std::size_t length,
                   std::uint64_t sender_request, const std::byte *data);

}  // namespace iris::device
