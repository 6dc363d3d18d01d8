/* MPI-4 sessions, with and without the World model in one process:
 *   A. a session before MPI_Init: its process sets, their info and groups, a
 *      communicator from each by MPI_Comm_create_from_group, point-to-point
 *      and collectives over it; MPI_Initialized stays 0;
 *   B. two sessions at once, each with its communicator; the first ends and
 *      the second's still works;
 *   C. session error handlers: a user handler gets the session and the code
 *      (Session_call_errhandler, an unknown process set), set and get;
 *      MPI_ERRORS_RETURN; refusals (bad thread_level, bad handler);
 *   D. every session has ended (MPI has ended with them): MPI_Init starts the
 *      World model; a session inside it, with a buffer of its own for
 *      buffered sends on its communicators; MPI_Finalize with the session open;
 *      the session's communicator still works; its finalize ends MPI, and
 *      no session may begin after that (MPI_Finalize ended MPI for good).
 * Any number of ranks. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int size = -1; /* from mpi://WORLD's info */
static int rank = -1;
static int handler_calls = 0;
static MPI_Session handler_session = MPI_SESSION_NULL;
static int handler_code = 0;

static void on_error(MPI_Session *session, int *code, ...) {
  ++handler_calls;
  handler_session = *session;
  handler_code = *code;
}

/* The value of `key` in `info` as an int, or -1. */
static int info_int(MPI_Info info, const char *key) {
  char value[64] = "";
  int flag = 0;
  MPI_Info_get(info, key, sizeof(value) - 1, value, &flag);
  return flag ? atoi(value) : -1;
}

/* A communicator of process set `pset` of `session`, checked by a ring of
 * sendrecvs and an allreduce of the ranks. */
static MPI_Comm comm_of(MPI_Session session, const char *pset, const char *tag, int expect_size) {
  MPI_Group group = MPI_GROUP_NULL;
  CHECK(MPI_Group_from_session_pset(session, pset, &group) == MPI_SUCCESS, "%s group", pset);
  int gsize = -1;
  MPI_Group_size(group, &gsize);
  CHECK(gsize == expect_size, "%s group size %d, expected %d", pset, gsize, expect_size);
  MPI_Comm comm = MPI_COMM_NULL;
  CHECK(MPI_Comm_create_from_group(group, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm) ==
            MPI_SUCCESS,
        "%s comm", pset);
  MPI_Group_free(&group);
  int csize = -1;
  int crank = -1;
  MPI_Comm_size(comm, &csize);
  MPI_Comm_rank(comm, &crank);
  CHECK(csize == expect_size, "%s comm size %d", pset, csize);
  int right = -1;
  MPI_Sendrecv(&crank, 1, MPI_INT, (crank + 1) % csize, 7, &right, 1, MPI_INT,
               (crank + csize - 1) % csize, 7, comm, MPI_STATUS_IGNORE);
  CHECK(right == (crank + csize - 1) % csize, "%s ring got %d", pset, right);
  int sum = -1;
  MPI_Allreduce(&crank, &sum, 1, MPI_INT, MPI_SUM, comm);
  CHECK(sum == csize * (csize - 1) / 2, "%s allreduce %d", pset, sum);
  return comm;
}

static void process_sets(MPI_Session s) {
  int n = -1;
  CHECK(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n) == MPI_SUCCESS && n == 2, "%d psets", n);
  const char *names[2] = {"mpi://WORLD", "mpi://SELF"};
  for (int i = 0; i < 2; ++i) {
    int len = 0;
    MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL);
    CHECK(len == (int)strlen(names[i]) + 1, "pset %d length %d", i, len);
    char name[MPI_MAX_PSET_NAME_LEN];
    MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name);
    CHECK(strcmp(name, names[i]) == 0, "pset %d is %s", i, name);
    int short_len = 5; /* truncated: 4 characters and a NUL */
    MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &short_len, name);
    CHECK(strcmp(name, "mpi:") == 0, "truncated pset %d is %s", i, name);
  }
  MPI_Info info = MPI_INFO_NULL;
  MPI_Session_get_pset_info(s, "mpi://WORLD", &info);
  size = info_int(info, "mpi_size");
  CHECK(size >= 1, "mpi://WORLD mpi_size %d", size);
  MPI_Info_free(&info);
  MPI_Session_get_pset_info(s, "mpi://SELF", &info);
  CHECK(info_int(info, "mpi_size") == 1, "mpi://SELF mpi_size %d", info_int(info, "mpi_size"));
  MPI_Info_free(&info);
}

