#include "pmi/mpiexec/supervise.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace iris::mpiexec {
namespace {

using clock = std::chrono::steady_clock;

// After forwarding SIGINT/SIGTERM (or sending SIGTERM on timeout), ranks get
// this long to exit on their own before SIGKILL.
constexpr std::chrono::seconds kill_grace{2};
// A rank still there this long after SIGKILL is stuck in the kernel;
// mpiexec stops waiting for it rather than hang.
constexpr std::chrono::seconds reap_limit{10};

std::string signal_text(int sig) {
  const char *name = ::sigdescr_np(sig);
  return "signal " + std::to_string(sig) + " (" + (name != nullptr ? name : "unknown") + ")";
}

// An abort always fails the job, whatever code the rank passed.
int abort_exit_code(int status) {
  return status >= 1 && status <= 255 ? status : 1;
}

// Abort messages come from the program: keep them to one line.
std::string one_line(std::string text) {
  for (char &c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

class supervisor {
 public:
  explicit supervisor(const job_watch &watch)
      : ranks_(watch.ranks),
        server_(watch.server),
        signals_(watch.signals),
        guard_(watch.guard),
        timeout_s_(watch.timeout_s),
        recovery_(watch.recovery),
        spawned_(watch.spawned) {
    if (timeout_s_) {
      job_deadline_ = clock::now() + std::chrono::duration_cast<clock::duration>(
                                         std::chrono::duration<double>(*timeout_s_));
    }
  }

  job_end run() {
    while (alive() > 0) {
      if (give_up_deadline_ && clock::now() >= *give_up_deadline_) {
        report_stuck_ranks();
        break;
      }
      wait_for_event();
      spawned_.take();
      read_signals();
      handle_aborts();
      reap();
      check_deadlines();
    }
    if (exit_code_) return {.exit_code = *exit_code_, .clean = false};
    if (deaths_ == 0) return {.exit_code = survivor_code_.value_or(0), .clean = true};
    // Recovery after deaths: the ranks that did not die decide; when none
    // is left, the first death does, as it would without recovery.
    const int code = deaths_ == ranks_.size() ? *first_death_code_ : survivor_code_.value_or(0);
    return {.exit_code = code, .clean = false};
  }

 private:
  // The first failure decides the exit code; from then on the fault guard
  // keeps it too.
  void decide(int code) {
    exit_code_ = code;
    guard_.outcome_decided(code);
  }

  std::size_t alive() const {
    std::size_t n = 0;
    for (const rank_process &r : ranks_) n += r.reaped ? 0 : 1;
    return n;
  }

  // "N other ranks": the ranks still running but `rank`, which may or may
  // not have been reaped yet.
  std::string count_others(int rank) {
    std::size_t n = 0;
    for (const rank_process &r : ranks_) n += r.reaped || r.rank == rank ? 0 : 1;
    return std::to_string(n) + " other " + (n == 1 ? "rank" : "ranks") + count_spawned();
  }

  // " and ending 2 spawned jobs", when the ranks spawned some that still run.
  std::string count_spawned() {
    const std::size_t n = spawned_.running();
    if (n == 0) return "";
    return " and ending " + std::to_string(n) + " spawned " + (n == 1 ? "job" : "jobs");
  }

  void wait_for_event() {
    std::optional<clock::time_point> next = job_deadline_;
    for (const auto &d : {kill_deadline_, give_up_deadline_}) {
      if (d && (!next || *d < *next)) next = d;
    }
    int timeout_ms = -1;
    if (next) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - clock::now());
      timeout_ms = static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, left.count()));
    }
    pollfd fds[] = {{.fd = signals_.fd(), .events = POLLIN, .revents = 0},
                    {.fd = server_.wake_fd(), .events = POLLIN, .revents = 0},
                    {.fd = spawned_.read_fd(), .events = POLLIN, .revents = 0}};
    ::poll(fds, 3, timeout_ms);  // EINTR or a timeout: the callers check everything anyway
  }

  void read_signals() {
    signalfd_siginfo info;
    while (::read(signals_.fd(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig != SIGCHLD) on_user_signal(sig);  // SIGCHLD: reap() looks every round
    }
  }

  void on_user_signal(int sig) {
    if (exit_code_) {
      // A second signal, or one while the job already ends: no more grace.
      kill_all(SIGKILL);
      return;
    }
    decide(128 + sig);
    report("got " + signal_text(sig) + "; forwarding it to " + count_ranks(alive()) +
           count_spawned());
    kill_all(sig);
    kill_deadline_ = clock::now() + kill_grace;
  }

  void handle_aborts() {
    for (const abort_request &request : server_.take_aborts()) {
      if (exit_code_) continue;
      const rank_process *rank = find_rank(request.rank);
      const std::string pid = rank != nullptr ? std::to_string(rank->pid) : "?";
      report("rank " + std::to_string(request.rank) + " (pid " + pid +
             ") aborted the job with code " + std::to_string(request.status) + ": " +
             one_line(request.message) + "; killing " + count_others(request.rank));
      decide(abort_exit_code(request.status));
      kill_all(SIGKILL);
    }
  }

  void reap() {
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;  // none exited (0) or no children left (ECHILD)
      for (rank_process &r : ranks_) {
        if (r.pid == pid && !r.reaped) {
          r.reaped = true;
          guard_.rank_reaped(r.rank);
          on_exit(r, status);
        }
      }
    }
  }

  void on_exit(const rank_process &rank, int status) {
    if (exit_code_) return;  // the job is already ending
    std::string how;
    int code = 0;
    if (WIFEXITED(status)) {
      code = WEXITSTATUS(status);
      const bool unfinished = server_.connected_without_finalize(rank.rank);
      if (code == 0) {
        if (!unfinished) {
          told_gone(rank);
          return;  // success
        }
        // Its peers may wait for it in a fence forever: end the job now.
        how = "exited with code 0 without finalizing PMIx";
        code = 1;
      } else if (recovery_ && server_.has_finalized(rank.rank)) {
        // It finished its part: nobody waits for it.
        on_survivor_code(rank, code);
        told_gone(rank);
        return;
      } else {
        how = "exited with code " + std::to_string(code) +
              (recovery_ && unfinished ? " without finalizing PMIx" : "");
      }
    } else if (WIFSIGNALED(status)) {
      code = 128 + WTERMSIG(status);
      how =
          "killed by " + signal_text(WTERMSIG(status)) + (WCOREDUMP(status) ? ", core dumped" : "");
    } else {
      return;  // stopped or continued: not an end
    }
    // An abort queued before this exit is the real cause: the aborting rank
    // exits right after mpiexec acknowledged its request.
    handle_aborts();
    if (exit_code_) return;
    if (recovery_ && server_.ever_connected(rank.rank)) {
      on_death(rank, how, code);
      return;
    }
    // Under recovery too: the PMIx library forgets a dead rank in fences
    // only when its connection drops, so the others would wait for this one
    // in their first fence (MPI_Init's) forever.
    if (recovery_) how += " before connecting to PMIx";
    report("rank " + std::to_string(rank.rank) + " (pid " + std::to_string(rank.pid) + ") " + how +
           (alive() > 0 ? "; killing " + count_others(rank.rank) : ""));
    decide(code);
    kill_all(SIGKILL);
  }

  // --enable-recovery: the others go on, and are told.
  void on_death(const rank_process &rank, const std::string &how, int code) {
    ++deaths_;
    if (!first_death_code_) first_death_code_ = code;
    const std::size_t others = alive();
    report("rank " + std::to_string(rank.rank) + " (pid " + std::to_string(rank.pid) + ") " + how +
           (others > 0 ? "; " + std::to_string(others) + " other " +
                             (others == 1 ? "rank goes" : "ranks go") + " on (--enable-recovery)"
                       : ""));
    if (others == 0) return;
    try {
      server_.notify_failure(rank.rank);
    } catch (const launch_error &e) {
      report(e.what());  // they go on anyway; their transports may notice
    }
  }

  // --enable-recovery: a rank that finished is gone too. The others are
  // told, as of a death: one still inside MPI_Finalize's agreement may
  // otherwise wait for it (it left with the decision a rank that died
  // since gave it alone; device/protocols/recovery.hpp).
  void told_gone(const rank_process &rank) {
    if (!recovery_ || alive() == 0) return;
    try {
      server_.notify_failure(rank.rank, true);
    } catch (const launch_error &e) {
      report(e.what());
    }
  }

  // --enable-recovery: a rank that finalized PMIx exited with `code` != 0.
  // The first such code is the job's.
  void on_survivor_code(const rank_process &rank, int code) {
    if (survivor_code_) return;
    survivor_code_ = code;
    report("rank " + std::to_string(rank.rank) + " (pid " + std::to_string(rank.pid) +
           ") exited with code " + std::to_string(code) +
           " after finalizing; mpiexec will exit with it (--enable-recovery)");
  }

  void check_deadlines() {
    const clock::time_point now = clock::now();
    if (job_deadline_ && now >= *job_deadline_) {
      job_deadline_.reset();
      if (!exit_code_ && alive() > 0) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", *timeout_s_);
        report(std::string("job timed out after ") + seconds + " s; killing " +
               count_ranks(alive()) + count_spawned());
        decide(timeout_code);
        kill_all(SIGTERM);
        kill_deadline_ = now + kill_grace;
      }
    }
    if (kill_deadline_ && now >= *kill_deadline_) kill_all(SIGKILL);
  }

  void kill_all(int sig) {
    for (const rank_process &r : ranks_) {
      if (!r.reaped) ::kill(r.pid, sig);
    }
    // A spawned job's mpiexec forwards the signal to its ranks (SIGTERM in
    // place of SIGKILL: it ends them, then removes what they left).
    spawned_.signal_all(sig == SIGKILL ? SIGTERM : sig);
    if (sig == SIGKILL) {
      kill_deadline_.reset();
      job_deadline_.reset();
      if (!give_up_deadline_) give_up_deadline_ = clock::now() + reap_limit;
    }
  }

  void report_stuck_ranks() {
    for (const rank_process &r : ranks_) {
      if (r.reaped) continue;
      report("rank " + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) + ") is still " +
             "there " + std::to_string(reap_limit.count()) + " s after SIGKILL; leaving it");
    }
    if (!exit_code_) decide(launch_failure_code);
  }

  const rank_process *find_rank(int rank) const {
    for (const rank_process &r : ranks_) {
      if (r.rank == rank) return &r;
    }
    return nullptr;
  }

  std::vector<rank_process> &ranks_;
  pmix_server &server_;
  const job_signals &signals_;
  fault_guard &guard_;
  std::optional<double> timeout_s_;
  bool recovery_;
  spawned_jobs &spawned_;
  std::size_t deaths_ = 0;                          // ranks that died, under recovery
  std::optional<int> first_death_code_;             // what the first death would have made the code
  std::optional<int> survivor_code_;                // the first c != 0 of a rank that did not die
  std::optional<clock::time_point> job_deadline_;   // --timeout
  std::optional<clock::time_point> kill_deadline_;  // SIGKILL after the grace period
  std::optional<clock::time_point> give_up_deadline_;  // stop waiting after SIGKILL
  std::optional<int> exit_code_;                       // set by the first failure
};

