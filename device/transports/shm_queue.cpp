// The shm transport of a large node (shm_queue_transport): a receive queue
// per rank and pooled rings for busy pairs (shm/README.md).
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "device/protocols/credit.hpp"
#include "device/protocols/dispatch.hpp"
#include "device/runtime/errors.hpp"
#include "device/runtime/runtime.hpp"
#include "device/transports/shm.hpp"
#include "device/transports/shm_common.hpp"
#include "shm/cma.hpp"

namespace iris::device {
namespace {

// What a queue record is (the `kind` of shm/queue.hpp).
constexpr std::uint8_t record_packet = 1;  // a packet: header and payload
constexpr std::uint8_t record_ring = 2;    // the sender's ring to this rank: its offset

}  // namespace

shm_queue_transport::shm_queue_transport(runtime &r, std::vector<int> local_ranks, int local_index)
    : local_ranks_(std::move(local_ranks)), local_index_(local_index) {
  shape_ =
      shm::node_shape{static_cast<int>(local_ranks_.size()), r.transport_config.shm.queue_cells,
                      r.transport_config.shm.ring_size, r.transport_config.shm.pool_size};
  busy_packets_ = r.transport_config.shm.busy_packets;
  name_ = "/" + pmi::shm_name_prefix(*r.pmi) + "node" + std::to_string(r.pmi->node_of(r.rank));
  if (local_index_ == 0) segment_ = shm::node_segment::create(name_, shape_);
  r.pmi->put("iris.cma", shm::cma::card());
  bells_ = shm::bells_register();  // before the fence: before any peer may sleep
}

void shm_queue_transport::connect(runtime &r) {
  const int local_size = static_cast<int>(local_ranks_.size());
  if (local_index_ != 0) segment_ = shm::node_segment::attach(name_, shape_);
  segment_->mark_attached();
  placement_ = segment_->place_queue(local_index_);
  inbox_ = segment_->queue_of(local_index_);
  bool cma = false;
  try {
    const int probe_peer = local_ranks_[static_cast<std::size_t>((local_index_ + 1) % local_size)];
    cma = shm::cma::permitted(r.pmi->get(probe_peer, "iris.cma"));
  } catch (const std::exception &) {
    cma = false;  // no card: use the pipeline
  }
  // A pair without a ring sends everything through the queue: every record
  // must fit one (half the queue).
  const std::size_t queue_payload =
      shm::queue_max_record(shape_.queue_cells) - sizeof(packet_header);
  const std::size_t fragment = std::min(r.transport_config.shm.fragment_size, queue_payload);
  const std::size_t eager_limit = std::min(r.config.eager_limit, queue_payload);
  slot_of_local_.assign(static_cast<std::size_t>(local_size), -1);
  peers_.reserve(static_cast<std::size_t>(local_size - 1));
  announced_ = std::make_unique<std::atomic<peer *>[]>(static_cast<std::size_t>(local_size));
  for (int i = 0; i < local_size; ++i) {
    if (i == local_index_) continue;
    const int world = local_ranks_[static_cast<std::size_t>(i)];
    vc &v = r.vcs[static_cast<std::size_t>(world)];
    v.via = this;
    v.slot = static_cast<int>(peers_.size());
    v.fragment = fragment;
    v.stream_width = stream_width;
    v.credits = v.window = r.config.eager_window;
    v.eager_limit = eager_limit;
    slot_of_local_[static_cast<std::size_t>(i)] = v.slot;
    peer p;
    p.world_rank = world;
    p.local = i;
    p.queue = segment_->queue_to(i);
    p.bell = &segment_->bell_of(i);
    p.cma = cma;
    peers_.push_back(std::move(p));
  }
  bell_.attach(segment_->bell_of(local_index_));
}

void shm_queue_transport::watch_peers() {
  std::vector<std::pair<int, shm::bell *>> peers;
  for (const peer &p : peers_) peers.emplace_back(p.world_rank, p.bell);
  start_watch(watch_, peers);
}

// A pair is busy once it sent busy_packets_ packets through the queue, or
// at once for a packet longer than a cell. A ring that cannot be had (pool
// spent, /dev/shm full) leaves the pair on the queue for good.
void shm_queue_transport::take_ring(peer &p) {
  const std::optional<std::uint64_t> offset = segment_->ring_take();
  if (!offset) {
    p.via = route::queue_only;
    return;
  }
  p.ring_offset = *offset;
  p.tx = segment_->ring_sender_at(*offset);
  p.via = route::announcing;
}

xfer shm_queue_transport::send(vc &to, const packet_header &h, std::span<const iovec> payload) {
  peer &p = peers_[static_cast<std::size_t>(to.slot)];
  std::size_t bytes = 0;
  for (const iovec &part : payload) bytes += part.iov_len;
  if (p.via == route::ring) {
    std::byte *slot = p.tx.reserve(sizeof(h) + bytes);
    if (slot == nullptr) return xfer::retry;
    std::memcpy(slot, &h, sizeof(h));
    slot += sizeof(h);
    for (const iovec &part : payload) {
      std::memcpy(slot, part.iov_base, part.iov_len);
      slot += part.iov_len;
    }
    p.tx.commit();
    shm::bell_wake(*p.bell);
    return xfer::done;
  }
  if (p.via == route::queue &&
      (p.queued >= busy_packets_ || sizeof(h) + bytes > shm::queue_cell_payload)) {
    take_ring(p);
  }
  if (p.via == route::announcing) {
    // The announcement goes behind every packet this rank queued to the
    // peer; the peer polls the ring only once it took the announcement, so
    // the pair's order holds across the switch.
    const iovec where{&p.ring_offset, sizeof(p.ring_offset)};
    if (!p.queue.push(static_cast<std::uint16_t>(local_index_), record_ring, {&where, 1})) {
      return xfer::retry;
    }
    p.via = route::ring;
    return shm_queue_transport::send(to, h, payload);  // not the VC-locking override
  }
  return send_queued(p, h, payload, bytes);
}

xfer shm_queue_transport::send_queued(peer &p, const packet_header &h,
                                      std::span<const iovec> payload, std::size_t bytes) {
  (void)bytes;
  iovec parts[3];
  parts[0] = {const_cast<packet_header *>(&h), sizeof(h)};
  const std::size_t n = std::min<std::size_t>(payload.size(), 2);
  std::copy_n(payload.begin(), n, parts + 1);
  if (!p.queue.push(static_cast<std::uint16_t>(local_index_), record_packet, {parts, n + 1})) {
    return xfer::retry;
  }
  ++p.queued;
  shm::bell_wake(*p.bell);
  return xfer::done;
}

template <pass P>
bool shm_queue_transport::deliver(int world_rank, const std::byte *bytes, std::size_t length) {
  if (length < sizeof(packet_header)) {
    if constexpr (P == pass::aside) return false;  // the call lock's poll says so
    fatal("progress", "corrupt record in the shared-memory queue from rank %d", world_rank);
  }
  packet_header h;
  std::memcpy(&h, bytes, sizeof(h));
  vc &from = rt->vcs[static_cast<std::size_t>(world_rank)];
  if constexpr (P == pass::shared) credit_fold(from);  // what aside passes owe it
  return packet_hand_on<P>(from, h, bytes + sizeof(h), length - sizeof(h), world_rank);
}

template <pass P>
int shm_queue_transport::drain_queue(int budget) {
  int handled = 0;
  for (; handled < budget; ++handled) {
    shm::queue_record record{};
    const shm::peek_status status = inbox_.peek(record);
    if (status == shm::peek_status::empty) break;
    const int slot = record.from < slot_of_local_.size() ? slot_of_local_[record.from] : -1;
    if (status == shm::peek_status::corrupt || slot < 0) {
      if constexpr (P == pass::aside) break;  // the call lock's poll reports it
      fatal("progress", "corrupt record in this rank's shared-memory queue (from local rank %d)",
            static_cast<int>(record.from));
    }
    peer &p = peers_[static_cast<std::size_t>(slot)];
    if (record.kind == record_packet) {
      if (!deliver<P>(p.world_rank, record.bytes, record.length)) break;
    } else if constexpr (P == pass::aside) {
      break;  // a ring's announcement, or a bad kind: the call lock's poll's
    } else if (record.kind == record_ring) {
      std::uint64_t offset = 0;
      if (record.length == sizeof(offset)) std::memcpy(&offset, record.bytes, sizeof(offset));
      if (record.length != sizeof(offset) || !segment_->is_ring_offset(offset) || p.rx.attached()) {
        fatal("progress", "bad ring announcement from rank %d over shared memory", p.world_rank);
      }
      p.rx = segment_->ring_receiver_at(offset);
      const std::size_t n = announced_count_.load(std::memory_order_relaxed);
      announced_[n].store(&p, std::memory_order_relaxed);
      announced_count_.store(n + 1, std::memory_order_release);
    } else {
      fatal("progress", "record of unknown kind %d in the shared-memory queue from rank %d",
            static_cast<int>(record.kind), p.world_rank);
    }
    inbox_.consume();
  }
  return handled;
}

template <pass P>
int shm_queue_transport::drain_ring(peer &p, int budget) {
  int handled = 0;
  for (; handled < budget; ++handled) {
    shm::record_view record{};
    const shm::peek_status status = p.rx.peek(record);
    if (status == shm::peek_status::empty) break;
    // Its senders write full headers only (compact records: shm_transport).
    if (status == shm::peek_status::corrupt || record.kind != shm::record_kind::data) {
      if constexpr (P == pass::aside) break;  // the call lock's poll reports it
      fatal("progress", "corrupt record in the shared-memory ring from rank %d", p.world_rank);
    }
    if (!deliver<P>(p.world_rank, record.bytes, record.length)) break;
    p.rx.consume();
  }
  return handled;
}

template <pass P>
int shm_queue_transport::polled(int budget) {
  const bool locked = P == pass::shared && aside_.settle();
  int events = 0;
  {
    const lock_if reading(inbox_lock_, locked);
    events += drain_queue<P>(budget);
  }
  const std::size_t rings = announced_count_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < rings; ++i) {
    peer *p = announced_[i].load(std::memory_order_relaxed);
    // An empty ring is not locked: one load, no exchange.
    if (locked && !p->rx.ready_published()) continue;
    const lock_if reading(p->rx_lock, locked);
    events += drain_ring<P>(*p, budget);
  }
  return events;
}

