// Collectives built on point-to-point, on each communicator's collective
// context so that they never match user traffic.
#include "device/collectives/collective.hpp"

#include "device/protocols/recv.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

namespace {

// Waits for `r` (nullptr: none), releases it and returns its error class.
int wait_error(request *r) {
  if (r == nullptr) return 0;
  progress_until([r] { return request_done(*r); });
  const int err = r->status_error;
  rt->requests.release(r);
  return err;
}

}  // namespace

int barrier(const communicator &comm, int tag_base) {
  // Dissemination: in round k every rank signals rank + 2^k and hears from
  // rank - 2^k; after ceil(log2 size) rounds everyone has heard from all.
  const std::uint32_t context = comm.collective_context();
  int round = 0;
  for (int distance = 1; distance < comm.size; distance *= 2, ++round) {
    const int to = (comm.rank + distance) % comm.size;
    const int from = (comm.rank - distance + comm.size) % comm.size;
    request *recv = recv_start(comm, context, nullptr, 0, from, tag_base + round);
    const int sent = wait_error(send_start(comm, context, nullptr, 0, to, tag_base + round));
    const int got = wait_error(recv);
    // A failure or a revocation (protocols/recovery.hpp): the rounds after
    // would meet it too.
    if (sent != 0 || got != 0) return sent != 0 ? sent : got;
  }
  return 0;
}

}  // namespace iris::device
