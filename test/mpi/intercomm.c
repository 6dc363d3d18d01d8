/* An intercommunicator built from two halves of MPI_COMM_WORLD (even and
 * odd world ranks): sizes, groups and test_inter; point-to-point across it
 * with wildcards; a dup with its own traffic; a merge in both orders; and
 * MPI_ERR_COMM for collectives over it. Needs 2 ranks or more (at 1 it
 * only checks the intracommunicator answers). */
#include <stdlib.h>

#include "check.h"

static int rank;
static int size;

/* Everyone sends its world rank to remote rank (local rank % remote size);
 * each then receives from every remote rank that targets it. */
static void exchange(MPI_Comm inter, int tag, const char *what) {
  int lrank = -1;
  int lsize = -1;
  int rsize = -1;
  MPI_Comm_rank(inter, &lrank);
  MPI_Comm_size(inter, &lsize);
  MPI_Comm_remote_size(inter, &rsize);
  MPI_Request req;
  MPI_Isend(&rank, 1, MPI_INT, lrank % rsize, tag, inter, &req);
  int expected = 0;
  for (int j = 0; j < lsize + rsize; ++j) expected += j < rsize && j % lsize == lrank;
  for (int k = 0; k < expected; ++k) {
    int got = -1;
    MPI_Status status;
    MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, tag, inter, &status);
    /* Remote rank j is world rank 2j + (1 - rank % 2). */
    CHECK(status.MPI_SOURCE >= 0 && status.MPI_SOURCE < rsize && status.MPI_SOURCE % lsize == lrank,
          "%s: message from remote rank %d", what, status.MPI_SOURCE);
    CHECK(got == 2 * status.MPI_SOURCE + (1 - rank % 2), "%s: remote rank %d sent %d", what,
          status.MPI_SOURCE, got);
  }
  MPI_Wait(&req, MPI_STATUS_IGNORE);
}

static void check_merged(MPI_Comm merged, int odd_first, const char *what) {
  int mrank = -1;
  int msize = -1;
  MPI_Comm_rank(merged, &mrank);
  MPI_Comm_size(merged, &msize);
  const int evens = (size + 1) / 2;
  const int odds = size / 2;
  const int expected = odd_first ? (rank % 2 ? rank / 2 : odds + rank / 2)
                                 : (rank % 2 ? evens + rank / 2 : rank / 2);
  CHECK(msize == size && mrank == expected, "%s: rank %d of %d, expected %d", what, mrank, msize,
        expected);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged);
  CHECK(sum == size * (size - 1) / 2, "%s: allreduce gave %d", what, sum);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int flag = -1;
  int n = 0;
  CHECK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag) == MPI_SUCCESS && flag == 0, "world inter %d",
        flag);
  CHECK(MPI_Comm_remote_size(MPI_COMM_WORLD, &n) == MPI_ERR_COMM, "remote_size of world");
  if (size >= 2) {
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm inter;
    /* Leaders: world ranks 0 and 1 (rank 0 of each half). */
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 77, &inter);
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag == 1, "test_inter of the intercommunicator %d", flag);
    int lsize = -1;
    int lrank = -1;
    int rsize = -1;
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_remote_size(inter, &rsize);
    const int mine = rank % 2 ? size / 2 : (size + 1) / 2;
    CHECK(lsize == mine && lrank == rank / 2 && rsize == size - mine,
          "local size %d rank %d remote size %d", lsize, lrank, rsize);
    MPI_Group remote;
    MPI_Group world;
    MPI_Comm_remote_group(inter, &remote);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int first = 0;
    int w = -1;
    MPI_Group_translate_ranks(remote, 1, &first, world, &w);
    CHECK(w == 1 - rank % 2, "remote rank 0 is world rank %d", w);
    MPI_Group local;
    MPI_Comm_group(inter, &local);
    MPI_Group_size(local, &n);
    CHECK(n == lsize, "local group size %d", n);
    MPI_Group_free(&local);
    MPI_Group_free(&remote);
    MPI_Group_free(&world);

    exchange(inter, 5, "intercomm");
    /* The same tag on a dup never crosses. */
    MPI_Comm dup;
    MPI_Comm_dup(inter, &dup);
    MPI_Comm_test_inter(dup, &flag);
    int result = -1;
    MPI_Comm_compare(inter, dup, &result);
    CHECK(flag == 1 && result == MPI_CONGRUENT, "dup: inter %d, compared %d", flag, result);
    exchange(dup, 5, "dup");
    exchange(inter, 5, "intercomm again");

    /* Collectives over it are not supported yet. */
    const int err = MPI_Barrier(inter);
    CHECK(err == MPI_ERR_COMM, "Barrier over the intercommunicator returned %d", err);
    int x = 0;
    const int berr = MPI_Bcast(&x, 1, MPI_INT, 0, inter);
    CHECK(berr == MPI_ERR_COMM, "Bcast over the intercommunicator returned %d", berr);
    MPI_Comm none = MPI_COMM_NULL;
    const int serr = MPI_Comm_split(inter, 0, 0, &none);
    CHECK(serr == MPI_ERR_COMM && none == MPI_COMM_NULL, "split of it returned %d", serr);

    MPI_Comm merged;
    MPI_Intercomm_merge(inter, rank % 2, &merged); /* evens low: first */
    check_merged(merged, 0, "merge, evens low");
    MPI_Comm_free(&merged);
    MPI_Intercomm_merge(dup, rank % 2 == 0, &merged); /* odds low: first */
    check_merged(merged, 1, "merge, odds low");
    MPI_Comm_free(&merged);
    MPI_Intercomm_merge(inter, 0, &merged); /* alike: world rank 0's group first */
    check_merged(merged, 0, "merge, both low");
    MPI_Comm_free(&merged);
    const int merr = MPI_Intercomm_merge(half, 0, &merged);
    CHECK(merr == MPI_ERR_COMM, "merging an intracommunicator returned %d", merr);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) {
    printf("intercomm: all checks passed on %d ranks\n", size);
    fflush(stdout);
  }
  return finish();
}
