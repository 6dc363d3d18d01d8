/* Communicator constructors and queries at any number of ranks:
 * Comm_split_type (shared memory, the MPI-4 hardware types, MPI_UNDEFINED),
 * Comm_create_group, Comm_idup, Comm_dup_with_info with set/get_info,
 * Group_range_incl/excl, Comm_test_inter, and the error classes.
 *
 * Usage: commsplit [NODES]  (the --nodes mpiexec was given; default 1).
 * mpiexec puts rank r of n on node r * K / n with K = min(NODES, n). */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank;
static int size;
static int nodes = 1;

static int node_of(int r) {
  const int k = nodes < size ? nodes : size;
  return (int)((long long)r * k / size);
}

static int ranks_on_node(int node) {
  int n = 0;
  for (int r = 0; r < size; ++r) n += node_of(r) == node;
  return n;
}

/* Checks that `comm` holds exactly my node's ranks, highest world rank
 * first (key -rank), and that traffic inside it works. */
static void check_node_comm(MPI_Comm comm, const char *what) {
  CHECK(comm != MPI_COMM_NULL, "%s: MPI_COMM_NULL", what);
  if (comm == MPI_COMM_NULL) return;
  int n = -1;
  int r = -1;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  const int node = node_of(rank);
  CHECK(n == ranks_on_node(node), "%s: size %d, expected %d", what, n, ranks_on_node(node));
  int last = -1;
  for (int w = 0; w < size; ++w) {
    if (node_of(w) == node) last = w;
  }
  CHECK(r == last - rank, "%s: rank %d for world rank %d (last of node %d)", what, r, rank, last);
  int *members = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  MPI_Allgather(&rank, 1, MPI_INT, members, 1, MPI_INT, comm);
  for (int i = 0; i < n; ++i) {
    CHECK(node_of(members[i]) == node && members[i] == last - i, "%s: member %d is world rank %d",
          what, i, members[i]);
  }
  free(members);
}

static void split_type(void) {
  MPI_Comm shared;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, &shared);
  check_node_comm(shared, "MPI_COMM_TYPE_SHARED");

  /* MPI_UNDEFINED takes part and gets MPI_COMM_NULL. */
  MPI_Comm some;
  MPI_Comm_split_type(MPI_COMM_WORLD, rank % 2 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0,
                      MPI_INFO_NULL, &some);
  CHECK((rank % 2 == 1) == (some == MPI_COMM_NULL), "MPI_UNDEFINED gave %x", some);
  if (some != MPI_COMM_NULL) {
    int n = -1;
    MPI_Comm_size(some, &n);
    int expected = 0;
    for (int r = 0; r < size; r += 2) expected += node_of(r) == node_of(rank);
    CHECK(n == expected, "even ranks of my node: %d, expected %d", n, expected);
    MPI_Comm_free(&some);
  }

  /* Hardware-guided: shared memory is the node; other resources are not
   * known and give MPI_COMM_NULL. */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory");
  MPI_Comm guided;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, -rank, info, &guided);
  check_node_comm(guided, "MPI_COMM_TYPE_HW_GUIDED mpi_shared_memory");
  if (guided != MPI_COMM_NULL) {
    int result = -1;
    MPI_Comm_compare(shared, guided, &result);
    CHECK(result == MPI_CONGRUENT, "shared and guided compared %d", result);
    MPI_Info used;
    MPI_Comm_get_info(guided, &used);
    char value[MPI_MAX_INFO_VAL];
    int flag = 0;
    MPI_Info_get(used, "mpi_hw_resource_type", MPI_MAX_INFO_VAL - 1, value, &flag);
    CHECK(flag == 1 && strcmp(value, "mpi_shared_memory") == 0, "guided comm's info: flag %d",
          flag);
    MPI_Info_free(&used);
    MPI_Comm_free(&guided);
  }
  MPI_Info_set(info, "mpi_hw_resource_type", "hwloc://NoSuchThing");
  MPI_Comm unknown = MPI_COMM_WORLD;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &unknown);
  CHECK(unknown == MPI_COMM_NULL, "an unknown resource type gave %x", unknown);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_RESOURCE_GUIDED, 0, info, &unknown);
  CHECK(unknown == MPI_COMM_NULL, "RESOURCE_GUIDED, unknown resource: %x", unknown);
  MPI_Info_free(&info);

  /* Unguided: a strict subset (the node) when there is one, else NULL. */
  MPI_Comm unguided;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, -rank, MPI_INFO_NULL, &unguided);
  if (ranks_on_node(node_of(rank)) < size) {
    check_node_comm(unguided, "MPI_COMM_TYPE_HW_UNGUIDED");
  } else {
    CHECK(unguided == MPI_COMM_NULL, "unguided on one node gave %x", unguided);
  }
  if (unguided != MPI_COMM_NULL) MPI_Comm_free(&unguided);

  /* A split of the node communicator again gives all of it. */
  MPI_Comm again;
  MPI_Comm_split_type(shared, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &again);
  int result = -1;
  MPI_Comm_compare(shared, again, &result);
  CHECK(result == MPI_CONGRUENT, "splitting the node again compared %d", result);
  MPI_Comm_free(&again);
  MPI_Comm_free(&shared);
}

