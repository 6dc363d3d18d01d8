/* Topologies: a ring graph (Graph_create and every query), the
 * neighbourhood collectives on a graph with double edges and self-loops
 * (at 1 and 2 ranks), Graph_map and
 * Cart_map, Cart_sub of a 2-D grid into rows and columns with point-to-point
 * along them, Topo_test of each kind, topologies kept by Comm_dup, and the
 * error classes of bad arguments. */
#include <stdlib.h>

#include "check.h"

static int rank, size;

static void graph(void) {
  /* A ring where node i links to i-1 and i+1 (one link when size is 2). */
  int index[64], edges[128], e = 0;
  for (int i = 0; i < size; ++i) {
    if (size > 1) edges[e++] = (i + size - 1) % size;
    if (size > 2) edges[e++] = (i + 1) % size;
    index[i] = e;
  }
  MPI_Comm g, dup;
  MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g);
  int kind = -1;
  MPI_Topo_test(g, &kind);
  CHECK(kind == MPI_GRAPH, "Topo_test of a graph: %d", kind);
  int nnodes = 0, nedges = 0;
  MPI_Graphdims_get(g, &nnodes, &nedges);
  CHECK(nnodes == size && nedges == e, "Graphdims_get %d %d", nnodes, nedges);
  int gi[64], ge[128];
  MPI_Graph_get(g, size, e, gi, ge);
  for (int i = 0; i < size; ++i) CHECK(gi[i] == index[i], "index[%d] = %d", i, gi[i]);
  for (int k = 0; k < e; ++k) CHECK(ge[k] == edges[k], "edges[%d] = %d", k, ge[k]);
  int n = -1, nb[2] = {-1, -1};
  MPI_Graph_neighbors_count(g, rank, &n);
  MPI_Graph_neighbors(g, rank, 2, nb);
  CHECK(n == (size > 2 ? 2 : size - 1), "neighbors_count %d", n);
  if (size > 1) CHECK(nb[0] == (rank + size - 1) % size, "neighbor %d", nb[0]);
  /* Talk to the graph neighbours. */
  int got[2] = {-1, -1};
  MPI_Request reqs[4];
  for (int k = 0; k < n; ++k) {
    MPI_Irecv(&got[k], 1, MPI_INT, nb[k], 0, g, &reqs[k]);
    MPI_Isend(&rank, 1, MPI_INT, nb[k], 0, g, &reqs[n + k]);
  }
  MPI_Waitall(2 * n, reqs, MPI_STATUSES_IGNORE);
  for (int k = 0; k < n; ++k) CHECK(got[k] == nb[k], "from neighbour %d got %d", nb[k], got[k]);
  MPI_Comm_dup(g, &dup);
  MPI_Topo_test(dup, &kind);
  MPI_Graphdims_get(dup, &nnodes, &nedges);
  CHECK(kind == MPI_GRAPH && nnodes == size && nedges == e, "dup of a graph: %d %d %d", kind,
        nnodes, nedges);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&g);
  int newrank = -5;
  const int one_index[1] = {0};
  MPI_Graph_map(MPI_COMM_WORLD, 1, one_index, edges, &newrank);
  CHECK(newrank == (rank == 0 ? 0 : MPI_UNDEFINED), "Graph_map %d", newrank);
  /* A graph of fewer nodes than ranks: the rest get MPI_COMM_NULL. */
  MPI_Graph_create(MPI_COMM_WORLD, 1, one_index, edges, 0, &g);
  CHECK((rank == 0) == (g != MPI_COMM_NULL), "graph of one node on rank %d", rank);
  if (g != MPI_COMM_NULL) MPI_Comm_free(&g);
}

/* The block that `to` receives as its block k over graph g: sent by nb[k],
 * as the m-th of its messages to `to`, where m counts the earlier blocks of
 * `to` from the same rank (several edges between two ranks match in order). */
static int expected_block(const int *index, const int *edges, int to, int k) {
  const int first = to == 0 ? 0 : index[to - 1];
  const int from = edges[first + k];
  int m = 0;
  for (int j = first; j < first + k; ++j) m += edges[j] == from;
  const int from_first = from == 0 ? 0 : index[from - 1];
  for (int j = from_first; j < index[from]; ++j) {
    if (edges[j] == to && m-- == 0) return from * 100 + (j - from_first);
  }
  return -1;
}

/* Neighbourhood collectives on a general graph (MPI_Graph_create): the
 * neighbours are MPI_Graph_neighbors' list, sent to and received from in
 * that order. A ring where node i links to i-1 then i+1: at 2 ranks both
 * edges go to the other rank, at 1 rank both are self-loops. */
