#include "pmi/mpiexec/cleanup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "pmi/mpiexec/job.hpp"

namespace iris::mpiexec {
namespace {

// PMIx puts Unix sockets in this directory; sun_path holds 108 bytes, and
// the library appends its own file names.
constexpr std::size_t max_tmp_base_length = 64;

// How deep a tree the removal follows: PMIx's directory holds one level of
// subdirectories; /dev/shm objects are files.
constexpr int max_depth = 4;

std::string tmp_base() {
  const char *env = std::getenv("TMPDIR");
  if (env != nullptr && env[0] == '/' && std::strlen(env) <= max_tmp_base_length) return env;
  return "/tmp";
}

// The removal below uses system calls only (no malloc, no stdio, no
// exceptions), so that the fault handler can run it too.

bool starts_with(const char *name, std::string_view prefix) {
  return std::strncmp(name, prefix.data(), prefix.size()) == 0;
}

bool is_dot_or_dot_dot(const char *name) {
  return std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0;
}

void remove_at(int parent, const char *name, int depth) noexcept;

// Calls `visit(name)` for each entry of the open directory `fd`. Entries
// removed during the walk can make getdents skip others, so callers repeat
// the walk until it finds nothing to do.
template <typename Visit>
bool for_each_entry(int fd, Visit visit) noexcept {
  alignas(dirent64) char buffer[4096];
  bool visited = false;
  for (;;) {
    const ssize_t n = ::getdents64(fd, buffer, sizeof buffer);
    if (n <= 0) return visited;
    for (ssize_t offset = 0; offset < n;) {
      const auto *entry = reinterpret_cast<const dirent64 *>(buffer + offset);
      offset += entry->d_reclen;
      if (!is_dot_or_dot_dot(entry->d_name)) visited = visit(entry->d_name) || visited;
    }
  }
}

void remove_children(int fd, int depth) noexcept {
  for (int pass = 0; pass < 3; ++pass) {
    ::lseek(fd, 0, SEEK_SET);
    const bool found = for_each_entry(fd, [&](const char *name) {
      remove_at(fd, name, depth - 1);
      return true;
    });
    if (!found) return;
  }
}

void remove_at(int parent, const char *name, int depth) noexcept {
  if (::unlinkat(parent, name, 0) == 0 || errno == ENOENT) return;
  if (errno != EISDIR || depth <= 0) return;
  const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  remove_children(fd, depth);
  ::close(fd);
  ::unlinkat(parent, name, AT_REMOVEDIR);
}

// ---- Parking the other threads before the last cleanup. --------------------

// Not used by glibc (SIGRTMIN already skips its own), libevent or libpmix.
int park_signal() noexcept {
  return SIGRTMIN + 4;
}

std::atomic<bool> parking{false};  // a thread has begun to park the others
std::atomic<int> parked{0};

void on_park(int) {
  parked.fetch_add(1);
  for (;;) ::pause();
}

void sleep_ms(long ms) noexcept {
  const timespec t{.tv_sec = 0, .tv_nsec = ms * 1'000'000};
  ::nanosleep(&t, nullptr);
}

// ---- The fault guard's state: read by the signal handler. -------------------

struct guard_state {
  char shm_prefix[256] = {};
  char tmp_path[4096] = {};
  std::unique_ptr<std::atomic<pid_t>[]> pids;  // 0: not started or already reaped
  int nranks = 0;
  std::atomic<int> exit_code{-1};    // -1: not decided yet
  std::atomic<bool> faulted{false};  // a thread is in on_fault already
};

guard_state *guard = nullptr;  // set while a fault_guard exists
constexpr int guarded_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

void write_line(const char *text) noexcept {
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
}

// Async-signal-safe from here to _exit.
void on_fault(int sig) {
  // A second thread that faults meanwhile (libpmix's, as the ranks' sockets
  // close) waits for the first one's _exit: one report, one cleanup.
  if (guard->faulted.exchange(true)) {
    for (;;) ::pause();
  }
  const int decided = guard->exit_code.load();
  if (decided < 0) {
    const char *name = ::sigabbrev_np(sig);
    write_line("mpiexec: internal error: SIG");
    write_line(name != nullptr ? name : "?");
    write_line(" inside mpiexec; killing the ranks\n");
  }
  for (int r = 0; r < guard->nranks; ++r) {
    if (const pid_t pid = guard->pids[r].load(); pid > 0) ::kill(pid, SIGKILL);
  }
  for (int r = 0; r < guard->nranks; ++r) {
    // ECHILD when the main thread reaped it meanwhile: fine.
    if (const pid_t pid = guard->pids[r].load(); pid > 0) ::waitpid(pid, nullptr, 0);
  }
  park_other_threads();
  remove_shm_objects(guard->shm_prefix);
  remove_at(AT_FDCWD, guard->tmp_path, max_depth);
  ::_exit(decided >= 0 ? decided : launch_failure_code);
}

}  // namespace

tmp_dir::tmp_dir() {
  std::string pattern = tmp_base() + "/iris-mpiexec." + std::to_string(::getpid()) + ".XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    throw launch_error("cannot create a directory " + pattern + ": " + std::strerror(errno));
  }
  path_ = buffer.data();
}

