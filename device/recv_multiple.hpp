// MPI_THREAD_MULTIPLE: receives posted without the call lock
// (device/README.md, "Threads"). MPI_Irecv of a predefined contiguous type
// on a published intracommunicator takes a request from its thread's cache
// (request.hpp), sets it up as a receive and pushes it on one lock-free
// stack of pending receives; whoever next holds the call lock posts them
// (recv_start: each takes its oldest unexpected match or joins the posted
// queue), each thread's in the order it made them, before anything else it
// does there: on taking the lock afresh (call_lock_entered, threading.hpp)
// and between the polls of a wait (call_lock_pause). So a thread's receives
// are posted in its program order (a later locked receive or probe of the
// same thread drains its earlier unlocked ones first), and a receive never
// waits for the call lock to be posted. Below MULTIPLE none of it runs.
#pragma once

#include "device/request.hpp"

namespace iris::device {

// Without the call lock: hands over `r`, a request of kind recv with its
// comm, key, buffer and bytes set, to be posted by the call lock's holder.
void recv_post_pending(request &r);
// Under the call lock: posts every pending receive (nothing when none: one
// load). Installed as call_lock_entered under MULTIPLE.
void recv_pending_drain();

}  // namespace iris::device
