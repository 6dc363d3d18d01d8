/* MPI-4 point-to-point: Isendrecv and Isendrecv_replace, partitioned
 * communication (partitions marked ready in several orders, requests matched
 * by tag in initialisation order), generalized requests and their
 * callbacks, the buffer flushes and per-communicator buffers, the status
 * setters, the status of MPI_PROC_NULL receives, cancelled persistent sends,
 * and the error classes of bad arguments. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;

static void check_proc_null_status(const MPI_Status *st, const char *what) {
  int count = -1;
  MPI_Get_count(st, MPI_INT, &count);
  CHECK(st->MPI_SOURCE == MPI_PROC_NULL, "%s: source %d", what, st->MPI_SOURCE);
  CHECK(st->MPI_TAG == MPI_ANY_TAG, "%s: tag %d", what, st->MPI_TAG);
  CHECK(count == 0, "%s: count %d", what, count);
}

static void isendrecv(void) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int out[64], in[64];
  for (int i = 0; i < 64; ++i) out[i] = rank * 1000 + i;
  MPI_Request req;
  MPI_Status st;
  memset(in, 0xff, sizeof(in));
  MPI_Isendrecv(out, 64, MPI_INT, right, 7, in, 64, MPI_INT, left, 7, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, &st);
  CHECK(req == MPI_REQUEST_NULL, "request not freed");
  for (int i = 0; i < 64; ++i) CHECK(in[i] == left * 1000 + i, "isendrecv in[%d] = %d", i, in[i]);
  CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7, "status %d/%d", st.MPI_SOURCE, st.MPI_TAG);

  /* Replace, through a strided type: only the odd ints travel. */
  int buf[64];
  for (int i = 0; i < 64; ++i) buf[i] = rank * 1000 + i;
  MPI_Datatype odd;
  MPI_Type_vector(32, 1, 2, MPI_INT, &odd);
  MPI_Type_commit(&odd);
  MPI_Isendrecv_replace(buf + 1, 1, odd, right, 8, left, 8, MPI_COMM_WORLD, &req);
  int flag = 0;
  while (!flag) MPI_Test(&req, &flag, &st);
  for (int i = 0; i < 64; ++i) {
    const int want = (i % 2 == 1) ? left * 1000 + i : rank * 1000 + i;
    CHECK(buf[i] == want, "replace buf[%d] = %d, want %d", i, buf[i], want);
  }
  MPI_Type_free(&odd);

  /* Not periodic: the ends talk to MPI_PROC_NULL. */
  const int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
  const int down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  int v = rank, got = -5;
  MPI_Isendrecv(&v, 1, MPI_INT, up, 9, &got, 1, MPI_INT, down, 9, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, &st);
  if (down == MPI_PROC_NULL) {
    check_proc_null_status(&st, "isendrecv from MPI_PROC_NULL");
    CHECK(got == -5, "buffer touched: %d", got);
  } else {
    CHECK(got == down, "chain got %d", got);
  }
}

