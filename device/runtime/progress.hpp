// The progress engine: each call polls every active transport with a budget
// (at most IRIS_POLL_BATCH packets per peer, so that no peer starves the
// others), then pushes queued sends. Inbound traffic is always accepted, so
// a sender waiting for room can never block a receiver (no fetch deadlock).
// Progress happens only inside library calls. Under MPI_THREAD_MULTIPLE a
// waiting thread lets other threads in between polls (threading.hpp).
#pragma once

#include <sched.h>

#include "device/base/threading.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

// Work the layers above the runtime add to every pass. The runtime cannot
// name them (device/layers.txt), so each passes its step in when it first
// has such work: the protocols when a VC joins rt->sending
// (sending_list_add), the collectives when a schedule starts
// (schedule_start). One indirect call a pass, and only while there is work.
struct progress_steps {
  int (*push_sends)() = nullptr;  // writes what the VCs of rt->sending queued
  int (*schedules)() = nullptr;   // advances the started schedules
  int (*active)() = nullptr;      // pushes queued active-message packets (device/am/)
  int (*recovery)() = nullptr;    // failures reported, recovery packets to resend (IRIS_RECOVERY)
  std::size_t schedules_active = 0;  // started schedules (0: skip the call)
  // Started schedules waiting for a store to the node's shared collective
  // segment: no packet announces one, so a waiting rank must not sleep on
  // its bell meanwhile (it yields), and the progress thread keeps polling.
  std::size_t shared_waits = 0;
};
inline progress_steps progress_added;

// One pass of the progress engine. Returns how many events it handled.
int progress_poll();
// How many times progress_poll ran, in any thread: the progress thread
// reads it to tell a program that polls from one that only enters MPI.
std::uint64_t progress_polls();

// MPI_THREAD_MULTIPLE: a pass by a thread that found the call lock taken
// (transport::poll_aside): only eager messages into receives posted
// without the call lock, and only from rings no other thread is reading.
// Returns how many it delivered.
int progress_poll_aside();

// What a waiting rank does once it has polled `spin_limit` times in vain:
// it gives its core away (sched_yield), and after IRIS_SLEEP_AFTER such
// yields, where every transport can wake it, it sleeps on the bell its
// transport holds (transport.hpp) until a packet comes. `yields` counts the idle passes
// since the spinning ended. Returns the events it handled on the way.
int progress_idle(int yields);

// Polls until done() holds, spinning first, then yielding the core, then
// sleeping. While a schedule waits on the node's collective segment it
// spins only as long as the segment's own waits (shared_spin_limit): the
// ranks it waits for need the core more.
template <typename Done>
void progress_until(Done done) {
  int idle = 0;
  while (!done()) {
    if (progress_poll() > 0) {
      idle = 0;
    } else if (++idle >
               (progress_added.shared_waits == 0 ? rt->spin_limit : rt->shared_spin_limit)) {
      // Under MPI_THREAD_MULTIPLE, or with the progress thread, a waiting
      // thread never sleeps on its bell: another thread of this process may
      // need the call lock to send what would wake it (and the progress
      // thread sleeps on the bell itself). It yields with the lock given up.
      if (call_guard == call_guarding::locked) {
        call_lock_pause(true);
      } else if (call_guard == call_guarding::flagged) {
        sched_yield();  // the progress thread sleeps on the bell; it stays out meanwhile
      } else if (progress_idle(idle - rt->spin_limit) > 0) {
        idle = 0;
      }
      continue;
    }
    if (call_guard == call_guarding::locked) call_lock_pause(false);
  }
}

}  // namespace iris::device
