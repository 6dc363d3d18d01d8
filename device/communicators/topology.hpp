// Cartesian topologies: the pure computations (dimensions, coordinates,
// ranks, shifts) and the topology attached to a communicator; and
// distributed graphs, which only remember their neighbours.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace iris::device {

struct communicator;

struct cart_topology {
  std::vector<int> dims;
  std::vector<bool> periods;

  int ndims() const { return static_cast<int>(dims.size()); }
  // The number of processes of the grid.
  int size() const;
  // The coordinates of `rank` (0 <= rank < size()), into coords[0..ndims).
  void coords_of(int rank, std::span<int> coords) const;
  // The rank at `coords`, wrapped in periodic dimensions; -1 when a
  // coordinate lies outside a non-periodic dimension.
  int rank_of(std::span<const int> coords) const;
  // The ranks `disp` steps down and up dimension `direction` from `rank`;
  // -1 off the edge of a non-periodic dimension.
  void shift(int rank, int direction, int disp, int &source, int &dest) const;
};

// A distributed graph: this process's neighbours, in the order given.
struct graph_topology {
  std::vector<int> sources;  // ranks with an edge to this process
  std::vector<int> source_weights;
  std::vector<int> destinations;  // ranks this process has an edge to
  std::vector<int> destination_weights;
  bool weighted = false;
};

// MPI_Dims_create: fills the zero entries of `dims` so that the product of
// all is `nnodes`, as close to each other as possible, in non-increasing
// order. False when that cannot be done (a negative entry, or the product of
// the fixed ones does not divide `nnodes`); `dims` is then unchanged.
bool dims_create(int nnodes, std::span<int> dims);

// The topology attached to `comm`, or nullptr. Attached by MPI_Cart_create;
// an entry is keyed by handle and context, so that a handle reused for
// another communicator does not inherit it.
const cart_topology *cart_of(const communicator &comm);
void cart_attach(const communicator &comm, cart_topology topology);
// The same for distributed graphs (MPI_Dist_graph_create(_adjacent)).
const graph_topology *graph_of(const communicator &comm);
void graph_attach(const communicator &comm, graph_topology topology);

}  // namespace iris::device
