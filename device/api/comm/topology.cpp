// MPI bindings for topologies: Dims_create, Cart_create and the queries on
// a Cartesian communicator; distributed graphs at the end. Cart_create builds its communicator
// with MPI_Comm_split (ranks keep their order: reorder is allowed to be
// ignored) and attaches the grid to it (device/topology.hpp).
#include <algorithm>
#include <vector>

#include "device/api/check.hpp"
#include "device/communicators/topology.hpp"
#include "device/communicators/topology_graph.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

// Checks that `handle` names a communicator with a Cartesian topology.
int check_cart(const char *call, MPI_Comm handle, communicator *&comm,
               const device::cart_topology *&topology) {
  if (int err = api::check_comm(call, handle, comm)) return err;
  topology = device::cart_of(*comm);
  if (topology == nullptr) {
    return device::error_raise(comm, call, MPI_ERR_TOPOLOGY,
                               "communicator 0x%x has no Cartesian topology",
                               static_cast<unsigned>(handle));
  }
  return MPI_SUCCESS;
}

int check_ndims(const char *call, const communicator *comm, int ndims) {
  if (ndims >= 0) return MPI_SUCCESS;
  return device::error_raise(comm, call, MPI_ERR_DIMS, "negative ndims %d", ndims);
}

}  // namespace

extern "C" {

int MPI_Dims_create(int nnodes, int ndims, int dims[]) {
  const device::api_guard guard;
  const char *call = "MPI_Dims_create";
  if (int err = check_ndims(call, nullptr, ndims)) return err;
  if (nnodes < 1) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "nnodes %d (must be positive)", nnodes);
  }
  if (ndims > 0) {
    if (int err = api::check_not_null(call, nullptr, dims, "dims")) return err;
  }
  if (!device::dims_create(nnodes, std::span<int>(dims, static_cast<std::size_t>(ndims)))) {
    return device::error_raise(nullptr, call, MPI_ERR_DIMS,
                               "%d processes do not fit the %d given dimensions (a negative "
                               "entry, or the fixed ones do not divide it)",
                               nnodes, ndims);
  }
  return MPI_SUCCESS;
}

int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                    int reorder, MPI_Comm *comm_cart) {
  const device::api_guard guard;
  const char *call = "MPI_Cart_create";
  (void)reorder;  // ranks keep their order, which MPI allows
  communicator *c = nullptr;
  if (int err = api::check_intracomm(call, comm_old, c)) return err;
  if (int err = api::check_not_null(call, c, comm_cart, "comm_cart")) return err;
  *comm_cart = MPI_COMM_NULL;  // what an error leaves (as MPICH), not garbage
  if (int err = check_ndims(call, c, ndims)) return err;
  if (ndims > 0) {
    if (int err = api::check_not_null(call, c, dims, "dims")) return err;
    if (int err = api::check_not_null(call, c, periods, "periods")) return err;
  }
  device::cart_topology grid;
  long long n = 1;
  for (int i = 0; i < ndims; ++i) {
    if (dims[i] <= 0) {
      return device::error_raise(c, call, MPI_ERR_DIMS, "dims[%d] = %d (must be positive)", i,
                                 dims[i]);
    }
    n *= dims[i];
    if (n > c->size) {
      return device::error_raise(c, call, MPI_ERR_DIMS,
                                 "the grid needs more than the communicator's %d processes",
                                 c->size);
    }
    grid.dims.push_back(dims[i]);
    grid.periods.push_back(periods[i] != 0);
  }
  const int rank = c->rank;
  MPI_Comm made = MPI_COMM_NULL;
  if (int err = MPI_Comm_split(comm_old, rank < n ? 0 : MPI_UNDEFINED, rank, &made)) {
    *comm_cart = MPI_COMM_NULL;
    return err;
  }
  if (made != MPI_COMM_NULL) device::cart_attach(*device::comm_lookup(made), std::move(grid));
  *comm_cart = made;
  return MPI_SUCCESS;
}

int MPI_Cartdim_get(MPI_Comm comm, int *ndims) {
  const device::api_guard guard;
  const char *call = "MPI_Cartdim_get";
  communicator *c = nullptr;
  const device::cart_topology *grid = nullptr;
  if (int err = check_cart(call, comm, c, grid)) return err;
  if (int err = api::check_not_null(call, c, ndims, "ndims")) return err;
  *ndims = grid->ndims();
  return MPI_SUCCESS;
}

