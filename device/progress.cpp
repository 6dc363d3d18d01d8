#include "device/progress.hpp"

#include <sched.h>

#include "device/schedule.hpp"
#include "device/send.hpp"

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

void progress_yield() {
  sched_yield();
}

}  // namespace iris::device
