/* MPI_Comm_idup and MPI_Comm_idup_with_info are nonblocking: the context
 * agreement runs in the progress engine, so that
 *  - rank 0 may receive from every other rank (who started their idup and
 *    then Ssend to it) before it starts its own idup;
 *  - several idups are outstanding at once, on one communicator and on
 *    different ones started in opposite orders on even and odd ranks;
 *  - an idup overlaps an Iallreduce and point-to-point traffic on its parent;
 *  - an intercommunicator's idup works the same way;
 * and each duplicate then carries its own traffic (same tags as its parent,
 * no cross-matching), its collectives, its hints, its attributes (the copy
 * callback ran) and its parent's Cartesian topology. Without a nonblocking agreement the first case
 * hangs. Needs 2 ranks or more for the cross-rank cases; at 1 it checks the duplicates alone. */
#include <string.h>

#include "check.h"

static int rank;
static int size;

/* A sum over `comm` and a message on it with the tag its parent also uses,
 * so that a duplicate sharing its parent's context would mismatch. */
static void check_works(MPI_Comm dup, MPI_Comm parent, const char *what) {
  int dsize = -1;
  int drank = -1;
  MPI_Comm_size(dup, &dsize);
  MPI_Comm_rank(dup, &drank);
  int sum = -1;
  MPI_Allreduce(&drank, &sum, 1, MPI_INT, MPI_SUM, dup);
  CHECK(sum == dsize * (dsize - 1) / 2, "%s: allreduce gave %d", what, sum);
  if (dsize < 2) return;
  const int to = (drank + 1) % dsize;
  const int from = (drank - 1 + dsize) % dsize;
  /* The parent's message is sent first; the dup's receive must skip it. */
  int on_parent = 1000 + drank;
  int on_dup = 2000 + drank;
  MPI_Request sends[2];
  MPI_Isend(&on_parent, 1, MPI_INT, to, 7, parent, &sends[0]);
  MPI_Isend(&on_dup, 1, MPI_INT, to, 7, dup, &sends[1]);
  int got = -1;
  MPI_Recv(&got, 1, MPI_INT, from, 7, dup, MPI_STATUS_IGNORE);
  CHECK(got == 2000 + from, "%s: the dup received %d from %d", what, got, from);
  MPI_Recv(&got, 1, MPI_INT, from, 7, parent, MPI_STATUS_IGNORE);
  CHECK(got == 1000 + from, "%s: the parent received %d from %d", what, got, from);
  MPI_Waitall(2, sends, MPI_STATUSES_IGNORE);
}

static int copies = 0;

static int count_copy(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag) {
  (void)oldcomm;
  (void)keyval;
  (void)extra;
  ++copies;
  *(void **)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}

/* Rank 0 waits for every other rank's Ssend before starting its idup. */
static void late_root(void) {
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request req = MPI_REQUEST_NULL;
  if (rank == 0) {
    for (int i = 1; i < size; ++i) {
      int got = -1;
      MPI_Recv(&got, 1, MPI_INT, i, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CHECK(got == i, "late root: %d from rank %d", got, i);
    }
    MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req);
  } else {
    MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req);
    MPI_Ssend(&rank, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
  }
  MPI_Status status;
  MPI_Wait(&req, &status);
  CHECK(req == MPI_REQUEST_NULL, "late root: request not freed");
  check_works(dup, MPI_COMM_WORLD, "late root");
  MPI_Comm_free(&dup);
}

/* Four idups at once: two on world, one on each half of a split (so the
 * halves' agreements run side by side with world's), the halves' started
 * before world's on odd ranks and after on even ones; then with_info. */
static void many_at_once(void) {
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Comm dups[4];
  MPI_Request reqs[4];
  if (rank % 2) MPI_Comm_idup(half, &dups[2], &reqs[2]);
  MPI_Comm_idup(MPI_COMM_WORLD, &dups[0], &reqs[0]);
  MPI_Comm_idup(MPI_COMM_WORLD, &dups[1], &reqs[1]);
  if (rank % 2 == 0) MPI_Comm_idup(half, &dups[2], &reqs[2]);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "iris_test_hint", "yes");
  MPI_Comm_idup_with_info(half, info, &dups[3], &reqs[3]);
  MPI_Info_free(&info);
  /* Complete them from the last to the first. */
  for (int i = 3; i >= 0; --i) {
    int done = 0;
    while (!done) MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE);
  }
  check_works(dups[0], MPI_COMM_WORLD, "world dup 1");
  check_works(dups[1], MPI_COMM_WORLD, "world dup 2");
  check_works(dups[2], half, "half dup");
  check_works(dups[3], half, "half dup with info");
  /* The two duplicates of world keep apart from each other too. */
  check_works(dups[1], dups[0], "world dup 2 against dup 1");
  MPI_Info got;
  MPI_Comm_get_info(dups[3], &got);
  char value[16] = "";
  int flag = 0;
  MPI_Info_get(got, "iris_test_hint", (int)sizeof(value) - 1, value, &flag);
  CHECK(flag && strcmp(value, "yes") == 0, "idup_with_info: hint %s (flag %d)", value, flag);
  MPI_Info_free(&got);
  for (int i = 0; i < 4; ++i) MPI_Comm_free(&dups[i]);
  MPI_Comm_free(&half);
}

