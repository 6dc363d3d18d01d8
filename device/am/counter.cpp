#include "device/am/counter.hpp"

#include <mutex>
#include <unordered_set>

namespace iris::device {

namespace {

// The counters alive in this process. A lock of its own (not the call
// lock): MPIX_Counter_get and _set may run in any thread, and a target
// checks an address here inside progress.
std::mutex alive_lock;
std::unordered_set<const iris_counter *> &alive() {
  static std::unordered_set<const iris_counter *> set;
  return set;
}

}  // namespace

iris_counter *counter_create() {
  auto *c = new iris_counter;
  c->magic.store(counter_magic, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> held(alive_lock);
  alive().insert(c);
  return c;
}

void counter_free(iris_counter *c) {
  {
    const std::lock_guard<std::mutex> held(alive_lock);
    alive().erase(c);
  }
  c->magic.store(0, std::memory_order_relaxed);
  delete c;
}

bool counter_alive(const iris_counter *c) {
  const std::lock_guard<std::mutex> held(alive_lock);
  return alive().count(c) != 0;
}

iris_counter *counter_at(std::uint64_t address) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): compared, never followed, until found alive
  auto *c = reinterpret_cast<iris_counter *>(static_cast<std::uintptr_t>(address));
  return address != 0 && counter_alive(c) ? c : nullptr;
}

}  // namespace iris::device