int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]) {
  const device::api_guard guard;
  const char *call = "MPI_Cart_get";
  communicator *c = nullptr;
  const device::cart_topology *grid = nullptr;
  if (int err = check_cart(call, comm, c, grid)) return err;
  if (maxdims < grid->ndims()) {
    return device::error_raise(c, call, MPI_ERR_ARG, "maxdims %d is below the %d dimensions",
                               maxdims, grid->ndims());
  }
  if (grid->ndims() > 0) {
    if (int err = api::check_not_null(call, c, dims, "dims")) return err;
    if (int err = api::check_not_null(call, c, periods, "periods")) return err;
    if (int err = api::check_not_null(call, c, coords, "coords")) return err;
  }
  for (std::size_t i = 0; i < grid->dims.size(); ++i) {
    dims[i] = grid->dims[i];
    periods[i] = grid->periods[i] ? 1 : 0;
  }
  grid->coords_of(c->rank, std::span<int>(coords, grid->dims.size()));
  return MPI_SUCCESS;
}

int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]) {
  const device::api_guard guard;
  const char *call = "MPI_Cart_coords";
  communicator *c = nullptr;
  const device::cart_topology *grid = nullptr;
  if (int err = check_cart(call, comm, c, grid)) return err;
  if (rank < 0 || rank >= c->size) {
    return device::error_raise(c, call, MPI_ERR_RANK, "invalid rank %d (communicator size %d)",
                               rank, c->size);
  }
  if (maxdims < grid->ndims()) {
    return device::error_raise(c, call, MPI_ERR_ARG, "maxdims %d is below the %d dimensions",
                               maxdims, grid->ndims());
  }
  if (grid->ndims() > 0) {
    if (int err = api::check_not_null(call, c, coords, "coords")) return err;
  }
  grid->coords_of(rank, std::span<int>(coords, grid->dims.size()));
  return MPI_SUCCESS;
}

int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank) {
  const device::api_guard guard;
  const char *call = "MPI_Cart_rank";
  communicator *c = nullptr;
  const device::cart_topology *grid = nullptr;
  if (int err = check_cart(call, comm, c, grid)) return err;
  if (int err = api::check_not_null(call, c, rank, "rank")) return err;
  if (grid->ndims() > 0) {
    if (int err = api::check_not_null(call, c, coords, "coords")) return err;
  }
  const int found = grid->rank_of(std::span<const int>(coords, grid->dims.size()));
  if (found < 0) {
    return device::error_raise(c, call, MPI_ERR_ARG,
                               "coordinates outside a non-periodic dimension");
  }
  *rank = found;
  return MPI_SUCCESS;
}

int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest) {
  const device::api_guard guard;
  const char *call = "MPI_Cart_shift";
  communicator *c = nullptr;
  const device::cart_topology *grid = nullptr;
  if (int err = check_cart(call, comm, c, grid)) return err;
  if (int err = api::check_not_null(call, c, rank_source, "rank_source")) return err;
  if (int err = api::check_not_null(call, c, rank_dest, "rank_dest")) return err;
  if (direction < 0 || direction >= grid->ndims()) {
    return device::error_raise(c, call, MPI_ERR_DIMS, "direction %d of %d dimensions", direction,
                               grid->ndims());
  }
  int source = -1;
  int dest = -1;
  grid->shift(c->rank, direction, disp, source, dest);
  *rank_source = source < 0 ? MPI_PROC_NULL : source;
  *rank_dest = dest < 0 ? MPI_PROC_NULL : dest;
  return MPI_SUCCESS;
}

int MPI_Topo_test(MPI_Comm comm, int *status) {
  const device::api_guard guard;
  const char *call = "MPI_Topo_test";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, status, "status")) return err;
  *status = device::cart_of(*c) != nullptr            ? MPI_CART
            : device::graph_of(*c) != nullptr         ? MPI_DIST_GRAPH
            : device::general_graph_of(*c) != nullptr ? MPI_GRAPH
                                                      : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

}  // extern "C"

// ---- Distributed graphs -------------------------------------------------------
// The communicator is a duplicate of comm_old (ranks keep their order) with
// this process's neighbours attached. MPI_Dist_graph_create, where any rank
// may name any edge, sends every edge to both of its ends with Alltoall(v).

