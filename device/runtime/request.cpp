#include "device/core/request.hpp"

#include "device/datatypes/dtype.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

void request_release_freed(request &r) {
  // Freed by the user: nobody will wait for it (its data is in place).
  rt->requests.release(&r);
}

void request_wait_release(request *r) {
  if (r == nullptr) return;
  progress_until([r] { return request_done(*r); });
  rt->requests.release(r);
}

namespace {

handover_stack<&request::next> released_later;

}  // namespace

void request_release_later(request *r) {
  released_later.push(*r);
}

void request_release_drain() {
  released_later.drain([](request &r) { rt->requests.release(&r); });
}

namespace {

// This thread's cache (request_cache_take). Only MULTIPLE touches it.
struct request_cache {
  static constexpr int capacity = 32;
  std::uint64_t serial = 0;  // of the runtime whose pool it came from
  int count = 0;
  request *items[capacity] = {};
};
// constinit: initialised as the thread starts, so no access tests a guard
// (which cost a second __tls_get_addr at every take).
constinit thread_local request_cache cache;

}  // namespace

// Each function looks the thread_local up once (`c`): in a library that may
// be dlopen'ed every access is a call of __tls_get_addr, which the compiler
// repeats around calls it cannot see through (callgrind counted 3 a request
// filled before).
request *request_cache_take() {
  request_cache &c = cache;
  if (c.count == 0 || c.serial != rt->serial) return nullptr;
  return c.items[--c.count];
}

void request_cache_put(request *r) {
  request_cache &c = cache;
  c.items[c.count++] = r;
}

bool request_cache_recycle(request *r) {
  request_cache &c = cache;
  if (c.count == request_cache::capacity || c.serial != rt->serial) return false;
  const std::uint32_t index = r->index;
  const std::uint32_t generation = r->generation + 1;  // ids of its last use are refused
  r->~request();
  new (r) request;
  r->index = index;
  r->generation = generation;
  r->in_use = true;
  c.items[c.count++] = r;
  return true;
}

void request_cache_fill() {
  request_cache &c = cache;
  runtime &now = *rt;
  if (c.serial != now.serial) {
    c.serial = now.serial;
    c.count = 0;
  }
  int count = c.count;
  while (count < request_cache::capacity) {
    c.items[count++] = now.requests.allocate(request_kind::send, nullptr);
  }
  c.count = count;
}

void request_cache_drop() {
  request_cache &c = cache;
  if (c.serial == rt->serial) {
    while (c.count > 0) rt->requests.release(c.items[--c.count]);
  }
  c.count = 0;
}

}  // namespace iris::device
