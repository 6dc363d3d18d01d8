#include "device/transports/liveness.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "device/protocols/recovery.hpp"
#include "shm/cma.hpp"

namespace iris::device {
namespace {

int pidfd_open(std::int64_t pid) {
#if defined(SYS_pidfd_open)
  return static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

const char *const ended = "its process ended before it finished MPI (seen on this node)";

}  // namespace

int liveness_watch::start(const std::vector<peer> &peers) {
  stop();
  const int wake = eventfd(0, EFD_CLOEXEC);
  if (wake < 0) return 0;
  fds_.assign(1, wake);
  for (const peer &p : peers) {
    const std::int64_t pid = shm::cma::card_pid(p.card);
    if (pid <= 0) continue;
    const int fd = pidfd_open(pid);
    if (fd < 0) {
      // Gone already: dead unless it finished (the card proved it lived).
      if (errno == ESRCH && p.finished->load(std::memory_order_acquire) == 0) {
        recovery_report(p.world_rank, ended);
      }
      continue;
    }
    // The pid is the peer's only if its probe word reads back from it now
    // that the pidfd pins the process.
    if (!shm::cma::permitted(p.card)) {
      close(fd);
      continue;
    }
    fds_.push_back(fd);
    peers_.push_back({p.world_rank, p.finished});
  }
  if (peers_.empty()) {
    stop();
    return 0;
  }
  thread_ = std::thread([this] { run(); });
  return static_cast<int>(peers_.size());
}

void liveness_watch::stop() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    while (write(fds_[0], &one, sizeof(one)) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
  fds_.clear();
  peers_.clear();
}

void liveness_watch::run() {
  std::vector<pollfd> set(fds_.size());
  for (std::size_t i = 0; i < fds_.size(); ++i) set[i] = {fds_[i], POLLIN, 0};
  for (;;) {
    if (poll(set.data(), set.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;  // the launcher's word only
    }
    if (set[0].revents != 0) return;
    for (std::size_t i = 1; i < set.size(); ++i) {
      if (set[i].fd < 0 || set[i].revents == 0) continue;
      set[i].fd = -1;  // ended: poll skips it from now on
      const watched &w = peers_[i - 1];
      if (w.finished->load(std::memory_order_acquire) == 0) recovery_report(w.world_rank, ended);
    }
  }
}

}  // namespace iris::device
