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

#include "device/core/packet.hpp"
#include "device/core/request.hpp"
#include "device/core/vc.hpp"

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
// Receiver: an RTS of `from` that no receive will take (its communicator
// is revoked) is answered with a FIN, so that a sender holding its buffer
// readable until answered (recovery_fail) ends its send. Not to a dead
// sender.
void rendezvous_refuse(vc &from, std::uint64_t sender_request);
// Receiver: where the `payload` bytes of data packet `h` from `from` belong,
// if it is one that rendezvous_on_data would take; else nullptr.
std::byte *rendezvous_data_place(const vc &from, const packet_header &h, std::size_t payload);

// MPI_THREAD_MULTIPLE, from a thread without the call lock holding the lock
// that reads `from`'s records (transport::pipelines_aside). Receive `r`, an
// aside receive that took an RTS of `from` (rendezvous_rts_aside), joins
// `from.streaming_aside` and asks for its data with a CTS sent through
// send_held under the VC's lock, or, when the transport has no room, handed
// to the call lock's holder (rendezvous_cts_later).
void rendezvous_answer_aside(request &r, vc &from);
// Data packet `h` of one of `from.streaming_aside`'s receives, in sequence:
// copied in, and its last packet completes the receive under its context's
// lock unless the user freed it. False, having changed nothing: it is the
// call lock's poll's (rendezvous_on_data takes such receives too).
bool rendezvous_data_aside(vc &from, const packet_header &h, const std::byte *payload,
                           std::size_t length);
// Under the call lock: sends the CTSs aside passes had no room for and
// finishes the aside sends their pushers left to it (nothing when none: two
// loads). Run with recv_taken_drain.
void rendezvous_cts_drain();

// MPI_THREAD_MULTIPLE, the sender's half ("aside sends", device/README.md,
// "Threads"). A user's rendezvous send of plain bytes to a shared VC whose
// transport allows it (transport::streams_sends_aside) joins
// `to.sending_aside` once its RTS is written (send_join_aside, under the
// call lock). Its CTS, taken by an aside pass or by the call lock's poll, clears
// it to stream (under the VC's send_lock); then whichever thread holds that
// lock writes its data packets: its waiter (MPI_Wait, MPI_Send), an aside
// pass that took the CTS, or the call lock's poll (send_push). The last
// packet completes it there, unless the user freed it: that one the call
// lock's next holder finishes (rendezvous_cts_drain).
//
// CTS packet `h` of `from`, from a thread holding the lock that reads
// `from`'s records, with or without the call lock: true when it cleared
// one of `from.sending_aside`'s sends (and pushed what fits); false, having
// changed nothing, for any other (the call lock's rendezvous_on_cts).
bool rendezvous_cts_aside(vc &from, const packet_header &h);
// Writes the cleared sends of `to.sending_aside` while the transport takes
// them, under `to.send_lock` if it is free (else its holder does). Their
// data packets.
int rendezvous_push_aside(vc &to);

// Sender: pushes data fragments of `to`'s streaming sends. Returns packets
// sent.
int rendezvous_push(vc &to);

}  // namespace iris::device
