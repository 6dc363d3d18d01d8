/* An intercommunicator built from two halves of MPI_COMM_WORLD (even and
 * odd world ranks): sizes, groups and test_inter; point-to-point across it
 * with wildcards; a dup with its own traffic; a merge in both orders; and
 * the collectives over it (MPI_ROOT / MPI_PROC_NULL roots), blocking and
 * nonblocking, each result checked; Scan over it is MPI_ERR_COMM; Comm_split
 * and Comm_create over it, checked by messages and a collective. Needs 2 ranks or more (at 1 it
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

/* The collectives over an intercommunicator of evens (world ranks 0, 2, ..)
 * and odds: local rank = world rank / 2; remote rank i is world rank 2i + 1
 * (seen from the evens) or 2i (from the odds). */
static void inter_collectives(MPI_Comm inter) {
  const int even = rank % 2 == 0;
  const int me = rank / 2;
  int rsize = 0;
  MPI_Comm_remote_size(inter, &rsize);
  int *blocks = malloc(sizeof(int) * (size_t)(rsize + 1));
  int *out = malloc(sizeof(int) * (size_t)(rsize + 1));
  CHECK(MPI_Barrier(inter) == MPI_SUCCESS, "inter barrier");
  /* Bcast from the evens' rank 0. */
  int x = even && me == 0 ? 77 : -1;
  const int from_evens = even ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  const int from_odds = even ? 0 : (me == 0 ? MPI_ROOT : MPI_PROC_NULL);
  CHECK(MPI_Bcast(&x, 1, MPI_INT, from_evens, inter) == MPI_SUCCESS, "inter bcast");
  CHECK(x == (even && me != 0 ? -1 : 77), "inter bcast gave %d", x);
  /* Allreduce: each group gets the sum of the other's world ranks. */
  int want = 0;
  for (int i = 0; i < rsize; ++i) want += even ? 2 * i + 1 : 2 * i;
  int sum = -1;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, inter);
  CHECK(sum == want, "inter allreduce gave %d, want %d", sum, want);
  sum = -1;
  MPI_Request r;
  MPI_Iallreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, inter, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  CHECK(sum == want, "inter iallreduce gave %d, want %d", sum, want);
  /* Reduce to the odds' rank 0 of the evens' world ranks + 1. */
  const int mine = rank + 1;
  sum = -1;
  MPI_Reduce(&mine, &sum, 1, MPI_INT, MPI_SUM, from_odds, inter);
  if (!even && me == 0) CHECK(sum == want + rsize, "inter reduce gave %d", sum);
  /* Gather the odds' world ranks at the evens' rank 0. */
  for (int i = 0; i < rsize; ++i) blocks[i] = -1;
  MPI_Gather(&rank, 1, MPI_INT, blocks, 1, MPI_INT, from_evens, inter);
  for (int i = 0; even && me == 0 && i < rsize; ++i) {
    CHECK(blocks[i] == 2 * i + 1, "inter gather [%d] = %d", i, blocks[i]);
  }
  /* Scatter 1000 + i from the odds' rank 0 to the evens. */
  for (int i = 0; i < rsize; ++i) blocks[i] = 1000 + i;
  x = -1;
  MPI_Scatter(blocks, 1, MPI_INT, &x, 1, MPI_INT, from_odds, inter);
  if (even) CHECK(x == 1000 + me, "inter scatter gave %d", x);
  /* Allgather and Alltoall. */
  MPI_Allgather(&rank, 1, MPI_INT, out, 1, MPI_INT, inter);
  for (int i = 0; i < rsize; ++i) {
    CHECK(out[i] == (even ? 2 * i + 1 : 2 * i), "inter allgather [%d] = %d", i, out[i]);
  }
  for (int i = 0; i < rsize; ++i) blocks[i] = rank * 100 + i;
  MPI_Alltoall(blocks, 1, MPI_INT, out, 1, MPI_INT, inter);
  for (int i = 0; i < rsize; ++i) {
    const int peer = even ? 2 * i + 1 : 2 * i;
    CHECK(out[i] == peer * 100 + me, "inter alltoall [%d] = %d", i, out[i]);
  }
  /* Reduce_scatter_block and Reduce_scatter: each group reduces
   * (local size x count) elements, w + j from world rank w, and the other
   * group gets them in blocks; the counts make both totals local x remote. */
  int lsize = 0;
  MPI_Comm_size(inter, &lsize);
  const int count = rsize;
  int *send = malloc(sizeof(int) * (size_t)(lsize * count));
  int *got = malloc(sizeof(int) * (size_t)count);
  int *counts = malloc(sizeof(int) * (size_t)lsize);
  int others = 0; /* the sum of the other group's world ranks */
  for (int i = 0; i < rsize; ++i) others += even ? 2 * i + 1 : 2 * i;
  for (int j = 0; j < lsize * count; ++j) send[j] = rank + j;
  for (int k = 0; k < lsize; ++k) counts[k] = count;
  for (int v = 0; v < 2; ++v) {
    for (int j = 0; j < count; ++j) got[j] = -1;
    if (v) {
      MPI_Reduce_scatter(send, got, counts, MPI_INT, MPI_SUM, inter);
    } else {
      MPI_Reduce_scatter_block(send, got, count, MPI_INT, MPI_SUM, inter);
    }
    for (int j = 0; j < count; ++j) {
      const int at = me * count + j;
      CHECK(got[j] == others + rsize * at, "inter reduce_scatter%s [%d] = %d", v ? "" : "_block", j,
            got[j]);
    }
  }
  free(send);
  free(got);
  free(counts);
  /* Scan is not defined over an intercommunicator. */
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  const int err = MPI_Scan(&rank, &sum, 1, MPI_INT, MPI_SUM, inter);
  CHECK(err == MPI_ERR_COMM, "Scan over the intercommunicator returned %d", err);
  free(blocks);
  free(out);
}

