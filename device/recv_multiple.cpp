// MPI_THREAD_MULTIPLE's receives posted without the call lock
// (recv_multiple.hpp).
#include "device/recv_multiple.hpp"

#include <atomic>

#include "device/recv.hpp"
#include "device/runtime.hpp"

namespace iris::device {
namespace {

// Newest first, linked through request::next. A push publishes the
// request's fields (release); the drain takes the whole stack (acquire).
std::atomic<request *> pending{nullptr};

}  // namespace

void recv_post_pending(request &r) {
  request *head = pending.load(std::memory_order_relaxed);
  do {
    r.next = head;
  } while (!pending.compare_exchange_weak(head, &r, std::memory_order_release,
                                          std::memory_order_relaxed));
}

void recv_pending_drain() {
  if (pending.load(std::memory_order_relaxed) == nullptr) return;
  request *newest = pending.exchange(nullptr, std::memory_order_acquire);
  // Oldest first: each thread's receives were pushed in its program order.
  request *oldest = nullptr;
  while (newest != nullptr) {
    request *next = newest->next;
    newest->next = oldest;
    oldest = newest;
    newest = next;
  }
  while (oldest != nullptr) {
    request *r = oldest;
    oldest = r->next;
    ++rt->stats.unlocked_receives;
    recv_start(*r->comm, r->key.context, r->buffer, r->bytes, r->key.source, r->key.tag, r);
  }
}

}  // namespace iris::device
