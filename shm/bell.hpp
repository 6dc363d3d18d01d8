// Doorbells: how a rank with nothing to do sleeps in the kernel and how the
// ranks of its node wake it, so that ranks waiting in MPI leave the cores to
// those that work (a node with more ranks than cores).
//
// Each rank of a node has one bell, a word in the node's shared memory. A
// rank goes to sleep in three steps: it marks its bell asleep, makes that
// store and every sender's earlier stores meet (heavy_fence), and polls
// once more; only if nothing came does it wait on the bell (a futex). A
// sender, after writing a packet, reads the receiver's bell (one load of a
// line that changes only when its owner sleeps or wakes) and wakes it only
// when it is marked asleep: no system call on the path of a busy pair.
//
// The two sides form an asymmetric Dekker pair: the sender's fence is only
// a compiler barrier, and the sleeper pays for both with a membarrier(2)
// that runs a full barrier on every CPU running a process that registered
// (MEMBARRIER_CMD_GLOBAL_EXPEDITED). Either the sleeper's last poll sees the
// packet, or the sender sees the bell asleep; a wake is never lost.
#pragma once

#include <atomic>
#include <cstdint>

#include "shm/ring.hpp"

namespace iris::shm {

struct alignas(cache_line) bell {
  std::atomic<std::uint32_t> asleep{0};  // 1 while its rank sleeps or is about to
  // 1 once its rank finished MPI (MPI_Finalize's last barrier): its process
  // may end now without having failed. Written once by its rank (release),
  // read by the others' liveness watch (acquire).
  std::atomic<std::uint32_t> finished{0};
  // A word its rank publishes to the ranks of its node, beside the bell
  // because each rank has one line here (the device keeps the version of
  // what it exposed to put and get in it). Written rarely by its rank
  // (release), read by the others (acquire).
  std::atomic<std::uint64_t> published{0};
};
static_assert(sizeof(bell) == cache_line);

// Registers this process for the sleepers' heavy fence. Returns false (and
// nobody on the node may sleep) when the kernel lacks
// MEMBARRIER_CMD_GLOBAL_EXPEDITED or refuses it.
bool bells_register();

// The sleeper's side of the pair: a full barrier on every CPU that runs a
// registered process. Returns false if the kernel refused.
bool heavy_fence();

// Waits until the bell is no longer asleep or `timeout_ms` passes. Returns
// false only when the time ran out.
bool bell_wait(bell &b, int timeout_ms);

// Wakes the bell's owner; a system call only if it is asleep.
void bell_wake_slow(bell &b);
inline void bell_wake(bell &b) {
  std::atomic_signal_fence(std::memory_order_seq_cst);  // the packet's stores first
  if (b.asleep.load(std::memory_order_relaxed) != 0) bell_wake_slow(b);
}

}  // namespace iris::shm
