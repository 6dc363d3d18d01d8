// Phase 6 of mpiexec: nothing of a job outlives it. Runs after success,
// failure, timeout, signals and ranks killed with SIGKILL alike; only a
// SIGKILL of mpiexec itself skips it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace iris::mpiexec {

// A private directory for the PMIx server's rendezvous files, under $TMPDIR
// when that is short enough for a Unix socket path, else /tmp.
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
void remove_shm_objects(std::string_view prefix) noexcept;

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

}  // namespace iris::mpiexec
