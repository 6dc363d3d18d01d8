// MPI_Comm_spawn: the root opens a port and starts the children as a job of
// their own, with the launcher that started this job (IRIS_LAUNCHED_BY,
// which Iris's mpiexec sets; else IRIS_SPAWN_LAUNCHER, else the mpiexec
// this build or install has), passing them the port in IRIS_PARENT_PORT.
// Each child's MPI_Init connects its MPI_COMM_WORLD to that port (root 0);
// the parents' group accepts on it (dynamic.cpp), so the intercommunicator
// is the one connect and accept make, and MPI_Comm_get_parent answers it.
// MPI_Comm_spawn_multiple starts every command's children as one job (mpiexec
// `-n N a : -n M b`), whose MPI_APPNUM numbers the commands.
// Should the launcher end before the children connect (a program that is
// not there, a launcher that refuses), the spawn fails with MPI_ERR_SPAWN.
//
// The children outlive their parents once disconnected, as MPI says; while
// connected, a parent that dies is a lost peer to them, and they end (as
// their launcher then does). When the parents' job fails, Iris's mpiexec
// ends the children's too: the root tells it their launcher's pid
// (IRIS_SPAWNED_FD, spawned_report_fd below). They run on this host,
// unbound (their cores are the parents').
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "device/api/check.hpp"
#include "device/api/env/info.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

MPI_Comm parent = MPI_COMM_NULL;