static void partitioned(void) {
  enum { parts = 8, per = 16 };
  static int a[parts * per], b[parts * per];
  const int peer = rank ^ 1;
  if (peer >= size) return;
  MPI_Request reqs[2];
  if (rank % 2 == 0) {
    MPI_Psend_init(a, parts, per, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]);
    MPI_Psend_init(b, parts, per, MPI_INT, peer, 6, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]);
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < parts * per; ++i) {
        a[i] = round * 100000 + i;
        b[i] = -(round * 100000 + i);
      }
      MPI_Startall(2, reqs);
      /* b: reverse order, one by one; a: a range, then a list. */
      for (int p = parts - 1; p >= 0; --p) MPI_Pready(p, reqs[1]);
      MPI_Pready_range(2, 5, reqs[0]);
      const int rest[] = {7, 0, 6, 1};
      MPI_Pready_list(4, rest, reqs[0]);
      MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
      CHECK(reqs[0] != MPI_REQUEST_NULL, "persistent handle lost");
    }
  } else {
    /* Initialised in the other order: matching goes by tag. */
    MPI_Precv_init(b, parts, per, MPI_INT, peer, 6, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]);
    MPI_Precv_init(a, parts, per, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]);
    for (int round = 0; round < 3; ++round) {
      memset(a, 0, sizeof(a));
      memset(b, 0, sizeof(b));
      MPI_Startall(2, reqs);
      int arrived = 0;
      while (!arrived) MPI_Parrived(reqs[0], parts - 1, &arrived);
      for (int i = (parts - 1) * per; i < parts * per; ++i) {
        CHECK(a[i] == round * 100000 + i, "round %d: partition data a[%d] = %d", round, i, a[i]);
      }
      MPI_Status st[2];
      MPI_Waitall(2, reqs, st);
      CHECK(st[0].MPI_SOURCE == peer && st[0].MPI_TAG == 5, "status %d/%d", st[0].MPI_SOURCE,
            st[0].MPI_TAG);
      for (int i = 0; i < parts * per; ++i) {
        CHECK(a[i] == round * 100000 + i, "round %d: a[%d] = %d", round, i, a[i]);
        CHECK(b[i] == -(round * 100000 + i), "round %d: b[%d] = %d", round, i, b[i]);
      }
    }
  }
  MPI_Request_free(&reqs[0]);
  MPI_Request_free(&reqs[1]);
}

static int queries, frees, cancels, cancel_complete;

static int query_fn(void *extra, MPI_Status *st) {
  ++queries;
  MPI_Status_set_source(st, *(int *)extra);
  MPI_Status_set_tag(st, 77);
  MPI_Status_set_error(st, MPI_SUCCESS);
  MPI_Status_set_elements(st, MPI_INT, 3);
  MPI_Status_set_cancelled(st, 0);
  return MPI_SUCCESS;
}
static int free_fn(void *extra) {
  (void)extra;
  ++frees;
  return MPI_SUCCESS;
}
static int cancel_fn(void *extra, int complete) {
  (void)extra;
  ++cancels;
  cancel_complete = complete;
  return MPI_SUCCESS;
}

/* Query and free functions that fail with the code `extra` points to. */
static int failing_query(void *extra, MPI_Status *st) {
  MPI_Status_set_elements(st, MPI_BYTE, 0);
  MPI_Status_set_cancelled(st, 0);
  return *(int *)extra;
}
static int failing_free(void *extra) {
  return *(int *)extra;
}

/* What a generalized request's functions return is the calls' result:
 * Wait, Test and Request_get_status return the query's error; Waitall
 * MPI_ERR_IN_STATUS with it in the status; Wait the free function's when
 * the query succeeds; Request_free the free function's for a complete
 * request, and Grequest_complete for a request freed before it completed. */
static void generalized_errors(void) {
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int cls = 0, code = 0, ok = MPI_SUCCESS;
  MPI_Add_error_class(&cls);
  MPI_Add_error_code(cls, &code);
  MPI_Request req, two[2];
  MPI_Status st, sts[2];
  int flag = 0;
  MPI_Grequest_start(failing_query, NULL, NULL, &code, &req);
  MPI_Grequest_complete(req);
  int err = MPI_Request_get_status(req, &flag, &st);
  CHECK(err == code && flag == 1, "get_status of a failing query: %d", err);
  err = MPI_Wait(&req, &st);
  CHECK(err == code && req == MPI_REQUEST_NULL, "wait on a failing query: %d", err);
  MPI_Grequest_start(failing_query, NULL, NULL, &code, &req);
  MPI_Grequest_complete(req);
  err = MPI_Test(&req, &flag, &st);
  CHECK(err == code && flag == 1, "test on a failing query: %d", err);
  MPI_Grequest_start(failing_query, NULL, NULL, &ok, &two[0]);
  MPI_Grequest_start(failing_query, NULL, NULL, &code, &two[1]);
  MPI_Grequest_complete(two[0]);
  MPI_Grequest_complete(two[1]);
  err = MPI_Waitall(2, two, sts);
  CHECK(err == MPI_ERR_IN_STATUS && sts[0].MPI_ERROR == MPI_SUCCESS && sts[1].MPI_ERROR == code,
        "waitall with a failing query: %d, %d %d", err, sts[0].MPI_ERROR, sts[1].MPI_ERROR);
  MPI_Grequest_start(failing_query, failing_free, NULL, &ok, &req);
  MPI_Grequest_complete(req);
  int failing = MPI_ERR_OTHER;
  MPI_Request_free(&req);
  MPI_Grequest_start(NULL, failing_free, NULL, &failing, &req);
  MPI_Grequest_complete(req);
  err = MPI_Request_free(&req);
  CHECK(err == MPI_ERR_OTHER && req == MPI_REQUEST_NULL,
        "Request_free of a complete request, free failing: %d", err);
  MPI_Grequest_start(NULL, failing_free, NULL, &failing, &req);
  MPI_Grequest_complete(req);
  err = MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(err == MPI_ERR_OTHER, "wait on a failing free function: %d", err);
  MPI_Grequest_start(NULL, failing_free, NULL, &failing, &req);
  const MPI_Request kept = req;
  MPI_Request_free(&req);
  err = MPI_Grequest_complete(kept);
  CHECK(err == MPI_ERR_OTHER, "Grequest_complete of a freed request, free failing: %d", err);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
}

