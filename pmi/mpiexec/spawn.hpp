// Phase 4 of mpiexec: each rank's environment, then fork + exec.
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "pmi/mpiexec/options.hpp"

namespace iris::mpiexec {

// A NULL-terminated environment whose array and strings come from malloc,
// because PMIx_server_setup_fork reallocates the array and strdup()s what it
// adds. Frees everything on destruction.
class c_environment {
 public:
  explicit c_environment(const std::vector<std::string> &entries);
  ~c_environment();
  c_environment(const c_environment &) = delete;
  c_environment &operator=(const c_environment &) = delete;

  char ***address() { return &entries_; }
  char *const *get() const { return entries_; }

 private:
  char **entries_ = nullptr;
};

// What every rank starts from: mpiexec's whole environment (as MPICH's Hydra
// does), minus the variables through which an outer launcher addresses
// mpiexec itself, with the -x settings applied in order.
[[nodiscard]] std::vector<std::string> rank_environment(const std::vector<env_setting> &settings);

struct spawn_request {
  int rank = 0;
  const char *path = nullptr;
  char *const *argv = nullptr;
  char *const *envp = nullptr;
  const cpu_set_t *cpus = nullptr;        // nullptr: not bound
  int stdin_fd = -1;                      // -1: inherit mpiexec's stdin
  const sigset_t *signal_mask = nullptr;  // the mask mpiexec started with
  const char *wdir = nullptr;             // nullptr: mpiexec's working directory
  int keep_fd = -1;                       // a descriptor the rank keeps across exec
};

// Forks a rank and execs the program in it. mpiexec has PMIx threads, so
// the child must not allocate: everything it needs is prepared here.
// Throws launch_error when fork fails.
[[nodiscard]] pid_t spawn_rank(const spawn_request &request);

}  // namespace iris::mpiexec