static void create_group(void) {
  /* Evens and odds each build their own communicator, at the same time,
   * with different tags; only the members call. */
  MPI_Group world;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int range[1][3] = {{rank % 2, size - 1, 2}};
  MPI_Group mine;
  MPI_Group_range_incl(world, 1, range, &mine);
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_create_group(MPI_COMM_WORLD, mine, 10 + rank % 2, &half);
  CHECK(half != MPI_COMM_NULL, "create_group gave MPI_COMM_NULL to a member");
  int hsize = -1;
  int hrank = -1;
  MPI_Comm_size(half, &hsize);
  MPI_Comm_rank(half, &hrank);
  CHECK(hsize == (size - rank % 2 + 1) / 2 && hrank == rank / 2, "half: size %d rank %d", hsize,
        hrank);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half);
  int expected = 0;
  for (int r = rank % 2; r < size; r += 2) expected += r;
  CHECK(sum == expected, "sum over the half %d, expected %d", sum, expected);
  MPI_Comm_free(&half);
  MPI_Group_free(&mine);

  /* Everyone, in reverse order: rank size-1 becomes 0. */
  int reverse[1][3] = {{size - 1, 0, -1}};
  MPI_Group backwards;
  MPI_Group_range_incl(world, 1, reverse, &backwards);
  MPI_Comm back;
  MPI_Comm_create_group(MPI_COMM_WORLD, backwards, 0, &back);
  int brank = -1;
  MPI_Comm_rank(back, &brank);
  CHECK(brank == size - 1 - rank, "reversed rank %d", brank);
  int token = rank;
  MPI_Bcast(&token, 1, MPI_INT, 0, back);
  CHECK(token == size - 1, "bcast from the reversed root gave %d", token);
  MPI_Comm_free(&back);
  MPI_Group_free(&backwards);

  /* Rank 0 alone: nobody else takes part. */
  if (rank == 0) {
    int zero[1][3] = {{0, 0, 1}};
    MPI_Group just0;
    MPI_Group_range_incl(world, 1, zero, &just0);
    MPI_Comm alone;
    MPI_Comm_create_group(MPI_COMM_WORLD, just0, 3, &alone);
    int n = -1;
    MPI_Comm_size(alone, &n);
    CHECK(n == 1, "rank 0 alone: size %d", n);
    MPI_Comm_free(&alone);
    MPI_Group_free(&just0);
  }
  MPI_Group_free(&world);
}

