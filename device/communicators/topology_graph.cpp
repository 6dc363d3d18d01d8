#include "device/communicators/topology_graph.hpp"

#include <cstdint>
#include <map>
#include <utility>

#include "device/communicators/topology.hpp"
#include "device/core/comm.hpp"

namespace iris::device {
namespace {

std::map<int, std::pair<std::uint32_t, general_graph>> &general_graphs() {
  static std::map<int, std::pair<std::uint32_t, general_graph>> map;
  return map;
}

}  // namespace

const general_graph *general_graph_of(const communicator &comm) {
  const auto it = general_graphs().find(comm.handle);
  if (it == general_graphs().end() || it->second.first != comm.context) return nullptr;
  return &it->second.second;
}

void general_graph_attach(const communicator &comm, general_graph graph) {
  general_graphs()[comm.handle] = {comm.context, std::move(graph)};
}

void topology_copy(const communicator &from, const communicator &to) {
  if (const cart_topology *c = cart_of(from)) cart_attach(to, *c);
  if (const graph_topology *g = graph_of(from)) graph_attach(to, *g);
  if (const general_graph *g = general_graph_of(from)) general_graph_attach(to, *g);
}

}  // namespace iris::device