int shm_queue_transport::poll_unlocked(int budget) {
  if (!aside_.on_or_ask()) return 0;
  int events = 0;
  if (inbox_lock_.try_lock()) {
    events += drain_queue<pass::aside>(budget);
    inbox_lock_.unlock();
  }
  const std::size_t rings = announced_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < rings; ++i) {
    peer &p = *announced_[i].load(std::memory_order_relaxed);
    if (!p.rx.ready_published() || !p.rx_lock.try_lock()) continue;
    events += drain_ring<pass::aside>(p, budget);
    p.rx_lock.unlock();
  }
  return events;
}

int shm_queue_transport::poll(int budget) {
  return polled<pass::plain>(budget);
}

int shm_queue_transport::poll_shared(int budget) {
  return polled<pass::shared>(budget);
}

void shm_queue_transport::expose(vc &to, request &r, rts_payload &where) {
  (void)to;
  where.pid = rt->pid;
  where.address = reinterpret_cast<std::uint64_t>(r.buffer);
}

bool shm_queue_transport::cma_wanted(std::size_t bytes) const {
  return cma_chosen(bytes);
}

xfer shm_queue_transport::read(vc &from, const rts_payload &where, std::byte *to, std::size_t bytes,
                               std::uint64_t cookie) {
  (void)cookie;
  peer &p = peers_[static_cast<std::size_t>(from.slot)];
  if (!p.cma || !cma_wanted(bytes)) return xfer::retry;
  if (!shm::cma::read(where.pid, where.address, to, bytes)) {
    p.cma = false;  // the kernel refused a read: stop trying with this peer
    return xfer::retry;
  }
  ++cma_messages_;
  return xfer::done;
}

