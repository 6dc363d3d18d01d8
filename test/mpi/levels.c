/* Ranks at different thread levels in one job: MPI lets each process ask
 * for its own, and a program whose rank 0 runs a communication thread may
 * ask for MPI_THREAD_MULTIPLE there only. Rank r asks for level r % 4
 * (SINGLE, FUNNELED, SERIALIZED, MULTIPLE) and rank 0 for MULTIPLE; every
 * rank then makes communicators by each constructor that agrees on a
 * context (Comm_dup, Comm_split, Comm_create_group, Comm_idup,
 * Intercomm_create, Intercomm_merge, an intercommunicator's Comm_dup and
 * Comm_split, Win_create), 20 rounds, and checks traffic on each. Before
 * the fix a member at MULTIPLE ran a second agreement round that the
 * others did not, and the job hung in its first MPI_Comm_dup.
 *
 * The level is chosen from the launcher's rank variable (PMIX_RANK, or
 * PMI_RANK / OMPI_COMM_WORLD_RANK), read before MPI_Init_thread. */
#include <stdlib.h>

#include "check.h"

static int launcher_rank(void) {
  const char *names[] = {"PMIX_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK"};
  for (int i = 0; i < 3; ++i) {
    const char *value = getenv(names[i]);
    if (value != NULL) return atoi(value);
  }
  return 0;
}

/* The sum of the world ranks of `comm`'s members, by Allreduce, against the
 * sum of the ranks the members report. */
static void check_sum(MPI_Comm comm, int world_rank, const char *what) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  int *members = malloc(sizeof(int) * (size_t)n);
  MPI_Allgather(&world_rank, 1, MPI_INT, members, 1, MPI_INT, comm);
  int expected = 0;
  for (int i = 0; i < n; ++i) expected += members[i];
  free(members);
  int sum = -1;
  MPI_Allreduce(&world_rank, &sum, 1, MPI_INT, MPI_SUM, comm);
  CHECK(sum == expected, "%s: Allreduce gave %d, the members' ranks sum to %d", what, sum,
        expected);
}

int main(int argc, char **argv) {
  const int asked_rank = launcher_rank();
  const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                        MPI_THREAD_MULTIPLE};
  const int asked = asked_rank == 0 ? MPI_THREAD_MULTIPLE : levels[asked_rank % 4];
  int provided = -1;
  MPI_Init_thread(&argc, &argv, asked, &provided);
  int rank = -1;
  int size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(provided >= asked, "asked for level %d, got %d", asked, provided);
  int query = -1;
  MPI_Query_thread(&query);
  CHECK(query == provided, "MPI_Query_thread gave %d, MPI_Init_thread %d", query, provided);

  for (int round = 0; round < 20; ++round) {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    check_sum(dup, rank, "Comm_dup");

    MPI_Comm half;
    MPI_Comm_split(dup, rank % 2, rank, &half);
    check_sum(half, rank, "Comm_split");

    MPI_Group world_group, evens;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    const int range[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_incl(world_group, 1, (int(*)[3])range, &evens);
    MPI_Comm even = MPI_COMM_NULL;
    if (rank % 2 == 0) {
      MPI_Comm_create_group(MPI_COMM_WORLD, evens, 7, &even);
      check_sum(even, rank, "Comm_create_group");
      MPI_Comm_free(&even);
    }
    MPI_Group_free(&evens);
    MPI_Group_free(&world_group);

    MPI_Comm idup;
    MPI_Request request;
    MPI_Comm_idup(half, &idup, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    check_sum(idup, rank, "Comm_idup");
    MPI_Comm_free(&idup);

    if (size > 1) {
      /* The even ranks' group and the odd ranks', leaders world ranks 0 and 1. */
      MPI_Comm inter;
      MPI_Intercomm_create(half, 0, dup, rank % 2 ? 0 : 1, 11, &inter);
      int remote = -1;
      MPI_Comm_remote_size(inter, &remote);
      CHECK(remote == size / 2 + (rank % 2 ? size % 2 : 0), "Intercomm_create: remote size %d",
            remote);
      int mine = rank;
      int theirs = -1;
      if (rank <= 1) {
        MPI_Sendrecv(&mine, 1, MPI_INT, 0, 3, &theirs, 1, MPI_INT, 0, 3, inter, MPI_STATUS_IGNORE);
        CHECK(theirs == 1 - rank, "Intercomm_create: leader %d heard %d", rank, theirs);
      }
      MPI_Comm inter_dup;
      MPI_Comm_dup(inter, &inter_dup);
      MPI_Comm inter_split;
      MPI_Comm_split(inter_dup, 0, rank, &inter_split);
      MPI_Comm merged;
      MPI_Intercomm_merge(inter_split, rank % 2, &merged);
      check_sum(merged, rank, "Intercomm_merge");
      int merged_size = -1;
      MPI_Comm_size(merged, &merged_size);
      CHECK(merged_size == size, "Intercomm_merge: size %d of %d", merged_size, size);
      MPI_Comm_free(&merged);
      MPI_Comm_free(&inter_split);
      MPI_Comm_free(&inter_dup);
      MPI_Comm_free(&inter);
    }

    if (round % 5 == 0) {
      int cell = -1;
      MPI_Win win;
      MPI_Win_create(&cell, sizeof cell, sizeof cell, MPI_INFO_NULL, dup, &win);
      MPI_Win_fence(0, win);
      const int to = (rank + 1) % size;
      MPI_Put(&rank, 1, MPI_INT, to, 0, 1, MPI_INT, win);
      MPI_Win_fence(0, win);
      CHECK(cell == (rank + size - 1) % size, "Win_create: put gave %d", cell);
      MPI_Win_free(&win);
    }
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
  }
  int failures = check_failures;
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && failures == 0) {
    printf("levels: all checks passed on %d ranks (rank 0 at MULTIPLE, the others mixed)\n", size);
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
