// Rendezvous: the sender's RTS waits for its match; then the receiver either
// reads the data itself through its transport's single-copy path (CMA
// between ranks of one node, the netmod's RMA read over a network) and
// answers FIN, or answers CTS and the sender streams the data in data
// packets of the peer's fragment size (pipelined copy). When either side's
// datatype is non-contiguous with large blocks, the single copy reads
// scattered blocks (transport::read_scattered), the sender's layout named
// in its RTS by a description (device/README.md, "Zero-copy rules"). Data
// only moves once matched, so unexpected rendezvous messages hold no buffer
// memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/packet.hpp"
#include "device/request.hpp"
#include "device/vc.hpp"

namespace iris::device {

// Sender: what the RTS of send `r` to `to` carries (the transport fills in
// how the receiver may read the buffer itself).
rts_payload rendezvous_rts_payload(vc &to, request &r);

// The handlers of rendezvous packets.
const char *rendezvous_on_rts(vc &from, const packet_header &h, const std::byte *payload);
const char *rendezvous_on_cts(vc &from, const packet_header &h, const std::byte *payload);
const char *rendezvous_on_data(vc &from, const packet_header &h, const std::byte *payload);
const char *rendezvous_on_fin(vc &from, const packet_header &h, const std::byte *payload);

// Receiver: a receive `r` has matched an RTS of `from`.
void rendezvous_matched(request &r, vc &from, std::uint64_t sender_request,
                        const rts_payload &where);
// Receiver: the transport's read for receive `receiver_request` ended (why:
// nullptr, or what failed: then the data is asked for as packets).
void rendezvous_read_done(std::uint64_t receiver_request, const char *why);
// Receiver: where the `payload` bytes of data packet `h` from `from` belong,
// if it is one that rendezvous_on_data would take; else nullptr.
std::byte *rendezvous_data_place(const vc &from, const packet_header &h, std::size_t payload);

// Sender: pushes data fragments of `to`'s streaming sends. Returns packets
// sent.
int rendezvous_push(vc &to);

}  // namespace iris::device