static void phase_a(void) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "thread_level", "MPI_THREAD_FUNNELED");
  MPI_Session s = MPI_SESSION_NULL;
  CHECK(MPI_Session_init(info, MPI_ERRORS_RETURN, &s) == MPI_SUCCESS, "Session_init");
  MPI_Info_free(&info);
  CHECK(s != MPI_SESSION_NULL && s > 0, "session handle %d", s);
  process_sets(s);
  MPI_Info used = MPI_INFO_NULL;
  MPI_Session_get_info(s, &used);
  char level[64] = "";
  int flag = 0;
  MPI_Info_get(used, "thread_level", sizeof(level) - 1, level, &flag);
  CHECK(flag && strcmp(level, "MPI_THREAD_FUNNELED") == 0, "thread_level %s", level);
  MPI_Info_free(&used);
  int initialized = -1;
  MPI_Initialized(&initialized);
  CHECK(initialized == 0, "MPI_Initialized is %d inside a session alone", initialized);
  MPI_Comm world = comm_of(s, "mpi://WORLD", "iris.test.world", size);
  MPI_Comm_rank(world, &rank);
  MPI_Comm self = comm_of(s, "mpi://SELF", "iris.test.self", 1);
  /* A collective over the whole set with a larger message. */
  int data[256];
  for (int i = 0; i < 256; ++i) data[i] = rank == 0 ? i * 3 : -1;
  MPI_Bcast(data, 256, MPI_INT, 0, world);
  for (int i = 0; i < 256; ++i) CHECK(data[i] == i * 3, "bcast data[%d] %d", i, data[i]);
  MPI_Comm_free(&self);
  MPI_Comm_free(&world);
  CHECK(MPI_Session_finalize(&s) == MPI_SUCCESS && s == MPI_SESSION_NULL, "Session_finalize");
}

static void phase_b(void) {
  MPI_Session first = MPI_SESSION_NULL;
  MPI_Session second = MPI_SESSION_NULL;
  MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &first);
  MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &second);
  CHECK(first != second, "two sessions share the handle %d", first);
  MPI_Comm a = comm_of(first, "mpi://WORLD", "iris.test.a", size);
  MPI_Comm b = comm_of(second, "mpi://WORLD", "iris.test.b", size);
  /* The same tag value on both: the communicators keep them apart. */
  int to_a = 100 + rank;
  int to_b = 200 + rank;
  int from_a = -1;
  int from_b = -1;
  MPI_Request reqs[4];
  MPI_Irecv(&from_b, 1, MPI_INT, MPI_ANY_SOURCE, 3, b, &reqs[0]);
  MPI_Irecv(&from_a, 1, MPI_INT, MPI_ANY_SOURCE, 3, a, &reqs[1]);
  MPI_Isend(&to_a, 1, MPI_INT, (rank + 1) % size, 3, a, &reqs[2]);
  MPI_Isend(&to_b, 1, MPI_INT, (rank + 1) % size, 3, b, &reqs[3]);
  MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
  const int left = (rank + size - 1) % size;
  CHECK(from_a == 100 + left && from_b == 200 + left, "a %d, b %d", from_a, from_b);
  MPI_Comm_free(&a);
  MPI_Session_finalize(&first);
  MPI_Barrier(b);
  int sum = -1;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, b);
  CHECK(sum == size * (size - 1) / 2, "after the first session ended: allreduce %d", sum);
  MPI_Comm_free(&b);
  MPI_Session_finalize(&second);
}