static void generalized(void) {
  int who = 42;
  MPI_Request req;
  MPI_Status st;
  int flag = 1;
  MPI_Grequest_start(query_fn, free_fn, cancel_fn, &who, &req);
  MPI_Test(&req, &flag, &st);
  CHECK(flag == 0 && queries == 0, "incomplete grequest tested complete");
  MPI_Cancel(&req);
  CHECK(cancels == 1 && cancel_complete == 0, "cancel_fn %d/%d", cancels, cancel_complete);
  MPI_Grequest_complete(req);
  MPI_Request_get_status(req, &flag, &st);
  CHECK(flag == 1 && queries == 1 && frees == 0, "get_status: %d %d %d", flag, queries, frees);
  MPI_Wait(&req, &st);
  int count = 0;
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(req == MPI_REQUEST_NULL && queries == 2 && frees == 1, "wait: %d %d", queries, frees);
  CHECK(st.MPI_SOURCE == 42 && st.MPI_TAG == 77 && count == 3, "status %d/%d/%d", st.MPI_SOURCE,
        st.MPI_TAG, count);
  /* Freed before completion: free_fn runs at Grequest_complete. */
  MPI_Grequest_start(query_fn, free_fn, cancel_fn, &who, &req);
  const MPI_Request kept = req;
  MPI_Request_free(&req);
  CHECK(frees == 1, "free_fn before completion");
  MPI_Grequest_complete(kept);
  CHECK(frees == 2, "free_fn not called at completion of a freed request (%d)", frees);
  /* In Waitall beside ordinary requests. */
  MPI_Request two[2];
  int v = rank, got = -1;
  MPI_Grequest_start(query_fn, free_fn, NULL, &who, &two[0]);
  MPI_Irecv(&got, 1, MPI_INT, rank, 3, MPI_COMM_WORLD, &two[1]);
  MPI_Send(&v, 1, MPI_INT, rank, 3, MPI_COMM_WORLD);
  MPI_Grequest_complete(two[0]);
  MPI_Waitall(2, two, MPI_STATUSES_IGNORE);
  CHECK(got == rank && frees == 3, "waitall with a grequest: got %d frees %d", got, frees);
}

