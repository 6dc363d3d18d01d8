#include "device/threading.hpp"

#include <sched.h>

#include <atomic>

namespace iris::device {

bool threads_enabled = false;

namespace {

// The lock word: one exchange to take it uncontended, one store to give it
// back (a pthread mutex costs twice the instructions through the PLT). The
// acquire exchange pairs with the release store of the previous holder.
std::atomic<bool> call_locked{false};
// How many times this thread holds the lock (a binding calling another).
// The default (general-dynamic) model: libiris may be loaded with dlopen
// (mpi4py does), where initial-exec would draw on glibc's small surplus of
// static TLS. Only MULTIPLE touches it, so __tls_get_addr costs nothing below.
thread_local int call_depth = 0;
// Threads waiting in call_lock_take: a waiting thread lets them in. Relaxed:
// a stale read only delays the hand-over by one poll.
std::atomic<int> call_waiters{0};

void call_lock_take() {
  if (!call_locked.exchange(true, std::memory_order_acquire)) return;
  call_waiters.fetch_add(1, std::memory_order_relaxed);
  // Threads in the library take turns briefly (a binding's body, one poll):
  // spin on a plain load, then give the core away.
  for (int spins = 0;; ++spins) {
    if (!call_locked.load(std::memory_order_relaxed) &&
        !call_locked.exchange(true, std::memory_order_acquire)) {
      break;
    }
    if (spins >= 100) sched_yield();
  }
  call_waiters.fetch_sub(1, std::memory_order_relaxed);
}

void call_lock_give() {
  call_locked.store(false, std::memory_order_release);  // pairs with call_lock_take's exchange
}

}  // namespace

void call_lock_enter() {
  if (call_depth++ == 0) call_lock_take();
}

void call_lock_leave() {
  if (--call_depth == 0) call_lock_give();
}

bool call_lock_pause(bool idle) {
  if (call_depth == 0) return false;  // progress from a thread outside any binding (unit tests)
  if (!idle && call_waiters.load(std::memory_order_relaxed) == 0) return false;
  const int depth = call_depth;
  call_depth = 0;
  call_lock_give();
  sched_yield();  // the lock is not fair: without it this thread takes it straight back
  call_lock_take();
  call_depth = depth;
  return true;
}

void spin_lock::lock_slow() {
  for (int spins = 0;; ++spins) {
    if (try_lock()) return;
    if (spins >= 100) sched_yield();
  }
}

}  // namespace iris::device
