// mpiexec: starts the ranks of one job on this host as their PMIx server.
//
// The phases, each in its own file:
//   options.cpp    the command line
//   binding.cpp    which core each rank gets (hwloc)
//   server.cpp     the embedded PMIx server and its callbacks
//   spawn.cpp      each rank's environment, fork + exec
//   supervise.cpp  signals, exits, aborts, the time limit
//   cleanup.cpp    shared-memory objects and the PMIx directory
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "pmi/mpiexec/binding.hpp"
#include "pmi/mpiexec/cleanup.hpp"
#include "pmi/mpiexec/job.hpp"
#include "pmi/mpiexec/options.hpp"
#include "pmi/mpiexec/server.hpp"
#include "pmi/mpiexec/spawn.hpp"
#include "pmi/mpiexec/supervise.hpp"
#include "pmi/pmi.hpp"

namespace iris::mpiexec {
namespace {

// PMIx_server_finalize has no time limit of its own.
constexpr std::chrono::seconds shutdown_limit{5};

struct job {
  explicit job(options o)
      : opts(std::move(o)),
        nspace("iris." + std::to_string(::getpid())),
        guard(pmi::shm_name_prefix(nspace), dir.path(), opts.nranks) {}

  options opts;
  std::string nspace;   // unique on this host while mpiexec runs
  job_signals signals;  // before any thread starts: they inherit the mask
  tmp_dir dir;
  fault_guard guard;
  std::unique_ptr<pmix_server> server;
  std::vector<rank_process> ranks;
  spawned_jobs spawned;  // the jobs the ranks start (MPI_Comm_spawn)

  // Removes what the ranks may have left: their shared-memory objects, and
  // the PMIx directory. Only once every rank is gone, or a rank could
  // create an object after the sweep.
  void clean_up() noexcept {
    remove_shm_objects(pmi::shm_name_prefix(nspace));
    dir.remove();
  }

