// The layer's life: handlers registered, the end at MPI_Finalize.
#include <cstdio>
#include <cstring>
#include <vector>

#include "device/am/am.hpp"
#include "device/am/state.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

int am_register(MPIX_Am_header_fn *fn, int *handler) {
  am_state &s = am_state_get();
  if (s.handlers.size() >= static_cast<std::size_t>(INT32_MAX)) return MPI_ERR_NO_MEM;
  *handler = static_cast<int>(s.handlers.size());
  s.handlers.push_back(fn);
  return MPI_SUCCESS;
}

namespace {
// The device's own handlers (am_register_internal), process-wide.
std::vector<MPIX_Am_header_fn *> &internal_handlers() {
  static std::vector<MPIX_Am_header_fn *> all;
  return all;
}
}  // namespace

int am_register_internal(MPIX_Am_header_fn *fn) {
  auto &all = internal_handlers();
  all.push_back(fn);
  return am_internal_handlers + static_cast<int>(all.size()) - 1;
}

MPIX_Am_header_fn *am_handler_of(const am_state &s, int id) {
  if (id >= am_internal_handlers) {
    const auto &all = internal_handlers();
    const auto i = static_cast<std::size_t>(id - am_internal_handlers);
    return i < all.size() ? all[i] : nullptr;
  }
  if (id < 0 || static_cast<std::size_t>(id) >= s.handlers.size()) return nullptr;
  return s.handlers[static_cast<std::size_t>(id)];
}

int am_handlers() {
  return am != nullptr ? static_cast<int>(am->handlers.size()) : 0;
}

void am_init_done() {
  if (rt->config.async_progress == 1) async_progress_start();
}

void am_progress_wanted() {
  if (rt->config.async_progress == 0) async_progress_start();
}

bool am_statistic(const char *name, std::uint64_t &value) {
  const am_state empty;
  const am_state &s = am != nullptr ? *am : empty;
  const struct {
    const char *name;
    std::uint64_t value;
  } table[] = {{"am_messages", s.stats_messages}, {"am_puts", s.stats_puts},
               {"am_gets", s.stats_gets},         {"am_shared", s.stats_shared},
               {"am_mapped", s.stats_mapped},     {"am_pulled", s.stats_pulled},
               {"am_fences", s.stats_fences},     {"am_thread_waits", async_progress_waits()}};
  for (const auto &entry : table) {
    if (std::strcmp(entry.name, name) == 0) {
      value = entry.value;
      return true;
    }
  }
  return false;
}

void am_quiesce() {
  if (am == nullptr) return;
  am_state &s = *am;
  progress_until([&] { return s.outstanding == 0 && s.waiting.empty(); });
}

void am_close() {
  async_progress_stop();
  if (rt->config.stats) {
    const am_state &s = *am;
    std::fprintf(stderr,
                 "iris: rank %d stats: active messages %llu (data pulled by the target %llu), "
                 "puts %llu, gets %llu (without the target %llu, of them in mapped blocks %llu)\n",
                 rt->rank, static_cast<unsigned long long>(s.stats_messages),
                 static_cast<unsigned long long>(s.stats_pulled),
                 static_cast<unsigned long long>(s.stats_puts),
                 static_cast<unsigned long long>(s.stats_gets),
                 static_cast<unsigned long long>(s.stats_shared),
                 static_cast<unsigned long long>(s.stats_mapped));
  }
  delete am;
  am = nullptr;
  progress_added.active = nullptr;
}

}  // namespace iris::device
