#include "device/request.hpp"

#include "device/dtype.hpp"
#include "device/progress.hpp"
#include "device/runtime.hpp"

namespace iris::device {

void request_release_freed(request &r) {
  // Freed by the user: nobody will wait for it (its data is in place).
  rt->requests.release(&r);
}

void request_wait_release(request *r) {
  if (r == nullptr) return;
  progress_until([r] { return r->complete; });
  rt->requests.release(r);
}

namespace {

// This thread's cache (request_cache_take). Only MULTIPLE touches it.
struct request_cache {
  static constexpr int capacity = 32;
  std::uint64_t serial = 0;  // of the runtime whose pool it came from
  int count = 0;
  request *items[capacity];
};
thread_local request_cache cache;

}  // namespace

request *request_cache_take() {
  if (cache.count == 0 || cache.serial != rt->serial) return nullptr;
  return cache.items[--cache.count];
}

void request_cache_put(request *r) {
  cache.items[cache.count++] = r;
}

void request_cache_fill() {
  if (cache.serial != rt->serial) {
    cache.serial = rt->serial;
    cache.count = 0;
  }
  while (cache.count < request_cache::capacity) {
    cache.items[cache.count++] = rt->requests.allocate(request_kind::send, nullptr);
  }
}

void request_cache_drop() {
  if (cache.serial == rt->serial) {
    while (cache.count > 0) rt->requests.release(cache.items[--cache.count]);
  }
  cache.count = 0;
}

}  // namespace iris::device
