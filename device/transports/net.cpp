#include "device/transports/net.hpp"

#include <algorithm>
#include <cstring>

#include "device/base/threading.hpp"
#include "device/core/packet.hpp"
#include "device/protocols/credit.hpp"
#include "device/protocols/dispatch.hpp"
#include "device/protocols/recovery.hpp"
#include "device/protocols/rendezvous.hpp"
#include "device/runtime/errors.hpp"
#include "device/runtime/runtime.hpp"
#include "device/transports/dynamic.hpp"

namespace iris::device {

netmod::config netmod_config(const transport_settings &s) {
  netmod::config c;
  c.max_record = sizeof(packet_header) +
                 std::max({s.net.eager_limit, s.net.fragment_size, sizeof(rts_payload)});
  c.record_head = sizeof(packet_header);
  c.concurrent_sends = threads_enabled;
  c.dynamic_peers = s.net.dynamic_peers;
  c.among_others = s.net.probe;
  return c;
}

net_transport::net_transport(runtime &r, const std::string &netmod)
    : net_(netmod::netmod_create(netmod)), rma_(r.transport_config.net.rma) {
  const netmod::config conf = netmod_config(r.transport_config);
  net_->init(*r.pmi, conf);
  shared_ = conf.concurrent_sends && net_->concurrent_sends();
}

void net_transport::take(vc &v, std::string why) {
  const runtime &r = *rt;
  v.via = this;
  v.slot = v.world_rank;
  v.credits = v.window = r.transport_config.net.eager_window;
  v.eager_limit = r.transport_config.net.eager_limit;
  v.fragment = r.transport_config.net.fragment_size;
  peers_.push_back(v.world_rank);
  const auto same =
      std::find_if(reasons_.begin(), reasons_.end(), [&](const auto &r) { return r.first == why; });
  if (same != reasons_.end()) {
    same->second.push_back(v.world_rank);
  } else {
    reasons_.emplace_back(std::move(why), std::vector<int>{v.world_rank});
  }
}

bool net_transport::peer_add(vc &v, std::uint64_t job, int rank, std::string_view card) {
  if (!net_->peer_add(v.world_rank, job, rank, card)) return false;
  const runtime &r = *rt;
  v.via = this;
  v.slot = v.world_rank;
  if (v.window == 0) {  // new: as connect() sets up the world's peers
    v.credits = v.window = r.transport_config.net.eager_window;
    v.eager_limit = r.transport_config.net.eager_limit;
    v.fragment = r.transport_config.net.fragment_size;
  }
  return true;
}

int net_transport::peer_joining(std::uint64_t job, int rank) {
  std::string why;
  const int peer = peer_of(job, rank, {}, why);
  if (peer < 0) log_note(why);
  return peer;
}

namespace {

// A packet as one netmod record: the header, then the payload's parts.
struct record_parts {
  record_parts(const packet_header &h, std::span<const iovec> payload) {
    parts[0] = {const_cast<packet_header *>(&h), sizeof(h)};
    for (const iovec &part : payload) parts[n++] = part;
  }
  std::span<const iovec> all() const { return {parts, n}; }
  iovec parts[3];
  std::size_t n = 1;
};

}  // namespace

xfer net_transport::send(vc &to, const packet_header &h, std::span<const iovec> payload) {
  const record_parts record(h, payload);
  const vc_guard guard(to);  // MULTIPLE: send_held may be writing to it
  return net_->send(to.world_rank, record.all()) == netmod::send_status::done ? xfer::done
                                                                              : xfer::retry;
}

// send_unlocked, with the VC's lock held and not the call lock.
xfer net_transport::send_held(vc &to, const packet_header &h, std::span<const iovec> payload) {
  const record_parts record(h, payload);
  return net_->send_concurrent(to.world_rank, record.all()) == netmod::send_status::done
             ? xfer::done
             : xfer::retry;
}

int net_transport::poll(int budget) {
  (void)budget;  // a netmod's poll is one bounded pass of its own
  if (holding_.load(std::memory_order_relaxed)) [[unlikely]]
    return poll_held();
  return net_->poll(*this);
}

int net_transport::poll_aside(int budget) {
  (void)budget;
  if (!shared_ || holding_.load(std::memory_order_acquire)) return 0;
  return net_->poll_aside(*this);
}

void net_transport::hold(int peer, std::vector<std::byte> head, std::vector<std::byte> body) {
  held_.push_back({peer, std::move(head), std::move(body), {}});
  holding_.store(true, std::memory_order_relaxed);
}

void net_transport::hold_loss(int peer, std::string why) {
  held_.push_back({peer, {}, {}, std::move(why)});
  holding_.store(true, std::memory_order_relaxed);
}

// Under the call lock, as poll().
int net_transport::poll_held() {
  std::vector<held_record> records = std::move(held_);
  held_.clear();
  for (const held_record &h : records) {
    if (!h.loss.empty()) {
      peer_lost(h.peer, h.loss.c_str());
    } else if (const char *why = record_arrived(h.peer, h.head, h.body)) {
      fatal("progress", "refused a record of rank %d that came during MPI_Init: %s", h.peer, why);
    }
  }
  holding_.store(false, std::memory_order_release);
  return static_cast<int>(records.size());
}

// Over a netmod with RMA the receiver reads the data itself. Exposed once:
// an RTS that found no room comes back here.
void net_transport::expose(vc &to, request &r, rts_payload &where) {
  (void)to;
  auto &held = r.exposure;
  if (rma_ && !held.exposed && r.bytes != 0) {
    netmod::remote_region region;
    held.exposed = net_->rma_expose(r.buffer, r.bytes, region, netmod::rma_access::read);
    held.words[0] = region.address;
    held.words[1] = region.key;
  }
  if (held.exposed) {
    where.rma = 1;
    where.rma_address = held.words[0];
    where.rma_key = held.words[1];
  }
}

void net_transport::conceal(request &r) {
  net_->rma_conceal(netmod::remote_region{r.exposure.words[0], r.exposure.words[1]});
  r.exposure = {};
}

// A read it cannot start now goes the packet way instead of waiting.
xfer net_transport::read(vc &from, const rts_payload &where, std::byte *to, std::size_t bytes,
                         std::uint64_t cookie) {
  if (where.rma != 1) return xfer::retry;
  const netmod::remote_region region{where.rma_address, where.rma_key};
  return net_->rma_read(from.world_rank, region, to, bytes, cookie) == netmod::send_status::done
             ? xfer::in_progress
             : xfer::retry;
}

bool net_transport::window_expose(const void *base, std::size_t bytes, std::uint64_t region[2]) {
  netmod::remote_region r;
  if (!rma_ || !net_->rma_expose(base, bytes, r, netmod::rma_access::read_write)) return false;
  region[0] = r.address;
  region[1] = r.key;
  return true;
}

void net_transport::window_conceal(const std::uint64_t region[2]) {
  net_->rma_conceal(netmod::remote_region{region[0], region[1]});
}

// The cookie is the caller's count, which lives until the window's
// completion has seen it reach 0.
xfer net_transport::window_write(vc &to, const std::uint64_t region[2], const void *local,
                                 std::size_t bytes, window_ops &ops) {
  const netmod::remote_region r{region[0], region[1]};
  if (net_->rma_write(to.world_rank, r, local, bytes, reinterpret_cast<std::uintptr_t>(&ops)) !=
      netmod::send_status::done) {
    return xfer::retry;
  }
  ++ops.busy;
  return xfer::in_progress;
}

xfer net_transport::window_read(vc &from, const std::uint64_t region[2], void *local,
                                std::size_t bytes, window_ops &ops) {
  const netmod::remote_region r{region[0], region[1]};
  if (net_->rma_window_read(from.world_rank, r, local, bytes,
                            reinterpret_cast<std::uintptr_t>(&ops)) != netmod::send_status::done) {
    return xfer::retry;
  }
  ++ops.busy;
  return xfer::in_progress;
}

void net_transport::window_done(std::uint64_t cookie, const char *why) {
  auto *ops = reinterpret_cast<window_ops *>(static_cast<std::uintptr_t>(cookie));
  --ops->busy;
  if (why == nullptr) {
    ++window_ops_;
  } else if (ops->error.empty()) {
    ops->error = why;
  }
}

std::string net_transport::describe() const {
  return "netmod " + net_->describe();
}

namespace {

// The peers as ranges: "0-2,5".
std::string peer_ranges(const std::vector<int> &peers) {
  std::string out;
  for (std::size_t i = 0; i < peers.size();) {
    std::size_t j = i;
    while (j + 1 < peers.size() && peers[j + 1] == peers[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(peers[i]) +
           (j > i ? "-" + std::to_string(peers[j]) : "");
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string net_transport::statistics() const {
  const std::string counted = net_->statistics();
  std::string reached = peers_.empty() ? "no peer" : "";
  for (const auto &[why, peers] : reasons_) {
    reached += (reached.empty() ? "" : ", ") + std::string("peers ") + peer_ranges(peers) + " (" +
               why + ")";
  }
  return "net " + std::string(net_->name()) + ": " + reached + "; messages read by rma " +
         std::to_string(rma_messages_) + ", window ops by rma " + std::to_string(window_ops_) +
         (counted.empty() ? "" : "; netmod stats: " + counted);
}

bool net_transport::statistic(std::string_view name, std::uint64_t &value) const {
  constexpr std::string_view peers_of = "net_peers_";
  if (name.starts_with(peers_of) && name.substr(peers_of.size()) == net_->name()) {
    value = peers_.size();
  } else if (name == "rendezvous_rma") {
    value = rma_messages_;
  } else if (name == "window_rma") {
    value = window_ops_;
  } else {
    return false;
  }
  return true;
}

void net_transport::finalize() {
  net_->finalize();
}

// The same gate as every transport's, but a bad record costs only its
// connection (the netmod logs it and drops it) instead of the job.
const char *net_transport::record_arrived(int peer, std::span<const std::byte> head,
                                          std::span<const std::byte> body) {
  vc &from = rt->vcs[static_cast<std::size_t>(peer)];
  if (from.via != this) return "a record from a rank this rank reaches otherwise";
  if (head.size() != sizeof(packet_header)) return "a record shorter than a packet header";
  packet_header h;
  std::memcpy(&h, head.data(), sizeof(h));
  if (!shared_) return packet_deliver(from, h, body.data(), body.size());
  credit_fold(from);  // what aside passes owe it
  return packet_deliver_shared(from, h, body.data(), body.size());
}

// Without the call lock: only what packet_deliver_aside takes, anything
// odd left to record_arrived's checks.
bool net_transport::record_taken(int peer, std::span<const std::byte> head,
                                 std::span<const std::byte> body) {
  vc &from = rt->vcs[static_cast<std::size_t>(peer)];
  if (from.via != this || head.size() != sizeof(packet_header)) return false;
  packet_header h;
  std::memcpy(&h, head.data(), sizeof(h));
  return packet_deliver_aside(from, h, body.data(), body.size());
}

// Rendezvous data goes straight into the receive buffer.
std::byte *net_transport::body_place(int peer, std::span<const std::byte> head,
                                     std::size_t body_length) {
  const vc &from = rt->vcs[static_cast<std::size_t>(peer)];
  if (from.via != this || head.size() != sizeof(packet_header)) return nullptr;
  packet_header h;
  std::memcpy(&h, head.data(), sizeof(h));
  return rendezvous_data_place(from, h, body_length);
}

void net_transport::peer_lost(int peer, const char *why) {
  if (rt->config.recovery) {
    recovery_report(peer, why);  // the survivors go on (protocols/recovery.hpp)
    return;
  }
  fatal("progress", "lost rank %d (%s netmod): %s", peer, std::string(net_->name()).c_str(), why);
}

void net_transport::peer_gone(vc &peer) {
  net_->peer_gone(peer.world_rank);
}

void net_transport::read_done(std::uint64_t cookie, const char *why) {
  if (why == nullptr) ++rma_messages_;
  rendezvous_read_done(cookie, why);
}

}  // namespace iris::device
