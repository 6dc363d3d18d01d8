#include "device/transports/shm.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>

#include "device/protocols/credit.hpp"
#include "device/protocols/dispatch.hpp"
#include "device/runtime/errors.hpp"
#include "device/runtime/runtime.hpp"
#include "device/transports/shm_common.hpp"
#include "shm/block.hpp"
#include "shm/cma.hpp"

namespace iris::device {

// MPIX_Stat_get's name for the messages an shm transport read with CMA.
bool cma_statistic(std::uint64_t messages, std::string_view name, std::uint64_t &value) {
  if (name != "rendezvous_cma") return false;
  value = messages;
  return true;
}

void name_layout(rts_payload &where, const void *base, const void *layout,
                 std::size_t layout_bytes) {
  where.pid = rt->pid;
  where.address = reinterpret_cast<std::uint64_t>(base);
  where.layout = reinterpret_cast<std::uint64_t>(layout);
  where.layout_bytes = layout_bytes;
}

namespace {

// A pipeline message starts at the ring's offset 0 when the ring is drained
// and its tail at least this far in (shm::ring_sender::rewind_if_drained):
// lone messages then reuse the first MiB or so of a 2-4 MiB ring, lines
// still in the caches. Ping-pongs of 256 KiB-2 MiB took 8-14% less time
// over the 4 MiB rings of 2 ranks, rewinding from 512 KiB, 1 MiB or 2 MiB
// alike (bench/results/). Far past a fragment: until the
// receiver crosses the skip record the sender has only the lines before.
constexpr std::size_t rewind_from = std::size_t{1} << 20;

}  // namespace

shm_transport::shm_transport(runtime &r, std::vector<int> local_ranks, int local_index)
    : local_ranks_(std::move(local_ranks)), local_index_(local_index) {
  const shm::segment_shape shape{static_cast<int>(local_ranks_.size()),
                                 r.transport_config.shm.ring_size};
  name_ = "/" + pmi::shm_name_prefix(*r.pmi) + "node" + std::to_string(r.pmi->node_of(r.rank));
  if (local_index_ == 0) segment_ = shm::segment::create(name_, shape);
  r.pmi->put("iris.cma", shm::cma::card());
  bells_ = shm::bells_register();  // before the fence: before any peer may sleep
}

void shm_transport::connect(runtime &r) {
  const int local_size = static_cast<int>(local_ranks_.size());
  const shm::segment_shape shape{local_size, r.transport_config.shm.ring_size};
  if (local_index_ != 0) segment_ = shm::segment::attach(name_, shape);
  segment_->mark_attached();
  segment_->populate(local_index_);
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
    v.fragment = r.transport_config.shm.fragment_size;
    v.stream_width = stream_width;
    v.credits = v.window = r.config.eager_window;
    v.eager_limit = r.config.eager_limit;
    peers_.push_back(peer{world,
                          &segment_->bell_of(i),
                          segment_->sender(local_index_, i),
                          segment_->receiver(i, local_index_),
                          cma,
                          0,
                          {},
                          flow::alone,
                          {}});
  }
  bell_.attach(segment_->bell_of(local_index_));
}

// A packet whose last two header fields are zero (every packet but CTS and
// data fragments: eager messages, RTS, FIN, credits, acks) goes as a
// compact record, without them: a 16-byte record header, 32 bytes of
// header and up to 16 bytes of payload then fill one cache line instead of
// two. One whose length is also its payload's and that fits one line so
// (eager messages of 17 to 32 bytes) goes as a brief record, without the
// length too (24 bytes: the first 16 and the sender's request), started in
// the ring header's 8 spare bytes: its payload follows at 32. Larger
// payloads keep the layouts whose payloads start 16-byte aligned (at 48 and
// 64), and the code they had: a 64-byte message took 0.29 us a ping-pong
// at 32 and 0.33 at 40 against 0.21 at 48, and 0.24 with one send() for
// all three layouts (bench/results/, stop 30). drain() puts the fields
// back.
constexpr std::size_t compact_header_size = offsetof(packet_header, receiver_request);
constexpr std::size_t brief_front = offsetof(packet_header, length);
constexpr std::size_t brief_header_size = brief_front + sizeof(std::uint64_t);
constexpr std::size_t compact_max_payload =
    shm::cache_line - shm::record_header_size - compact_header_size;
constexpr std::size_t brief_max_payload =
    compact_max_payload + compact_header_size + shm::record_spare_bytes - brief_header_size;
