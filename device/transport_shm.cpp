#include "device/transport_shm.hpp"

#include <cstring>

#include "device/errors.hpp"
#include "device/runtime.hpp"
#include "shm/cma.hpp"

namespace iris::device {

shm_transport::shm_transport(runtime &r, std::vector<int> local_ranks, int local_index)
    : local_ranks_(std::move(local_ranks)), local_index_(local_index) {
  const shm::segment_shape shape{static_cast<int>(local_ranks_.size()), r.config.shm_ring_size};
  name_ =
      "/" + pmi::shm_name_prefix(r.pmi->job_id()) + "node" + std::to_string(r.pmi->node_of(r.rank));
  if (local_index_ == 0) segment_ = shm::segment::create(name_, shape);
  r.pmi->put("iris.cma", shm::cma::card());
}

void shm_transport::connect(runtime &r) {
  const int local_size = static_cast<int>(local_ranks_.size());
  const shm::segment_shape shape{local_size, r.config.shm_ring_size};
  if (local_index_ != 0) segment_ = shm::segment::attach(name_, shape);
  segment_->mark_attached();
  bool cma = false;
  try {
    const int probe_peer = local_ranks_[static_cast<std::size_t>((local_index_ + 1) % local_size)];
    cma = shm::cma::permitted(r.pmi->get(probe_peer, "iris.cma"));
  } catch (const std::exception &) {
    cma = false;  // no card: use the pipeline
  }
  for (int i = 0; i < local_size; ++i) {
    if (i == local_index_) continue;
    const int world = local_ranks_[static_cast<std::size_t>(i)];
    vc &v = r.vcs[static_cast<std::size_t>(world)];
    v.via = this;
    v.slot = static_cast<int>(peers_.size());
    v.fragment = r.config.shm_fragment_size;
    v.credits = v.window = r.config.eager_window;
    v.eager_limit = r.config.eager_limit;
    peers_.push_back(
        peer{world, segment_->sender(local_index_, i), segment_->receiver(i, local_index_), cma});
  }
}

xfer shm_transport::send(vc &to, const packet_header &h, std::span<const iovec> payload) {
  std::size_t bytes = 0;
  for (const iovec &part : payload) bytes += part.iov_len;
  shm::ring_sender &tx = peers_[static_cast<std::size_t>(to.slot)].tx;
  std::byte *slot = tx.reserve(sizeof(h) + bytes);
  if (slot == nullptr) return xfer::retry;
  std::memcpy(slot, &h, sizeof(h));
  slot += sizeof(h);
  for (const iovec &part : payload) {
    std::memcpy(slot, part.iov_base, part.iov_len);
    slot += part.iov_len;
  }
  tx.commit();
  return xfer::done;
}

inline int shm_transport::drain(peer &p, int budget) {
  int handled = 0;
  for (; handled < budget; ++handled) {
    shm::record_view record{};
    const shm::peek_status status = p.rx.peek(record);
    if (status == shm::peek_status::empty) break;
    if (status == shm::peek_status::corrupt || record.length < sizeof(packet_header)) {
      fatal("progress", "corrupt record in the shared-memory ring from rank %d", p.world_rank);
    }
    packet_header h;
    std::memcpy(&h, record.bytes, sizeof(h));
    const char *why = packet_deliver(rt->vcs[static_cast<std::size_t>(p.world_rank)], h,
                                     record.bytes + sizeof(h), record.length - sizeof(h));
    if (why != nullptr) {
      fatal("progress", "bad packet from rank %d over shared memory: %s", p.world_rank, why);
    }
    p.rx.consume();
  }
  return handled;
}

int shm_transport::poll(int budget) {
  int events = 0;
  for (peer &p : peers_) events += drain(p, budget);
  return events;
}

void shm_transport::expose(vc &to, request &r, rts_payload &where) {
  (void)to;
  where.pid = rt->pid;
  where.address = reinterpret_cast<std::uint64_t>(r.buffer);
}

// Under `auto`, one message alone goes through the pipeline: sender and
// receiver copy at the same time, which halves its latency. When a pipeline
// receive is already streaming, this rank is moving many messages at once:
// then a single copy by the receiver (CMA) moves more, except for very large
// messages while this rank sends nothing itself: CMA of a large buffer is
// slow on virtual machines, and the sender's idle core copies through the
// pipeline faster. Measured in bench/README.md.
bool shm_transport::cma_wanted(std::size_t bytes) const {
  switch (rt->config.engine) {
    case rndv_engine::cma:
      return true;
    case rndv_engine::pipeline:
      return false;
    case rndv_engine::automatic:
      if (bytes < rt->config.cma_threshold || rt->pipeline_receives == 0) return false;
      return bytes < rt->config.pipeline_large || rt->rendezvous_sends > 0;
  }
  return false;
}

xfer shm_transport::read(vc &from, const rts_payload &where, std::byte *to, std::size_t bytes,
                         std::uint64_t cookie) {
  (void)cookie;
  peer &p = peers_[static_cast<std::size_t>(from.slot)];
  if (!p.cma || !cma_wanted(bytes)) return xfer::retry;
  if (!shm::cma::read(where.pid, where.address, to, bytes)) {
    p.cma = false;  // the kernel refused a read: stop trying with this peer
    return xfer::retry;
  }
  ++rt->stats.rendezvous_cma;
  return xfer::done;
}

std::string shm_transport::describe() const {
  bool cma = false;
  for (const peer &p : peers_) cma = cma || p.cma;
  return "shm: node segment " + name_ + ", " + std::to_string(local_ranks_.size()) +
         " local ranks (index " + std::to_string(local_index_) + "), cma " +
         (cma ? "permitted" : "refused");
}

}  // namespace iris::device
