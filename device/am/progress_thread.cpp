// The progress thread of active messages (IRIS_ASYNC_PROGRESS): it polls
// under the call lock while the program's thread computes, so that ops of
// other ranks (handlers, replies, packet puts and gets) complete here
// without this rank calling MPI.
//
// It never spins. While the program's threads poll (they wait inside
// MPI), it naps without being woken by anyone, 0.2 ms at first and
// up to 5 ms while they keep at it, so that peers' sends cost nothing more
// and its wakes take little of the cores. Once they have not polled for
// `quiet_ns`, it sleeps where the transports wake it: on this rank's shm
// bell (marked asleep, every local sender rings it) or in the netmod's wait
// (epoll, or the OFI completion queue's wait object), with a timeout so
// that it sees the stop request. A node of shm and net peers waits on the
// netmod with a 1 ms timeout (a bell and a socket cannot be waited on
// together); a netmod that cannot wait (a provider without FI_WAIT_FD)
// gets naps.
//
// It runs at nice IRIS_PROGRESS_NICE (-20): mpiexec binds the rank to one
// core and the thread shares it with the program's computing thread, which
// the scheduler would otherwise let finish its slice (1-5 ms) before the
// woken thread runs. At -20 it runs at once; it sleeps again within
// microseconds, so the computing thread loses little.
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>

#include "device/am/am.hpp"
#include "device/am/state.hpp"
#include "device/base/threading.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

namespace {

constexpr std::uint64_t quiet_ns = 1'000'000;  // no MPI entry for this long: sleep woken
constexpr long nap_min_ns = 200'000;           // the naps while the program is in MPI,
constexpr long nap_max_ns = 5'000'000;         // doubling from the first to the last
constexpr int sleep_ms = 20;                   // the longest sleep (stop is seen within it)

std::thread worker;
std::atomic<bool> stopping{false};
std::atomic<std::uint64_t> waits{0};  // async_progress_waits
bool running = false;

std::uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000U +
         static_cast<std::uint64_t>(t.tv_nsec);
}

void nap(long ns) {
  const timespec t{0, ns};
  nanosleep(&t, nullptr);
}

// How the thread sleeps once the program is quiet, chosen at start under
// the call lock.
struct sleep_plan {
  transport *bell = nullptr;    // every polled transport rings it
  transport *waiter = nullptr;  // a netmod that can wait
  int wait_ms = sleep_ms;
};

sleep_plan plan_sleep() {
  sleep_plan p;
  bool all_wake = true;
  transport *holder = nullptr;
  int quiet = 0;  // transports whose arrivals wake nobody
  for (transport *t : rt->polled) {
    all_wake = all_wake && t->wakes_sleepers();
    if (t->holds_bell()) holder = t;
    if (t->wakes_sleepers()) continue;
    ++quiet;
    if (t->wait_arrival(0)) p.waiter = t;
  }
  if (all_wake && holder != nullptr) {
    p.bell = holder;
  } else if (p.waiter != nullptr && (holder != nullptr || quiet > 1)) {
    // shm peers too, or a second netmod (IRIS_NETMOD=ofi,tcp) the waiter
    // does not watch: their packets are seen within this
    p.wait_ms = 1;
  }
  return p;
}

// Also a nonblocking collective waiting on the node's segment: the other
// ranks' stores wake nobody.
bool work_queued() {
  return !rt->sending.empty() || progress_added.active != nullptr ||
         progress_added.shared_waits > 0;
}

// The progress thread's way in and out: the call lock, or below MULTIPLE
// the program flag (threading.hpp).
bool enter() {
  return call_guard == call_guarding::flagged ? program_flag_try() : call_lock_try_enter();
}
void leave() {
  if (call_guard == call_guarding::flagged) {
    program_flag_done();
  } else {
    call_lock_leave();
  }
}

