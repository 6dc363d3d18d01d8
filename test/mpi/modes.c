/* Send modes, matched probes, cancel and the completion family, at any
 * number of ranks (pairs 0-1, 2-3, ...; an odd rank out pairs with itself). */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank;
static int size;

static int partner(void) {
  const int p = rank ^ 1;
  return p < size ? p : rank;
}

/* Progress for a while without completing anything else. */
static int still_pending(MPI_Request *r) {
  int flag = 0;
  for (int i = 0; i < 3000 && !flag; ++i) MPI_Test(r, &flag, MPI_STATUS_IGNORE);
  return !flag;
}

static void synchronous_sends(void) {
  /* An Issend must not complete before the receive is posted: the receiver
   * posts it only after a "go" that the sender sends after testing. */
  const int p = partner();
  const int sizes[] = {0, 8, 100000};
  for (int k = 0; k < 3; ++k) {
    const int n = sizes[k];
    char *out = calloc((size_t)n + 1, 1);
    char *in = calloc((size_t)n + 1, 1);
    memset(out, 'a' + k, (size_t)n);
    const int lower = rank < p || p == rank;
    if (lower) {
      MPI_Request r;
      MPI_Issend(out, n, MPI_CHAR, p, 30 + k, MPI_COMM_WORLD, &r);
      CHECK(still_pending(&r), "Issend of %d bytes completed before a receive was posted", n);
      if (p == rank) {
        MPI_Recv(in, n, MPI_CHAR, rank, 30 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Send(NULL, 0, MPI_CHAR, p, 40 + k, MPI_COMM_WORLD); /* go */
      }
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(NULL, 0, MPI_CHAR, p, 40 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Recv(in, n, MPI_CHAR, p, 30 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CHECK(n == 0 || (in[0] == 'a' + k && in[n - 1] == 'a' + k), "Issend data %d", n);
    }
    free(out);
    free(in);
  }
  int v = rank;
  int got = -1;
  MPI_Request r;
  MPI_Irecv(&got, 1, MPI_INT, p, 49, MPI_COMM_WORLD, &r);
  MPI_Ssend(&v, 1, MPI_INT, p, 49, MPI_COMM_WORLD);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  CHECK(got == p, "Ssend delivered %d", got);
}

static void ready_and_buffered(void) {
  const int p = partner();
  int v = 1000 + rank;
  int got = -1;
  MPI_Request r;
  MPI_Irecv(&got, 1, MPI_INT, p, 50, MPI_COMM_WORLD, &r);
  MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted: a ready send is legal */
  MPI_Rsend(&v, 1, MPI_INT, p, 50, MPI_COMM_WORLD);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  CHECK(got == 1000 + p, "Rsend delivered %d", got);

  /* Buffered: three messages of 1000 ints, sent before anything is posted. */
  const int n = 1000;
  const int per = n * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
  char *space = malloc((size_t)per * 3);
  MPI_Buffer_attach(space, per * 3);
  int *msg = malloc(sizeof(int) * (size_t)n);
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < n; ++i) msg[i] = rank * 10 + k + i;
    if (k < 2) {
      MPI_Bsend(msg, n, MPI_INT, p, 51, MPI_COMM_WORLD);
    } else {
      MPI_Ibsend(msg, n, MPI_INT, p, 51, MPI_COMM_WORLD, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    memset(msg, 0, sizeof(int) * (size_t)n); /* the buffered copy is what travels */
  }
  /* One message larger than the whole buffer can never fit. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int *huge = calloc((size_t)n * 4, sizeof(int));
  const int err = MPI_Bsend(huge, n * 4, MPI_INT, p, 52, MPI_COMM_WORLD);
  free(huge);
  int cls = -1;
  MPI_Error_class(err, &cls);
  CHECK(cls == MPI_ERR_BUFFER, "a Bsend larger than the buffer gave class %d", cls);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  for (int k = 0; k < 3; ++k) {
    MPI_Recv(msg, n, MPI_INT, p, 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(msg[0] == p * 10 + k && msg[n - 1] == p * 10 + k + n - 1, "Bsend %d data", k);
  }
  void *back = NULL;
  int back_size = 0;
  MPI_Buffer_detach(&back, &back_size);
  CHECK(back == space && back_size == per * 3, "detach gave %p %d", back, back_size);
  free(space);
  free(msg);

  /* Sendrecv_replace around the ring. */
  int token = rank;
  MPI_Status st;
  MPI_Sendrecv_replace(&token, 1, MPI_INT, (rank + 1) % size, 53, (rank + size - 1) % size, 53,
                       MPI_COMM_WORLD, &st);
  CHECK(token == (rank + size - 1) % size, "Sendrecv_replace got %d", token);
}

static void matched_probe(void) {
  const int p = partner();
  const int big = 50000;
  char *a = malloc(big);
  memset(a, 'x', big);
  int small = 77;
  MPI_Request s[2];
  MPI_Isend(a, big, MPI_CHAR, p, 5, MPI_COMM_WORLD, &s[0]);
  MPI_Isend(&small, 1, MPI_INT, p, 6, MPI_COMM_WORLD, &s[1]);
  MPI_Message m1;
  MPI_Message m2;
  MPI_Status st;
  /* A probe's status is a single-completion status: its MPI_ERROR is left
   * alone (as MPICH and Open MPI do; MPICH's pt2pt/mprobe checks it). */
  st.MPI_ERROR = MPI_ERR_DIMS;
  MPI_Mprobe(p, MPI_ANY_TAG, MPI_COMM_WORLD, &m1, &st);
  CHECK(st.MPI_TAG == 5 && st.MPI_ERROR == MPI_ERR_DIMS, "Mprobe took tag %d first, error %d",
        st.MPI_TAG, st.MPI_ERROR);
  int flag = 0;
  while (!flag) MPI_Improbe(p, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m2, &st);
  CHECK(st.MPI_TAG == 6 && st.MPI_ERROR == MPI_ERR_DIMS, "Improbe took tag %d second, error %d",
        st.MPI_TAG, st.MPI_ERROR);
  /* Claimed messages are invisible to other probes. */
  MPI_Iprobe(p, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
  CHECK(!flag, "a claimed message is still probed (tag %d)", st.MPI_TAG);
  int got = 0;
  st.MPI_ERROR = MPI_ERR_DIMS; /* so do Mrecv and Wait (MPICH's pt2pt/mprobe) */
  MPI_Mrecv(&got, 1, MPI_INT, &m2, &st);
  CHECK(got == 77 && m2 == MPI_MESSAGE_NULL && st.MPI_ERROR == MPI_ERR_DIMS,
        "Mrecv small %d, error %d", got, st.MPI_ERROR);
  /* MPICH gives MPI_MESSAGE_NULL the value of MPI_REQUEST_NULL, and code
   * written for it compares the two (MPICH's threads/pt2pt/mt_improbe_*). */
  CHECK((int)m2 == (int)MPI_REQUEST_NULL, "MPI_MESSAGE_NULL 0x%x is not MPI_REQUEST_NULL 0x%x",
        (unsigned)m2, (unsigned)MPI_REQUEST_NULL);
  char *in = calloc(big, 1);
  MPI_Request r;
  MPI_Imrecv(in, big, MPI_CHAR, &m1, &r);
  MPI_Wait(&r, &st);
  int count = 0;
  MPI_Get_count(&st, MPI_CHAR, &count);
  CHECK(count == big && in[0] == 'x' && in[big - 1] == 'x' && st.MPI_ERROR == MPI_ERR_DIMS,
        "Imrecv large %d, error %d", count, st.MPI_ERROR);
  MPI_Waitall(2, s, MPI_STATUSES_IGNORE);
  MPI_Message none;
  st.MPI_ERROR = MPI_ERR_TOPOLOGY;
  MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &none, &st);
  CHECK(none == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL &&
            st.MPI_ERROR == MPI_ERR_TOPOLOGY,
        "Mprobe of PROC_NULL");
  MPI_Iprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &st);
  MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
  MPI_Improbe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &none, &st);
  CHECK(flag && st.MPI_ERROR == MPI_ERR_TOPOLOGY, "probes of PROC_NULL set MPI_ERROR %d",
        st.MPI_ERROR);
  MPI_Mrecv(&got, 1, MPI_INT, &none, &st);
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL && none == MPI_MESSAGE_NULL, "Mrecv of NO_PROC");
  free(a);
  free(in);
}

