// Phase 3 of mpiexec: the embedded PMIx server that the ranks connect to.
//
// Lifecycle: construct (PMIx_server_init) -> register_job() -> setup_fork()
// per rank, before its fork -> the job runs; aborts arrive through wake_fd()
// -> shutdown() only after a job in which every rank finalized (after a
// failed job mpiexec skips it: PMIx_server_finalize can crash when ranks
// died inside a fence).
//
// PMIx calls the module callbacks on its own progress thread. They never
// block: they record what happened and wake the main thread, which does
// everything else.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "pmi/mpiexec/job.hpp"
#include "pmi/mpiexec/spawn.hpp"

namespace iris::mpiexec {

struct abort_request {
  int rank = 0;
  int status = 0;
  std::string message;
};

class pmix_server {
 public:
  // Starts the library with every file it creates under `tmpdir`. Call it
  // with the job signals already blocked: its thread inherits the mask.
  // There can be one pmix_server per process. Throws launch_error.
  pmix_server(const std::string &tmpdir, job_layout layout);
  ~pmix_server();
  pmix_server(const pmix_server &) = delete;
  pmix_server &operator=(const pmix_server &) = delete;

  // Registers the job (its size and node map) and every rank's data.
  void register_job();
  // Adds to `env` what `rank` needs to reach this server.
  void setup_fork(int rank, c_environment &env);

  // Readable while take_aborts() has requests.
  int wake_fd() const { return wake_fd_; }
  [[nodiscard]] std::vector<abort_request> take_aborts();

  // A rank that connected and then exited without PMIx_Finalize may leave
  // the others waiting in a fence forever.
  [[nodiscard]] bool connected_without_finalize(int rank) const;
  // Whether `rank` ever connected (it may have finalized since), and whether
  // it finalized.
  [[nodiscard]] bool ever_connected(int rank) const;
  [[nodiscard]] bool has_finalized(int rank) const;

  // --enable-recovery: tells the job's other ranks that `rank` died, with a
  // PMIX_ERR_PROC_ABORTED event naming it (PMIX_EVENT_AFFECTED_PROC), from
  // this server, not for default handlers. Returns at once: PMIx delivers
  // on its own thread. Throws launch_error when PMIx refuses the event.
  // `finished`: it ended after finalizing, told the same way with
  // PMIX_EVENT_PROC_TERMINATED (it is gone all the same).
  void notify_failure(int rank, bool finished = false);

  // Deregisters the job and finalizes the library. Throws launch_error when
  // PMIx does not answer in time.
  void shutdown();

  // Called on PMIx's thread by the module callbacks in server.cpp.
  void on_connected(int rank);
  void on_finalized(int rank);
  void on_abort(abort_request request);

 private:
  enum client_state : int { not_connected, connected, finalized };

  job_layout layout_;
  int wake_fd_ = -1;
  std::vector<std::atomic<int>> client_state_;  // written by PMIx's thread
  std::mutex aborts_mutex_;
  std::vector<abort_request> aborts_;  // guarded by aborts_mutex_
};

}  // namespace iris::mpiexec
