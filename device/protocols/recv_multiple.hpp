// MPI_THREAD_MULTIPLE: receives matched without the call lock
// (device/README.md, "Threads"). MPI_Irecv of a predefined contiguous type
// on a published intracommunicator takes a request from its thread's cache
// (request.hpp), sets it up as a receive and matches it itself, under its
// context's lock alone (matcher::take_or_post, through
// communicator::queues): it takes the oldest unexpected message it matches,
// or joins the posted queue, where the poll's arrivals find it. A receive
// that took a message leaves the delivery (the copy, the credits owed, a
// synchronous send's acknowledgement, a rendezvous reply, freeing the
// message) to whoever next holds the call lock, on one lock-free stack:
// on taking the lock afresh (call_lock_entered, threading.hpp) and between
// the polls of a wait (call_lock_pause). So a receive never waits for the
// call lock to be matched, and a thread's receives match in its program
// order whichever path each takes. Below MULTIPLE none of it runs.
#pragma once

#include "device/core/request.hpp"
#include "device/matching/matching.hpp"

namespace iris::device {

// Without the call lock: `r`, set up as a receive of plain bytes (key,
// buffer, bytes), becomes an aside receive (request::aside) and takes the
// oldest unexpected message of `q` it matches, handed over to the call
// lock's holder for delivery (recv_taken_later), or is posted there.
void recv_post_unlocked(context_queues &q, request &r);
// Without the call lock: hands over `r`, a receive that took the unexpected
// message `r.taken`, to be delivered by the call lock's holder.
void recv_taken_later(request &r);
// Under the call lock: delivers every such receive (nothing when none: one
// load), with what else threads without the lock hand over
// (rendezvous_cts_drain, request_release_drain). Installed as
// call_lock_entered under MULTIPLE.
void recv_taken_drain();

}  // namespace iris::device