/* An idup started, then an Iallreduce and a ring exchange on the parent,
 * before the idup is waited for; the attribute copy callback ran. */
static void overlapped(void) {
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(count_copy, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
  MPI_Comm parent;
  MPI_Comm_dup(MPI_COMM_WORLD, &parent);
  static int payload = 42;
  MPI_Comm_set_attr(parent, keyval, &payload);
  copies = 0;
  MPI_Comm dup;
  MPI_Request reqs[2];
  MPI_Comm_idup(parent, &dup, &reqs[0]);
  int one = 1;
  int total = 0;
  MPI_Iallreduce(&one, &total, 1, MPI_INT, MPI_SUM, parent, &reqs[1]);
  int got = -1;
  MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 9, &got, 1, MPI_INT, (rank - 1 + size) % size,
               9, parent, MPI_STATUS_IGNORE);
  CHECK(got == (rank - 1 + size) % size, "overlapped: ring gave %d", got);
  MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
  CHECK(total == size, "overlapped: iallreduce gave %d", total);
  CHECK(copies == 1, "overlapped: the copy callback ran %d times", copies);
  void *value = NULL;
  int flag = 0;
  MPI_Comm_get_attr(dup, keyval, &value, &flag);
  CHECK(flag && value == &payload, "overlapped: the attribute was not copied");
  check_works(dup, parent, "overlapped");
  MPI_Comm_free(&dup);
  MPI_Comm_free(&parent);
  MPI_Comm_free_keyval(&keyval);
}

/* The even and odd halves' intercommunicator: every rank but each group's
 * rank 0 starts its idup and then Ssends to remote rank 0, which receives
 * them all before starting its own. */
static void intercomm(void) {
  MPI_Comm local;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &local);
  MPI_Comm inter;
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 77, &inter);
  int lrank = -1;
  int rsize = -1;
  MPI_Comm_rank(inter, &lrank);
  MPI_Comm_remote_size(inter, &rsize);
  MPI_Comm dup;
  MPI_Request req;
  if (lrank == 0) {
    for (int i = 1; i < rsize; ++i) {
      int got = -1;
      MPI_Recv(&got, 1, MPI_INT, i, 5, inter, MPI_STATUS_IGNORE);
      CHECK(got == i, "intercomm: %d from remote rank %d", got, i);
    }
    MPI_Comm_idup(inter, &dup, &req);
  } else {
    MPI_Comm_idup(inter, &dup, &req);
    MPI_Ssend(&lrank, 1, MPI_INT, 0, 5, inter);
  }
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  int flag = 0;
  MPI_Comm_test_inter(dup, &flag);
  CHECK(flag, "intercomm: the dup is not an intercommunicator");
  /* Remote rank 0 hears from every remote rank, on the dup and on inter. */
  int sum = -1;
  MPI_Allreduce(&lrank, &sum, 1, MPI_INT, MPI_SUM, dup);
  CHECK(sum == rsize * (rsize - 1) / 2, "intercomm: allreduce over the dup gave %d", sum);
  int mine = 100 + lrank;
  MPI_Request sends[2];
  MPI_Isend(&lrank, 1, MPI_INT, lrank % rsize, 6, inter, &sends[0]);
  MPI_Isend(&mine, 1, MPI_INT, lrank % rsize, 6, dup, &sends[1]);
  int lsize = -1;
  MPI_Comm_size(inter, &lsize);
  for (int j = 0; j < rsize; ++j) {
    if (j % lsize != lrank) continue;
    int got = -1;
    MPI_Recv(&got, 1, MPI_INT, j, 6, dup, MPI_STATUS_IGNORE);
    CHECK(got == 100 + j, "intercomm: the dup received %d from %d", got, j);
    MPI_Recv(&got, 1, MPI_INT, j, 6, inter, MPI_STATUS_IGNORE);
    CHECK(got == j, "intercomm: inter received %d from %d", got, j);
  }
  MPI_Waitall(2, sends, MPI_STATUSES_IGNORE);
  /* The local group of the dup works too (Barrier over both groups). */
  MPI_Barrier(dup);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  late_root();
  many_at_once();
  overlapped();
  if (size >= 2) intercomm();
  /* A Cartesian communicator's idup keeps the topology. */
  MPI_Comm cart;
  int periods = 1;
  MPI_Cart_create(MPI_COMM_WORLD, 1, &size, &periods, 0, &cart);
  MPI_Comm cart_dup;
  MPI_Request cart_req;
  MPI_Comm_idup(cart, &cart_dup, &cart_req);
  MPI_Wait(&cart_req, MPI_STATUS_IGNORE);
  int topo = MPI_UNDEFINED;
  MPI_Topo_test(cart_dup, &topo);
  CHECK(topo == MPI_CART, "the idup of a Cartesian communicator has topology %d", topo);
  MPI_Comm_free(&cart_dup);
  MPI_Comm_free(&cart);
  /* MPI_COMM_NULL and a null request are refused. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm dup;
  CHECK(MPI_Comm_idup(MPI_COMM_NULL, &dup, NULL) != MPI_SUCCESS, "idup of MPI_COMM_NULL");
  CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &dup, NULL) == MPI_ERR_ARG, "idup with request NULL");
  if (check_failures == 0 && rank == 0) printf("idup: all checks passed on %d ranks\n", size);
  return finish();
}