namespace {

int check_graph(const char *call, MPI_Comm handle, communicator *&comm,
                const device::graph_topology *&graph) {
  if (int err = api::check_comm(call, handle, comm)) return err;
  graph = device::graph_of(*comm);
  if (graph == nullptr) {
    return device::error_raise(comm, call, MPI_ERR_TOPOLOGY,
                               "communicator 0x%x has no distributed graph topology",
                               static_cast<unsigned>(handle));
  }
  return MPI_SUCCESS;
}

// Checks `n` ranks of `comm` at `ranks` and their weights (MPI_UNWEIGHTED
// and MPI_WEIGHTS_EMPTY stand for none).
int check_edges(const char *call, const communicator *c, int n, const int ranks[],
                const int weights[], const char *what) {
  if (n < 0) return device::error_raise(c, call, MPI_ERR_ARG, "negative %s count %d", what, n);
  if (n == 0) return MPI_SUCCESS;
  if (int err = api::check_not_null(call, c, ranks, what)) return err;
  if (weights == MPI_WEIGHTS_EMPTY) {
    return device::error_raise(c, call, MPI_ERR_ARG, "MPI_WEIGHTS_EMPTY for %d %s", n, what);
  }
  if (weights != MPI_UNWEIGHTED) {
    if (int err = api::check_not_null(call, c, weights, "weights")) return err;
  }
  for (int i = 0; i < n; ++i) {
    if (ranks[i] < 0 || ranks[i] >= c->size) {
      return device::error_raise(c, call, MPI_ERR_RANK, "%s[%d] = %d (communicator size %d)", what,
                                 i, ranks[i], c->size);
    }
  }
  return MPI_SUCCESS;
}

bool weighted(const int weights[]) {
  return weights != MPI_UNWEIGHTED;
}

int attach_to_dup(MPI_Comm comm_old, device::graph_topology graph, MPI_Comm *made) {
  if (int err = MPI_Comm_dup(comm_old, made)) return err;  // *made is MPI_COMM_NULL then
  device::graph_attach(*device::comm_lookup(*made), std::move(graph));
  return MPI_SUCCESS;
}

}  // namespace

namespace {
// What MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY point at: addresses no user
// array can have. (Constants such as (int *)2 trip compilers' array-bound
// checks in user code.)
int unweighted_mark;
int weights_empty_mark;
}  // namespace

extern "C" {

int *const MPI_UNWEIGHTED = &unweighted_mark;
int *const MPI_WEIGHTS_EMPTY = &weights_empty_mark;

int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                   const int sourceweights[], int outdegree,
                                   const int destinations[], const int destweights[], MPI_Info info,
                                   int reorder, MPI_Comm *comm_dist_graph) {
  const device::api_guard guard;
  const char *call = "MPI_Dist_graph_create_adjacent";
  (void)info;
  (void)reorder;  // ranks keep their order, which MPI allows
  communicator *c = nullptr;
  if (int err = api::check_intracomm(call, comm_old, c)) return err;
  if (int err = check_edges(call, c, indegree, sources, sourceweights, "sources")) return err;
  if (int err = check_edges(call, c, outdegree, destinations, destweights, "destinations")) {
    return err;
  }
  if (int err = api::check_not_null(call, c, comm_dist_graph, "comm_dist_graph")) return err;
  device::graph_topology g;
  g.weighted = weighted(sourceweights) || weighted(destweights);
  for (int i = 0; i < indegree; ++i) {
    g.sources.push_back(sources[i]);
    g.source_weights.push_back(weighted(sourceweights) ? sourceweights[i] : 1);
  }
  for (int i = 0; i < outdegree; ++i) {
    g.destinations.push_back(destinations[i]);
    g.destination_weights.push_back(weighted(destweights) ? destweights[i] : 1);
  }
  return attach_to_dup(comm_old, std::move(g), comm_dist_graph);
}

