// Phase 5 of mpiexec: watch the running job until every rank is gone.
//
// The main thread waits on two descriptors: a signalfd (SIGCHLD from the
// ranks; SIGINT, SIGTERM, SIGHUP from the user) and the PMIx server's wake
// fd (abort requests). The first failure decides the exit code and kills the
// other ranks; what happens after that is a consequence, not news.
//
// Under --enable-recovery a rank's death (a signal, or an exit without
// PMIx_Finalize) is reported and told to the other ranks (a PMIx event),
// which go on; aborts, signals and the time limit end the job as always.
//
// The jobs the ranks spawned (MPI_Comm_spawn starts each with an mpiexec of
// its own, a child of the spawning rank) end with this one when it fails:
// each gets SIGTERM, which it forwards to its ranks.
#pragma once

#include <signal.h>

#include <optional>
#include <string>
#include <vector>

#include "pmi/mpiexec/cleanup.hpp"
#include "pmi/mpiexec/job.hpp"
#include "pmi/mpiexec/server.hpp"

namespace iris::mpiexec {

// Blocks the job signals in the calling thread (and so in every thread
// started after it: construct it before PMIx_server_init) and opens a
// signalfd for them. Ignores SIGPIPE.
class job_signals {
 public:
  job_signals();
  ~job_signals();
  job_signals(const job_signals &) = delete;
  job_signals &operator=(const job_signals &) = delete;

  int fd() const { return fd_; }
  // The mask mpiexec started with, for the ranks.
  const sigset_t &original_mask() const { return original_mask_; }

 private:
  int fd_ = -1;
  sigset_t original_mask_;
};

// The jobs the ranks spawned. A rank that starts one writes its mpiexec's
// pid, a line, into a pipe whose write end it inherits (IRIS_SPAWNED_FD:
// "<fd>:<this mpiexec's pid>", so that only a direct child uses it;
// device/api/comm/spawn.cpp). mpiexec keeps a pidfd of each, so that it
// never signals a pid the system gave to another process since.
class spawned_jobs {
 public:
  spawned_jobs();
  ~spawned_jobs();
  spawned_jobs(const spawned_jobs &) = delete;
  spawned_jobs &operator=(const spawned_jobs &) = delete;

  int read_fd() const { return fds_[0]; }
  // The end each rank keeps open across exec.
  int write_fd() const { return fds_[1]; }
  // IRIS_SPAWNED_FD's value.
  std::string setting() const;
  // Reads what the ranks wrote: a pidfd for each new launcher.
  void take();
  // How many of them still run.
  std::size_t running();
  // Sends `sig` to each that runs.
  void signal_all(int sig);

 private:
  int fds_[2] = {-1, -1};
  std::string partial_;    // a line not yet whole
  std::vector<int> jobs_;  // pidfds
};

struct job_end {
  int exit_code = 0;
  // Nothing failed and no rank died: PMIx may shut down. Under recovery a
  // rank that finalized may have exited c != 0 and the job still be clean.
  bool clean = false;
};

// The things the job runs with, for supervise().
struct job_watch {
  std::vector<rank_process> &ranks;
  pmix_server &server;
  const job_signals &signals;
  fault_guard &guard;
  std::optional<double> timeout_s;
  bool recovery = false;  // --enable-recovery
  spawned_jobs &spawned;
};

[[nodiscard]] job_end supervise(const job_watch &watch);

// Setup failed after some ranks started: SIGKILL and reap them.
void kill_and_reap(std::vector<rank_process> &ranks);

}  // namespace iris::mpiexec
