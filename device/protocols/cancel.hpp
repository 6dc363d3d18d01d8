// MPI_Cancel. An unmatched receive is withdrawn at once. A send that has not
// left is withdrawn at once too (its credits refunded); one that has left
// asks its receiver, which withdraws it only if it still waits unmatched on
// the unexpected queue, and answers either way. The send's request completes
// with the answer.
#pragma once

#include <cstddef>

#include "device/core/packet.hpp"
#include "device/core/request.hpp"
#include "device/core/vc.hpp"

namespace iris::device {

// Either way the request completes, cancelled or not.
void request_cancel(request &r);

// The handlers of cancel_send (receiver side) and cancel_reply (sender side).
const char *cancel_on_request(vc &from, const packet_header &h, const std::byte *payload);
const char *cancel_on_reply(vc &from, const packet_header &h, const std::byte *payload);

}  // namespace iris::device
