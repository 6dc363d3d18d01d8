// The progress engine: each call polls every active transport with a budget
// (at most IRIS_POLL_BATCH packets per peer, so that no peer starves the
// others), then pushes queued sends. Inbound traffic is always accepted, so
// a sender waiting for room can never block a receiver (no fetch deadlock).
// Progress happens only inside library calls.
#pragma once

#include "device/runtime.hpp"

namespace iris::device {

// One pass of the progress engine. Returns how many events it handled.
int progress_poll();

// Gives the core away for a moment; called by a rank that has waited long.
void progress_yield();

// Polls until done() holds, spinning first and then yielding the core.
template <typename Done>
void progress_until(Done done) {
  int idle = 0;
  while (!done()) {
    if (progress_poll() > 0) {
      idle = 0;
    } else if (++idle > rt->spin_limit) {
      progress_yield();
    }
  }
}

}  // namespace iris::device