static_assert(compact_header_size == 32 && brief_header_size == 24 && brief_max_payload == 32 &&
              offsetof(packet_header, sender_request) == brief_front + sizeof(std::uint64_t) &&
              offsetof(packet_header, offset) + sizeof(std::uint64_t) == sizeof(packet_header));

// A brief record (above), for an eager message of 17 to 32 bytes.
xfer send_brief(shm::ring_sender &tx, const packet_header &h, std::span<const iovec> payload) {
  std::byte *slot = tx.reserve(brief_header_size - shm::record_spare_bytes + h.length);
  if (slot == nullptr) return xfer::retry;
  slot -= shm::record_spare_bytes;
  std::memcpy(slot, &h, brief_front);
  std::memcpy(slot + brief_front, &h.sender_request, sizeof(h.sender_request));
  slot += brief_header_size;
  for (const iovec &part : payload) {
    std::memcpy(slot, part.iov_base, part.iov_len);
    slot += part.iov_len;
  }
  tx.commit(shm::record_kind::brief);
  return xfer::done;
}

// Reads a brief record's header; returns its payload's bytes.
std::size_t read_brief(const shm::record_view &record, packet_header &h) {
  const std::byte *const start = record.bytes - shm::record_spare_bytes;
  std::memcpy(&h, start, brief_front);
  h.length = record.length + shm::record_spare_bytes - brief_header_size;
  std::memcpy(&h.sender_request, start + brief_front, sizeof(h.sender_request));
  h.receiver_request = 0;
  h.offset = 0;
  return h.length;
}

xfer shm_transport::send(vc &to, const packet_header &h, std::span<const iovec> payload) {
  std::size_t bytes = 0;
  for (const iovec &part : payload) bytes += part.iov_len;
  peer &p = peers_[static_cast<std::size_t>(to.slot)];
  shm::ring_sender &tx = p.tx;
  const bool compact = (h.receiver_request | h.offset) == 0;
  if (compact && bytes > compact_max_payload && bytes <= brief_max_payload && h.length == bytes)
      [[unlikely]] {
    const xfer done = send_brief(tx, h, payload);
    if (done == xfer::done) shm::bell_wake(*p.bell);
    return done;
  }
  // A message's first data packet: back to the ring's start if drained.
  if (!compact && h.offset == 0 && h.type == packet_type::data) tx.rewind_if_drained(rewind_from);
  const std::size_t head = compact ? compact_header_size : sizeof(h);
  std::byte *slot = tx.reserve(head + bytes);
  if (slot == nullptr) return xfer::retry;
  std::memcpy(slot, &h, compact_header_size);
  if (!compact) {
    std::memcpy(slot + compact_header_size,
                reinterpret_cast<const std::byte *>(&h) + compact_header_size,
                sizeof(h) - compact_header_size);
  }
  slot += head;
  for (const iovec &part : payload) {
    std::memcpy(slot, part.iov_base, part.iov_len);
    slot += part.iov_len;
  }
  tx.commit(compact ? shm::record_kind::compact : shm::record_kind::data);
  shm::bell_wake(*p.bell);
  return xfer::done;
}

// The payload is written straight into the ring record: a typed fragment
// is packed once, not packed and then copied.
xfer shm_transport::send_filled(vc &to, const packet_header &h, std::size_t bytes,
                                const payload_filler &f, std::byte *staging) {
  (void)staging;
  peer &p = peers_[static_cast<std::size_t>(to.slot)];
  std::byte *slot = p.tx.reserve(sizeof(h) + bytes);
  if (slot == nullptr) return xfer::retry;
  std::memcpy(slot, &h, sizeof(h));
  f.fill(f.context, slot + sizeof(h));
  p.tx.commit();
  shm::bell_wake(*p.bell);  // as every packet: the peer may sleep waiting for this one
  return xfer::done;
}

shm_transport::ring_packet shm_transport::unpack(const peer &p,
                                                 const shm::record_view &record) const {
  const bool compact = record.kind == shm::record_kind::compact;
  const bool brief = record.kind == shm::record_kind::brief;
  const std::size_t head = compact ? compact_header_size : sizeof(packet_header);
  if (brief ? record.length + shm::record_spare_bytes < brief_header_size : record.length < head) {
    fatal("progress", "corrupt record in the shared-memory ring from rank %d", p.world_rank);
  }
  ring_packet out{{}, record.bytes + head, record.length - head};
  if (brief) [[unlikely]] {
    out.length = read_brief(record, out.h);
    out.payload = record.bytes + (record.length - out.length);
  } else if (compact) {
    std::memcpy(&out.h, record.bytes, compact_header_size);
    out.h.receiver_request = 0;
    out.h.offset = 0;
  } else {
    std::memcpy(&out.h, record.bytes, sizeof(out.h));
  }
  return out;
}

