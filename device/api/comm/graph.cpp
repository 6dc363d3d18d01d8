// MPI bindings for general graph topologies (Graph_create and its queries,
// Graph_map) and the Cartesian calls beside Cart_create: Cart_sub and
// Cart_map. Like Cart_create, Graph_create keeps ranks in their order
// (reorder may be ignored) and builds its communicator with MPI_Comm_split.
#include <vector>

#include "device/api/check.hpp"
#include "device/communicators/topology.hpp"
#include "device/communicators/topology_graph.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

int check_graph(const char *call, MPI_Comm handle, communicator *&comm,
                const device::general_graph *&graph) {
  if (int err = api::check_comm(call, handle, comm)) return err;
  graph = device::general_graph_of(*comm);
  if (graph == nullptr) {
    return device::error_raise(comm, call, MPI_ERR_TOPOLOGY,
                               "communicator 0x%x has no graph topology",
                               static_cast<unsigned>(handle));
  }
  return MPI_SUCCESS;
}

// Checks a graph description (nnodes, index, edges) against `comm`.
int check_graph_args(const char *call, const communicator &c, int nnodes, const int index[],
                     const int edges[]) {
  if (nnodes < 0 || nnodes > c.size) {
    return device::error_raise(&c, call, MPI_ERR_ARG,
                               "nnodes %d is not in 0..%d (the communicator's size)", nnodes,
                               c.size);
  }
  if (nnodes == 0) return MPI_SUCCESS;
  if (int err = api::check_not_null(call, &c, index, "index")) return err;
  int previous = 0;
  for (int i = 0; i < nnodes; ++i) {
    if (index[i] < previous) {
      return device::error_raise(&c, call, MPI_ERR_ARG,
                                 "index[%d] = %d is below index[%d] = %d (must not decrease)", i,
                                 index[i], i - 1, previous);
    }
    previous = index[i];
  }
  if (previous > 0) {
    if (int err = api::check_not_null(call, &c, edges, "edges")) return err;
  }
  for (int e = 0; e < previous; ++e) {
    if (edges[e] < 0 || edges[e] >= nnodes) {
      return device::error_raise(&c, call, MPI_ERR_ARG, "edges[%d] = %d is not a node (0..%d)", e,
                                 edges[e], nnodes - 1);
    }
  }
  return MPI_SUCCESS;
}

int check_rank_in(const char *call, const communicator &c, int rank, int n) {
  if (rank >= 0 && rank < n) return MPI_SUCCESS;
  return device::error_raise(&c, call, MPI_ERR_RANK, "rank %d is not in the topology (0..%d)", rank,
                             n - 1);
}

}  // namespace

extern "C" {

int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[],
                     int reorder, MPI_Comm *comm_graph) {
  const device::api_guard guard;
  const char *call = "MPI_Graph_create";
  (void)reorder;  // ranks keep their order, which MPI allows
  communicator *c = nullptr;
  if (int err = api::check_intracomm(call, comm_old, c)) return err;
  if (int err = api::check_not_null(call, c, comm_graph, "comm_graph")) return err;
  *comm_graph = MPI_COMM_NULL;  // what an error leaves (as MPICH), not garbage
  if (int err = check_graph_args(call, *c, nnodes, index, edges)) return err;
  device::general_graph graph;
  graph.index.assign(index, index + nnodes);
  if (nnodes > 0) graph.edges.assign(edges, edges + index[nnodes - 1]);
  const int rank = c->rank;
  MPI_Comm made = MPI_COMM_NULL;
  if (int err = MPI_Comm_split(comm_old, rank < nnodes ? 0 : MPI_UNDEFINED, rank, &made)) {
    *comm_graph = MPI_COMM_NULL;
    return err;
  }
  if (made != MPI_COMM_NULL) {
    device::general_graph_attach(*device::comm_lookup(made), std::move(graph));
  }
  *comm_graph = made;
  return MPI_SUCCESS;
}

int MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges) {
  const device::api_guard guard;
  const char *call = "MPI_Graphdims_get";
  communicator *c = nullptr;
  const device::general_graph *g = nullptr;
  if (int err = check_graph(call, comm, c, g)) return err;
  if (int err = api::check_not_null(call, c, nnodes, "nnodes")) return err;
  if (int err = api::check_not_null(call, c, nedges, "nedges")) return err;
  *nnodes = g->nnodes();
  *nedges = static_cast<int>(g->edges.size());
  return MPI_SUCCESS;
}

int MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]) {
  const device::api_guard guard;
  const char *call = "MPI_Graph_get";
  communicator *c = nullptr;
  const device::general_graph *g = nullptr;
  if (int err = check_graph(call, comm, c, g)) return err;
  if (maxindex < 0 || maxedges < 0 || (maxindex > 0 && index == nullptr) ||
      (maxedges > 0 && edges == nullptr)) {
    return device::error_raise(c, call, MPI_ERR_ARG, "invalid index (%d) or edges (%d) array",
                               maxindex, maxedges);
  }
  for (int i = 0; i < maxindex && i < g->nnodes(); ++i) index[i] = g->index[std::size_t(i)];
  for (int e = 0; e < maxedges && e < static_cast<int>(g->edges.size()); ++e) {
    edges[e] = g->edges[std::size_t(e)];
  }
  return MPI_SUCCESS;
}

int MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors) {
  const device::api_guard guard;
  const char *call = "MPI_Graph_neighbors_count";
  communicator *c = nullptr;
  const device::general_graph *g = nullptr;
  if (int err = check_graph(call, comm, c, g)) return err;
  if (int err = check_rank_in(call, *c, rank, g->nnodes())) return err;
  if (int err = api::check_not_null(call, c, nneighbors, "nneighbors")) return err;
  *nneighbors = g->degree(rank);
  return MPI_SUCCESS;
}

int MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[]) {
  const device::api_guard guard;
  const char *call = "MPI_Graph_neighbors";
  communicator *c = nullptr;
  const device::general_graph *g = nullptr;
  if (int err = check_graph(call, comm, c, g)) return err;
  if (int err = check_rank_in(call, *c, rank, g->nnodes())) return err;
  if (maxneighbors < 0 || (maxneighbors > 0 && neighbors == nullptr)) {
    return device::error_raise(c, call, MPI_ERR_ARG, "invalid neighbors array of %d", maxneighbors);
  }
  const int first = g->first_edge(rank);
  for (int k = 0; k < maxneighbors && k < g->degree(rank); ++k) {
    neighbors[k] = g->edges[std::size_t(first + k)];
  }
  return MPI_SUCCESS;
}

// Iris keeps ranks in order: rank r takes node r, the rest are left out.
int MPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[], int *newrank) {
  const device::api_guard guard;
  const char *call = "MPI_Graph_map";
  communicator *c = nullptr;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (int err = check_graph_args(call, *c, nnodes, index, edges)) return err;
  if (int err = api::check_not_null(call, c, newrank, "newrank")) return err;
  *newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank) {
  const device::api_guard guard;
  const char *call = "MPI_Cart_map";
  communicator *c = nullptr;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (ndims < 0) return device::error_raise(c, call, MPI_ERR_DIMS, "negative ndims %d", ndims);
  if (ndims > 0) {
    if (int err = api::check_not_null(call, c, dims, "dims")) return err;
  }
  (void)periods;
  if (int err = api::check_not_null(call, c, newrank, "newrank")) return err;
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
  }
  *newrank = c->rank < n ? c->rank : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

// The processes that agree on the dropped coordinates form one
// sub-grid; ordered by their rank in the grid, they are in row-major order
// of the kept coordinates, as their new ranks must be.
int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPI_Cart_sub";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  const device::cart_topology *grid = device::cart_of(*c);
  if (grid == nullptr) {
    return device::error_raise(c, call, MPI_ERR_TOPOLOGY,
                               "communicator 0x%x has no Cartesian topology",
                               static_cast<unsigned>(comm));
  }
  if (grid->ndims() > 0) {
    if (int err = api::check_not_null(call, c, remain_dims, "remain_dims")) return err;
  }
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  std::vector<int> coords(static_cast<std::size_t>(grid->ndims()));
  grid->coords_of(c->rank, coords);
  device::cart_topology sub;
  int color = 0;
  for (int d = 0; d < grid->ndims(); ++d) {
    const auto k = static_cast<std::size_t>(d);
    if (remain_dims[d] != 0) {
      sub.dims.push_back(grid->dims[k]);
      sub.periods.push_back(grid->periods[k]);
    } else {
      color = color * grid->dims[k] + coords[k];
    }
  }
  MPI_Comm made = MPI_COMM_NULL;
  if (int err = MPI_Comm_split(comm, color, c->rank, &made)) {
    *newcomm = MPI_COMM_NULL;
    return err;
  }
  device::cart_attach(*device::comm_lookup(made), std::move(sub));
  *newcomm = made;
  return MPI_SUCCESS;
}

}  // extern "C"
