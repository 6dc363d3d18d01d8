// MPI bindings for Cartesian topologies: Dims_create, Cart_create and the
// queries on a Cartesian communicator. Cart_create builds its communicator
// with MPI_Comm_split (ranks keep their order: reorder is allowed to be
// ignored) and attaches the grid to it (device/topology.hpp).
#include <vector>

#include "device/api/check.hpp"
#include "device/topology.hpp"

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
  const char *call = "MPI_Cart_create";
  (void)reorder;  // ranks keep their order, which MPI allows
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm_old, c)) return err;
  if (int err = check_ndims(call, c, ndims)) return err;
  if (ndims > 0) {
    if (int err = api::check_not_null(call, c, dims, "dims")) return err;
    if (int err = api::check_not_null(call, c, periods, "periods")) return err;
  }
  if (int err = api::check_not_null(call, c, comm_cart, "comm_cart")) return err;
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
  if (int err = MPI_Comm_split(comm_old, rank < n ? 0 : MPI_UNDEFINED, rank, &made)) return err;
  if (made != MPI_COMM_NULL) device::cart_attach(*device::comm_lookup(made), std::move(grid));
  *comm_cart = made;
  return MPI_SUCCESS;
}

int MPI_Cartdim_get(MPI_Comm comm, int *ndims) {
  const char *call = "MPI_Cartdim_get";
  communicator *c = nullptr;
  const device::cart_topology *grid = nullptr;
  if (int err = check_cart(call, comm, c, grid)) return err;
  if (int err = api::check_not_null(call, c, ndims, "ndims")) return err;
  *ndims = grid->ndims();
  return MPI_SUCCESS;
}

int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]) {
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
  const char *call = "MPI_Topo_test";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, status, "status")) return err;
  *status = device::cart_of(*c) != nullptr ? MPI_CART : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

}  // extern "C"