template <pass P>
inline int shm_transport::drain(peer &p, int budget, bool locked) {
  int handled = 0;
  vc &from = rt->vcs[static_cast<std::size_t>(p.world_rank)];
  if constexpr (P == pass::shared) {
    credit_fold(from);
    // Threads polling without the call lock read the ring too (an aside
    // pass): the call lock's poll waits for them, never the other way
    // round. An empty ring is not locked: one load, no exchange.
    if (locked && !p.rx.ready_published()) return 0;
  }
  const lock_if reading(p.rx_lock, P == pass::shared && locked);
  if constexpr (P != pass::aside) draining_ = &p;
  for (; handled < budget; ++handled) {
    shm::record_view record{};
    const shm::peek_status status = p.rx.peek(record);
    if (status == shm::peek_status::empty) break;
    if (status == shm::peek_status::corrupt) {
      if constexpr (P == pass::aside) break;  // the call lock's poll reports it
      fatal("progress", "corrupt record in the shared-memory ring from rank %d", p.world_rank);
    }
    const ring_packet packet = unpack(p, record);
    if (!packet_hand_on<P>(from, packet.h, packet.payload, packet.length, p.world_rank)) break;
    p.rx.consume();
  }
  if constexpr (P != pass::aside) draining_ = nullptr;
  return handled;
}

int shm_transport::poll(int budget) {
  int events = 0;
  for (peer &p : peers_) events += drain<pass::plain>(p, budget, false);
  return events;
}

int shm_transport::poll_shared(int budget) {
  const bool locked = aside_.settle();
  int events = 0;
  for (peer &p : peers_) events += drain<pass::shared>(p, budget, locked);
  return events;
}

int shm_transport::poll_unlocked(int budget) {
  if (!aside_.on_or_ask()) return 0;
  int events = 0;
  for (peer &p : peers_) {
    if (!p.rx.ready_published() || !p.rx_lock.try_lock()) continue;
    events += drain<pass::aside>(p, budget, true);
    p.rx_lock.unlock();
  }
  return events;
}

void shm_transport::expose(vc &to, request &r, rts_payload &where) {
  (void)to;
  where.pid = rt->pid;
  where.address = reinterpret_cast<std::uint64_t>(r.buffer);
}

bool shm_transport::next_waiting(peer &p) {
  if (draining_ == &p) return p.rx.next_ready();
  // Under MULTIPLE a thread without the call lock may be reading this ring
  // (drain<pass::aside>): wait for it, as drain does.
  const lock_if reading(p.rx_lock, aside_.locking());
  return p.rx.ready();
}

// Under `auto` the rule (cma_chosen) pipelines a message alone (but reads
// one in a fan-in with CMA: fan_in_watch), and a stream too once the pair
// rings are larger than the floor (the rings a
// small node chooses); over the floor's rings (large nodes' pooled rings, or
// IRIS_SHM_RING_SIZE=262144) it reads a stream with CMA, except for very
// large messages while this rank sends nothing itself (the sender's idle
// core then copies through the pipeline). Then what the peer's messages of
// the same kind have shown decides (engine_choice.hpp): a message alone
// learns apart from streams, since which engine moves one fastest differs
// by 2x either way from machine to machine (bench/results/).
bool shm_transport::cma_wanted(peer &p, vc &from, std::size_t bytes, flow &kind) {
  const bool rule = cma_chosen(bytes);
  const auto &shm = rt->transport_config.shm;
  // While this rank streams large messages out too, both directions copy
  // through the pipeline on both cores, where CMA copies each once: the
  // pipeline then has to show itself faster, not CMA, and its figure
  // counts half (engine_choice::pick).
  const bool both_ways = rt->rendezvous_sends > 0;
  kind = both_ways ? flow::both_ways : flow::one_way;
  if (shm.engine != rndv_engine::automatic || bytes < shm.cma_threshold) return rule;
  const bool others = rt->pipeline_receives > 0 || next_waiting(p);
  const std::uint64_t now = monotonic_ns();
  const bool fan_in = fan_in_.next(from.slot, now);
  if (!others) {
    if (both_ways) return rule;  // an exchange: each side's one receive
    // Just after another peer's message: a fan-in, where the rule reads
    // with CMA. In a gather of 64 KiB at 4 ranks the pipeline took 2.5-4x
    // CMA's time: the root copies every block either way, and each
    // pipelined block waits for its sender to be scheduled (bench/results/).
    kind = fan_in ? flow::fan_in : flow::alone;
    const bool cma = p.engines.pick(bytes, rule || fan_in, now, kind);
    if (!cma) {
      from.alone_started = now;  // timed to its end (alone_timed)
      p.alone_kind = kind;
    }
    return cma;
  }
  const bool cma = p.engines.pick(bytes, rule || both_ways, now, kind);
  if (!cma) from.time_next_stream = true;  // timed even if it streams alone
  return cma;
}

