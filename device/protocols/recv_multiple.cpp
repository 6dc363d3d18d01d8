// MPI_THREAD_MULTIPLE's receives matched without the call lock
// (recv_multiple.hpp).
#include "device/protocols/recv_multiple.hpp"

#include <atomic>

#include "device/protocols/recv.hpp"
#include "device/protocols/rendezvous.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {
namespace {

// Linked through request::next: unlinked, a receive is not posted, so a
// cancel finds it so (matcher::withdraw).
handover_stack<&request::next> taken;

}  // namespace

void recv_post_unlocked(context_queues &q, request &r) {
  r.aside = true;
  if (unexpected_msg *m = rt->matching.take_or_post(q, &r, true)) {
    r.taken = m;
    recv_taken_later(r);
  }
}

void recv_taken_later(request &r) {
  taken.push(r);
}

void recv_taken_drain() {
  rendezvous_cts_drain();
  request_release_drain();
  taken.drain([](request &r) {
    unexpected_msg *m = r.taken;
    r.taken = nullptr;
    recv_taken(r, m);
  });
}

}  // namespace iris::device
