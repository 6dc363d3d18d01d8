#include "device/base/threading.hpp"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace iris::device {

bool threads_enabled = false;
call_guarding call_guard = call_guarding::none;
program_flags call_flags;
void (*call_lock_entered)() = nullptr;

namespace {

// The lock word: one exchange to take it uncontended, one store to give it
// back (a pthread mutex costs twice the instructions through the PLT). The
// acquire exchange pairs with the release store of the previous holder.
std::atomic<bool> call_locked{false};
// The thread that holds the lock (0: none) and how many times it holds it
// (a binding calling another). A thread compares the owner with its own
// pthread_self() (one load from %fs) instead of keeping a thread_local
// depth: libiris may be loaded with dlopen (mpi4py does), where a
// thread_local costs a call of __tls_get_addr at every access. Relaxed: only
// the owner writes its own id there, so a thread reads its own id back
// exactly when it holds the lock; `call_depth` is touched by the holder only.
std::atomic<pthread_t> call_owner{};
int call_depth = 0;
// Fresh takes so far: written by the holder only (a plain increment, no
// locked instruction), read by anyone.
std::atomic<std::uint64_t> call_entries{0};
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
  const pthread_t self = pthread_self();
  if (call_owner.load(std::memory_order_relaxed) == self) {
    ++call_depth;
    return;
  }
  call_lock_take();
  call_owner.store(self, std::memory_order_relaxed);
  call_depth = 1;
  call_entries.store(call_entries.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (call_lock_entered != nullptr) call_lock_entered();
}

bool call_lock_try_enter() {
  const pthread_t self = pthread_self();
  if (call_owner.load(std::memory_order_relaxed) == self) {
    ++call_depth;
    return true;
  }
  if (call_locked.load(std::memory_order_relaxed) ||
      call_locked.exchange(true, std::memory_order_acquire)) {
    return false;
  }
  call_owner.store(self, std::memory_order_relaxed);
  call_depth = 1;
  call_entries.store(call_entries.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (call_lock_entered != nullptr) call_lock_entered();
  return true;
}

std::uint64_t call_lock_entries() {
  return call_entries.load(std::memory_order_relaxed) +
         call_flags.entries.load(std::memory_order_relaxed);
}

bool call_lock_held() {
  return call_owner.load(std::memory_order_relaxed) == pthread_self();
}

void call_lock_leave() {
  if (--call_depth != 0) return;
  call_owner.store(pthread_t{}, std::memory_order_relaxed);
  call_lock_give();
}

bool call_lock_pause(bool idle) {
  // Progress from a thread outside any binding (unit tests) has no lock to give.
  if (call_owner.load(std::memory_order_relaxed) != pthread_self()) return false;
  if (call_lock_entered != nullptr) call_lock_entered();
  if (!idle && call_waiters.load(std::memory_order_relaxed) == 0) return false;
  const int depth = call_depth;
  call_owner.store(pthread_t{}, std::memory_order_relaxed);
  call_lock_give();
  sched_yield();  // the lock is not fair: without it this thread takes it straight back
  call_lock_take();
  call_owner.store(pthread_self(), std::memory_order_relaxed);
  call_depth = depth;
  return true;
}

namespace {

long membarrier(int command) {
  return syscall(SYS_membarrier, command, 0, 0);
}

}  // namespace

bool program_flag_possible() {
  static const bool possible = [] {
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    return supported >= 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
           membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }();
  return possible;
}

void program_flag_wait() {
  // The progress thread is polling (or about to back off): wait until it is
  // out, with the program's flag up so that it does not come back in.
  for (int spins = 0; call_flags.progress.load(std::memory_order_acquire); ++spins) {
    if (spins >= 100) sched_yield();
  }
}

bool program_flag_try() {
  call_flags.progress.store(true, std::memory_order_relaxed);
  // A full barrier on every CPU running this process: the program's store
  // of its flag before it is seen here, or this store before its load.
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 ||
      call_flags.program.load(std::memory_order_acquire)) {
    call_flags.progress.store(false, std::memory_order_release);
    return false;
  }
  call_flags.progress_thread.store(pthread_self(), std::memory_order_relaxed);
  return true;
}

void program_flag_done() {
  call_flags.progress_thread.store(pthread_t{}, std::memory_order_relaxed);
  call_flags.progress.store(false, std::memory_order_release);  // pairs with program_flag_wait
}

void spin_lock::lock_slow() {
  for (int spins = 0;; ++spins) {
    if (try_lock()) return;
    if (spins >= 100) sched_yield();
  }
}

}  // namespace iris::device