void tmp_dir::remove() noexcept {
  if (path_.empty()) return;
  remove_at(AT_FDCWD, path_.c_str(), max_depth);
  path_.clear();
}

void remove_shm_objects(std::string_view prefix) noexcept {
  if (prefix.empty()) return;  // would match everything
  const int fd = ::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  for (int pass = 0; pass < 3; ++pass) {
    ::lseek(fd, 0, SEEK_SET);
    const bool found = for_each_entry(fd, [&](const char *name) {
      if (!starts_with(name, prefix)) return false;
      remove_at(fd, name, max_depth);
      return true;
    });
    if (!found) break;
  }
  ::close(fd);
}

void park_other_threads() noexcept {
  if (parking.exchange(true)) {
    for (;;) ::pause();  // the first caller parks this thread and exits
  }
  struct sigaction action = {};
  action.sa_handler = on_park;
  sigemptyset(&action.sa_mask);
  if (::sigaction(park_signal(), &action, nullptr) != 0) return;
  const int fd = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  const pid_t self = ::gettid();
  int signalled = 0;
  for_each_entry(fd, [&](const char *name) {
    pid_t tid = 0;  // strtol is not on the async-signal-safe list
    for (const char *c = name; *c >= '0' && *c <= '9'; ++c) tid = tid * 10 + (*c - '0');
    if (tid <= 0 || tid == self) return false;
    if (::syscall(SYS_tgkill, ::getpid(), tid, park_signal()) == 0) ++signalled;
    return false;
  });
  ::close(fd);
  // A thread in an uninterruptible wait takes its signal late; give up
  // waiting after half a second rather than hang mpiexec's exit.
  for (int waited = 0; parked.load() < signalled && waited < 500; ++waited) sleep_ms(1);
}

watchdog::watchdog(std::chrono::milliseconds limit, std::function<void()> on_expire)
    : thread_([this, limit, on_expire = std::move(on_expire)] {
        std::unique_lock lock(mutex_);
        if (!cv_.wait_for(lock, limit, [this] { return cancelled_; })) on_expire();
      }) {}

watchdog::~watchdog() {
  {
    const std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

fault_guard::fault_guard(std::string_view shm_prefix, const std::string &tmp_path, int nranks) {
  auto state = std::make_unique<guard_state>();
  if (shm_prefix.size() >= sizeof state->shm_prefix || tmp_path.size() >= sizeof state->tmp_path) {
    throw launch_error("job names too long for the fault guard");
  }
  std::memcpy(state->shm_prefix, shm_prefix.data(), shm_prefix.size());
  std::memcpy(state->tmp_path, tmp_path.data(), tmp_path.size());
  state->pids = std::make_unique<std::atomic<pid_t>[]>(static_cast<std::size_t>(nranks));
  state->nranks = nranks;
  guard = state.release();
  struct sigaction action = {};
  action.sa_handler = on_fault;
  sigemptyset(&action.sa_mask);
  // Another fault inside the handler kills mpiexec outright (the signal is
  // blocked while the handler runs) instead of recursing.
  for (int sig : guarded_signals) ::sigaction(sig, &action, nullptr);
}

fault_guard::~fault_guard() {
  struct sigaction action = {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  for (int sig : guarded_signals) ::sigaction(sig, &action, nullptr);
  delete guard;
  guard = nullptr;
}

void fault_guard::rank_started(int rank, pid_t pid) noexcept {
  guard->pids[rank].store(pid);
}

void fault_guard::rank_reaped(int rank) noexcept {
  guard->pids[rank].store(0);
}

void fault_guard::outcome_decided(int exit_code) noexcept {
  guard->exit_code.store(exit_code);
}

}  // namespace iris::mpiexec
