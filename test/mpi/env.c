/* Environment calls: info objects, MPI_Dims_create, distributed graphs and Cartesian
 * topologies. Every rank checks every result; errors are returned
 * (MPI_ERRORS_RETURN) and checked for their class. */
#include <string.h>

#include <stdlib.h>

#include "check.h"

static void expect_class(int err, int want, const char *what) {
  int cls = -1;
  MPI_Error_class(err, &cls);
  CHECK(cls == want, "%s: class %d, expected %d", what, cls, want);
}

static void info_objects(void) {
  MPI_Info info = MPI_INFO_NULL;
  CHECK(MPI_Info_create(&info) == MPI_SUCCESS && info != MPI_INFO_NULL, "Info_create");
  int nkeys = -1;
  MPI_Info_get_nkeys(info, &nkeys);
  CHECK(nkeys == 0, "new info has %d keys", nkeys);
  MPI_Info_set(info, "alpha", "1");
  MPI_Info_set(info, "beta", "two");
  MPI_Info_set(info, "gamma", "three3");
  MPI_Info_set(info, "alpha", "one"); /* replaces, keeps its place */
  MPI_Info_get_nkeys(info, &nkeys);
  CHECK(nkeys == 3, "%d keys after 4 sets of 3", nkeys);
  const char *order[] = {"alpha", "beta", "gamma"};
  for (int i = 0; i < 3; ++i) {
    char key[MPI_MAX_INFO_KEY + 1];
    MPI_Info_get_nthkey(info, i, key);
    CHECK(strcmp(key, order[i]) == 0, "key %d is \"%s\", want \"%s\"", i, key, order[i]);
  }
  char value[MPI_MAX_INFO_VAL + 1];
  int flag = -1;
  MPI_Info_get(info, "alpha", MPI_MAX_INFO_VAL, value, &flag);
  CHECK(flag == 1 && strcmp(value, "one") == 0, "alpha: flag %d value \"%s\"", flag, value);
  MPI_Info_get(info, "gamma", 3, value, &flag); /* truncated to 3 characters */
  CHECK(flag == 1 && strcmp(value, "thr") == 0, "truncated gamma \"%s\"", value);
  MPI_Info_get(info, "delta", MPI_MAX_INFO_VAL, value, &flag);
  CHECK(flag == 0, "missing key found");
  int valuelen = -1;
  MPI_Info_get_valuelen(info, "gamma", &valuelen, &flag);
  CHECK(flag == 1 && valuelen == 6, "valuelen %d", valuelen);
  /* MPI-4 Info_get_string: buflen counts the NUL, in and out. */
  int buflen = 0;
  MPI_Info_get_string(info, "beta", &buflen, value, &flag);
  CHECK(flag == 1 && buflen == 4, "get_string size query: flag %d buflen %d", flag, buflen);
  buflen = (int)sizeof(value);
  MPI_Info_get_string(info, "beta", &buflen, value, &flag);
  CHECK(buflen == 4 && strcmp(value, "two") == 0, "get_string \"%s\" %d", value, buflen);
  buflen = 3;
  MPI_Info_get_string(info, "gamma", &buflen, value, &flag);
  CHECK(buflen == 7 && strcmp(value, "th") == 0, "short get_string \"%s\" %d", value, buflen);
  MPI_Info copy = MPI_INFO_NULL;
  MPI_Info_dup(info, &copy);
  MPI_Info_delete(info, "alpha");
  MPI_Info_get_nkeys(info, &nkeys);
  CHECK(nkeys == 2, "%d keys after delete", nkeys);
  MPI_Info_get_nkeys(copy, &nkeys);
  CHECK(nkeys == 3, "the dup changed with its original: %d keys", nkeys);
  MPI_Info_get(copy, "alpha", MPI_MAX_INFO_VAL, value, &flag);
  CHECK(flag == 1 && strcmp(value, "one") == 0, "dup alpha \"%s\"", value);
  expect_class(MPI_Info_delete(info, "alpha"), MPI_ERR_INFO_NOKEY, "delete of a missing key");
  expect_class(MPI_Info_get_nthkey(info, 2, value), MPI_ERR_ARG, "nthkey past the end");
  expect_class(MPI_Info_set(info, "", "x"), MPI_ERR_INFO_KEY, "empty key");
  char long_key[MPI_MAX_INFO_KEY + 2];
  memset(long_key, 'k', sizeof(long_key) - 1);
  long_key[sizeof(long_key) - 1] = '\0';
  expect_class(MPI_Info_set(info, long_key, "x"), MPI_ERR_INFO_KEY, "long key");
  expect_class(MPI_Info_get_nkeys(MPI_INFO_NULL, &nkeys), MPI_ERR_INFO, "MPI_INFO_NULL");
  expect_class(MPI_Info_get_nkeys(MPI_COMM_WORLD, &nkeys), MPI_ERR_INFO, "a comm as info");
  MPI_Info_free(&info);
  CHECK(info == MPI_INFO_NULL, "Info_free left the handle");
  MPI_Info freed = copy;
  MPI_Info_free(&copy);
  expect_class(MPI_Info_get_nkeys(freed, &nkeys), MPI_ERR_INFO, "a freed info");
  MPI_Info_get_nkeys(MPI_INFO_ENV, &nkeys);
  CHECK(nkeys >= 0, "MPI_INFO_ENV");
}

