// MPI_THREAD_MULTIPLE's receives matched without the call lock
// (recv_multiple.hpp).
#include "device/recv_multiple.hpp"

#include <atomic>

#include "device/recv.hpp"
#include "device/rendezvous.hpp"
#include "device/runtime.hpp"

namespace iris::device {
namespace {

// Newest first, linked through request::next. A push publishes the
// request's fields (release); the drain takes the whole stack (acquire).
std::atomic<request *> taken{nullptr};

}  // namespace

void recv_post_unlocked(context_queues &q, request &r) {
  r.aside = true;
  if (unexpected_msg *m = rt->matching.take_or_post(q, &r, true)) {
    r.taken = m;
    recv_taken_later(r);
  }
}

void recv_taken_later(request &r) {
  request *head = taken.load(std::memory_order_relaxed);
  do {
    r.next = head;
  } while (
      !taken.compare_exchange_weak(head, &r, std::memory_order_release, std::memory_order_relaxed));
}

void recv_taken_drain() {
  rendezvous_cts_drain();
  request_release_drain();
  if (taken.load(std::memory_order_relaxed) == nullptr) return;
  request *r = taken.exchange(nullptr, std::memory_order_acquire);
  while (r != nullptr) {
    request *next = r->next;
    r->next = nullptr;  // not posted: a cancel finds it so (matcher::withdraw)
    unexpected_msg *m = r->taken;
    r->taken = nullptr;
    recv_taken(*r, m);
    r = next;
  }
}

}  // namespace iris::device
