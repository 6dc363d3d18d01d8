// LAPI's counters (MPIX_Counter): a value any thread may read, set, add to
// and wait on. A counter is named across processes by its address
// (MPIX_Counter_address); a target takes an address from a packet only
// after finding it among the counters alive in this process, so a stale or
// forged one is refused, never followed.
#pragma once

#include <atomic>
#include <cstdint>

// The object behind MPIX_Counter (include/iris/am.h declares it opaque).
struct iris_counter {
  std::atomic<std::int64_t> value{0};
  std::atomic<std::uint64_t> magic{0};  // counter_magic while alive (counter_valid)
  // An op that would have counted here ended at a rank that died
  // (recovery): MPIX_Counter_wait short of its value ends with
  // MPIX_ERR_PROC_FAILED until MPIX_Counter_set.
  std::atomic<bool> lost{false};
};

namespace iris::device {

// A new counter at 0, alive until counter_free.
iris_counter *counter_create();
void counter_free(iris_counter *c);
inline constexpr std::uint64_t counter_magic = 0x49726973436e7472ULL;  // "IrisCntr"

// Whether `c`, a counter the program passes, is alive: its mark, read
// without a lock (any thread). A pointer that was never a counter is the
// program's error, as a bad FILE * is stdio's.
inline bool counter_valid(const iris_counter *c) {
  return c->magic.load(std::memory_order_relaxed) == counter_magic;
}
// Whether `c` is among the counters alive in this process, found without
// following it (any thread): for addresses that come in packets.
bool counter_alive(const iris_counter *c);
// The counter named by a target-counter address from a packet, or nullptr.
iris_counter *counter_at(std::uint64_t address);

// One increment (nullptr: none). The release pairs with the acquire of a
// reader's load: what the operation wrote is visible once it sees the count.
inline void counter_bump(iris_counter *c) {
  if (c != nullptr) c->value.fetch_add(1, std::memory_order_release);
}

// An increment that will never come: its op ended at a dead rank.
inline void counter_lose(iris_counter *c) {
  if (c != nullptr) c->lost.store(true, std::memory_order_release);
}

// Subtracts `v` once the value is at least `v`; false while it is not.
inline bool counter_take(iris_counter *c, std::int64_t v) {
  std::int64_t now = c->value.load(std::memory_order_acquire);
  while (now >= v) {
    if (c->value.compare_exchange_weak(now, now - v, std::memory_order_acq_rel)) return true;
  }
  return false;
}

}  // namespace iris::device