static void buffers(void) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  static char space[4096];
  int v = rank, got = -1;
  MPI_Request req;
  MPI_Buffer_attach(space, sizeof(space));
  /* A flush waits for the sends to complete: under rendezvous that needs
   * the receive posted. */
  MPI_Irecv(&got, 1, MPI_INT, left, 11, MPI_COMM_WORLD, &req);
  MPI_Bsend(&v, 1, MPI_INT, right, 11, MPI_COMM_WORLD);
  MPI_Buffer_flush();
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(got == left, "bsend after flush: %d", got);
  MPI_Bsend(&v, 1, MPI_INT, right, 12, MPI_COMM_WORLD);
  MPI_Buffer_iflush(&req);
  MPI_Recv(&got, 1, MPI_INT, left, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  void *back = NULL;
  int back_size = 0;
  MPI_Buffer_detach(&back, &back_size);
  CHECK(back == space && back_size == (int)sizeof(space), "detach %p %d", back, back_size);

  /* A communicator's own buffer, and MPI_BUFFER_AUTOMATIC. */
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_attach_buffer(dup, space, sizeof(space));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int err = MPI_Bsend(&v, 1, MPI_INT, right, 13, MPI_COMM_WORLD);
  CHECK(err == MPI_ERR_BUFFER, "bsend on world without a buffer: %d", err);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Bsend(&v, 1, MPI_INT, right, 13, dup);
  MPI_Comm_iflush_buffer(dup, &req);
  MPI_Recv(&got, 1, MPI_INT, left, 13, dup, MPI_STATUS_IGNORE);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(got == left, "comm buffer: %d", got);
  MPI_Comm_flush_buffer(dup);
  MPI_Comm_detach_buffer(dup, &back, &back_size);
  CHECK(back == space, "comm detach %p", back);
  MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0);
  int big[1000];
  for (int i = 0; i < 1000; ++i) big[i] = rank + i;
  MPI_Bsend(big, 1000, MPI_INT, right, 14, dup);
  MPI_Bsend(big, 1000, MPI_INT, right, 14, dup);
  int in[1000];
  for (int k = 0; k < 2; ++k) {
    MPI_Recv(in, 1000, MPI_INT, left, 14, dup, MPI_STATUS_IGNORE);
    CHECK(in[999] == left + 999, "automatic buffer: %d", in[999]);
  }
  MPI_Buffer_detach(&back, &back_size);
  CHECK(back == MPI_BUFFER_AUTOMATIC, "automatic detach %p", back);
  MPI_Comm_free(&dup);
}

