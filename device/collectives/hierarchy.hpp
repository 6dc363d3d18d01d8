// Collectives of a communicator that spans nodes, in two levels: the ranks
// of each node through their node segment (node.hpp), and one leader per
// node (its lowest rank) through messages. device/api/coll/coll.cpp runs the
// levels; this file finds them.
#pragma once

#include <vector>

#include "device/collectives/node.hpp"
#include "device/core/comm.hpp"

namespace iris::device {

struct node_hierarchy {
  // This node's ranks of the communicator, numbered by their order in it,
  // on its context (an object of its own, not registered: its messages
  // travel on the communicator's collective context with tags of their
  // own). Its segment is `nc` (nullptr on a node of one rank).
  communicator local;
  node_collectives *nc = nullptr;
  // The leaders, numbered by node (nodes in the order of their lowest
  // rank); meaningful on leaders only.
  communicator leaders;
  bool leader = false;
  // Every node's ranks are one run of consecutive ranks: folding by node,
  // then across the leaders, keeps rank order (non-commutative ops).
  bool runs = false;
  std::vector<int> node_of;   // rank -> node (leaders' numbering)
  std::vector<int> local_of;  // rank -> rank in its node
};

// The two levels of `comm`, found at its first blocking Barrier, Bcast,
// Reduce or Allreduce (collective over comm: each node makes its segment,
// then all agree that every node has one and CMA); nullptr when the
// communicator lies on one node (node_collectives_of serves it), has a
// process of another job, or when IRIS_COLL_SHM or shared memory is off,
// no node has two of its ranks, or some node could not make its segment.
node_hierarchy *node_hierarchy_of(communicator &comm);

}  // namespace iris::device
