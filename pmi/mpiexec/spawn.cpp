#include "pmi/mpiexec/spawn.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

#include "pmi/mpiexec/job.hpp"

extern char **environ;

namespace iris::mpiexec {
namespace {

// Variables an outer launcher gives mpiexec to find *its* server. Left in
// place they could make a rank talk to the wrong server; PMIx MCA settings
// (PMIX_MCA_*) are the user's and stay.
bool is_outer_launcher_variable(std::string_view entry) {
  const std::string_view name = entry.substr(0, entry.find('='));
  if (name.starts_with("PMIX_")) return !name.starts_with("PMIX_MCA_");
  // IRIS_APPNUM and IRIS_SPAWNED_FD are this launcher's to set, not
  // inherited from the launcher of a parent job.
  return name == "PMI_FD" || name == "PMI_PORT" || name == "PMI_ID" || name == "PMI_RANK" ||
         name == "PMI_SIZE" || name == "IRIS_APPNUM" || name == "IRIS_SPAWNED_FD";
}

void set_variable(std::vector<std::string> &env, const std::string &name,
                  const std::string &value) {
  const std::string prefix = name + "=";
  for (std::string &entry : env) {
    if (entry.starts_with(prefix)) {
      entry = prefix + value;
      return;
    }
  }
  env.push_back(prefix + value);
}

// Reports a failure from the child and exits. No stdio streams and no
// allocation after fork: only snprintf into a stack buffer and write(2).
[[noreturn]] void child_fail(int rank, const char *what, const char *path) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof buf, "mpiexec: rank %d: %s %s\n", rank, what, path);
  if (n > 0) {
    [[maybe_unused]] const ssize_t ignored =
        ::write(STDERR_FILENO, buf, std::min(static_cast<std::size_t>(n), sizeof buf - 1));
  }
  ::_exit(127);
}

}  // namespace

c_environment::c_environment(const std::vector<std::string> &entries) {
  entries_ = static_cast<char **>(std::calloc(entries.size() + 1, sizeof(char *)));
  if (entries_ == nullptr) throw std::bad_alloc();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries_[i] = ::strdup(entries[i].c_str());
    if (entries_[i] == nullptr) throw std::bad_alloc();  // the destructor frees the rest
  }
}

c_environment::~c_environment() {
  if (entries_ == nullptr) return;
  for (char **entry = entries_; *entry != nullptr; ++entry) std::free(*entry);
  std::free(entries_);
}

std::vector<std::string> rank_environment(const std::vector<env_setting> &settings) {
  std::vector<std::string> env;
  for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (!is_outer_launcher_variable(*entry)) env.emplace_back(*entry);
  }
  // MPI_Comm_spawn starts its children with the launcher that started the
  // parent: this one.
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) set_variable(env, "IRIS_LAUNCHED_BY", std::string(self, static_cast<std::size_t>(n)));
  for (const env_setting &setting : settings) {
    if (setting.value) {
      set_variable(env, setting.name, *setting.value);
    } else if (const char *value = std::getenv(setting.name.c_str())) {
      // Passing a variable mpiexec does not have is not an error: scripts
      // pass -x LD_LIBRARY_PATH whether or not it is set.
      set_variable(env, setting.name, value);
    }
  }
  return env;
}

pid_t spawn_rank(const spawn_request &request) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    throw launch_error("cannot fork rank " + std::to_string(request.rank) + ": " +
                       std::strerror(errno));
  }
  if (pid > 0) return pid;

  // The child. A rank must not outlive mpiexec: if mpiexec is killed, the
  // kernel kills the rank (the check closes the race with an early death).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  if (request.cpus != nullptr && ::sched_setaffinity(0, sizeof *request.cpus, request.cpus) != 0) {
    child_fail(request.rank, "cannot bind to its core to run", request.path);
  }
  if (request.wdir != nullptr && ::chdir(request.wdir) != 0) {
    child_fail(request.rank, "cannot enter its -wdir to run", request.path);
  }
  if (request.keep_fd >= 0) (void)::fcntl(request.keep_fd, F_SETFD, 0);
  if (request.stdin_fd >= 0 && ::dup2(request.stdin_fd, STDIN_FILENO) < 0) {
    child_fail(request.rank, "cannot redirect stdin to run", request.path);
  }
  // Ranks ignore SIGPIPE: a write to a closed socket (a peer or the PMIx
  // server gone) must fail with EPIPE that the runtime reports, not kill.
  ::signal(SIGPIPE, SIG_IGN);
  // mpiexec blocks the job signals for its own use; a rank starts with the
  // mask mpiexec itself started with.
  ::sigprocmask(SIG_SETMASK, request.signal_mask, nullptr);
  ::execve(request.path, request.argv, request.envp);
  child_fail(request.rank, "cannot execute", request.path);
}

}  // namespace iris::mpiexec
