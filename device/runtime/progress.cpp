#include "device/runtime/progress.hpp"

#include <sched.h>

#include <atomic>
#include <cstdint>

namespace iris::device {
namespace {
// Polls so far (progress_polls): bumped by whoever polls, which holds the
// call lock or the program flag; read by the progress thread without them.
std::atomic<std::uint64_t> polls{0};
}  // namespace

std::uint64_t progress_polls() {
  return polls.load(std::memory_order_relaxed);
}

int progress_poll() {
  polls.store(polls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  rt->polling = true;
  int events = 0;
  for (transport *t : rt->polled) events += t->poll(rt->config.poll_batch);
  if (!rt->sending.empty()) events += progress_added.push_sends();
  if (progress_added.schedules_active != 0) events += progress_added.schedules();
  if (progress_added.active != nullptr) events += progress_added.active();
  if (progress_added.recovery != nullptr) [[unlikely]] {
    const recovery_state &r = rt->recovery;
    if (r.notices.load(std::memory_order_relaxed) != r.seen || r.outbox || r.running) {
      events += progress_added.recovery();
    }
  }
  rt->polling = false;
  return events;
}

int progress_poll_aside() {
  int events = 0;
  // Not rt->polled's size: the call lock's holder may be adding to it.
  const std::size_t n = rt->polled_aside.load(std::memory_order_acquire);
  transport *const *polled = rt->polled.data();
  for (std::size_t i = 0; i < n; ++i) events += polled[i]->poll_aside(rt->config.poll_batch);
  return events;
}

namespace {

// How many times longer a rank with a rendezvous send in flight yields
// before it sleeps (progress_idle).
constexpr int sleep_wait_factor = 16;

// The sleeper's half of the doorbell pair (the transport holding the bell
// does the steps): marked asleep and seen by every sender, a last poll, then
// the wait until a sender rings or the timeout passes.
int progress_sleep(transport &t) {
  if (!t.sleep_begin()) {
    rt->sleeper = nullptr;  // the kernel refused: yield from now on
    return 0;
  }
  const int events = progress_poll();
  if (events == 0 && rt->sending.empty()) {
    ++rt->stats.sleeps;
    if (!t.sleep_wait(rt->config.sleep_timeout_ms)) ++rt->stats.sleep_timeouts;
  }
  t.sleep_end();
  return events;
}

}  // namespace

int progress_idle(int yields) {
  // Nothing queued to push: a rank waiting for room in a peer's ring is
  // woken by nobody, so it keeps yielding.
  // Nor one waiting for a store to the node's collective segment.
  // A rank with a rendezvous send not yet complete (most often its data
  // being read) yields sleep_wait_factor times longer first: the answer
  // comes soon, and a sleeper costs its reader a wake-up and comes back
  // late (Gather of 1 MiB blocks by messages at 4 ranks: 327-353 us a call
  // sleeping, 253-272 not; Open MPI about 300).
  const int after = rt->rendezvous_sends > 0 ? rt->config.sleep_after * sleep_wait_factor
                                             : rt->config.sleep_after;
  if (rt->sleeper != nullptr && yields > after && rt->sending.empty() &&
      progress_added.shared_waits == 0) {
    return progress_sleep(*rt->sleeper);
  }
  sched_yield();
  return 0;
}

}  // namespace iris::device