static void graph_neighbors(void) {
  int index[64], edges[128], e = 0;
  for (int i = 0; i < size; ++i) {
    edges[e++] = (i + size - 1) % size;
    edges[e++] = (i + 1) % size;
    index[i] = e;
  }
  MPI_Comm g;
  MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g);
  int out[2], in[2];
  /* Allgather: every block of a rank is its rank. */
  in[0] = in[1] = -1;
  int err = MPI_Neighbor_allgather(&rank, 1, MPI_INT, in, 1, MPI_INT, g);
  CHECK(err == MPI_SUCCESS, "Neighbor_allgather on a graph: %d", err);
  const int *nb = edges + (rank == 0 ? 0 : index[rank - 1]);
  for (int k = 0; k < 2; ++k) CHECK(in[k] == nb[k], "allgather block %d: %d", k, in[k]);
  /* Alltoall, blocking, nonblocking and persistent: block k is rank*100+k. */
  for (int form = 0; form < 3; ++form) {
    out[0] = rank * 100;
    out[1] = rank * 100 + 1;
    in[0] = in[1] = -1;
    MPI_Request r = MPI_REQUEST_NULL;
    if (form == 0) err = MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, g);
    if (form == 1) err = MPI_Ineighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, g, &r);
    if (form == 2) {
      err = MPI_Neighbor_alltoall_init(out, 1, MPI_INT, in, 1, MPI_INT, g, MPI_INFO_NULL, &r);
      if (err == MPI_SUCCESS) err = MPI_Start(&r);
    }
    CHECK(err == MPI_SUCCESS, "neighbor alltoall form %d on a graph: %d", form, err);
    if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (form == 2) MPI_Request_free(&r);
    for (int k = 0; k < 2; ++k) {
      const int want = expected_block(index, edges, rank, k);
      CHECK(in[k] == want, "alltoall form %d block %d: %d, not %d", form, k, in[k], want);
    }
  }
  /* Alltoallv and alltoallw, the blocks swapped in the buffers. */
  const int counts[2] = {1, 1}, displs[2] = {1, 0};
  const MPI_Aint wdispls[2] = {sizeof(int), 0};
  const MPI_Datatype types[2] = {MPI_INT, MPI_INT};
  for (int w = 0; w < 2; ++w) {
    out[1] = rank * 100;
    out[0] = rank * 100 + 1;
    in[0] = in[1] = -1;
    err = w ? MPI_Neighbor_alltoallw(out, counts, wdispls, types, in, counts, wdispls, types, g)
            : MPI_Neighbor_alltoallv(out, counts, displs, MPI_INT, in, counts, displs, MPI_INT, g);
    CHECK(err == MPI_SUCCESS, "Neighbor_alltoall%c on a graph: %d", w ? 'w' : 'v', err);
    for (int k = 0; k < 2; ++k) {
      const int want = expected_block(index, edges, rank, k);
      CHECK(in[1 - k] == want, "alltoall%c block %d: %d, not %d", w ? 'w' : 'v', k, in[1 - k],
            want);
    }
  }
  MPI_Comm_free(&g);
}

