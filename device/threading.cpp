#include "device/threading.hpp"

#include <sched.h>

#include <atomic>
#include <mutex>

namespace iris::device {

bool threads_enabled = false;

namespace {

std::mutex call_mutex;
// How many times this thread holds call_mutex (a binding calling another).
thread_local int call_depth = 0;
// Threads blocked in call_lock_enter: a waiting thread lets them in. Written
// with relaxed increments around the lock; a stale read only delays the
// hand-over by one poll.
std::atomic<int> call_waiters{0};

}  // namespace

void call_lock_enter() {
  if (call_depth++ > 0) return;
  if (call_mutex.try_lock()) return;
  call_waiters.fetch_add(1, std::memory_order_relaxed);
  call_mutex.lock();
  call_waiters.fetch_sub(1, std::memory_order_relaxed);
}

void call_lock_leave() {
  if (--call_depth == 0) call_mutex.unlock();
}

bool call_lock_pause(bool idle) {
  if (call_depth == 0) return false;  // progress from a thread outside any binding (unit tests)
  if (!idle && call_waiters.load(std::memory_order_relaxed) == 0) return false;
  const int depth = call_depth;
  call_depth = 0;
  call_mutex.unlock();
  sched_yield();  // std::mutex is not fair: without it this thread takes it straight back
  call_mutex.lock();
  call_depth = depth;
  return true;
}

}  // namespace iris::device