// cma_wanted's rule without what it reads of the call lock's (the streams
// in and out, the engines' figures): the pipeline wherever the rule picks
// it for a message alone. With the pair rings of a small node that is every
// size, so an aside pass answers every rendezvous there; a stream the
// figures would have moved to CMA goes through the pipeline.
bool shm_shared_transport::pipelines_aside(const vc &from, std::size_t bytes) const {
  (void)from;
  const auto &shm = rt->transport_config.shm;
  switch (shm.engine) {
    case rndv_engine::pipeline:
      return true;
    case rndv_engine::cma:
      return false;
    case rndv_engine::automatic:
      return bytes < shm.cma_threshold || shm.ring_size > shm_ring_floor;
  }
  return false;
}

bool shm_transport::times_streams() const {
  return rt->transport_config.shm.engine == rndv_engine::automatic;
}

void shm_transport::stream_timed(vc &from, std::size_t bytes, std::size_t timed, std::uint64_t ns) {
  if (bytes < rt->transport_config.shm.cma_threshold) return;
  peers_[static_cast<std::size_t>(from.slot)].engines.measured(
      bytes, timed, false, ns, monotonic_ns(),
      rt->rendezvous_sends > 0 ? flow::both_ways : flow::one_way);
}

void shm_transport::alone_timed(vc &from, std::size_t bytes, std::uint64_t ns) {
  peer &p = peers_[static_cast<std::size_t>(from.slot)];
  p.engines.measured(bytes, bytes, false, ns, monotonic_ns(), p.alone_kind);
}

void start_watch(liveness_watch &watch, const std::vector<std::pair<int, shm::bell *>> &peers) {
  std::vector<liveness_watch::peer> cards;
  for (const auto &[world, bell] : peers) {
    try {
      cards.push_back({world, rt->pmi->get(world, "iris.cma"), &bell->finished});
    } catch (const std::exception &) {
      // No card: that peer is left to the launcher's word.
    }
  }
  const int watched = watch.start(cards);
  if (rt->config.debug) {
    std::fprintf(stderr, "iris: rank %d: recovery watches %d of %zu processes on this node\n",
                 rt->rank, watched, peers.size());
  }
}

void finish_watch(sleeper_bell &own, liveness_watch &watch) {
  if (own.held()) own.own().finished.store(1, std::memory_order_release);
  watch.stop();
}

void shm_transport::watch_peers() {
  std::vector<std::pair<int, shm::bell *>> peers;
  for (const peer &p : peers_) peers.emplace_back(p.world_rank, p.bell);
  start_watch(watch_, peers);
}

xfer cma_read_scattered(bool &cma, std::int64_t pid, read_plan &plan) {
  read_piece piece;
  while (plan.next(piece)) {
    if (!shm::cma::readv(pid, piece.local, piece.local_count, piece.remote, piece.remote_count,
                         piece.bytes)) {
      cma = false;  // the kernel refused a read: stop trying with this peer
      return xfer::retry;
    }
  }
  return xfer::done;
}

xfer cma_peer_access(bool cma, std::int64_t &pid, int world_rank, bool write, std::uint64_t address,
                     void *local, std::size_t bytes) {
  if (!cma) return xfer::retry;
  if (pid == 0) {
    try {
      pid = shm::cma::card_pid(rt->pmi->get(world_rank, "iris.cma"));
    } catch (const std::exception &) {
      pid = 0;
    }
    if (pid == 0) pid = -1;
  }
  if (pid < 0) return xfer::retry;
  const bool moved = write ? shm::cma::write(pid, address, local, bytes)
                           : shm::cma::read(pid, address, local, bytes);
  return moved ? xfer::done : xfer::retry;
}

