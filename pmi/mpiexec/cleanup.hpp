// Phase 6 of mpiexec: nothing of a job outlives it. Runs after success,
// failure, timeout, signals and ranks killed with SIGKILL alike, and even
// after a fault inside mpiexec; only a SIGKILL of mpiexec itself skips it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace iris::mpiexec {

// A private directory for the PMIx server's files, under $TMPDIR when that
// is short enough for a Unix socket path, else /tmp.
class tmp_dir {
 public:
  tmp_dir();  // throws launch_error
  ~tmp_dir() { remove(); }
  tmp_dir(const tmp_dir &) = delete;
  tmp_dir &operator=(const tmp_dir &) = delete;

  const std::string &path() const { return path_; }
  // Removes the directory and everything in it; safe to call twice.
  void remove() noexcept;

 private:
  std::string path_;
};

// Removes every /dev/shm entry whose name starts with `prefix`: what the
// ranks of the job created, including what a crashed rank left behind.
// Async-signal-safe.
void remove_shm_objects(std::string_view prefix) noexcept;

// Stops every other thread of mpiexec for good (each waits in a signal
// handler) and returns once they have stopped, or after 0.5 s. For the
// way out of a failed job: libpmix's progress thread keeps serving the
// dying ranks' connections, and may create its files again in the PMIx
// directory while it is being removed. The caller removes what it must and
// then calls _exit. A second caller, from another thread, never returns.
// Async-signal-safe.
void park_other_threads() noexcept;

// Calls `on_expire` on its own thread unless destroyed within `limit`: a
// time limit around a blocking call that has no time limit of its own.
class watchdog {
 public:
  watchdog(std::chrono::milliseconds limit, std::function<void()> on_expire);
  ~watchdog();
  watchdog(const watchdog &) = delete;
  watchdog &operator=(const watchdog &) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool cancelled_ = false;  // guarded by mutex_
  std::thread thread_;
};

// mpiexec faulted once while the ranks of a failed job died (site not
// captured; libpmix's lost-connection handling, which runs then, has had
// such bugs). A fault must not cost the job its exit code nor leave its
// files behind: on SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT the guard
// kills and reaps the ranks, removes the job's /dev/shm objects and the PMIx
// directory, and exits with the code the job already earned; before that is
// decided it says mpiexec failed and exits 1. One guard per process; its
// methods are called by the main thread only.
class fault_guard {
 public:
  fault_guard(std::string_view shm_prefix, const std::string &tmp_path, int nranks);
  ~fault_guard();
  fault_guard(const fault_guard &) = delete;
  fault_guard &operator=(const fault_guard &) = delete;

  void rank_started(int rank, pid_t pid) noexcept;
  void rank_reaped(int rank) noexcept;
  // The job's exit code is known (and reported): a fault now changes nothing.
  void outcome_decided(int exit_code) noexcept;
};

}  // namespace iris::mpiexec
