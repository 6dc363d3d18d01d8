#include "shm/bell.hpp"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>

namespace iris::shm {
namespace {

long membarrier(int command) {
  return syscall(SYS_membarrier, command, 0, 0);
}

long futex(std::atomic<std::uint32_t> &word, int op, std::uint32_t value,
           const struct timespec *timeout) {
  // A shared futex (no FUTEX_PRIVATE_FLAG): the word is in shared memory.
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t *>(&word), op, value, timeout, nullptr,
                 0);
}

}  // namespace

bool bells_register() {
  const long supported = membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || (supported & MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

bool heavy_fence() {
  return membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0;
}

bool bell_wait(bell &b, int timeout_ms) {
  const struct timespec timeout = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  // Returns at once if a sender already woke it (asleep is 0 again); a
  // signal or a spurious wake returns too, and the caller polls again.
  return futex(b.asleep, FUTEX_WAIT, 1, &timeout) == 0 || errno != ETIMEDOUT;
}

void bell_wake_slow(bell &b) {
  if (b.asleep.exchange(0, std::memory_order_relaxed) != 0)
    futex(b.asleep, FUTEX_WAKE, INT_MAX, nullptr);
}

}  // namespace iris::shm
