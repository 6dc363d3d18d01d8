// General graph topologies (MPI_Graph_create): the whole graph, as the
// user gave it, attached to a communicator; and the copy of any topology a
// communicator carries onto its duplicate (MPI_Comm_dup keeps topologies).
// Kept apart from topology.hpp (Cartesian grids, distributed graphs).
#pragma once

#include <vector>

namespace iris::device {

struct communicator;

struct general_graph {
  std::vector<int> index;  // index[i]: the edges of nodes 0..i, cumulative
  std::vector<int> edges;  // the neighbours of node 0, then of node 1, ...

  int nnodes() const { return static_cast<int>(index.size()); }
  // The neighbours of `rank` (0 <= rank < nnodes()).
  int first_edge(int rank) const { return rank == 0 ? 0 : index[static_cast<unsigned>(rank) - 1]; }
  int degree(int rank) const { return index[static_cast<unsigned>(rank)] - first_edge(rank); }
};

// The graph attached to `comm`, or nullptr; keyed like cart_of.
const general_graph *general_graph_of(const communicator &comm);
void general_graph_attach(const communicator &comm, general_graph graph);

// Attaches to `to` every topology `from` carries (Cartesian, graph or
// distributed graph): MPI_Comm_dup and its variants.
void topology_copy(const communicator &from, const communicator &to);

}  // namespace iris::device