static void cart(void) {
  int dims[2] = {0, 0}, periods[2] = {1, 0};
  MPI_Dims_create(size, 2, dims);
  MPI_Comm grid, row, col, dup;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
  int coords[2];
  MPI_Cart_coords(grid, rank, 2, coords);
  const int keep_row[2] = {0, 1}, keep_col[2] = {1, 0};
  MPI_Cart_sub(grid, keep_row, &row);
  MPI_Cart_sub(grid, keep_col, &col);
  int rsize, rrank, csize, crank, ndims = -1, kind = -1;
  MPI_Comm_size(row, &rsize);
  MPI_Comm_rank(row, &rrank);
  MPI_Comm_size(col, &csize);
  MPI_Comm_rank(col, &crank);
  CHECK(rsize == dims[1] && rrank == coords[1], "row: size %d rank %d", rsize, rrank);
  CHECK(csize == dims[0] && crank == coords[0], "column: size %d rank %d", csize, crank);
  MPI_Cartdim_get(row, &ndims);
  MPI_Topo_test(row, &kind);
  CHECK(ndims == 1 && kind == MPI_CART, "row topology: %d dims, kind %d", ndims, kind);
  int cd[1], cp[1], cc[1];
  MPI_Cart_get(col, 1, cd, cp, cc);
  CHECK(cd[0] == dims[0] && cp[0] == 1 && cc[0] == coords[0], "column grid %d %d %d", cd[0], cp[0],
        cc[0]);
  /* The sum of grid ranks along each row. */
  int sum = 0, want = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, row);
  for (int j = 0; j < dims[1]; ++j) want += coords[0] * dims[1] + j;
  CHECK(sum == want, "row sum %d, want %d", sum, want);
  /* Shift along the periodic column. */
  int src, dst, got = -1;
  MPI_Cart_shift(col, 0, 1, &src, &dst);
  MPI_Sendrecv(&rank, 1, MPI_INT, dst, 1, &got, 1, MPI_INT, src, 1, col, MPI_STATUS_IGNORE);
  const int above = ((coords[0] + dims[0] - 1) % dims[0]) * dims[1] + coords[1];
  CHECK(got == above, "shift got %d, want %d", got, above);
  const int none[2] = {0, 0};
  MPI_Comm alone;
  MPI_Cart_sub(grid, none, &alone);
  int asize = 0;
  MPI_Comm_size(alone, &asize);
  MPI_Cartdim_get(alone, &ndims);
  CHECK(asize == 1 && ndims == 0, "Cart_sub keeping nothing: size %d dims %d", asize, ndims);
  MPI_Comm_dup(grid, &dup);
  MPI_Topo_test(dup, &kind);
  int dd[2], dp[2], dc[2];
  MPI_Cart_get(dup, 2, dd, dp, dc);
  CHECK(kind == MPI_CART && dd[0] == dims[0] && dc[1] == coords[1], "dup of a grid: %d", kind);
  int newrank = -5;
  const int two[1] = {size < 2 ? 1 : 2};
  MPI_Cart_map(MPI_COMM_WORLD, 1, two, periods, &newrank);
  CHECK(newrank == (rank < two[0] ? rank : MPI_UNDEFINED), "Cart_map %d", newrank);
  MPI_Topo_test(MPI_COMM_WORLD, &kind);
  CHECK(kind == MPI_UNDEFINED, "world has no topology: %d", kind);
  MPI_Comm_free(&alone);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&row);
  MPI_Comm_free(&col);
  MPI_Comm_free(&grid);
}

static void errors(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int nnodes, nedges, n;
  int err = MPI_Graphdims_get(MPI_COMM_WORLD, &nnodes, &nedges);
  CHECK(err == MPI_ERR_TOPOLOGY, "Graphdims_get without a graph: %d", err);
  const int index[2] = {1, 2}, bad_edges[2] = {1, 7};
  MPI_Comm g = MPI_COMM_NULL;
  err = MPI_Graph_create(MPI_COMM_WORLD, 2, index, bad_edges, 0, &g);
  CHECK(err == MPI_ERR_ARG || size < 2, "Graph_create with edge 7: %d", err);
  const int falling[2] = {2, 1};
  err = MPI_Graph_create(MPI_COMM_WORLD, 1, falling, bad_edges, 0, &g);
  CHECK(err == MPI_ERR_ARG, "Graph_create with a bad edge: %d", err);
  err = MPI_Graph_create(MPI_COMM_WORLD, size + 1, index, bad_edges, 0, &g);
  CHECK(err == MPI_ERR_ARG, "Graph_create of size+1 nodes: %d", err);
  const int keep[1] = {1};
  MPI_Comm sub;
  err = MPI_Cart_sub(MPI_COMM_WORLD, keep, &sub);
  CHECK(err == MPI_ERR_TOPOLOGY, "Cart_sub of world: %d", err);
  const int edges[2] = {0, 0};
  MPI_Graph_create(MPI_COMM_WORLD, 1, index, edges, 0, &g);
  if (g != MPI_COMM_NULL) {
    err = MPI_Graph_neighbors_count(g, 3, &n);
    CHECK(err == MPI_ERR_RANK, "Graph_neighbors_count of rank 3: %d", err);
    MPI_Comm_free(&g);
  }
  /* A grid larger than the communicator: an error, and MPI_COMM_NULL. */
  MPI_Comm too_big = MPI_COMM_WORLD;
  const int wide[2] = {size + 1, 1}, flat[2] = {0, 0};
  err = MPI_Cart_create(MPI_COMM_WORLD, 2, wide, flat, 0, &too_big);
  CHECK(err == MPI_ERR_DIMS && too_big == MPI_COMM_NULL, "Cart_create too big: %d", err);
  MPI_Comm no_graph = MPI_COMM_WORLD;
  const int bad_index[1] = {-1};
  err = MPI_Graph_create(MPI_COMM_WORLD, 1, bad_index, edges, 0, &no_graph);
  CHECK(err != MPI_SUCCESS && no_graph == MPI_COMM_NULL, "Graph_create bad index: %d", err);
  const int zero[1] = {0};
  err = MPI_Cart_map(MPI_COMM_WORLD, 1, zero, zero, &n);
  CHECK(err == MPI_ERR_DIMS, "Cart_map of dims 0: %d", err);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  graph();
  graph_neighbors();
  cart();
  errors();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("topo: all checks passed on %d ranks\n", size);
  return finish();
}