static void expect_dims(int nnodes, int ndims, const int *given, const int *want) {
  int dims[8];
  memcpy(dims, given, sizeof(int) * (size_t)ndims);
  int err = MPI_Dims_create(nnodes, ndims, dims);
  CHECK(err == MPI_SUCCESS, "Dims_create(%d, %d) returned %d", nnodes, ndims, err);
  for (int i = 0; i < ndims; ++i) {
    CHECK(dims[i] == want[i], "Dims_create(%d, %d): dims[%d] = %d, want %d", nnodes, ndims, i,
          dims[i], want[i]);
  }
}

static void dims(void) {
  expect_dims(6, 2, (int[]){0, 0}, (int[]){3, 2});
  expect_dims(6, 2, (int[]){0, 3}, (int[]){2, 3});
  expect_dims(7, 2, (int[]){0, 0}, (int[]){7, 1});
  expect_dims(16, 3, (int[]){0, 0, 0}, (int[]){4, 2, 2});
  expect_dims(72, 2, (int[]){0, 0}, (int[]){9, 8});
  expect_dims(12, 3, (int[]){0, 2, 0}, (int[]){3, 2, 2});
  expect_dims(8, 3, (int[]){2, 2, 2}, (int[]){2, 2, 2});
  expect_dims(1, 3, (int[]){0, 0, 0}, (int[]){1, 1, 1});
  expect_dims(720720, 4, (int[]){0, 0, 0, 0}, (int[]){33, 30, 28, 26});
  /* Of the factorizations with the least spread, the one whose smaller
   * factors are larger (the smallest first). */
  expect_dims(5616, 4, (int[]){0, 0, 0, 0}, (int[]){13, 9, 8, 6});
  expect_dims(20, 4, (int[]){0, 0, 0, 0}, (int[]){5, 2, 2, 1});
  expect_dims(5040, 3, (int[]){0, 0, 0}, (int[]){21, 16, 15});
  expect_dims(360, 3, (int[]){0, 0, 0}, (int[]){10, 6, 6});
  expect_dims(1000003, 2, (int[]){0, 0}, (int[]){1000003, 1}); /* a prime, quickly */
  expect_dims(1, 0, (int[]){0}, (int[]){0});                   /* no dimensions: only 1 fits */
  int d[3] = {0, 4, 0};
  expect_class(MPI_Dims_create(6, 3, d), MPI_ERR_DIMS, "4 does not divide 6");
  CHECK(d[0] == 0 && d[1] == 4 && d[2] == 0, "a failed Dims_create wrote dims");
  int neg[2] = {-1, 0};
  expect_class(MPI_Dims_create(6, 2, neg), MPI_ERR_DIMS, "negative entry");
  expect_class(MPI_Dims_create(6, -1, neg), MPI_ERR_DIMS, "negative ndims");
  int none[1] = {0};
  expect_class(MPI_Dims_create(5, 0, none), MPI_ERR_DIMS, "5 into no dimensions");
  int full[2] = {2, 2};
  expect_class(MPI_Dims_create(6, 2, full), MPI_ERR_DIMS, "all fixed, wrong product");
}