  // Leaves without the destructors: after a failed job PMIx's state is
  // not to be trusted, and its teardown can crash. libpmix's thread is
  // stopped first, or it could write its files again while they go; the
  // prefix is made before that, as a stopped thread may hold malloc's lock.
  [[noreturn]] void leave(int code) noexcept {
    const std::string shm_prefix = pmi::shm_name_prefix(nspace);
    park_other_threads();
    remove_shm_objects(shm_prefix);
    dir.remove();
    ::_exit(code);
  }
};

class dev_null {
 public:
  dev_null() : fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw launch_error("cannot open /dev/null");
  }
  ~dev_null() { ::close(fd_); }
  dev_null(const dev_null &) = delete;
  dev_null &operator=(const dev_null &) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

void start_ranks(job &j) {
  const std::vector<rank_binding> bindings = plan_bindings(j.opts.bind, j.opts.nranks);
  if (j.opts.report_bindings) {
    for (std::size_t rank = 0; rank < bindings.size(); ++rank) {
      report("rank " + std::to_string(rank) + " " + bindings[rank].description);
    }
  }

  j.server = std::make_unique<pmix_server>(j.dir.path(),
                                           host_layout(j.nspace, j.opts.nranks, j.opts.nodes));
  j.server->register_job();

  const std::vector<std::string> base_env = rank_environment(j.opts.env);
  // Each program's argv, and the program of each rank.
  std::vector<std::vector<char *>> argvs;
  std::vector<std::size_t> app_of;
  for (options::app &a : j.opts.apps) {
    std::vector<char *> argv;
    for (std::string &arg : a.argv) argv.push_back(arg.data());
    argv.push_back(nullptr);
    argvs.push_back(std::move(argv));
    app_of.insert(app_of.end(), static_cast<std::size_t>(a.nranks), argvs.size() - 1);
  }
  // Only rank 0 reads mpiexec's stdin; the others must not compete for it.
  const dev_null no_input;

  for (int rank = 0; rank < j.opts.nranks; ++rank) {
    const std::size_t app = app_of[static_cast<std::size_t>(rank)];
    // MPI_APPNUM, when there are several programs; PWD, where the program
    // runs in a -wdir.
    const std::string &wdir = j.opts.apps[app].wdir;
    std::vector<std::string> rank_env = base_env;
    if (j.opts.apps.size() > 1) rank_env.push_back("IRIS_APPNUM=" + std::to_string(app));
    rank_env.push_back("IRIS_SPAWNED_FD=" + j.spawned.setting());  // MPI_Comm_spawn's report
    if (!wdir.empty()) {
      std::erase_if(rank_env, [](const std::string &e) { return e.starts_with("PWD="); });
      rank_env.push_back("PWD=" + wdir);
    }
    c_environment env(rank_env);
    j.server->setup_fork(rank, env);
    const rank_binding &binding = bindings[static_cast<std::size_t>(rank)];
    const pid_t pid = spawn_rank({
        .rank = rank,
        .path = j.opts.apps[app].program_path.c_str(),
        .argv = argvs[app].data(),
        .envp = env.get(),
        .cpus = binding.bound ? &binding.cpus : nullptr,
        .stdin_fd = rank == 0 ? -1 : no_input.fd(),
        .signal_mask = &j.signals.original_mask(),
        .wdir = wdir.empty() ? nullptr : wdir.c_str(),
        .keep_fd = j.spawned.write_fd(),
    });
    j.ranks.push_back({.rank = rank, .pid = pid, .reaped = false});
    j.guard.rank_started(rank, pid);
  }
}

int run_job(options opts) {
  job j(std::move(opts));
  try {
    start_ranks(j);
  } catch (const std::exception &e) {
    j.guard.outcome_decided(launch_failure_code);
    report(e.what());
    kill_and_reap(j.ranks);
    j.leave(launch_failure_code);
  }

  const job_end end = supervise({.ranks = j.ranks,
                                 .server = *j.server,
                                 .signals = j.signals,
                                 .guard = j.guard,
                                 .timeout_s = j.opts.timeout_s,
                                 .recovery = j.opts.recovery,
                                 .spawned = j.spawned});
  if (!end.clean) j.leave(end.exit_code);
  // Every rank finished well: should PMIx fault while shutting down, the
  // job still succeeded.
  j.guard.outcome_decided(end.exit_code);

  {
    const watchdog guard(shutdown_limit, [&j, &end] {
      report("the PMIx server did not shut down within " + std::to_string(shutdown_limit.count()) +
             " s; leaving it");
      j.leave(end.exit_code);
    });
    try {
      j.server->shutdown();
    } catch (const launch_error &e) {
      report(e.what());
      j.leave(end.exit_code);
    }
  }
  j.server.reset();
  j.clean_up();
  return end.exit_code;
}

// --info: iris_info, installed beside mpiexec (or, in the build tree, in
// device/), with the -x settings given before --info.
int run_info(const options &opts) {
  std::string here;
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    here.assign(self, static_cast<std::size_t>(n));
    here.erase(here.find_last_of('/') + 1);
  }
  for (const env_setting &e : opts.env) {
    if (e.value) ::setenv(e.name.c_str(), e.value->c_str(), 1);
  }
  for (const std::string &path : {here + "iris_info", std::string(IRIS_INFO_BUILD_PATH)}) {
    if (::access(path.c_str(), X_OK) != 0) continue;
    ::execl(path.c_str(), path.c_str(), static_cast<char *>(nullptr));
    report("--info: cannot run " + path + ": " + std::strerror(errno));
    return launch_failure_code;
  }
  report("--info: iris_info is neither beside mpiexec (" + here + ") nor at " +
         IRIS_INFO_BUILD_PATH);
  return launch_failure_code;
}

}  // namespace
}  // namespace iris::mpiexec

int main(int argc, char **argv) {
  using namespace iris::mpiexec;
  options opts;
  try {
    opts = parse_options(argc, argv);
  } catch (const usage_error &e) {
    report(e.what());
    return usage_error_code;
  }
  if (opts.help) {
    print_help(stdout);
    return 0;
  }
  if (opts.info) return run_info(opts);
  try {
    return run_job(std::move(opts));
  } catch (const std::exception &e) {
    // Before any rank started (signals, tmp dir): nothing to clean yet.
    report(e.what());
    return launch_failure_code;
  }
}