static void cancel(void) {
  const int p = partner();
  /* A receive nobody will match. */
  int v = 0;
  MPI_Request r;
  MPI_Status st;
  MPI_Irecv(&v, 1, MPI_INT, p, 60, MPI_COMM_WORLD, &r);
  MPI_Cancel(&r);
  MPI_Wait(&r, &st);
  int flag = 0;
  MPI_Test_cancelled(&st, &flag);
  CHECK(flag, "an unmatched receive was not cancelled");
  /* Sends nobody will receive: eager (32 bytes: a shared-memory record of
   * the briefest header, which still names the send for its cancel) and
   * rendezvous. */
  const int sizes[] = {32, 200000};
  for (int k = 0; k < 2; ++k) {
    char *out = calloc((size_t)sizes[k], 1);
    MPI_Isend(out, sizes[k], MPI_CHAR, p, 61, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "an unmatched send of %d bytes was not cancelled", sizes[k]);
    free(out);
  }
  /* Buffered sends nobody will receive (eager and rendezvous): MPI_Cancel
   * on the Ibsend request withdraws the copy (MPICH's scancel). */
  char *space = malloc(2 * (200000 + MPI_BSEND_OVERHEAD));
  MPI_Buffer_attach(space, 2 * (200000 + MPI_BSEND_OVERHEAD));
  for (int k = 0; k < 2; ++k) {
    char *out = calloc((size_t)sizes[k], 1);
    MPI_Ibsend(out, sizes[k], MPI_CHAR, p, 61, MPI_COMM_WORLD, &r);
    free(out); /* copied */
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "an unmatched Ibsend of %d bytes was not cancelled", sizes[k]);
    /* The same through a started MPI_Bsend_init (MPICH's pscancel), twice on
     * one request, then a start that is not cancelled and is received. */
    out = calloc((size_t)sizes[k], 1);
    out[0] = (char)(k + 1);
    MPI_Bsend_init(out, sizes[k], MPI_CHAR, p, 61, MPI_COMM_WORLD, &r);
    for (int start = 0; start < 2; ++start) {
      MPI_Start(&r);
      MPI_Cancel(&r);
      MPI_Wait(&r, &st);
      MPI_Test_cancelled(&st, &flag);
      CHECK(flag && r != MPI_REQUEST_NULL,
            "an unmatched persistent Bsend of %d bytes was not cancelled (start %d)", sizes[k],
            start);
    }
    MPI_Cancel(&r); /* inactive: nothing to cancel */
    /* The partner's cancels are settled before the receive below, which
     * would otherwise match a copy still on its way. */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Start(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag, "a persistent Bsend nobody cancelled was reported cancelled");
    MPI_Request_free(&r);
    char *in = calloc((size_t)sizes[k], 1);
    MPI_Recv(in, sizes[k], MPI_CHAR, p, 61, MPI_COMM_WORLD, &st);
    int got = 0;
    MPI_Get_count(&st, MPI_CHAR, &got);
    CHECK(got == sizes[k] && in[0] == (char)(k + 1), "the persistent Bsend brought %d bytes, %d",
          got, in[0]);
    free(in);
    free(out);
  }
  void *back = NULL;
  int back_size = 0;
  MPI_Buffer_detach(&back, &back_size);
  free(space);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Iprobe(p, 61, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  CHECK(!flag, "a cancelled send still arrived");
  /* A send that was received cannot be cancelled. */
  if (p != rank) {
    if (rank < p) {
      MPI_Isend(&v, 1, MPI_INT, p, 62, MPI_COMM_WORLD, &r);
      MPI_Recv(NULL, 0, MPI_INT, p, 63, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Cancel(&r);
      MPI_Wait(&r, &st);
      MPI_Test_cancelled(&st, &flag);
      CHECK(!flag, "a received send was reported cancelled");
    } else {
      MPI_Recv(&v, 1, MPI_INT, p, 62, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(NULL, 0, MPI_INT, p, 63, MPI_COMM_WORLD);
    }
  }
}

static void completion_family(void) {
  const int p = partner();
  enum { n = 6 };
  int in[n];
  int out[n];
  MPI_Request r[n + 1];
  MPI_Request s[n];
  for (int i = 0; i < n; ++i) MPI_Irecv(&in[i], 1, MPI_INT, p, 70 + i, MPI_COMM_WORLD, &r[i]);
  r[n] = MPI_REQUEST_NULL;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = n; i-- > 0;) {
    out[i] = rank * 100 + i;
    MPI_Isend(&out[i], 1, MPI_INT, p, 70 + i, MPI_COMM_WORLD, &s[i]);
  }
  int seen = 0;
  for (int k = 0; k < 2; ++k) { /* Waitany twice */
    int index = -1;
    MPI_Status st;
    MPI_Waitany(n + 1, r, &index, &st);
    CHECK(index >= 0 && index < n && r[index] == MPI_REQUEST_NULL && st.MPI_TAG == 70 + index,
          "Waitany index %d", index);
    if (index >= 0 && index < n) seen |= 1 << index;
  }
  int flag = 0;
  int index = -1;
  do {
    MPI_Testany(n + 1, r, &index, &flag, MPI_STATUS_IGNORE);
  } while (!flag);
  if (index >= 0 && index < n) seen |= 1 << index;
  int outcount = 0;
  int indices[n + 1];
  MPI_Status statuses[n + 1];
  MPI_Waitsome(n + 1, r, &outcount, indices, statuses);
  CHECK(outcount >= 1, "Waitsome completed %d", outcount);
  for (int i = 0; i < outcount; ++i) seen |= 1 << indices[i];
  do {
    MPI_Testsome(n + 1, r, &outcount, indices, statuses);
    for (int i = 0; i < outcount && outcount != MPI_UNDEFINED; ++i) seen |= 1 << indices[i];
  } while (outcount != MPI_UNDEFINED);
  CHECK(seen == (1 << n) - 1, "completed set 0x%x", seen);
  for (int i = 0; i < n; ++i) CHECK(in[i] == p * 100 + i, "value %d = %d", i, in[i]);
  MPI_Waitany(n + 1, r, &index, MPI_STATUS_IGNORE);
  CHECK(index == MPI_UNDEFINED, "Waitany on all-null gave %d", index);
  do {
    MPI_Testall(n, s, &flag, MPI_STATUSES_IGNORE);
  } while (!flag);
  /* Request_free on a send in flight: the message still arrives. Its
   * buffer must outlive the send, which nothing here waits for: short of
   * credits, the send goes rendezvous and its data leaves after this
   * function has returned (a stack buffer then delivered garbage). */
  MPI_Request f;
  static int x = 5;
  int y = 0;
  MPI_Isend(&x, 1, MPI_INT, p, 80, MPI_COMM_WORLD, &f);
  MPI_Request_free(&f);
  CHECK(f == MPI_REQUEST_NULL, "Request_free left the handle");
  MPI_Recv(&y, 1, MPI_INT, p, 80, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(y == 5, "freed send delivered %d", y);
}

static void persistent(void) {
  /* The same pair of requests started five times, eager and rendezvous. */
  const int p = partner();
  const int sizes[] = {8, 100000};
  for (int k = 0; k < 2; ++k) {
    const int n = sizes[k];
    char *out = malloc((size_t)n);
    char *in = malloc((size_t)n);
    MPI_Request r[2];
    MPI_Recv_init(in, n, MPI_CHAR, p, 90, MPI_COMM_WORLD, &r[0]);
    MPI_Send_init(out, n, MPI_CHAR, p, 90, MPI_COMM_WORLD, &r[1]);
    for (int round = 0; round < 5; ++round) {
      memset(out, 'a' + round + rank, (size_t)n);
      MPI_Startall(2, r);
      MPI_Status st[2];
      MPI_Waitall(2, r, st);
      CHECK(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL, "persistent handle freed");
      CHECK(in[0] == 'a' + round + p && in[n - 1] == 'a' + round + p && st[0].MPI_SOURCE == p,
            "round %d of %d bytes got %c", round, n, in[0]);
    }
    /* Inactive: Wait returns at once with an empty status. */
    MPI_Status st;
    MPI_Wait(&r[0], &st);
    CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG, "inactive wait status");
    int index = 0;
    MPI_Waitany(2, r, &index, MPI_STATUS_IGNORE);
    CHECK(index == MPI_UNDEFINED, "Waitany over inactive requests gave %d", index);
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
    CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "Request_free of persistent");
    free(out);
    free(in);
  }
  /* Synchronous, ready and buffered persistent sends, and MPI_PROC_NULL. */
  int v[3] = {1, 2, 3};
  int got[3] = {0, 0, 0};
  MPI_Request rr[3];
  MPI_Request sr[3];
  for (int i = 0; i < 3; ++i) MPI_Irecv(&got[i], 1, MPI_INT, p, 91 + i, MPI_COMM_WORLD, &rr[i]);
  MPI_Barrier(MPI_COMM_WORLD); /* receives posted: the ready send is legal */
  char space[3 * (sizeof(int) + MPI_BSEND_OVERHEAD)];
  MPI_Buffer_attach(space, (int)sizeof(space));
  MPI_Ssend_init(&v[0], 1, MPI_INT, p, 91, MPI_COMM_WORLD, &sr[0]);
  MPI_Rsend_init(&v[1], 1, MPI_INT, p, 92, MPI_COMM_WORLD, &sr[1]);
  MPI_Bsend_init(&v[2], 1, MPI_INT, p, 93, MPI_COMM_WORLD, &sr[2]);
  MPI_Startall(3, sr);
  MPI_Waitall(3, rr, MPI_STATUSES_IGNORE);
  MPI_Waitall(3, sr, MPI_STATUSES_IGNORE);
  CHECK(got[0] == 1 && got[1] == 2 && got[2] == 3, "modes delivered %d %d %d", got[0], got[1],
        got[2]);
  for (int i = 0; i < 3; ++i) MPI_Request_free(&sr[i]);
  void *back = NULL;
  int back_size = 0;
  MPI_Buffer_detach(&back, &back_size);
  MPI_Request nul;
  MPI_Recv_init(&v[0], 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &nul);
  MPI_Start(&nul);
  MPI_Status st;
  MPI_Wait(&nul, &st);
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "persistent PROC_NULL receive source %d", st.MPI_SOURCE);
  /* Starting an active request is an error. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Request busy;
  MPI_Recv_init(&v[0], 1, MPI_INT, p, 95, MPI_COMM_WORLD, &busy);
  MPI_Start(&busy);
  int cls = -1;
  MPI_Error_class(MPI_Start(&busy), &cls);
  CHECK(cls == MPI_ERR_REQUEST, "starting an active request gave %d", cls);
  MPI_Error_class(MPI_Start(&nul), &cls);
  CHECK(cls == MPI_SUCCESS, "restarting an inactive request gave %d", cls);
  MPI_Wait(&nul, MPI_STATUS_IGNORE);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Send(&v[0], 1, MPI_INT, p, 95, MPI_COMM_WORLD);
  MPI_Wait(&busy, MPI_STATUS_IGNORE);
  MPI_Request_free(&busy);
  MPI_Request_free(&nul);
}

static void status_calls(void) {
  const int p = partner();
  double d[4] = {1, 2, 3, 4};
  double in[4];
  MPI_Request r;
  MPI_Irecv(in, 4, MPI_DOUBLE, p, 96, MPI_COMM_WORLD, &r);
  MPI_Send(d, 4, MPI_DOUBLE, p, 96, MPI_COMM_WORLD);
  int flag = 0;
  MPI_Status st;
  while (!flag) MPI_Request_get_status(r, &flag, &st);
  CHECK(r != MPI_REQUEST_NULL, "Request_get_status freed the request");
  int n = 0;
  MPI_Get_elements(&st, MPI_DOUBLE, &n);
  CHECK(n == 4, "Get_elements %d", n);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  MPI_Status_set_elements(&st, MPI_INT, 3);
  MPI_Get_count(&st, MPI_INT, &n);
  CHECK(n == 3, "Status_set_elements then Get_count %d", n);
  MPI_Status_set_cancelled(&st, 1);
  MPI_Test_cancelled(&st, &flag);
  CHECK(flag == 1, "Status_set_cancelled");
}

static void review_fixes(void) {
  const int p = partner();
  /* Sends freed at once, while earlier ones still wait for ring space (the
   * starved configuration queues them): every message still arrives once. */
  enum { n = 40 };
  int out[n];
  for (int i = 0; i < n; ++i) {
    out[i] = rank * 1000 + i;
    MPI_Request r;
    MPI_Isend(&out[i], 1, MPI_INT, p, 97, MPI_COMM_WORLD, &r);
    MPI_Request_free(&r);
  }
  for (int i = 0; i < n; ++i) {
    int v = -1;
    MPI_Recv(&v, 1, MPI_INT, p, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(v == p * 1000 + i, "freed send %d delivered %d", i, v);
  }
  MPI_Barrier(MPI_COMM_WORLD); /* the freed sends' buffers stay valid until here */
  /* Cancelling requests that have nothing in flight is a harmless no-op. */
  MPI_Request r;
  MPI_Status st;
  int flag = 1;
  MPI_Isend(out, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
  MPI_Cancel(&r);
  MPI_Wait(&r, &st);
  MPI_Test_cancelled(&st, &flag);
  CHECK(!flag, "a send to MPI_PROC_NULL reported cancelled");
  /* The exact budget the standard gives: sizes that are no multiple of 8,
   * both pending at once. */
  const int big = 100003;
  const int budget = 2 * (big + MPI_BSEND_OVERHEAD);
  char *space = malloc((size_t)budget);
  char *msg = malloc((size_t)big);
  memset(msg, 'b', (size_t)big);
  MPI_Buffer_attach(space, budget);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  CHECK(MPI_Bsend(msg, big, MPI_CHAR, p, 98, MPI_COMM_WORLD) == MPI_SUCCESS, "first Bsend");
  CHECK(MPI_Ibsend(msg, big, MPI_CHAR, p, 98, MPI_COMM_WORLD, &r) == MPI_SUCCESS,
        "second Bsend within the budget");
  /* Cancelling withdraws the copy if nothing matched it yet (the partner
   * posts no receive before it hears how many to expect). */
  MPI_Cancel(&r);
  MPI_Status cancel_status;
  MPI_Wait(&r, &cancel_status);
  int withdrawn = 0;
  MPI_Test_cancelled(&cancel_status, &withdrawn);
  int partner_withdrawn = 0;
  MPI_Sendrecv(&withdrawn, 1, MPI_INT, p, 97, &partner_withdrawn, 1, MPI_INT, p, 97, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  int cls = -1;
  MPI_Error_class(MPI_Isend(msg, 1, MPI_CHAR, p, 99, MPI_COMM_WORLD, NULL), &cls);
  CHECK(cls == MPI_ERR_ARG, "Isend with a NULL request gave %d", cls);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  char *in = malloc((size_t)big);
  for (int k = 0; k < 2 - partner_withdrawn; ++k) {
    MPI_Recv(in, big, MPI_CHAR, p, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(in[0] == 'b' && in[big - 1] == 'b', "buffered send %d", k);
  }
  void *back = NULL;
  int back_size = 0;
  MPI_Buffer_detach(&back, &back_size);
  free(space);
  free(msg);
  free(in);
  /* Sendrecv_replace with a shorter incoming message keeps the rest. */
  int four[4] = {1, 2, 3, 4};
  int two[2] = {70, 71};
  MPI_Request s;
  MPI_Isend(two, 2, MPI_INT, p, 100, MPI_COMM_WORLD, &s);
  MPI_Sendrecv_replace(four, 4, MPI_INT, MPI_PROC_NULL, 0, p, 100, MPI_COMM_WORLD, &st);
  MPI_Wait(&s, MPI_STATUS_IGNORE);
  int got = 0;
  MPI_Get_count(&st, MPI_INT, &got);
  CHECK(got == 2 && four[0] == 70 && four[1] == 71 && four[2] == 3 && four[3] == 4,
        "Sendrecv_replace of a short message: %d %d %d %d", four[0], four[1], four[2], four[3]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  void (*const phases[])(void) = {
      synchronous_sends, ready_and_buffered, matched_probe, cancel,
      completion_family, persistent,         status_calls,  review_fixes};
  for (unsigned i = 0; i < sizeof(phases) / sizeof(phases[0]); ++i) {
    phases[i]();
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 0 && check_failures == 0) printf("modes: all checks passed on %d ranks\n", size);
  return finish();
}