int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                          const int destinations[], const int weights[], MPI_Info info, int reorder,
                          MPI_Comm *comm_dist_graph) {
  const device::api_guard guard;
  const char *call = "MPI_Dist_graph_create";
  (void)info;
  (void)reorder;
  communicator *c = nullptr;
  if (int err = api::check_intracomm(call, comm_old, c)) return err;
  if (int err = check_edges(call, c, n, sources, MPI_UNWEIGHTED, "sources")) return err;
  if (n > 0) {
    if (int err = api::check_not_null(call, c, degrees, "degrees")) return err;
  }
  int edges = 0;
  for (int i = 0; i < n; ++i) {
    if (degrees[i] < 0) {
      return device::error_raise(c, call, MPI_ERR_ARG, "degrees[%d] = %d", i, degrees[i]);
    }
    edges += degrees[i];
  }
  if (int err = check_edges(call, c, edges, destinations, weights, "destinations")) return err;
  if (int err = api::check_not_null(call, c, comm_dist_graph, "comm_dist_graph")) return err;
  // Each edge goes to both ends as (kind, other end, weight): kind 0 tells
  // the source about a destination, kind 1 the destination about a source.
  const auto size = static_cast<std::size_t>(c->size);
  std::vector<std::vector<int>> out(size);
  int e = 0;
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < degrees[i]; ++k, ++e) {
      const int w = weighted(weights) ? weights[e] : 1;
      const int from = sources[i];
      const int to = destinations[e];
      out[static_cast<std::size_t>(from)].insert(out[static_cast<std::size_t>(from)].end(),
                                                 {0, to, w});
      out[static_cast<std::size_t>(to)].insert(out[static_cast<std::size_t>(to)].end(),
                                               {1, from, w});
    }
  }
  std::vector<int> send_counts(size), recv_counts(size), send_displs(size), recv_displs(size);
  std::vector<int> flat;
  for (std::size_t r = 0; r < size; ++r) {
    send_counts[r] = static_cast<int>(out[r].size());
    send_displs[r] = static_cast<int>(flat.size());
    flat.insert(flat.end(), out[r].begin(), out[r].end());
  }
  if (int err =
          MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm_old)) {
    return err;
  }
  int total = 0;
  for (std::size_t r = 0; r < size; ++r) {
    recv_displs[r] = total;
    total += recv_counts[r];
  }
  std::vector<int> in(static_cast<std::size_t>(total) + 1);
  flat.push_back(0);  // never a null buffer
  if (int err =
          MPI_Alltoallv(flat.data(), send_counts.data(), send_displs.data(), MPI_INT, in.data(),
                        recv_counts.data(), recv_displs.data(), MPI_INT, comm_old)) {
    return err;
  }
  device::graph_topology g;
  g.weighted = weighted(weights);
  for (int i = 0; i + 2 < total; i += 3) {
    const auto at = static_cast<std::size_t>(i);
    auto &ranks = in[at] == 0 ? g.destinations : g.sources;
    auto &ws = in[at] == 0 ? g.destination_weights : g.source_weights;
    ranks.push_back(in[at + 1]);
    ws.push_back(in[at + 2]);
  }
  return attach_to_dup(comm_old, std::move(g), comm_dist_graph);
}

int MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted) {
  const device::api_guard guard;
  const char *call = "MPI_Dist_graph_neighbors_count";
  communicator *c = nullptr;
  const device::graph_topology *g = nullptr;
  if (int err = check_graph(call, comm, c, g)) return err;
  if (int err = api::check_not_null(call, c, indegree, "indegree")) return err;
  if (int err = api::check_not_null(call, c, outdegree, "outdegree")) return err;
  if (int err = api::check_not_null(call, c, weighted, "weighted")) return err;
  *indegree = static_cast<int>(g->sources.size());
  *outdegree = static_cast<int>(g->destinations.size());
  *weighted = g->weighted ? 1 : 0;
  return MPI_SUCCESS;
}

int MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[],
                             int maxoutdegree, int destinations[], int destweights[]) {
  const device::api_guard guard;
  const char *call = "MPI_Dist_graph_neighbors";
  communicator *c = nullptr;
  const device::graph_topology *g = nullptr;
  if (int err = check_graph(call, comm, c, g)) return err;
  if (maxindegree < 0 || maxoutdegree < 0) {
    return device::error_raise(c, call, MPI_ERR_ARG, "negative maxindegree or maxoutdegree");
  }
  const auto in = std::min(static_cast<std::size_t>(maxindegree), g->sources.size());
  const auto out = std::min(static_cast<std::size_t>(maxoutdegree), g->destinations.size());
  if (in > 0) {
    if (int err = api::check_not_null(call, c, sources, "sources")) return err;
  }
  if (out > 0) {
    if (int err = api::check_not_null(call, c, destinations, "destinations")) return err;
  }
  for (std::size_t i = 0; i < in; ++i) {
    sources[i] = g->sources[i];
    if (sourceweights != MPI_UNWEIGHTED && sourceweights != nullptr) {
      sourceweights[i] = g->source_weights[i];
    }
  }
  for (std::size_t i = 0; i < out; ++i) {
    destinations[i] = g->destinations[i];
    if (destweights != MPI_UNWEIGHTED && destweights != nullptr) {
      destweights[i] = g->destination_weights[i];
    }
  }
  return MPI_SUCCESS;
}

}  // extern "C"