static void phase_c(void) {
  MPI_Errhandler mine = MPI_ERRHANDLER_NULL;
  CHECK(MPI_Session_create_errhandler(on_error, &mine) == MPI_SUCCESS, "create_errhandler");
  MPI_Session s = MPI_SESSION_NULL;
  CHECK(MPI_Session_init(MPI_INFO_NULL, mine, &s) == MPI_SUCCESS, "Session_init with a handler");
  MPI_Errhandler got = MPI_ERRHANDLER_NULL;
  MPI_Session_get_errhandler(s, &got);
  CHECK(got == mine, "get_errhandler %d, set %d", got, mine);
  CHECK(MPI_Session_call_errhandler(s, MPI_ERR_OTHER) == MPI_SUCCESS, "call_errhandler");
  CHECK(handler_calls == 1 && handler_session == s && handler_code == MPI_ERR_OTHER,
        "handler calls %d, session %d, code %d", handler_calls, handler_session, handler_code);
  MPI_Group g = MPI_GROUP_NULL;
  MPI_Group_from_session_pset(s, "mpi://NOWHERE", &g);
  CHECK(handler_calls == 2 && handler_code == MPI_ERR_ARG, "unknown pset: calls %d, code %d",
        handler_calls, handler_code);
  CHECK(g == MPI_GROUP_NULL, "unknown pset gave group %d", g);
  /* Names compare without regard to case, as MPICH's do. */
  CHECK(MPI_Group_from_session_pset(s, "mpi://self", &g) == MPI_SUCCESS && g != MPI_GROUP_NULL,
        "mpi://self refused");
  MPI_Group_free(&g);
  /* A bad group goes to the handler given to Comm_create_from_group. */
  MPI_Comm none = MPI_COMM_NULL;
  CHECK(MPI_Comm_create_from_group(MPI_GROUP_NULL, "iris.test.bad", MPI_INFO_NULL,
                                   MPI_ERRORS_RETURN, &none) == MPI_ERR_GROUP,
        "Comm_create_from_group took MPI_GROUP_NULL");
  CHECK(MPI_Comm_create_from_group(MPI_GROUP_EMPTY, "iris.test.bad", MPI_INFO_NULL,
                                   MPI_ERRORS_RETURN, &none) == MPI_ERR_GROUP,
        "Comm_create_from_group took a group without the caller");
  CHECK(none == MPI_COMM_NULL, "a refused Comm_create_from_group gave %d", none);
  MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN);
  MPI_Info info = MPI_INFO_NULL;
  CHECK(MPI_Session_get_pset_info(s, "mpi://nowhere", &info) == MPI_ERR_ARG, "unknown pset info");
  int n = 0;
  CHECK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 2, &n, NULL) == MPI_ERR_ARG, "pset 2");
  CHECK(MPI_Session_set_errhandler(s, (MPI_Errhandler)12345) == MPI_ERR_ERRHANDLER,
        "bad handler accepted");
  CHECK(handler_calls == 2, "handler called %d times after MPI_ERRORS_RETURN", handler_calls);
  /* A bad thread_level: refused on the handler given, no session made. */
  MPI_Info bad;
  MPI_Info_create(&bad);
  MPI_Info_set(bad, "thread_level", "MPI_THREAD_SOMETIMES");
  MPI_Session other = MPI_SESSION_NULL;
  CHECK(MPI_Session_init(bad, MPI_ERRORS_RETURN, &other) == MPI_ERR_INFO_VALUE,
        "bad thread_level accepted");
  CHECK(other == MPI_SESSION_NULL, "a refused Session_init gave %d", other);
  MPI_Info_free(&bad);
  MPI_Errhandler_free(&mine);
  MPI_Session_finalize(&s);
}

/* The session's buffer (MPI-4.1) serves buffered sends on its communicators
 * and on what derives from them (a dup), and not on MPI_COMM_WORLD, which
 * has no buffer here; detach gives it back; iflush completes. */