static void proc_null_and_cancel(void) {
  MPI_Status st;
  int x = 0;
  MPI_Request req;
  memset(&st, 0x5a, sizeof(st));
  MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
  check_proc_null_status(&st, "Recv");
  memset(&st, 0x5a, sizeof(st));
  MPI_Irecv(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, &st);
  check_proc_null_status(&st, "Irecv");
  memset(&st, 0x5a, sizeof(st));
  MPI_Recv_init(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &req);
  MPI_Start(&req);
  MPI_Wait(&req, &st);
  check_proc_null_status(&st, "Recv_init");
  MPI_Request_free(&req);
  memset(&st, 0x5a, sizeof(st));
  MPI_Sendrecv(&x, 1, MPI_INT, MPI_PROC_NULL, 1, &x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD,
               &st);
  check_proc_null_status(&st, "Sendrecv");
  MPI_Precv_init(&x, 1, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
  MPI_Start(&req);
  MPI_Wait(&req, &st);
  check_proc_null_status(&st, "Precv_init");
  MPI_Request_free(&req);

  /* A persistent send nobody receives, cancelled, then started again and
   * received. */
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int v = rank, got = -1;
  MPI_Send_init(&v, 1, MPI_INT, right, 21, MPI_COMM_WORLD, &req);
  MPI_Start(&req);
  MPI_Cancel(&req);
  MPI_Wait(&req, &st);
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  CHECK(cancelled == 1, "persistent send not cancelled");
  CHECK(req != MPI_REQUEST_NULL, "persistent handle lost after cancel");
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Start(&req);
  MPI_Recv(&got, 1, MPI_INT, left, 21, MPI_COMM_WORLD, &st);
  MPI_Wait(&req, &st);
  MPI_Test_cancelled(&st, &cancelled);
  CHECK(got == left && cancelled == 0, "restart after cancel: got %d cancelled %d", got, cancelled);
  MPI_Request_free(&req);
  int flag = 1;
  MPI_Iprobe(left, 21, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  CHECK(flag == 0, "the cancelled message arrived after all");
}

static void get_status_arrays(void) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int v = rank, got = -1, flag = 0, index = -1, outcount = -1, indices[2];
  MPI_Request reqs[2];
  MPI_Status st[2];
  MPI_Irecv(&got, 1, MPI_INT, left, 31, MPI_COMM_WORLD, &reqs[0]);
  MPI_Isend(&v, 1, MPI_INT, right, 31, MPI_COMM_WORLD, &reqs[1]);
  while (!flag) MPI_Request_get_status_all(2, reqs, &flag, st);
  CHECK(reqs[0] != MPI_REQUEST_NULL && st[0].MPI_SOURCE == left, "get_status_all: %d",
        st[0].MPI_SOURCE);
  MPI_Request_get_status_any(2, reqs, &index, &flag, &st[0]);
  CHECK(flag == 1 && index >= 0, "get_status_any: %d %d", flag, index);
  MPI_Request_get_status_some(2, reqs, &outcount, indices, st);
  CHECK(outcount == 2 && indices[1] == 1, "get_status_some: %d", outcount);
  MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
  CHECK(got == left, "get_status arrays: got %d", got);
}

static void errors(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  int x[4];
  MPI_Request req, sreq;
  int err =
      MPI_Precv_init(x, 2, 2, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
  CHECK(err == MPI_ERR_ARG, "Precv_init from MPI_ANY_SOURCE: %d", err);
  err = MPI_Psend_init(x, 0, 2, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
  CHECK(err == MPI_ERR_ARG, "Psend_init of 0 partitions: %d", err);
  MPI_Psend_init(x, 2, 2, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq);
  err = MPI_Pready(0, sreq);
  CHECK(err == MPI_ERR_REQUEST, "Pready before Start: %d", err);
  MPI_Start(&sreq);
  err = MPI_Pready(2, sreq);
  CHECK(err == MPI_ERR_ARG, "Pready of partition 2 of 2: %d", err);
  MPI_Pready(1, sreq);
  err = MPI_Pready(1, sreq);
  CHECK(err == MPI_ERR_ARG, "Pready twice: %d", err);
  int flag = 0;
  err = MPI_Parrived(sreq, 0, &flag);
  CHECK(err == MPI_ERR_REQUEST, "Parrived on a send: %d", err);
  MPI_Pready(0, sreq);
  MPI_Wait(&sreq, MPI_STATUS_IGNORE);
  MPI_Request_free(&sreq);
  MPI_Irecv(x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &req);
  err = MPI_Grequest_complete(req);
  CHECK(err == MPI_ERR_REQUEST, "Grequest_complete of a receive: %d", err);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  err = MPI_Isendrecv(x, 1, MPI_INT, size, 0, x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &req);
  CHECK(err == MPI_ERR_RANK, "Isendrecv to rank %d: %d", size, err);
  /* 38 live partitioned sends to one peer on one communicator, then one more. */
  MPI_Request many[39];
  for (int i = 0; i < 38; ++i) {
    MPI_Psend_init(x, 1, 1, MPI_INT, 0, i, MPI_COMM_SELF, MPI_INFO_NULL, &many[i]);
  }
  err = MPI_Psend_init(x, 1, 1, MPI_INT, 0, 38, MPI_COMM_SELF, MPI_INFO_NULL, &many[38]);
  CHECK(err == MPI_ERR_OTHER, "a 39th live partitioned send: %d", err);
  MPI_Request_free(&many[5]);
  err = MPI_Psend_init(x, 1, 1, MPI_INT, 0, 38, MPI_COMM_SELF, MPI_INFO_NULL, &many[5]);
  CHECK(err == MPI_SUCCESS, "a partitioned send after one was freed: %d", err);
  for (int i = 0; i < 38; ++i) MPI_Request_free(&many[i]);
  err = MPI_Status_set_tag(NULL, 1);
  CHECK(err == MPI_ERR_ARG, "Status_set_tag(NULL): %d", err);
  void *back;
  int back_size;
  err = MPI_Comm_detach_buffer(MPI_COMM_WORLD, &back, &back_size);
  CHECK(err == MPI_ERR_BUFFER, "Comm_detach_buffer with none: %d", err);
  err = MPI_Session_flush_buffer(MPI_SESSION_NULL);
  CHECK(err == MPI_ERR_SESSION, "Session_flush_buffer(MPI_SESSION_NULL): %d", err);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  isendrecv();
  partitioned();
  generalized();
  generalized_errors();
  buffers();
  proc_null_and_cancel();
  get_status_arrays();
  errors();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("p2p4: all checks passed on %d ranks\n", size);
  return finish();
}