sigset_t job_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  return set;
}

}  // namespace

job_signals::job_signals() {
  const sigset_t set = job_signal_set();
  if (::pthread_sigmask(SIG_BLOCK, &set, &original_mask_) != 0) {
    throw launch_error("cannot block the job signals");
  }
  // A closed stdout or stderr must not kill mpiexec in the middle of a job.
  ::signal(SIGPIPE, SIG_IGN);
  fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) throw launch_error(std::string("signalfd failed: ") + std::strerror(errno));
}

job_signals::~job_signals() {
  ::close(fd_);
}

spawned_jobs::spawned_jobs() {
  if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw launch_error(std::string("cannot make the pipe of spawned jobs: ") +
                       std::strerror(errno));
  }
}

spawned_jobs::~spawned_jobs() {
  for (const int fd : jobs_) ::close(fd);
  ::close(fds_[0]);
  ::close(fds_[1]);
}

std::string spawned_jobs::setting() const {
  return std::to_string(fds_[1]) + ":" + std::to_string(::getpid());
}

void spawned_jobs::take() {
  char buffer[512];
  for (;;) {
    const ssize_t n = ::read(fds_[0], buffer, sizeof buffer);
    if (n <= 0) break;  // EAGAIN: nothing more now
    partial_.append(buffer, static_cast<std::size_t>(n));
  }
  for (std::size_t end = partial_.find('\n'); end != std::string::npos; end = partial_.find('\n')) {
    const long pid = std::strtol(partial_.c_str(), nullptr, 10);
    partial_.erase(0, end + 1);
    // Gone already (ESRCH): nothing to end. Its pidfd names that process
    // alone, even once its pid is another's.
    // (System calls: glibc 2.36's <sys/pidfd.h> declares them without C
    // linkage.)
    const int fd = pid > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)) : -1;
    if (fd >= 0) jobs_.push_back(fd);
  }
  if (partial_.size() > 64) partial_.clear();  // not a pid: nobody of ours wrote it
}

std::size_t spawned_jobs::running() {
  take();
  std::erase_if(jobs_, [](int fd) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, 0) == 0) return false;  // readable once the process ended
    ::close(fd);
    return true;
  });
  return jobs_.size();
}

void spawned_jobs::signal_all(int sig) {
  for (const int fd : jobs_) (void)::syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0);
}

job_end supervise(const job_watch &watch) {
  return supervisor(watch).run();
}

void kill_and_reap(std::vector<rank_process> &ranks) {
  for (const rank_process &r : ranks) {
    if (!r.reaped) ::kill(r.pid, SIGKILL);
  }
  for (rank_process &r : ranks) {
    if (!r.reaped) ::waitpid(r.pid, nullptr, 0);
    r.reaped = true;
  }
}

}  // namespace iris::mpiexec
