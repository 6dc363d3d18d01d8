/* The checks of an intercommunicator that MPI_Comm_accept/connect or
 * MPI_Comm_spawn made (dynamic.c, spawn.c): point-to-point both ways with
 * MPI_ANY_SOURCE, a large message each way between the roots, a broadcast
 * from each group's root, an allreduce across, an MPIX_Comm_agree and
 * MPIX_Comm_shrink over it, a merge (the accepting group
 * first) with an allreduce and a barrier, the same merge of a duplicate,
 * a window across jobs refused
 * (`same_job` 0), and MPI_Comm_disconnect. */
#ifndef IRIS_TEST_INTER_H
#define IRIS_TEST_INTER_H

#include <stdlib.h>

#include "check.h"

/* `accepted`: this group accepted (its members come first after a merge). */
static inline void exercise(MPI_Comm ic, int accepted, int same_job, const char *what) {
  int flag = 0;
  MPI_Comm_test_inter(ic, &flag);
  CHECK(flag == 1, "%s: not an intercommunicator", what);
  int lrank = -1;
  int lsize = -1;
  int rsize = -1;
  MPI_Comm_rank(ic, &lrank);
  MPI_Comm_size(ic, &lsize);
  MPI_Comm_remote_size(ic, &rsize);
  /* Each sends (its group's tag, its rank) to remote rank lrank % rsize. */
  const int tag = accepted ? 11 : 12;
  int out[2] = {accepted, lrank};
  MPI_Request req;
  MPI_Isend(out, 2, MPI_INT, lrank % rsize, tag, ic, &req);
  int expected = 0;
  for (int j = 0; j < rsize; ++j) expected += j % lsize == lrank;
  for (int k = 0; k < expected; ++k) {
    int in[2] = {-1, -1};
    MPI_Status status;
    MPI_Recv(in, 2, MPI_INT, MPI_ANY_SOURCE, accepted ? 12 : 11, ic, &status);
    CHECK(in[0] == !accepted && in[1] == status.MPI_SOURCE && in[1] % lsize == lrank,
          "%s: got (%d, %d) from remote rank %d", what, in[0], in[1], status.MPI_SOURCE);
  }
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  /* A large message each way between the roots (rendezvous). */
  enum { big = 300000 };
  int *data = malloc(big * sizeof(int));
  if (lrank == 0) {
    for (int i = 0; i < big; ++i) data[i] = accepted ? i : -i;
    MPI_Sendrecv_replace(data, big, MPI_INT, 0, 13, 0, 13, ic, MPI_STATUS_IGNORE);
    int bad = 0;
    for (int i = 0; i < big; ++i) bad += data[i] != (accepted ? -i : i);
    CHECK(bad == 0, "%s: %d of %d large-message elements wrong", what, bad, big);
  }
  free(data);
  /* Each group's root broadcasts to the other group. */
  for (int sender = 1; sender >= 0; --sender) {
    int value = lrank == 0 ? 4242 + accepted : -1;
    const int sending = sender == accepted;
    const int root = sending ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    MPI_Bcast(&value, 1, MPI_INT, root, ic);
    if (!sending) CHECK(value == 4242 + !accepted, "%s: bcast gave %d", what, value);
  }
  /* Allreduce across: each gets the sum of the other group's ranks. */
  int sum = -1;
  MPI_Allreduce(&lrank, &sum, 1, MPI_INT, MPI_SUM, ic);
  CHECK(sum == rsize * (rsize - 1) / 2, "%s: allreduce across gave %d", what, sum);
  /* ULFM over it, without a failure: an agreement gives the AND of the
   * remote group's flags, and a shrink keeps both groups whole. */
  int agreed = accepted ? 0x3 : 0x5;
  CHECK(MPIX_Comm_agree(ic, &agreed) == MPI_SUCCESS, "%s: agree failed", what);
  CHECK(agreed == (accepted ? 0x5 : 0x3), "%s: agree gave 0x%x", what, agreed);
  MPI_Comm shrunk = MPI_COMM_NULL;
  CHECK(MPIX_Comm_shrink(ic, &shrunk) == MPI_SUCCESS && shrunk != MPI_COMM_NULL,
        "%s: shrink failed", what);
  int shrunk_size = -1, shrunk_remote = -1;
  MPI_Comm_size(shrunk, &shrunk_size);
  MPI_Comm_remote_size(shrunk, &shrunk_remote);
  CHECK(shrunk_size == lsize && shrunk_remote == rsize, "%s: shrunk to %d and %d", what,
        shrunk_size, shrunk_remote);
  MPI_Comm_free(&shrunk);
  /* Merge: the accepting group first (both pass high = 0). */
  MPI_Comm merged = MPI_COMM_NULL;
  MPI_Intercomm_merge(ic, 0, &merged);
  int mrank = -1;
  int msize = -1;
  MPI_Comm_rank(merged, &mrank);
  MPI_Comm_size(merged, &msize);
  CHECK(msize == lsize + rsize, "%s: merged size %d", what, msize);
  CHECK(mrank == (accepted ? lrank : rsize + lrank), "%s: merged rank %d (local %d)", what, mrank,
        lrank);
  int total = -1;
  MPI_Allreduce(&mrank, &total, 1, MPI_INT, MPI_SUM, merged);
  CHECK(total == msize * (msize - 1) / 2, "%s: merged allreduce %d", what, total);
  MPI_Barrier(merged);
  /* A duplicate merges in the same order (before, each job put the group
   * with its lower connection index first, so that the two disagreed). */
  MPI_Comm dup = MPI_COMM_NULL, dup_merged = MPI_COMM_NULL;
  MPI_Comm_dup(ic, &dup);
  MPI_Intercomm_merge(dup, 0, &dup_merged);
  int dup_rank = -1;
  MPI_Comm_rank(dup_merged, &dup_rank);
  CHECK(dup_rank == mrank, "%s: merged rank %d from a duplicate, %d from the original", what,
        dup_rank, mrank);
  MPI_Comm_free(&dup_merged);
  MPI_Comm_free(&dup);
  /* One-sided over processes of two jobs: refused for now, clearly. */
  if (!same_job) {
    MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
    MPI_Win win = MPI_WIN_NULL;
    int *base = NULL;
    CHECK(MPI_Win_allocate(64, 1, MPI_INFO_NULL, merged, &base, &win) ==
              MPI_ERR_UNSUPPORTED_OPERATION,
          "%s: a window across jobs", what);
  }
  MPI_Comm_free(&merged);
  MPI_Comm_disconnect(&ic);
  CHECK(ic == MPI_COMM_NULL, "%s: disconnect left the handle", what);
}

#endif