// The launcher the children are started with.
std::string launcher_path() {
  for (const char *name : {"IRIS_SPAWN_LAUNCHER", "IRIS_LAUNCHED_BY"}) {
    const char *given = std::getenv(name);
    if (given != nullptr && given[0] != '\0') return given;
  }
  for (const char *path : {IRIS_MPIEXEC_INSTALL_PATH, IRIS_MPIEXEC_BUILD_PATH}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return {};
}

bool is_executable(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// `command` as the children's launcher will run it: with info "path", the
// first of its directories (':'-separated) that holds it.
std::string program_of(const char *command, const api::info_entries &hints) {
  std::string program = command;
  if (program.find('/') != std::string::npos) return program;
  for (const auto &[key, value] : hints) {
    if (key != "path") continue;
    std::size_t at = 0;
    while (at <= value.size()) {
      const std::size_t end = std::min(value.find(':', at), value.size());
      const std::string candidate = value.substr(at, end - at) + "/" + program;
      if (end > at && is_executable(candidate)) return candidate;
      at = end + 1;
    }
  }
  return program;
}

// Why `hints` cannot be honoured here, or empty. Iris spawns on this host
// only; "soft" is accepted (all maxprocs are always started).
std::string hints_refused(const api::info_entries &hints) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  for (const auto &[key, value] : hints) {
    if (key == "host" && value != host && value != "localhost" && value != "127.0.0.1") {
      return "info host '" + value + "' is not this host (" + host +
             "): Iris spawns on this host only";
    }
    if (key == "wdir" && (::access(value.c_str(), X_OK) != 0)) {
      return "info wdir '" + value + "' is not a directory this process can enter";
    }
  }
  return {};
}

// One command of a spawn: how many, which program, its arguments.
struct app {
  int maxprocs = 0;
  std::string program;
  char **argv = nullptr;
  std::string wdir;  // info "wdir"; empty: this process's working directory
};

// Where this rank tells its launcher the pid of each launcher it starts, so
// that a job that fails ends the jobs it spawned (pmi/mpiexec/supervise.hpp):
// IRIS_SPAWNED_FD, "<fd>:<pid>", from Iris's mpiexec, whose direct child this
// rank must be (a program this rank runs sees the variable, not the
// descriptor). -1: none. Marked close-on-exec, so that no program this
// rank starts keeps it.
int spawned_report_fd() {
  static const int fd = [] {
    const char *text = std::getenv("IRIS_SPAWNED_FD");
    int n = -1;
    long launcher = 0;
    if (text == nullptr || std::sscanf(text, "%d:%ld", &n, &launcher) != 2) return -1;
    if (n < 0 || launcher != static_cast<long>(::getppid())) return -1;
    if (::fcntl(n, F_SETFD, FD_CLOEXEC) != 0) return -1;
    return n;
  }();
  return fd;
}

// Starts the launcher: each app's copies in turn (`-n N [-wdir DIR] program
// args : ...`). Its pid, or -1 with why.
pid_t launch(const std::string &launcher, const std::vector<app> &apps, const std::string &port,
             std::string &why) {
  std::vector<std::string> args = {launcher, "--bind-to", "none", "-x", "IRIS_PARENT_PORT=" + port};
  // A job that goes on after a death spawns jobs that do too: a child's
  // death then ends neither its job nor the parents' (ULFM).
  if (device::rt->config.recovery) args.emplace_back("--enable-recovery");
  // The first command's -wdir is the launcher's default for the others: a
  // command without one is given this process's own.
  char here[4096] = {};
  if (::getcwd(here, sizeof here - 1) == nullptr) here[0] = '\0';
  for (const app &a : apps) {
    if (&a != &apps.front()) args.emplace_back(":");
    args.insert(args.end(), {"-n", std::to_string(a.maxprocs)});
    if (!a.wdir.empty()) {
      args.insert(args.end(), {"-wdir", a.wdir});
    } else if (!apps.front().wdir.empty() && here[0] != '\0') {
      args.insert(args.end(), {"-wdir", here});
    }
    args.emplace_back(a.program);
    for (char **arg = a.argv; arg != nullptr && *arg != nullptr; ++arg) args.emplace_back(*arg);
  }
  std::vector<char *> raw;
  for (std::string &a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  // This job's launcher variables stay out: the children are a job of their
  // own, under a launcher of their own.
  std::vector<char *> env;
  for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view e(*entry);
    const std::string_view name = e.substr(0, e.find('='));
    const bool outer = (name.starts_with("PMIX_") && !name.starts_with("PMIX_MCA_")) ||
                       name == "PMI_FD" || name == "PMI_PORT" || name == "PMI_ID" ||
                       name == "PMI_RANK" || name == "PMI_SIZE" || name == "IRIS_APPNUM" ||
                       name == "IRIS_SPAWNED_FD";
    if (!outer) env.push_back(*entry);
  }
  env.push_back(nullptr);
  cpu_set_t all;
  CPU_ZERO(&all);
  for (long cpu = 0; cpu < ::sysconf(_SC_NPROCESSORS_CONF) && cpu < CPU_SETSIZE; ++cpu) {
    CPU_SET(static_cast<int>(cpu), &all);
  }
  const int report_fd = spawned_report_fd();  // before the fork: the launcher does not keep it
  const pid_t pid = ::fork();
  if (pid < 0) {
    why = std::string("cannot fork the launcher: ") + std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    // Not the root's core alone: the children spread over the host.
    (void)::sched_setaffinity(0, sizeof all, &all);
    ::execve(raw[0], raw.data(), env.data());
    ::_exit(127);
  }
  if (report_fd >= 0) {
    // One write of a short line: whole, whatever other ranks write.
    const std::string line = std::to_string(pid) + "\n";
    (void)!::write(report_fd, line.data(), line.size());
  }
  return pid;
}

// Both spawn calls. The root's arguments decide; the others' are not
// looked at (MPI). Errcodes: one per child, all commands in turn.
int spawn_common(const char *call, int count, char *commands[], char **argvs[],
                 const int maxprocs[], const MPI_Info infos[], int root, MPI_Comm comm,
                 MPI_Comm *intercomm, int array_of_errcodes[]) {
  communicator *c = nullptr;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (root < 0 || root >= c->size) {
    return device::error_raise(c, call, MPI_ERR_ROOT, "invalid root %d (communicator size %d)",
                               root, c->size);
  }
  if (int err = api::check_not_null(call, c, intercomm, "intercomm")) return err;
  std::string why;
  int verdict = MPI_SUCCESS;
  char port[MPI_MAX_PORT_NAME] = {};
  pid_t launched = -1;
  int children = 0;
  if (c->rank == root) {
    std::vector<app> apps;
    if (count <= 0 || commands == nullptr || maxprocs == nullptr) {
      verdict = MPI_ERR_ARG;
      why = "no commands to spawn (count " + std::to_string(count) + ")";
    }
    for (int k = 0; verdict == MPI_SUCCESS && k < count; ++k) {
      const api::info_entries *found =
          infos != nullptr ? api::info_find(infos[k]) : api::info_find(MPI_INFO_NULL);
      const std::string which = count > 1 ? "command " + std::to_string(k) + ": " : "";
      if (commands[k] == nullptr || commands[k][0] == '\0') {
        verdict = MPI_ERR_ARG;
        why = which + "no command to spawn";
      } else if (maxprocs[k] <= 0) {
        verdict = MPI_ERR_ARG;
        why = which + "maxprocs " + std::to_string(maxprocs[k]) + " (at least 1)";
      } else if (found == nullptr) {
        verdict = MPI_ERR_INFO;
        why = which + "invalid info handle";
      } else if (why = hints_refused(*found); !why.empty()) {
        verdict = MPI_ERR_SPAWN;
        why = which + why;
      } else {
        std::string wdir;
        for (const auto &[key, value] : *found) {
          if (key == "wdir") wdir = value;
        }
        apps.push_back({maxprocs[k], program_of(commands[k], *found),
                        argvs != MPI_ARGVS_NULL ? argvs[k] : MPI_ARGV_NULL, wdir});
        children += maxprocs[k];
      }
    }
    const std::string launcher = launcher_path();
    if (verdict != MPI_SUCCESS) {
    } else if (launcher.empty()) {
      verdict = MPI_ERR_SPAWN;
      why = "no launcher to start the children with (set IRIS_SPAWN_LAUNCHER to Iris's mpiexec)";
    } else if (MPI_Open_port(MPI_INFO_NULL, port) != MPI_SUCCESS) {
      verdict = MPI_ERR_SPAWN;
      why = "cannot open a port for the children (see the line above)";
    } else {
      launched = launch(launcher, apps, port, why);
      if (launched < 0) verdict = MPI_ERR_SPAWN;
    }
  }
  // A refusal before the launch, agreed by every member.
  int agreed[2] = {verdict, children};
  MPI_Bcast(agreed, 2, MPI_INT, root, c->handle);
  verdict = agreed[0];
  children = agreed[1];
  int err = MPI_SUCCESS;
  if (verdict != MPI_SUCCESS) {
    if (c->rank == root && port[0] != '\0') MPI_Close_port(port);
    err = device::error_raise(c, call, verdict, "%s",
                              c->rank == root ? why.c_str() : "the root could not spawn");
  } else {
    // Gives up when the launcher ends before the children connect.
    const auto gone = [launched](std::string &reason) {
      int status = 0;
      if (::waitpid(launched, &status, WNOHANG) != launched) return false;
      reason = "the children's launcher ended (" +
               (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                  : "signal " + std::to_string(WTERMSIG(status))) +
               ") before they connected; its message says why";
      return true;
    };
    err = api::accept_common(call, port, root, *c, intercomm, gone);
    if (c->rank == root) MPI_Close_port(port);
  }
  // Every child's code (when the root refused early, as many as the
  // counts say where they are valid).
  if (array_of_errcodes != MPI_ERRCODES_IGNORE) {
    int n = children;
    if (n == 0 && maxprocs != nullptr) {
      for (int k = 0; k < count; ++k) n += std::max(maxprocs[k], 0);
    }
    for (int i = 0; i < n; ++i) array_of_errcodes[i] = err;
  }
  if (err != MPI_SUCCESS) *intercomm = MPI_COMM_NULL;
  return err;
}

}  // namespace