/* An intercommunicator made from `inter`: its sizes and rank, and the
 * remote group (world ranks `remote`, in order) by messages both ways and
 * an Allreduce (sum of the remote group's world ranks). */
static void check_sub(MPI_Comm sub, int lsize, int lrank, const int *remote, int rsize,
                      const char *what) {
  int flag = 0, n = -1, r = -1, m = -1;
  MPI_Comm_test_inter(sub, &flag);
  MPI_Comm_size(sub, &n);
  MPI_Comm_rank(sub, &r);
  MPI_Comm_remote_size(sub, &m);
  CHECK(flag == 1 && n == lsize && r == lrank && m == rsize,
        "%s: inter %d, local size %d rank %d, remote size %d; want %d %d %d", what, flag, n, r, m,
        lsize, lrank, rsize);
  if (m != rsize) return;
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)rsize);
  for (int j = 0; j < rsize; ++j) MPI_Isend(&rank, 1, MPI_INT, j, 9, sub, &reqs[j]);
  for (int j = 0; j < rsize; ++j) {
    int got = -1;
    MPI_Recv(&got, 1, MPI_INT, j, 9, sub, MPI_STATUS_IGNORE);
    CHECK(got == remote[j], "%s: remote rank %d is world rank %d, want %d", what, j, got,
          remote[j]);
  }
  MPI_Waitall(rsize, reqs, MPI_STATUSES_IGNORE);
  free(reqs);
  int want = 0, sum = -1;
  for (int j = 0; j < rsize; ++j) want += remote[j];
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, sub);
  CHECK(sum == want, "%s: allreduce %d, want %d", what, sum, want);
}

/* Comm_split over the intercommunicator (color: local rank % 2, key: minus
 * the local rank, so each side's order reverses; a color the other side
 * lacks gives MPI_COMM_NULL), and Comm_create over it with each side's
 * group minus its local rank 0 (all of it when that is alone). */
static void split_and_create(MPI_Comm inter) {
  int lsize = -1, lrank = -1, rsize = -1;
  MPI_Comm_size(inter, &lsize);
  MPI_Comm_rank(inter, &lrank);
  MPI_Comm_remote_size(inter, &rsize);
  const int other = 1 - rank % 2; /* remote local rank j is world rank 2j + other */
  int *remote = malloc(sizeof(int) * (size_t)(rsize + 1));
  MPI_Comm sub;
  const int color = lrank % 2;
  MPI_Comm_split(inter, color, -lrank, &sub);
  int n = 0;
  for (int j = rsize - 1; j >= 0; --j) {
    if (j % 2 == color) remote[n++] = 2 * j + other;
  }
  int mine = 0, before = 0;
  for (int l = 0; l < lsize; ++l) {
    mine += l % 2 == color;
    before += l % 2 == color && l > lrank;
  }
  if (n == 0) {
    CHECK(sub == MPI_COMM_NULL, "split: color %d has no remote members, yet a communicator", color);
  } else {
    CHECK(sub != MPI_COMM_NULL, "split: no communicator for color %d", color);
    if (sub != MPI_COMM_NULL) check_sub(sub, mine, before, remote, n, "split");
  }
  if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);

  /* Comm_split_type on an intercommunicator (MPI-4): with every rank on
   * one node, MPI_COMM_TYPE_SHARED keeps both groups whole, in key order
   * (over several nodes, only that it works); MPI_UNDEFINED gives
   * MPI_COMM_NULL. */
  MPI_Comm node;
  int node_size = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  int err = MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, -lrank, MPI_INFO_NULL, &sub);
  /* Over several nodes a part with no remote member on its node gets none. */
  CHECK(err == MPI_SUCCESS && (sub != MPI_COMM_NULL || node_size != size),
        "split_type of an intercommunicator: %d", err);
  if (err == MPI_SUCCESS && sub != MPI_COMM_NULL) {
    if (node_size == size) {
      n = 0;
      for (int j = rsize - 1; j >= 0; --j) remote[n++] = 2 * j + other;
      check_sub(sub, lsize, lsize - 1 - lrank, remote, n, "split_type");
    }
    MPI_Comm_free(&sub);
  }
  err = MPI_Comm_split_type(inter, MPI_UNDEFINED, 0, MPI_INFO_NULL, &sub);
  CHECK(err == MPI_SUCCESS && sub == MPI_COMM_NULL, "split_type MPI_UNDEFINED: %d", err);

  MPI_Group local, part;
  MPI_Comm_group(inter, &local);
  const int zero = 0;
  if (lsize > 1) {
    MPI_Group_excl(local, 1, &zero, &part);
  } else {
    MPI_Group_excl(local, 0, &zero, &part);
  }
  MPI_Comm_create(inter, part, &sub);
  const int remote_skip = rsize > 1 ? 1 : 0;
  n = 0;
  for (int j = remote_skip; j < rsize; ++j) remote[n++] = 2 * j + other;
  if (lsize > 1 && lrank == 0) {
    CHECK(sub == MPI_COMM_NULL, "create: local rank 0 was left out, yet a communicator");
  } else {
    CHECK(sub != MPI_COMM_NULL, "create: no communicator");
    if (sub != MPI_COMM_NULL) {
      check_sub(sub, lsize > 1 ? lsize - 1 : 1, lsize > 1 ? lrank - 1 : 0, remote, n, "create");
    }
  }
  if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
  MPI_Group_free(&part);
  MPI_Group_free(&local);
  free(remote);
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

    inter_collectives(inter);
    split_and_create(inter);

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
