// The receiving side: receives are posted or take an unexpected message;
// arriving message packets (eager, eager_sync, rts) meet a posted receive or
// wait on the unexpected queue (matching.hpp); probes look at that queue.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/core/comm.hpp"
#include "device/core/packet.hpp"
#include "device/core/request.hpp"
#include "device/core/vc.hpp"

namespace iris::device {

// Posts a receive; the returned request completes when a message matched.
request *recv_start(const communicator &comm, std::uint32_t context, void *data,
                    std::size_t capacity, int source, int tag, request *use = nullptr);

// The receive `r`, set up, took the unexpected message `m` out of its queue
// (matcher::take_or_post): delivers it into `r` and frees it. Call lock.
void recv_taken(request &r, unexpected_msg *m);

// MPI_Mprobe: removes the oldest matching unexpected message and claims it
// for a later MPI_Mrecv. nullptr when there is none.
unexpected_msg *message_claim(std::uint32_t context, int source, int tag);
// The claimed message named by an MPI_Message handle, or nullptr.
unexpected_msg *message_from_handle(int handle);
int message_handle(const unexpected_msg &m);
// MPI_Mrecv: a receive of a claimed message; frees the message. `use`, when
// given, is the request to receive with (already set up by the caller).
request *recv_claimed(const communicator &comm, unexpected_msg *m, void *data, std::size_t capacity,
                      request *use = nullptr);
// The oldest unexpected message matching the pattern, or nullptr.
const unexpected_msg *probe_find(std::uint32_t context, int source, int tag);

// A message packet (eager, eager_sync or rts) arrived from `from`: it takes
// the oldest posted receive it matches, or waits on the unexpected queue.
// Called by the handlers of those packets.
const char *message_arrived(vc &from, const packet_header &h, const std::byte *payload);

// MPI_THREAD_MULTIPLE, without the call lock (a thread polling while
// another holds it: transport::poll_aside): the eager message `h` from
// `from` is delivered if the oldest posted receive it matches is an aside
// receive (request::aside) of its context's published queues; its credits
// go back (credit_return_aside). False, having changed nothing: the message
// is the call lock's (no such receive, unexpected, another kind).
bool message_arrived_aside(vc &from, const packet_header &h, const std::byte *payload);
// The same for a sound RTS `h` from `from`, when its transport asks for the
// data as packets by a rule of its own (transport::pipelines_aside), with
// the lock that reads `from`'s records held: the oldest posted receive it
// matches, if an aside receive with room for some of it, takes it and is
// answered with a CTS (rendezvous_answer_aside). False, having changed
// nothing: the RTS is the call lock's poll's.
bool rendezvous_rts_aside(vc &from, const packet_header &h);

// MPI_Request_free of `r`: marks it freed and returns whether it is complete
// already (then the caller releases it; else its completion does). An aside
// receive is marked under its context's lock, where message_arrived_aside
// reads the mark and completes it; an aside send under its VC's send_lock,
// where rendezvous_push_aside reads it. Call lock.
bool request_mark_freed(request &r);

}  // namespace iris::device
