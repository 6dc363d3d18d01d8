// Runs a command as a test would from a shell: its own process group, stdout
// and stderr captured together, and a time limit after which the whole group
// is killed. Shared by the launcher and MPI job suites.
#pragma once

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace iris::test {

struct run_result {
  int exit_code = -1;  // valid when the command exited
  int signal = 0;      // the signal that ended it, or 0
  bool timed_out = false;
  std::string output;  // stdout and stderr, interleaved
  double seconds = 0;
};

// Runs argv[0] (a path) with `env` added to this process's environment.
inline run_result run(const std::vector<std::string> &argv, double time_limit_s,
                      const std::vector<std::pair<std::string, std::string>> &env = {}) {
  int out[2];
  if (pipe(out) != 0) return {};
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    close(out[0]);
    close(out[1]);
    for (const auto &[name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    std::vector<char *> args;
    for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());  // a bare name is looked up in PATH
    _exit(127);
  }
  close(out[1]);
  run_result result;
  const auto deadline = start + std::chrono::duration<double>(time_limit_s);
  char chunk[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    const ssize_t n = read(out[0], chunk, sizeof(chunk));
    if (n <= 0) break;
    result.output.append(chunk, static_cast<std::size_t>(n));
  }
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  // Anything the command left in its group (ranks of a killed launcher) goes.
  kill(-pid, SIGKILL);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

// The value of a variable the test's meson definition must set.
// A variable meson's test() sets for the test binaries. Without it the
// binary stops at once with one line naming it (not a job that exits 127).
inline std::string required_env(const char *name) {
  const char *value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    std::fprintf(stderr,
                 "%s is not set: run the tests with `meson test -C build` (test/README.md says "
                 "which variables they need)\n",
                 name);
    std::exit(2);
  }
  return value;
}

// Entries of /dev/shm whose names start with `prefix`.
inline std::vector<std::string> shm_entries(const std::string &prefix = "iris-") {
  std::vector<std::string> names;
  if (DIR *dir = opendir("/dev/shm")) {
    while (const dirent *e = readdir(dir)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix, 0) == 0) names.push_back(name);
    }
    closedir(dir);
  }
  return names;
}

// Whether a living process maps /dev/shm/`name` (its job is still running).
inline bool shm_mapped(const std::string &name) {
  const std::string path = "/dev/shm/" + name;
  bool mapped = false;
  if (DIR *proc = opendir("/proc")) {
    while (const dirent *e = readdir(proc)) {
      if (mapped || e->d_name[0] < '1' || e->d_name[0] > '9') continue;
      std::ifstream maps(std::string("/proc/") + e->d_name + "/maps");
      for (std::string line; !mapped && std::getline(maps, line);) {
        mapped = line.find(path) != std::string::npos;
      }
    }
    closedir(proc);
  }
  return mapped;
}

// What a finished job left in /dev/shm: the entries of jobs no longer
// running. A segment of a job started by Iris's mpiexec is named
// iris-iris_<mpiexec pid>-...; other launchers (mpirun, Hydra, Slurm) give
// other job names. A job still running on this machine (another test run,
// another checkout) holds its segment legitimately and is not counted: its
// mpiexec is alive, or one of its ranks maps the segment.
inline std::vector<std::string> shm_leftovers() {
  std::vector<std::string> left;
  for (const std::string &name : shm_entries()) {
    const std::string tag = "iris-iris_";
    if (name.rfind(tag, 0) == 0) {
      const long pid = std::strtol(name.c_str() + tag.size(), nullptr, 10);
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0) continue;
    }
    if (shm_mapped(name)) continue;
    left.push_back(name);
  }
  return left;
}

}  // namespace iris::test