static void session_buffer(MPI_Session s, MPI_Comm comm) {
  static char space[4 * (64 + MPI_BSEND_OVERHEAD)];
  CHECK(MPI_Session_attach_buffer(s, space, (int)sizeof(space)) == MPI_SUCCESS, "attach");
  CHECK(MPI_Session_attach_buffer(s, space, (int)sizeof(space)) == MPI_ERR_BUFFER,
        "a second attach was taken");
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &dup);
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  const int right = (rank + 1) % size;
  const int left = (rank + size - 1) % size;
  int out[16];
  int in[2][16];
  for (int i = 0; i < 16; ++i) out[i] = rank * 100 + i;
  MPI_Request reqs[2];
  MPI_Irecv(in[0], 16, MPI_INT, left, 5, comm, &reqs[0]);
  MPI_Irecv(in[1], 16, MPI_INT, left, 6, dup, &reqs[1]);
  CHECK(MPI_Bsend(out, 16, MPI_INT, right, 5, comm) == MPI_SUCCESS, "Bsend on the session's");
  CHECK(MPI_Bsend(out, 16, MPI_INT, right, 6, dup) == MPI_SUCCESS, "Bsend on its dup");
  CHECK(MPI_Bsend(out, 16, MPI_INT, right, 7, MPI_COMM_WORLD) == MPI_ERR_BUFFER,
        "MPI_COMM_WORLD used the session's buffer");
  MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < 16; ++i) {
      CHECK(in[k][i] == left * 100 + i, "buffered message %d: [%d] = %d", k, i, in[k][i]);
    }
  }
  MPI_Request flush = MPI_REQUEST_NULL;
  CHECK(MPI_Session_iflush_buffer(s, &flush) == MPI_SUCCESS, "iflush");
  MPI_Wait(&flush, MPI_STATUS_IGNORE);
  void *back = NULL;
  int back_size = -1;
  CHECK(MPI_Session_detach_buffer(s, &back, &back_size) == MPI_SUCCESS, "detach");
  CHECK(back == space && back_size == (int)sizeof(space), "detach gave %p, %d", back, back_size);
  CHECK(MPI_Session_detach_buffer(s, &back, &back_size) == MPI_ERR_BUFFER, "detached twice");
  CHECK(MPI_Session_flush_buffer((MPI_Session)0x60000fff) == MPI_ERR_SESSION,
        "flush of a made-up session");
  MPI_Comm_free(&dup);
}

static void phase_d(void) {
  MPI_Init(NULL, NULL);
  int wrank = -1;
  int wsize = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  CHECK(wrank == rank && wsize == size, "world %d of %d after sessions (%d of %d)", wrank, wsize,
        rank, size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  CHECK(
      MPI_Session_get_num_psets((MPI_Session)0x60000001, MPI_INFO_NULL, &wsize) == MPI_ERR_SESSION,
      "a made-up session handle accepted");
  MPI_Session s = MPI_SESSION_NULL;
  MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
  MPI_Comm comm = comm_of(s, "mpi://WORLD", "iris.test.d", size);
  session_buffer(s, comm);
  int sum = -1;
  MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(sum == size * (size - 1) / 2, "world allreduce %d", sum);
  MPI_Finalize();
  int finalized = 0;
  MPI_Finalized(&finalized);
  CHECK(finalized == 1, "MPI_Finalized %d", finalized);
  /* The session outlives the World model. */
  sum = -1;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
  CHECK(sum == size * (size - 1) / 2, "session allreduce after MPI_Finalize %d", sum);
  MPI_Comm_free(&comm);
  MPI_Session_finalize(&s);
  /* MPI_Finalize has ended MPI for good: no session starts again. */
  MPI_Session again = MPI_SESSION_NULL;
  CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &again) == MPI_ERR_OTHER,
        "a session began after MPI_Finalize had ended MPI");
  CHECK(again == MPI_SESSION_NULL, "a refused Session_init gave %d", again);
}

int main(void) {
  phase_a();
  phase_b();
  phase_c();
  phase_d();
  if (check_failures == 0 && rank == 0) {
    printf("sessions: all checks passed on %d ranks\n", size);
  }
  return check_failures == 0 ? 0 : 1;
}