// A child's MPI_Init: its world connects to the parents' port.
int api::parent_connect() {
  const char *port = std::getenv("IRIS_PARENT_PORT");
  if (port == nullptr || port[0] == '\0') return MPI_SUCCESS;
  const std::string name = port;
  ::unsetenv("IRIS_PARENT_PORT");  // not for what this process starts itself
  MPI_Comm made = MPI_COMM_NULL;
  const int err = MPI_Comm_connect(name.c_str(), MPI_INFO_NULL, 0, MPI_COMM_WORLD, &made);
  if (err == MPI_SUCCESS) {
    parent = made;
    device::comm_lookup(made)->name = "MPI_COMM_PARENT";  // as MPI names it
  }
  return err;
}

void api::parent_forget(MPI_Comm comm) {
  if (comm == parent) parent = MPI_COMM_NULL;
}

extern "C" {

int MPI_Comm_get_parent(MPI_Comm *parent_out) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_get_parent";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, parent_out, "parent")) return err;
  *parent_out = parent;
  return MPI_SUCCESS;
}

int MPI_Comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root,
                   MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]) {
  const device::api_guard guard;
  char *commands[] = {const_cast<char *>(command)};
  char **argvs[] = {argv};
  const int counts[] = {maxprocs};
  const MPI_Info infos[] = {info};
  return spawn_common("MPI_Comm_spawn", 1, commands, argvs, counts, infos, root, comm, intercomm,
                      array_of_errcodes);
}

// The children of all commands are one job: one MPI_COMM_WORLD, in the
// order of the commands, MPI_APPNUM numbering them.
int MPI_Comm_spawn_multiple(int count, char *array_of_commands[], char **array_of_argv[],
                            const int array_of_maxprocs[], const MPI_Info array_of_info[], int root,
                            MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]) {
  const device::api_guard guard;
  return spawn_common("MPI_Comm_spawn_multiple", count, array_of_commands, array_of_argv,
                      array_of_maxprocs, array_of_info, root, comm, intercomm, array_of_errcodes);
}

}  // extern "C"
