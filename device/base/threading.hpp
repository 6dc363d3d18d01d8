// MPI_THREAD_MULTIPLE: the lock every MPI call takes when, and only when,
// the program asked for MULTIPLE at MPI_Init_thread.
//
// The choice is made once, at init: `threads_enabled` is written by
// MPI_Init_thread before the program can have started another thread that
// calls MPI (pthread_create orders it), and never again. Below MULTIPLE a
// call pays one well-predicted branch on a plain bool and nothing else.
//
// Under MULTIPLE each binding holds `call_lock` for its whole body
// (`api_guard`, recursive: a binding may call another; threading.cpp). A thread that waits
// (progress_until) gives the lock up between polls whenever another thread
// asks for it, and always while it yields its core, so any thread may drive
// progress, several threads wait on different requests at once, and one
// thread's poll completes another thread's request. Nothing in device/ is
// touched without the lock, so MPI's ordering holds per thread as in a
// single-threaded program.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

namespace iris::device {

// Set at MPI_Init_thread(MPI_THREAD_MULTIPLE).
// Hidden: one load, not two through the GOT, in every binding of libiris.
[[gnu::visibility("hidden")]] extern bool threads_enabled;
// How every binding keeps other threads of this process out of the device
// (device/am/'s progress thread, or the program's own under MULTIPLE).
// Read by every binding: one load and one predicted branch when `none`.
// Turns from `none` only inside a binding of the one thread that calls MPI
// (the progress thread starts after), so no binding sees it change between
// its entry and its exit.
enum class call_guarding : std::uint8_t {
  none,     // below MULTIPLE, no progress thread: nothing
  locked,   // the call lock: under MULTIPLE, or a progress thread without membarrier(2)
  flagged,  // a progress thread below MULTIPLE: the program flag (below)
};
[[gnu::visibility("hidden")]] extern call_guarding call_guard;

// The program flag: below MULTIPLE one thread at a time calls MPI, and the
// progress thread must not poll while it does. Instead of the call lock
// (an exchange and a store in every binding, 25-35% of a small message's
// latency here) the two form an asymmetric Dekker pair, like the shm
// doorbells: the program's thread stores its flag and reads the progress
// thread's with only a compiler barrier between; the progress thread
// stores its own flag, runs membarrier(2) (a full barrier on every CPU
// running this process), then reads the program's. Either the progress
// thread sees the program inside MPI and backs off, or the program sees it
// polling and waits for it to finish.
struct program_flags {
  std::atomic<bool> program{false};   // written by the program's thread (below MULTIPLE)
  std::atomic<bool> progress{false};  // written by the progress thread
  // The progress thread while it is inside (its handlers call bindings,
  // which must then take nothing).
  std::atomic<pthread_t> progress_thread{};
  int depth = 0;  // the program's nesting (one thread at a time)
  // Fresh entries (call_lock_entries): written by the program's thread
  // alone (a plain increment), read by the progress thread.
  std::atomic<std::uint64_t> entries{0};
};
[[gnu::visibility("hidden")]] extern program_flags call_flags;
// Whether this kernel has the barrier (registers this process for it once).
bool program_flag_possible();
// The program's thread, when it found the progress thread polling.
void program_flag_wait();
// The progress thread: true when it may poll (then program_flag_done()).
bool program_flag_try();
void program_flag_done();

// Whether this thread is the progress thread, inside (a handler calling a
// binding).
inline bool program_flag_polling_here() {
  return call_flags.progress.load(std::memory_order_relaxed) &&
         pthread_equal(call_flags.progress_thread.load(std::memory_order_relaxed), pthread_self());
}
// false: called by the progress thread inside its pass; nothing to leave.
inline bool program_flag_enter() {
  if (call_flags.progress.load(std::memory_order_relaxed) && program_flag_polling_here()) {
    return false;
  }
  if (call_flags.depth++ != 0) return true;
  call_flags.program.store(true, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);  // the heavy side's membarrier does the rest
  // Acquire (a plain load on x86): pairs with program_flag_done's release,
  // so that what the progress thread did before it left is seen here.
  if (call_flags.progress.load(std::memory_order_acquire)) program_flag_wait();
  call_flags.entries.store(call_flags.entries.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
  return true;
}
inline void program_flag_leave() {
  if (--call_flags.depth != 0) return;
  // Pairs with program_flag_try's acquire: what this call wrote is the
  // progress thread's to read once it sees the flag down.
  call_flags.program.store(false, std::memory_order_release);
}

// Run under the call lock by a thread that takes it afresh (not when it
// nests) and at each call_lock_pause (between the polls of a wait); set at
// MPI_Init_thread(MULTIPLE) to the drain of the receives posted without the lock
// (recv_multiple.hpp), null otherwise.
[[gnu::visibility("hidden")]] extern void (*call_lock_entered)();

// Takes the call lock (a recursion level when this thread holds it).
void call_lock_enter();
void call_lock_leave();
// Takes the call lock only when it is free (or held by this thread: a
// recursion level), without registering as a waiter: a thread that spins on
// its requests' completion without the lock (MULTIPLE's Wait, Test and
// Waitall) polls only when nobody else does, and never makes a polling
// thread give the lock up for it. Runs call_lock_entered like a fresh take.
bool call_lock_try_enter();
// Whether this thread holds the call lock (a binding called from a callback).
bool call_lock_held();
// How many times a thread has taken the call lock afresh, or the program
// raised its flag (below), so far: the progress thread (device/am/) tells
// from it whether the program's threads are inside MPI lately. Any thread;
// relaxed.
std::uint64_t call_lock_entries();
// Called by a waiting thread between polls: when another thread waits for
// the lock, or `idle` (the caller would yield anyway), gives the lock up
// across a sched_yield and takes it back at the same recursion depth.
// Returns true when it yielded the core.
bool call_lock_pause(bool idle);

// Holds the call lock for one binding's body under MULTIPLE; nothing below.
// The destructor's test keeps a binding from ending in a tail call: the
// small-message bindings use api_send_call instead.
class api_guard {
 public:
  api_guard() : held_(call_guard) {
    if (held_ == call_guarding::locked) {
      call_lock_enter();
    } else if (held_ == call_guarding::flagged && !program_flag_enter()) {
      held_ = call_guarding::none;
    }
  }
  ~api_guard() {
    if (held_ == call_guarding::locked) {
      call_lock_leave();
    } else if (held_ == call_guarding::flagged) {
      program_flag_leave();
    }
  }
  api_guard(const api_guard &) = delete;
  api_guard &operator=(const api_guard &) = delete;

 private:
  call_guarding held_;
};

// The small-message bindings' guard (MPI_Send, MPI_Isend, MPI_Recv,
// MPI_Irecv and the Wait and Test families): below MULTIPLE runs `body`,
// which the compiler sees as a plain call (a tail call when the body ends
// in one), so they cost what they did before threads; under MULTIPLE runs
// `multiple` instead, a call of an out-of-line function that first tries
// the call without the call lock (an eager message that goes out at once
// under its VC's lock: send.hpp, send_unlocked; a receive matched under its
// context's lock: recv_multiple.hpp; a wait spinning on request_done:
// api/p2p/wait.cpp) and otherwise takes the call lock (api_guard) and runs the
// binding's body. Out of line (gnu::noinline), so that below MULTIPLE the
// binding keeps no registers for it; not gnu::cold, which would compile the
// MULTIPLE path for size and place it among the error paths: that cost 2-4%
// of the 8-byte rate at MULTIPLE, by where the linker happened to put it
// (bench/results/2026-11-28-issue36-multiple-rate.md).
//
// With the progress thread below MULTIPLE the body runs guarded
// (api_guarded_call), as every other binding's.
template <typename Body>
[[gnu::noinline]] int api_guarded_call(Body body) {
  const api_guard guard;
  return body();
}
template <typename Body, typename Multiple>
inline int api_send_call(Body body, Multiple multiple) {
  if (call_guard == call_guarding::none) [[likely]] {
    return body();
  }
  if (threads_enabled) return multiple();
  return api_guarded_call(body);
}

// The lock of one VC's sending side under MULTIPLE (vc.hpp): a word taken
// with one exchange, spun on with plain loads, the core given away after a
// while. Held for one packet's write or one credit update, never across a
// wait, so a waiter spins briefly. Below MULTIPLE nobody takes it.
class spin_lock {
 public:
  spin_lock() = default;
  // A copy (std::vector growth at setup) is a new lock, free.
  spin_lock(const spin_lock &) {}
  spin_lock &operator=(const spin_lock &) { return *this; }
  ~spin_lock() = default;

  void lock() {
    if (!held_.exchange(true, std::memory_order_acquire)) return;
    lock_slow();
  }
  bool try_lock() {
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { held_.store(false, std::memory_order_release); }  // pairs with lock's exchange
  bool held() const { return held_.load(std::memory_order_relaxed); }

 private:
  void lock_slow();
  std::atomic<bool> held_{false};
};

// Holds `lock` while it lives when `take` (a setting chosen at init, such
// as MULTIPLE's), nothing otherwise: one predicted branch below MULTIPLE.
class lock_if {
 public:
  lock_if(spin_lock &lock, bool take) : lock_(take ? &lock : nullptr) {
    if (lock_ != nullptr) lock_->lock();
  }
  ~lock_if() {
    if (lock_ != nullptr) lock_->unlock();
  }
  lock_if(const lock_if &) = delete;
  lock_if &operator=(const lock_if &) = delete;

 private:
  spin_lock *lock_;
};

// MULTIPLE: whether threads without the call lock read a transport's
// receive side (transport::poll_aside, and a netmod's poll_aside). Off
// until a thread finds the call lock taken, so that a process with one
// thread at MULTIPLE (mpi4py's default) never takes a reader's lock: that
// thread asks (off -> asked), and the call lock's next poll, which reads
// nothing at that moment, turns them on (asked -> on); from then on every
// reader takes the lock of what it reads. So the call lock's poll never
// reads without the lock while an aside pass reads the same.
class aside_switch {
 public:
  // Without the call lock: whether aside passes are on; if not, asks.
  bool on_or_ask() {
    int state = state_.load(std::memory_order_acquire);
    if (state == on) return true;
    if (state == off) state_.compare_exchange_strong(state, asked, std::memory_order_relaxed);
    return false;
  }
  // The call lock's poll, before it reads anything: turns them on if asked.
  // Whether its readers take their locks now.
  bool settle() {
    const int state = state_.load(std::memory_order_relaxed);
    if (state == asked) state_.store(on, std::memory_order_release);
    return state != off;
  }
  // Under the call lock: whether readers take their locks now.
  bool locking() const { return state_.load(std::memory_order_relaxed) == on; }

 private:
  enum : int { off, asked, on };
  std::atomic<int> state_{off};
};

}  // namespace iris::device
