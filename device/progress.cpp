#include "device/progress.hpp"

#include <sched.h>

#include "device/schedule.hpp"
#include "device/send.hpp"
#include "shm/bell.hpp"

namespace iris::device {
namespace {

int push_sends() {
  int pushed = 0;
  for (std::size_t i = 0; i < rt->sending.size();) {
    vc *v = rt->sending[i];
    pushed += send_push(*v);
    if (!v->has_pending()) {
      v->on_sending_list = false;
      rt->sending[i] = rt->sending.back();
      rt->sending.pop_back();
    } else {
      ++i;
    }
  }
  return pushed;
}

}  // namespace

int progress_poll() {
  rt->polling = true;
  int events = 0;
  for (transport *t : rt->polled) events += t->poll(rt->config.poll_batch);
  if (!rt->sending.empty()) events += push_sends();
  if (schedules_active != 0) events += schedule_progress();
  rt->polling = false;
  return events;
}

namespace {

// The sleeper's half of shm/bell.hpp's pair: marked asleep, the heavy fence,
// a last poll, then the futex until a sender rings or the timeout passes.
int progress_sleep(shm::bell &b) {
  b.asleep.store(1, std::memory_order_relaxed);
  if (!shm::heavy_fence()) {
    b.asleep.store(0, std::memory_order_relaxed);
    rt->bell = nullptr;  // the kernel refused: yield from now on
    return 0;
  }
  const int events = progress_poll();
  if (events == 0 && rt->sending.empty()) {
    ++rt->stats.sleeps;
    if (!shm::bell_wait(b, rt->config.sleep_timeout_ms)) ++rt->stats.sleep_timeouts;
  }
  b.asleep.store(0, std::memory_order_relaxed);
  return events;
}

}  // namespace

int progress_idle(int yields) {
  // Nothing queued to push: a rank waiting for room in a peer's ring is
  // woken by nobody, so it keeps yielding.
  if (rt->bell != nullptr && yields > rt->config.sleep_after && rt->sending.empty()) {
    return progress_sleep(*rt->bell);
  }
  sched_yield();
  return 0;
}

}  // namespace iris::device
