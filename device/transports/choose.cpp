// Which transport reaches which peer, chosen once at setup: oneself through
// self; ranks of this node through shm (unless IRIS_SHM=0 or it is alone:
// rings per pair on small nodes, receive queues and pooled rings on large);
// every other rank through net, the netmod adapter.
#include "device/core/transport.hpp"

#include <algorithm>

#include "device/base/threading.hpp"
#include "device/runtime/runtime.hpp"
#include "device/transports/net.hpp"
#include "device/transports/self.hpp"
#include "device/transports/shm.hpp"

namespace iris::device {

std::size_t dense_ring_size(int local_size) {
  constexpr std::size_t per_rank = std::size_t{8} << 20;
  constexpr std::size_t most = std::size_t{4} << 20;
  const std::size_t share = per_rank / static_cast<std::size_t>(std::max(local_size - 1, 1));
  std::size_t ring = shm_ring_floor;
  while (ring * 2 <= std::min(share, most)) ring *= 2;
  return ring;
}

void transports_settle(settings &device, transport_settings &s) {
  shm::check_ring_capacity(s.shm.ring_size);
  shm::check_node_shape({0, s.shm.queue_cells, s.shm.ring_size, s.shm.pool_size});
  // A record must fit a ring. (On large nodes it must fit a receive queue
  // too: shm_queue_transport caps the limits of its peers.)
  const std::size_t record_payload =
      shm::max_record_payload(s.shm.ring_size) - sizeof(packet_header);
  s.shm.fragment_size = std::min(s.shm.fragment_size, record_payload);
  device.eager_limit = std::min(device.eager_limit, record_payload);
}

void transports_open(runtime &r) {
  auto self = std::make_unique<self_transport>();
  vc &me = r.vcs[static_cast<std::size_t>(r.rank)];
  me.via = self.get();
  me.flow_controlled = false;
  me.eager_limit = r.config.eager_limit;
  me.window = r.config.eager_window;
  r.transports.push_back(std::move(self));

  const int node = r.pmi->node_of(r.rank);
  std::vector<int> local_ranks;
  int local_index = 0;
  bool remote = false;
  for (int peer = 0; peer < r.size; ++peer) {
    if (r.pmi->node_of(peer) == node) {
      if (peer == r.rank) local_index = static_cast<int>(local_ranks.size());
      local_ranks.push_back(peer);
    }
    remote = remote ||
             (peer != r.rank && (!r.transport_config.shm.enabled || r.pmi->node_of(peer) != node));
  }
  // The netmod puts its card first; then the node segment is created.
  if (remote) r.transports.push_back(std::make_unique<net_transport>(r));
  // Few ranks: a ring per ordered pair, reserved at start-up; more: receive
  // queues and pooled pair rings (shm/README.md).
  const int local_size = static_cast<int>(local_ranks.size());
  const auto &node_memory = r.transport_config.shm;
  if (node_memory.enabled && local_size > 1 && local_size <= node_memory.dense_ranks) {
    // Settled against the floor, so a larger ring only gives more room.
    if (node_memory.ring_chosen) r.transport_config.shm.ring_size = dense_ring_size(local_size);
    // Under MULTIPLE the rings let threads send to different peers at once.
    if (threads_enabled) {
      r.transports.push_back(
          std::make_unique<shm_shared_transport>(r, std::move(local_ranks), local_index));
    } else {
      r.transports.push_back(
          std::make_unique<shm_transport>(r, std::move(local_ranks), local_index));
    }
  } else if (node_memory.enabled && local_size > 1) {
    if (threads_enabled) {
      r.transports.push_back(
          std::make_unique<shm_queue_shared_transport>(r, std::move(local_ranks), local_index));
    } else {
      r.transports.push_back(
          std::make_unique<shm_queue_transport>(r, std::move(local_ranks), local_index));
    }
  }
}

void transports_connect(runtime &r) {
  // Polled in this order: the rings (cheap to look at) before the netmod.
  // Self has nothing to poll.
  for (const auto &t : r.transports) {
    if (auto *shm = dynamic_cast<shm_transport *>(t.get())) {
      shm->connect(r);
      r.polled.insert(r.polled.begin(), shm);
    } else if (auto *queues = dynamic_cast<shm_queue_transport *>(t.get())) {
      queues->connect(r);
      r.polled.insert(r.polled.begin(), queues);
    } else if (auto *net = dynamic_cast<net_transport *>(t.get())) {
      net->connect(r);
      r.polled.push_back(net);
    }
  }
}

}  // namespace iris::device