static void dup_and_info(void) {
  MPI_Comm d;
  MPI_Request req;
  MPI_Comm_idup(MPI_COMM_WORLD, &d, &req);
  int done = 0;
  MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  if (!done) MPI_Wait(&req, MPI_STATUS_IGNORE);
  int token = rank == 0 ? 77 : -1;
  MPI_Bcast(&token, 1, MPI_INT, 0, d);
  CHECK(token == 77, "bcast over the idup gave %d", token);

  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPI_Info_set(info, "iris_test_hint", "blue");
  MPI_Comm withinfo;
  MPI_Comm_dup_with_info(d, info, &withinfo);
  MPI_Info_free(&info);
  MPI_Info used;
  MPI_Comm_get_info(withinfo, &used);
  char value[MPI_MAX_INFO_VAL];
  int flag = 0;
  MPI_Info_get(used, "iris_test_hint", MPI_MAX_INFO_VAL - 1, value, &flag);
  CHECK(flag == 1 && strcmp(value, "blue") == 0, "dup_with_info's hint: flag %d", flag);
  MPI_Info_free(&used);

  /* set_info adds and replaces; Comm_dup keeps the hints. */
  MPI_Info more;
  MPI_Info_create(&more);
  MPI_Info_set(more, "iris_test_hint", "green");
  MPI_Info_set(more, "iris_other", "1");
  MPI_Comm_set_info(withinfo, more);
  MPI_Info_free(&more);
  MPI_Comm copy;
  MPI_Comm_dup(withinfo, &copy);
  MPI_Comm_get_info(copy, &used);
  int nkeys = 0;
  MPI_Info_get_nkeys(used, &nkeys);
  MPI_Info_get(used, "iris_test_hint", MPI_MAX_INFO_VAL - 1, value, &flag);
  CHECK(nkeys == 3 && flag == 1 && strcmp(value, "green") == 0, "dup's hints: %d keys, flag %d",
        nkeys, flag);
  MPI_Info_free(&used);

  /* idup keeps them too; idup_with_info takes the given ones instead. */
  MPI_Comm icopy;
  MPI_Comm_idup(withinfo, &icopy, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Comm_get_info(icopy, &used);
  MPI_Info_get_nkeys(used, &nkeys);
  CHECK(nkeys == 3, "idup's hints: %d keys", nkeys);
  MPI_Info_free(&used);
  MPI_Comm_free(&icopy);
  MPI_Info only;
  MPI_Info_create(&only);
  MPI_Info_set(only, "iris_idup", "yes");
  MPI_Comm_idup_with_info(withinfo, only, &icopy, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Info_free(&only);
  MPI_Comm_get_info(icopy, &used);
  MPI_Info_get_nkeys(used, &nkeys);
  MPI_Info_get(used, "iris_idup", MPI_MAX_INFO_VAL - 1, value, &flag);
  CHECK(nkeys == 1 && flag == 1 && strcmp(value, "yes") == 0,
        "idup_with_info's hints: %d keys, flag %d", nkeys, flag);
  MPI_Info_free(&used);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, icopy);
  CHECK(sum == size * (size - 1) / 2, "allreduce over idup_with_info's comm gave %d", sum);
  MPI_Comm_free(&icopy);

  /* dup_with_info(MPI_INFO_NULL) drops them. */
  MPI_Comm bare;
  MPI_Comm_dup_with_info(copy, MPI_INFO_NULL, &bare);
  MPI_Comm_get_info(bare, &used);
  MPI_Info_get_nkeys(used, &nkeys);
  CHECK(nkeys == 0, "dup_with_info(MPI_INFO_NULL) kept %d hints", nkeys);
  MPI_Info_free(&used);
  MPI_Comm_free(&bare);
  MPI_Comm_free(&copy);
  MPI_Comm_free(&withinfo);
  MPI_Comm_free(&d);
}

static void groups(void) {
  MPI_Group world;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  /* Odd ranks, from the highest down, and what excluding them leaves. */
  int odd_down[1][3] = {{size % 2 == 0 ? size - 1 : size - 2, 1, -2}};
  MPI_Group odds;
  MPI_Group evens;
  if (size > 1) {
    MPI_Group_range_incl(world, 1, odd_down, &odds);
    MPI_Group_range_excl(world, 1, odd_down, &evens);
    int n = -1;
    MPI_Group_size(odds, &n);
    CHECK(n == size / 2, "odd ranks: %d", n);
    int first = 0;
    int got = -1;
    MPI_Group_translate_ranks(odds, 1, &first, world, &got);
    CHECK(got == odd_down[0][0], "first odd rank is world rank %d", got);
    MPI_Group_size(evens, &n);
    CHECK(n == (size + 1) / 2, "even ranks: %d", n);
    for (int i = 0; i < n; ++i) {
      MPI_Group_translate_ranks(evens, 1, &i, world, &got);
      CHECK(got == 2 * i, "even member %d is world rank %d", i, got);
    }
    MPI_Group_free(&odds);
    MPI_Group_free(&evens);
  }
  /* Several ranges: [0] then [size-1 .. 1 by -1] = everyone, 0 first. */
  int two[2][3] = {{0, 0, 1}, {size - 1, 1, -1}};
  MPI_Group all;
  MPI_Group_range_incl(world, size > 1 ? 2 : 1, two, &all);
  int result = -1;
  MPI_Group_compare(all, world, &result);
  CHECK(result == (size > 2 ? MPI_SIMILAR : MPI_IDENT), "ranges of everyone compared %d", result);
  MPI_Group_free(&all);
  /* Excluding everyone: the empty group. */
  int every[1][3] = {{0, size - 1, 1}};
  MPI_Group none;
  MPI_Group_range_excl(world, 1, every, &none);
  CHECK(none == MPI_GROUP_EMPTY, "excluding everyone gave %x", none);
  MPI_Group_free(&none);
  MPI_Group_free(&world);
}

static void queries_and_errors(void) {
  int flag = -1;
  MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
  CHECK(flag == 0, "MPI_COMM_WORLD test_inter %d", flag);
  MPI_Comm_test_inter(MPI_COMM_SELF, &flag);
  CHECK(flag == 0, "MPI_COMM_SELF test_inter %d", flag);

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Group world;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group g = MPI_GROUP_NULL;
  MPI_Comm c = MPI_COMM_NULL;
  int n = 0;
  int zero_stride[1][3] = {{0, 0, 0}};
  int past_end[1][3] = {{0, size, 1}};
  int twice[2][3] = {{0, 0, 1}, {0, 0, 1}};
  int away[1][3] = {{size - 1, 0, 1}};
  int negative[1][3] = {{-1, 0, 1}};
  MPI_Info bad_info; /* a handle that was freed */
  MPI_Info_create(&bad_info);
  MPI_Info freeing = bad_info;
  MPI_Info_free(&freeing);
  const struct {
    const char *what;
    int got;
    int expected;
  } cases[] = {
      {"remote_size of an intracommunicator", MPI_Comm_remote_size(MPI_COMM_WORLD, &n),
       MPI_ERR_COMM},
      {"remote_group of an intracommunicator", MPI_Comm_remote_group(MPI_COMM_WORLD, &g),
       MPI_ERR_COMM},
      {"test_inter of MPI_COMM_NULL", MPI_Comm_test_inter(MPI_COMM_NULL, &flag), MPI_ERR_COMM},
      {"test_inter with a NULL flag", MPI_Comm_test_inter(MPI_COMM_WORLD, NULL), MPI_ERR_ARG},
      {"range with stride 0", MPI_Group_range_incl(world, 1, zero_stride, &g), MPI_ERR_ARG},
      {"range past the end", MPI_Group_range_incl(world, 1, past_end, &g), MPI_ERR_RANK},
      {"range from rank -1", MPI_Group_range_excl(world, 1, negative, &g), MPI_ERR_RANK},
      {"a rank twice", MPI_Group_range_excl(world, 2, twice, &g), MPI_ERR_RANK},
      {"a negative range count", MPI_Group_range_incl(world, -1, twice, &g), MPI_ERR_ARG},
      {"range_incl of MPI_GROUP_NULL", MPI_Group_range_incl(MPI_GROUP_NULL, 1, twice, &g),
       MPI_ERR_GROUP},
      {"an invalid split_type", MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &c),
       MPI_ERR_ARG},
      {"split_type with a freed info",
       MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, bad_info, &c), MPI_ERR_INFO},
      {"split_type with a NULL newcomm",
       MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, NULL),
       MPI_ERR_ARG},
      {"create_group of MPI_GROUP_NULL",
       MPI_Comm_create_group(MPI_COMM_WORLD, MPI_GROUP_NULL, 0, &c), MPI_ERR_GROUP},
      {"create_group with tag -5", MPI_Comm_create_group(MPI_COMM_WORLD, world, -5, &c),
       MPI_ERR_TAG},
      {"dup_with_info of a freed info", MPI_Comm_dup_with_info(MPI_COMM_WORLD, bad_info, &c),
       MPI_ERR_INFO},
      {"set_info with MPI_INFO_NULL", MPI_Comm_set_info(MPI_COMM_WORLD, MPI_INFO_NULL),
       MPI_ERR_INFO},
      {"get_info with a NULL info", MPI_Comm_get_info(MPI_COMM_WORLD, NULL), MPI_ERR_ARG},
      {"idup with a NULL request", MPI_Comm_idup(MPI_COMM_WORLD, &c, NULL), MPI_ERR_ARG},
  };
  for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    CHECK(cases[i].got == cases[i].expected, "%s returned %d, expected %d", cases[i].what,
          cases[i].got, cases[i].expected);
  }
  if (size > 1) {
    const int err = MPI_Group_range_incl(world, 1, away, &g);
    CHECK(err == MPI_ERR_ARG, "a range leading away from last returned %d", err);
  }
  CHECK(g == MPI_GROUP_NULL && c == MPI_COMM_NULL, "a failed call wrote its output");
  MPI_Group_free(&world);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1) nodes = atoi(argv[1]);
  split_type();
  create_group();
  dup_and_info();
  groups();
  queries_and_errors();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) {
    printf("commsplit: all checks passed on %d ranks, %d nodes\n", size,
           nodes < size ? nodes : size);
    fflush(stdout);
  }
  return finish();
}
