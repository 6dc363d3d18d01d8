// The two levels of a communicator across nodes (hierarchy.hpp).
#include "device/collectives/hierarchy.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "device/protocols/recv.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {
namespace {

bool worth_it(const communicator &c) {
  if (!rt->config.coll_shm || !rt->transport_config.shm.enabled || c.inter || c.size < 3) {
    return false;
  }
  std::vector<int> per_node;
  for (int w : c.world_rank) {
    if (w < 0 || w >= rt->size) return false;
    const auto node = static_cast<std::size_t>(rt->pmi->node_of(w));
    if (node >= per_node.size()) per_node.resize(node + 1, 0);
    ++per_node[node];
  }
  const auto used = std::count_if(per_node.begin(), per_node.end(), [](int n) { return n > 0; });
  return used >= 2 && *std::max_element(per_node.begin(), per_node.end()) >= 2;
}

// Every rank's `mine` (0 or 1) ANDed, on comm's collective context: linear
// through rank 0, once per communicator.
int all_agree(const communicator &c, int mine) {
  const std::uint32_t context = c.collective_context();
  int all = mine;
  if (c.rank == 0) {
    for (int r = 1; r < c.size; ++r) {
      int theirs = 0;
      request_wait_release(recv_start(c, context, &theirs, sizeof theirs, r, tag_node_levels));
      all = all != 0 && theirs != 0 ? 1 : 0;
    }
    for (int r = 1; r < c.size; ++r) {
      request_wait_release(send_start(c, context, &all, sizeof all, r, tag_node_levels_all));
    }
  } else {
    request_wait_release(send_start(c, context, &mine, sizeof mine, 0, tag_node_levels));
    request_wait_release(recv_start(c, context, &all, sizeof all, 0, tag_node_levels_all));
  }
  return all;
}

node_hierarchy *make_hierarchy(communicator &c) {
  auto h = new node_hierarchy;
  std::vector<int> node_ids;  // the process manager's node of each level-2 node
  std::vector<int> members_here;
  const int here = rt->pmi->node_of(rt->rank);
  h->node_of.resize(static_cast<std::size_t>(c.size));
  h->local_of.resize(static_cast<std::size_t>(c.size));
  std::vector<int> count_of;
  std::vector<int> leader_world;
  for (int r = 0; r < c.size; ++r) {
    const int node = rt->pmi->node_of(c.world_rank[static_cast<std::size_t>(r)]);
    auto at = std::find(node_ids.begin(), node_ids.end(), node);
    if (at == node_ids.end()) {
      node_ids.push_back(node);
      count_of.push_back(0);
      leader_world.push_back(c.world_rank[static_cast<std::size_t>(r)]);
      at = node_ids.end() - 1;
    }
    const auto index = static_cast<std::size_t>(at - node_ids.begin());
    h->node_of[static_cast<std::size_t>(r)] = static_cast<int>(index);
    h->local_of[static_cast<std::size_t>(r)] = count_of[index]++;
    if (node == here) members_here.push_back(c.world_rank[static_cast<std::size_t>(r)]);
  }
  // Runs: each node's ranks consecutive (node indices never go back).
  h->runs = std::is_sorted(h->node_of.begin(), h->node_of.end());
  const auto me = static_cast<std::size_t>(c.rank);
  h->leader = h->local_of[me] == 0;
  // Both levels on c's context and error handler, with their own members.
  const auto level = [&c](communicator &l, std::vector<int> members, int rank) {
    l.handle = c.handle;
    l.context = c.context;
    l.errhandler = c.errhandler;
    l.size = static_cast<int>(members.size());
    l.world_rank = std::move(members);
    l.rank = rank;
  };
  level(h->local, members_here, h->local_of[me]);
  level(h->leaders, leader_world, h->node_of[me]);
  // Each node makes its segment among its own ranks (node.cpp's rounds on
  // the local numbering); then every rank learns whether all nodes did,
  // with CMA for their large steps.
  h->nc = h->local.size > 1 ? node_collectives_of(h->local) : nullptr;
  if (h->nc != nullptr) node_serves(*h->nc, c);  // revocations name c
  const bool ready = h->local.size == 1 || (h->nc != nullptr && node_takes(*h->nc, SIZE_MAX));
  if (all_agree(c, ready ? 1 : 0) == 0) {
    delete h;
    return nullptr;
  }
  return h;
}

}  // namespace

node_hierarchy *node_hierarchy_of(communicator &comm) {
  if (comm.revoked) [[unlikely]] {
    return nullptr;  // as node_collectives_of
  }
  if (comm.hierarchy_state == 0) {
    node_hierarchy *h = worth_it(comm) ? make_hierarchy(comm) : nullptr;
    comm.hierarchy_state = h != nullptr ? 1 : -1;
    if (h != nullptr) comm.hierarchy.reset(h);
  }
  return comm.hierarchy_state == 1 ? comm.hierarchy.get() : nullptr;
}

}  // namespace iris::device