static void cartesian(int rank, int size) {
  int topo = -1;
  MPI_Topo_test(MPI_COMM_WORLD, &topo);
  CHECK(topo == MPI_UNDEFINED, "MPI_COMM_WORLD has topology %d", topo);
  int ndims = -1;
  expect_class(MPI_Cartdim_get(MPI_COMM_WORLD, &ndims), MPI_ERR_TOPOLOGY, "Cartdim of world");
  /* A 2-D grid of all ranks, periodic in the first dimension only. */
  int dims2[2] = {0, 0};
  MPI_Dims_create(size, 2, dims2);
  const int periods[2] = {1, 0};
  MPI_Comm cart = MPI_COMM_NULL;
  CHECK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims2, periods, 1, &cart) == MPI_SUCCESS &&
            cart != MPI_COMM_NULL,
        "Cart_create");
  MPI_Topo_test(cart, &topo);
  CHECK(topo == MPI_CART, "topology %d", topo);
  MPI_Cartdim_get(cart, &ndims);
  CHECK(ndims == 2, "ndims %d", ndims);
  int cart_rank = -1;
  MPI_Comm_rank(cart, &cart_rank);
  int coords[2] = {-1, -1};
  MPI_Cart_coords(cart, cart_rank, 2, coords);
  CHECK(coords[0] == cart_rank / dims2[1] && coords[1] == cart_rank % dims2[1],
        "rank %d at (%d, %d) in %dx%d", cart_rank, coords[0], coords[1], dims2[0], dims2[1]);
  int back = -1;
  MPI_Cart_rank(cart, coords, &back);
  CHECK(back == cart_rank, "Cart_rank of my coordinates: %d", back);
  int got_dims[2] = {0, 0};
  int got_periods[2] = {0, 0};
  int got_coords[2] = {-1, -1};
  MPI_Cart_get(cart, 2, got_dims, got_periods, got_coords);
  CHECK(got_dims[0] == dims2[0] && got_dims[1] == dims2[1] && got_periods[0] == 1 &&
            got_periods[1] == 0 && got_coords[0] == coords[0] && got_coords[1] == coords[1],
        "Cart_get");
  int source = -9;
  int dest = -9;
  MPI_Cart_shift(cart, 0, 1, &source, &dest); /* periodic: wraps */
  CHECK(dest == ((coords[0] + 1) % dims2[0]) * dims2[1] + coords[1] &&
            source == ((coords[0] - 1 + dims2[0]) % dims2[0]) * dims2[1] + coords[1],
        "periodic shift: source %d dest %d", source, dest);
  MPI_Cart_shift(cart, 1, 1, &source, &dest); /* not periodic: MPI_PROC_NULL at the edges */
  const int want_dest = coords[1] + 1 < dims2[1] ? cart_rank + 1 : MPI_PROC_NULL;
  const int want_source = coords[1] > 0 ? cart_rank - 1 : MPI_PROC_NULL;
  CHECK(dest == want_dest && source == want_source, "edge shift: source %d dest %d", source, dest);
  /* The shift's neighbours can talk over the new communicator. */
  int token = cart_rank;
  int received = -1;
  MPI_Cart_shift(cart, 0, 1, &source, &dest);
  MPI_Sendrecv(&token, 1, MPI_INT, dest, 5, &received, 1, MPI_INT, source, 5, cart,
               MPI_STATUS_IGNORE);
  CHECK(received == source, "received %d from %d", received, source);
  const int outside[2] = {dims2[0], dims2[1]};
  expect_class(MPI_Cart_rank(cart, outside, &back), MPI_ERR_ARG, "outside a non-periodic dim");
  expect_class(MPI_Cart_shift(cart, 2, 1, &source, &dest), MPI_ERR_DIMS, "direction 2 of 2");
  MPI_Comm_free(&cart);
  /* A grid smaller than the communicator: the rest get MPI_COMM_NULL. */
  int one[1] = {1};
  int no_period[1] = {0};
  MPI_Comm small = MPI_COMM_NULL;
  MPI_Cart_create(MPI_COMM_WORLD, 1, one, no_period, 0, &small);
  CHECK((rank == 0) == (small != MPI_COMM_NULL), "rank %d: grid of one gave 0x%x", rank,
        (unsigned)small);
  if (small != MPI_COMM_NULL) MPI_Comm_free(&small);
  int too_many[1] = {size + 1};
  expect_class(MPI_Cart_create(MPI_COMM_WORLD, 1, too_many, no_period, 0, &small), MPI_ERR_DIMS,
               "a grid larger than the communicator");
}