void shm_queue_transport::expose_layout(vc &to, rts_payload &where, const void *base,
                                        const void *layout, std::size_t layout_bytes) {
  if (!peers_[static_cast<std::size_t>(to.slot)].cma ||
      rt->transport_config.shm.engine == rndv_engine::pipeline) {
    return;
  }
  name_layout(where, base, layout, layout_bytes);
}

std::size_t shm_queue_transport::scattered_min_block() const {
  return rt->transport_config.shm.scattered_min_block;
}

bool shm_queue_transport::reads_scattered(vc &from, std::size_t bytes) {
  // The same choice as for one buffer: on this VM a lone message moves
  // faster through the pipeline, scattered or not (bench/results/).
  return peers_[static_cast<std::size_t>(from.slot)].cma && cma_chosen(bytes);
}

xfer shm_queue_transport::read_scattered(vc &from, const rts_payload &where, read_plan &plan) {
  const xfer read =
      cma_read_scattered(peers_[static_cast<std::size_t>(from.slot)].cma, where.pid, plan);
  if (read == xfer::done && plan.message()) ++cma_messages_;
  return read;
}

bool shm_queue_transport::statistic(std::string_view name, std::uint64_t &value) const {
  return cma_statistic(cma_messages_, name, value);
}

std::string shm_queue_transport::describe() const {
  bool cma = false;
  for (const peer &p : peers_) cma = cma || p.cma;
  return "shm: node segment " + name_ + ", " + std::to_string(local_ranks_.size()) +
         " local ranks (index " + std::to_string(local_index_) + "), receive queues of " +
         std::to_string(shape_.queue_cells) + " cells, pool of " +
         std::to_string(shape_.pool_slots()) + " rings, " + placement_ + ", cma " +
         (cma ? "permitted" : "refused");
}

// Counted from each peer's own state, which its sends write (under its VC's
// lock under MULTIPLE): called at MPI_Finalize, when nothing sends.
std::string shm_queue_transport::statistics() const {
  std::uint64_t queued = 0, announced = 0, refused = 0;
  for (const peer &p : peers_) {
    queued += p.queued;
    announced += p.via == route::ring ? 1 : 0;
    refused += p.via == route::queue_only ? 1 : 0;
  }
  return "shm: packets through queues " + std::to_string(queued) + ", rings announced " +
         std::to_string(announced) + ", refused " + std::to_string(refused) + ", rings polled " +
         std::to_string(announced_count_.load(std::memory_order_relaxed)) +
         (segment_->pool_closed() ? ", pool closed: /dev/shm full" : "") +
         ", messages read by cma " + std::to_string(cma_messages_);
}

}  // namespace iris::device
