// The runtime's lookups: communicators by handle and by context id, the
// published communicators of receives posted without the call lock, and the
// statistics summed over the VCs. MPI_Init and MPI_Finalize build and end it
// (device/setup/).
#include "device/runtime/runtime.hpp"

#include "include/mpi.h"

namespace iris::device {

runtime *rt = nullptr;

std::uint64_t runtime_serial_next() {
  static std::atomic<std::uint64_t> serials{0};
  return serials.fetch_add(1, std::memory_order_relaxed) + 1;
}

void comm_publish(runtime &r, std::size_t slot) {
  if (slot >= published_comm_limit) return;
  communicator *c = r.comms[slot].get();
  // Its receive queues first, for receives posted without the call lock;
  // out of memory for them, it stays unpublished (its calls take the lock).
  c->queues = r.matching.queues_of(c->context);
  if (c->queues == nullptr) return;
  r.published_comms[slot].store(c, std::memory_order_release);
}

statistics stats_total(runtime &r) {
  statistics s = r.stats;
  for (vc &v : r.vcs) {
    const vc_guard guard(v);
    s.eager += v.unlocked_eager;
    s.credit_packets += v.aside_credit_packets;
    s.data_aside += static_cast<std::uint64_t>(v.aside_data.get());
    s.data_sent_aside += static_cast<std::uint64_t>(v.aside_sent.get());
  }
  s.rendezvous_pipeline += r.matching.aside_rendezvous();
  return s;
}

communicator *comm_lookup(int handle) {
  if (!handle_is(handle, handle_kind::comm) || rt == nullptr) return nullptr;
  const std::size_t index = handle_index(handle);
  if (index == 0 || index >= rt->comms.size()) return nullptr;
  return rt->comms[index].get();
}

communicator *comm_of_context(std::uint32_t context) {
  for (const auto &c : rt->comms) {
    if (c && c->context == context) return c.get();
  }
  return nullptr;
}

}  // namespace iris::device