void run(sleep_plan plan, int nice) {
  // Refused (no CAP_SYS_NICE, RLIMIT_NICE): it stays at the process's.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
  long backoff = nap_min_ns;
  std::uint64_t seen = progress_polls();
  std::uint64_t active_at = now_ns();
  int unarmed = 0;  // arms of the netmod's wait that failed in a row
  while (!stopping.load(std::memory_order_acquire)) {
    // The program polls (it waits inside MPI): it serves its peers itself.
    // A program that enters MPI only for calls that do not poll (a loop of
    // local compare-and-swaps and flushes to itself) does not count.
    const std::uint64_t polled = progress_polls();
    if (polled != seen) {
      seen = polled;
      active_at = now_ns();
    }
    const bool quiet = now_ns() - active_at > quiet_ns;
    if (!quiet) {
      // The program keeps polling: nap, longer each time while it keeps at
      // it (each wake takes a core from it), then poll once.
      nap(backoff);
      backoff = std::min(2 * backoff, nap_max_ns);
    }
    if (!enter()) {
      // A thread of the program is inside MPI: it polls, or will once it
      // has a core again. Back off as above: retrying every 0.2 ms, eight
      // such threads at nice -20 on two cores took the cores from the
      // programs' own threads while those were descheduled inside MPI, and
      // now and then a job fell into that for good (8 ranks, starved rings:
      // test/mpi/rma 2 s, in 7 of 202 runs 6.5-78 s; 0 of 160 since).
      nap(backoff);
      backoff = std::min(2 * backoff, nap_max_ns);
      continue;
    }
    const bool armed = quiet && plan.bell != nullptr && plan.bell->sleep_begin();
    const int events = progress_poll();
    const bool queued = work_queued();
    // The netmod's wait is armed here, where nobody polls meanwhile.
    const bool waitable = quiet && !armed && events == 0 && !queued && plan.waiter != nullptr &&
                          plan.waiter->wait_arm();
    leave();
    seen = progress_polls();  // this thread's own poll is no sign of the program
    if (events > 0 || queued) {
      backoff = nap_min_ns;
      if (armed) plan.bell->sleep_end();
      if (queued && events == 0) nap(nap_min_ns / 4);  // a full ring: let the peer drain it
      continue;
    }
    if (!quiet) continue;
    if (armed) {
      waits.fetch_add(1, std::memory_order_relaxed);
      plan.bell->sleep_wait(sleep_ms);
      plan.bell->sleep_end();
    } else if (waitable) {
      waits.fetch_add(1, std::memory_order_relaxed);
      plan.waiter->wait_arrival(plan.wait_ms);
      unarmed = 0;
    } else if (plan.waiter != nullptr && ++unarmed < 4) {
      continue;  // it has something (poll again) or failed to arm (a few times, then nap)
    } else {
      nap(nap_min_ns);
    }
  }
}

}  // namespace

void async_progress_start() {
  if (running || rt == nullptr) return;
  am_state &s = am_state_get();
  if (s.async == 2) return;  // IRIS_ASYNC_PROGRESS=off
  // From here every binding keeps the thread out: by the call lock under
  // MULTIPLE, else by the program flag where the kernel has membarrier(2),
  // or the call lock. The binding that starts it (below MULTIPLE its guard
  // took nothing) touches nothing of the device after this call.
  if (call_guard == call_guarding::none) {
    call_guard = program_flag_possible() ? call_guarding::flagged : call_guarding::locked;
  }
  stopping.store(false, std::memory_order_relaxed);
  const sleep_plan plan = plan_sleep();
  worker = std::thread(run, plan, rt->config.progress_nice);
  pthread_setname_np(worker.native_handle(), "iris-progress");
  running = true;
}

void async_progress_stop() {
  if (!running) return;
  stopping.store(true, std::memory_order_release);
  // The caller may hold the call lock (MPI_Finalize): the thread then only
  // naps or sleeps until it sees the request.
  worker.join();
  running = false;
}

bool async_progress_running() {
  return running;
}

std::uint64_t async_progress_waits() {
  return waits.load(std::memory_order_relaxed);
}

}  // namespace iris::device