/* Checks the neighbours of `graph`: one source `left` with weight `win`,
 * one destination `right` with weight `wout`, and that they can talk. */
static void expect_ring(MPI_Comm graph, int rank, int left, int right, int win, int wout,
                        const char *how) {
  int topo = -1;
  MPI_Topo_test(graph, &topo);
  CHECK(topo == MPI_DIST_GRAPH, "%s: topology %d", how, topo);
  int in = -1, out = -1, weighted = -1;
  MPI_Dist_graph_neighbors_count(graph, &in, &out, &weighted);
  CHECK(in == 1 && out == 1 && weighted == 1, "%s: degrees %d %d weighted %d", how, in, out,
        weighted);
  int src = -1, sw = -1, dst = -1, dw = -1;
  MPI_Dist_graph_neighbors(graph, 1, &src, &sw, 1, &dst, &dw);
  CHECK(src == left && dst == right && sw == win && dw == wout, "%s: %d(%d) -> me -> %d(%d)", how,
        src, sw, dst, dw);
  int got = -1;
  MPI_Sendrecv(&rank, 1, MPI_INT, dst, 5, &got, 1, MPI_INT, src, 5, graph, MPI_STATUS_IGNORE);
  CHECK(got == left, "%s: a message over the graph came from %d", how, got);
}

static void dist_graphs(int rank, int size) {
  const int left = (rank - 1 + size) % size;
  const int right = (rank + 1) % size;
  /* Each rank names its own neighbours. */
  const int win = 100 + left, wout = 100 + rank;
  MPI_Comm adjacent = MPI_COMM_NULL;
  CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, &win, 1, &right, &wout,
                                       MPI_INFO_NULL, 0, &adjacent) == MPI_SUCCESS,
        "Dist_graph_create_adjacent");
  expect_ring(adjacent, rank, left, right, win, wout, "adjacent");
  MPI_Comm_free(&adjacent);
  /* Rank 0 names every edge of the same ring; the others none. */
  int *sources = malloc(sizeof(int) * (size_t)size);
  int *degrees = malloc(sizeof(int) * (size_t)size);
  int *destinations = malloc(sizeof(int) * (size_t)size);
  int *weights = malloc(sizeof(int) * (size_t)size);
  for (int r = 0; r < size; ++r) {
    sources[r] = r;
    degrees[r] = 1;
    destinations[r] = (r + 1) % size;
    weights[r] = 100 + r;
  }
  MPI_Comm general = MPI_COMM_NULL;
  CHECK(MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0 ? size : 0, sources, degrees, destinations,
                              weights, MPI_INFO_NULL, 0, &general) == MPI_SUCCESS,
        "Dist_graph_create");
  if (size > 1) expect_ring(general, rank, left, right, win, wout, "general");
  MPI_Comm_free(&general);
  free(sources);
  free(degrees);
  free(destinations);
  free(weights);
  int in = 0, out = 0, weighted = 0;
  expect_class(MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &in, &out, &weighted),
               MPI_ERR_TOPOLOGY, "neighbors_count of world");
  const int bad = size;
  expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &bad, MPI_UNWEIGHTED, 0, NULL,
                                              MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &general),
               MPI_ERR_RANK, "a source outside the communicator");
}

int main(int argc, char **argv) {
  /* Info objects work before MPI_Init (MPI-4). */
  MPI_Info early = MPI_INFO_NULL;
  MPI_Info_create(&early);
  MPI_Info_set(early, "when", "before init");
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int nkeys = 0;
  MPI_Info_get_nkeys(early, &nkeys);
  CHECK(nkeys == 1, "info made before MPI_Init has %d keys", nkeys);
  MPI_Info_free(&early);
  info_objects();
  dims();
  cartesian(rank, size);
  dist_graphs(rank, size);
  const double t0 = MPI_Wtime();
  const double t1 = MPI_Wtime();
  CHECK(t1 >= t0 && MPI_Wtick() > 0.0 && MPI_Wtick() < 1.0, "Wtime %f %f Wtick %g", t0, t1,
        MPI_Wtick());
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("env: all checks passed\n");
  return finish();
}