namespace {

std::string block_name(int rank, std::uint64_t key) {
  return "/" + pmi::shm_name_prefix(*rt->pmi) + "mem" + std::to_string(rank) + "." +
         std::to_string(key);
}

}  // namespace

block_maps::~block_maps() {
  for (const mapped &m : peers_) shm::block_unmap(m.base, m.bytes);
}

void *block_maps::alloc(std::size_t bytes, std::uint64_t key) {
  try {
    return shm::block_create(block_name(rt->rank, key), bytes);
  } catch (const shm::error &) {
    return nullptr;  // /dev/shm full: plain memory, reached by CMA instead
  }
}

void block_maps::unlink(std::uint64_t key) {
  shm::block_remove(block_name(rt->rank, key));
}

std::byte *block_maps::peer(int world_rank, std::uint64_t key, std::size_t bytes) {
  for (const mapped &m : peers_) {
    if (m.rank == world_rank && m.key == key && m.bytes == bytes) return m.base;
  }
  auto *base = static_cast<std::byte *>(shm::block_map(block_name(world_rank, key), bytes));
  if (base != nullptr) peers_.push_back({world_rank, key, base, bytes});
  return base;
}

bool cma_chosen(std::size_t bytes) {
  switch (rt->transport_config.shm.engine) {
    case rndv_engine::cma:
      return true;
    case rndv_engine::pipeline:
      return false;
    case rndv_engine::automatic:
      if (bytes < rt->transport_config.shm.cma_threshold || rt->pipeline_receives == 0 ||
          rt->transport_config.shm.ring_size > shm_ring_floor)
        return false;
      return bytes < rt->transport_config.shm.pipeline_large || rt->rendezvous_sends > 0;
  }
  return false;
}

xfer shm_transport::read(vc &from, const rts_payload &where, std::byte *to, std::size_t bytes,
                         std::uint64_t cookie) {
  (void)cookie;
  peer &p = peers_[static_cast<std::size_t>(from.slot)];
  flow kind = flow::one_way;
  if (!p.cma || !cma_wanted(p, from, bytes, kind)) return xfer::retry;
  const bool timed = times_streams();
  const std::uint64_t start = timed ? monotonic_ns() : 0;
  if (!shm::cma::read(where.pid, where.address, to, bytes)) {
    p.cma = false;  // the kernel refused a read: stop trying with this peer
    return xfer::retry;
  }
  if (timed) {
    const std::uint64_t end = monotonic_ns();
    p.engines.measured(bytes, bytes, true, end - start, end, kind);
  }
  ++cma_messages_;
  return xfer::done;
}

void shm_transport::expose_layout(vc &to, rts_payload &where, const void *base, const void *layout,
                                  std::size_t layout_bytes) {
  if (!peers_[static_cast<std::size_t>(to.slot)].cma ||
      rt->transport_config.shm.engine == rndv_engine::pipeline) {
    return;
  }
  name_layout(where, base, layout, layout_bytes);
}

std::size_t shm_transport::scattered_min_block() const {
  return rt->transport_config.shm.scattered_min_block;
}

bool shm_transport::reads_scattered(vc &from, std::size_t bytes) {
  // The same choice as for one buffer: on this VM a lone message moves
  // faster through the pipeline, scattered or not (bench/results/).
  return peers_[static_cast<std::size_t>(from.slot)].cma && cma_chosen(bytes);
}

xfer shm_transport::read_scattered(vc &from, const rts_payload &where, read_plan &plan) {
  const xfer read =
      cma_read_scattered(peers_[static_cast<std::size_t>(from.slot)].cma, where.pid, plan);
  if (read == xfer::done && plan.message()) ++cma_messages_;
  return read;
}

std::string shm_transport::statistics() const {
  return "shm: messages read by cma " + std::to_string(cma_messages_);
}

bool shm_transport::statistic(std::string_view name, std::uint64_t &value) const {
  return cma_statistic(cma_messages_, name, value);
}

std::string shm_transport::describe() const {
  bool cma = false;
  for (const peer &p : peers_) cma = cma || p.cma;
  return "shm: node segment " + name_ + ", " + std::to_string(local_ranks_.size()) +
         " local ranks (index " + std::to_string(local_index_) + "), rings of " +
         std::to_string(rt->transport_config.shm.ring_size) + " B, fragment " +
         std::to_string(rt->transport_config.shm.fragment_size) + " B, cma " +
         (cma ? "permitted" : "refused");
}

}  // namespace iris::device
