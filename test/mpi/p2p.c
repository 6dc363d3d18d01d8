/* Point-to-point semantics, checked at any number of ranks: self messages,
 * posted-then-unexpected and unexpected-then-posted, wildcard ordering,
 * ANY_SOURCE fan-in, probe and get_count, truncation, MPI_PROC_NULL,
 * zero-byte messages, fragment-edge sizes and Test polling, and deep queues
 * with wildcards among them. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank;
static int size;

static void fill(unsigned char *p, int n, int salt) {
  for (int i = 0; i < n; ++i) p[i] = (unsigned char)(i * 13 + salt + (i >> 9));
}

static int same(const unsigned char *p, int n, int salt) {
  for (int i = 0; i < n; ++i) {
    if (p[i] != (unsigned char)(i * 13 + salt + (i >> 9))) return 0;
  }
  return 1;
}

static void self_messages(void) {
  /* Sent before the receive is posted: both must buffer and then match. */
  int sizes[24];
  int count = edge_sizes(sizes, 1 << 20);
  sizes[count++] = 1 << 20;
  for (unsigned k = 0; k < (unsigned)count; ++k) {
    const int n = sizes[k];
    unsigned char *out = malloc((size_t)n + 1);
    unsigned char *in = malloc((size_t)n + 1);
    fill(out, n, (int)k);
    MPI_Send(out, n, MPI_BYTE, rank, 40 + (int)k, MPI_COMM_WORLD);
    MPI_Status st;
    MPI_Recv(in, n, MPI_BYTE, rank, 40 + (int)k, MPI_COMM_WORLD, &st);
    int got = -1;
    MPI_Get_count(&st, MPI_BYTE, &got);
    CHECK(got == n && st.MPI_SOURCE == rank && st.MPI_TAG == 40 + (int)k, "self %d bytes", n);
    CHECK(same(in, n, (int)k), "self message of %d bytes corrupted", n);
    free(out);
    free(in);
  }
  /* MPI_COMM_SELF is its own world of one. */
  int x = 77;
  int y = 0;
  MPI_Sendrecv(&x, 1, MPI_INT, 0, 1, &y, 1, MPI_INT, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
  CHECK(y == 77, "MPI_COMM_SELF sendrecv gave %d", y);
}

/* Pairs (0,1), (2,3), ...: an odd rank out talks to itself. */
static int partner(void) {
  const int p = rank ^ 1;
  return p < size ? p : rank;
}

static void posted_then_unexpected(void) {
  const int p = partner();
  int value = -1;
  MPI_Request r;
  MPI_Irecv(&value, 1, MPI_INT, p, 5, MPI_COMM_WORLD, &r);
  MPI_Barrier(MPI_COMM_WORLD); /* the receive is posted before the send starts */
  const int mine = 1000 + rank;
  MPI_Send(&mine, 1, MPI_INT, p, 5, MPI_COMM_WORLD);
  MPI_Status st;
  MPI_Wait(&r, &st);
  CHECK(value == 1000 + p && st.MPI_SOURCE == p && st.MPI_TAG == 5, "posted receive got %d", value);
}

static void unexpected_then_posted(void) {
  const int p = partner();
  const int n = 70000; /* several fragments, all arrived before the receive */
  unsigned char *out = malloc(n);
  unsigned char *in = malloc(n);
  fill(out, n, rank);
  MPI_Request s;
  MPI_Isend(out, n, MPI_BYTE, p, 6, MPI_COMM_WORLD, &s);
  MPI_Status st;
  MPI_Probe(p, 6, MPI_COMM_WORLD, &st); /* it is on the unexpected queue now */
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK(count == n && st.MPI_SOURCE == p && st.MPI_TAG == 6, "probe saw %d bytes", count);
  MPI_Recv(in, n, MPI_BYTE, p, 6, MPI_COMM_WORLD, &st);
  CHECK(same(in, n, p), "unexpected message corrupted");
  MPI_Wait(&s, MPI_STATUS_IGNORE);
  free(out);
  free(in);
}

static void wildcard_order(void) {
  /* Rank 1 sends tags 1, 2, 3, 1; rank 0 takes tag 3 first, then ANY_TAG
   * three times: it must see 1, 2, 1 with the values in send order. */
  if (size < 2 || rank > 1) return;
  if (rank == 1) {
    /* Nonblocking: blocking sends here would rely on eager buffering. */
    const int tags[] = {1, 2, 3, 1};
    const int values[] = {0, 1, 2, 3};
    MPI_Request r[4];
    for (int i = 0; i < 4; ++i)
      MPI_Isend(&values[i], 1, MPI_INT, 0, tags[i], MPI_COMM_WORLD, &r[i]);
    MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
    return;
  }
  int v = -1;
  MPI_Status st;
  MPI_Recv(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &st);
  CHECK(v == 2 && st.MPI_TAG == 3, "tag 3 gave value %d", v);
  const int want_tags[] = {1, 2, 1};
  const int want_values[] = {0, 1, 3};
  for (int i = 0; i < 3; ++i) {
    MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_TAG == want_tags[i] && v == want_values[i] && st.MPI_SOURCE == 1,
          "wildcard receive %d: tag %d value %d", i, st.MPI_TAG, v);
  }
}

static void any_source_fan_in(void) {
  /* Every rank sends three numbered messages to rank 0, which takes them
   * with ANY_SOURCE: per source, they must come in order. */
  const int per = 3;
  if (rank != 0) {
    for (int i = 0; i < per; ++i) {
      const int v = rank * 100 + i;
      MPI_Send(&v, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
    }
    return;
  }
  int *seen = calloc((size_t)size, sizeof(int));
  for (int k = 0; k < per * (size - 1); ++k) {
    int v = -1;
    MPI_Status st;
    MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &st);
    const int s = st.MPI_SOURCE;
    CHECK(s > 0 && s < size && v == s * 100 + seen[s], "from %d value %d", s, v);
    if (s > 0 && s < size) ++seen[s];
  }
  for (int s = 1; s < size; ++s) CHECK(seen[s] == per, "rank %d sent %d", s, seen[s]);
  free(seen);
}

static void truncation(void) {
  const int p = partner();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int sizes[] = {100 * 4, 100000};
  for (int k = 0; k < 2; ++k) {
    const int n = sizes[k];
    unsigned char *out = malloc((size_t)n);
    fill(out, n, 3);
    MPI_Request s;
    MPI_Isend(out, n, MPI_BYTE, p, 11, MPI_COMM_WORLD, &s);
    unsigned char in[64 + 16];
    memset(in, 0xEE, sizeof(in));
    MPI_Status st;
    st.MPI_ERROR = MPI_ERR_DIMS; /* a call with one status leaves it alone */
    const int err = MPI_Recv(in, 64, MPI_BYTE, p, 11, MPI_COMM_WORLD, &st);
    int cls = -1;
    MPI_Error_class(err, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive returned class %d", cls);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Recv wrote MPI_ERROR %d", st.MPI_ERROR);
    CHECK(same(in, 64, 3), "the part that fits was not delivered");
    for (int i = 64; i < 80; ++i) CHECK(in[i] == 0xEE, "byte %d past the buffer written", i);
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    free(out);
  }
  /* The same through Irecv + Wait. */
  int big[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int small[2] = {0, 0};
  MPI_Request s;
  MPI_Request r;
  MPI_Isend(big, 8, MPI_INT, p, 12, MPI_COMM_WORLD, &s);
  MPI_Irecv(small, 2, MPI_INT, p, 12, MPI_COMM_WORLD, &r);
  MPI_Status st;
  st.MPI_ERROR = MPI_ERR_DIMS;
  const int err = MPI_Wait(&r, &st);
  CHECK(err == MPI_ERR_TRUNCATE && st.MPI_ERROR == MPI_ERR_DIMS, "Wait returned %d, MPI_ERROR %d",
        err, st.MPI_ERROR);
  CHECK(st.MPI_TAG == 12 && st.MPI_SOURCE == p, "Wait's status: source %d tag %d", st.MPI_SOURCE,
        st.MPI_TAG);
  CHECK(r == MPI_REQUEST_NULL, "request not freed");
  MPI_Wait(&s, MPI_STATUS_IGNORE);
  /* An array of statuses: MPI_ERR_IN_STATUS, and each status says which. */
  MPI_Request rs[3];
  MPI_Status sts[3];
  int fits[8] = {0};
  MPI_Isend(big, 8, MPI_INT, p, 14, MPI_COMM_WORLD, &rs[0]);
  MPI_Irecv(small, 2, MPI_INT, p, 14, MPI_COMM_WORLD, &rs[1]);
  MPI_Isend(big, 8, MPI_INT, p, 15, MPI_COMM_WORLD, &s);
  MPI_Irecv(fits, 8, MPI_INT, p, 15, MPI_COMM_WORLD, &rs[2]);
  for (int i = 0; i < 3; ++i) sts[i].MPI_ERROR = MPI_ERR_DIMS;
  const int all = MPI_Waitall(3, rs, sts);
  CHECK(all == MPI_ERR_IN_STATUS && sts[0].MPI_ERROR == MPI_SUCCESS &&
            sts[1].MPI_ERROR == MPI_ERR_TRUNCATE && sts[2].MPI_ERROR == MPI_SUCCESS,
        "Waitall returned %d, errors %d %d %d", all, sts[0].MPI_ERROR, sts[1].MPI_ERROR,
        sts[2].MPI_ERROR);
  CHECK(fits[7] == 8, "the receive that fits got %d", fits[7]);
  MPI_Wait(&s, MPI_STATUS_IGNORE);
  /* When none fails, the array's error fields are left as they were. */
  MPI_Isend(big, 8, MPI_INT, p, 16, MPI_COMM_WORLD, &rs[0]);
  MPI_Irecv(fits, 8, MPI_INT, p, 16, MPI_COMM_WORLD, &rs[1]);
  sts[0].MPI_ERROR = sts[1].MPI_ERROR = MPI_ERR_DIMS;
  CHECK(MPI_Waitall(2, rs, sts) == MPI_SUCCESS && sts[0].MPI_ERROR == MPI_ERR_DIMS &&
            sts[1].MPI_ERROR == MPI_ERR_DIMS,
        "a Waitall without errors wrote MPI_ERROR %d %d", sts[0].MPI_ERROR, sts[1].MPI_ERROR);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void counts_and_probe(void) {
  const int p = partner();
  double d[3] = {1.5, 2.5, 3.5};
  int flag = 1;
  MPI_Status st;
  MPI_Iprobe(p, 13, MPI_COMM_WORLD, &flag, &st);
  CHECK(flag == 0, "Iprobe found a message nobody sent");
  MPI_Barrier(MPI_COMM_WORLD); /* nobody sends tag 13 before every probe above */
  MPI_Request s;
  MPI_Isend(d, 3, MPI_DOUBLE, p, 13, MPI_COMM_WORLD, &s);
  do {
    MPI_Iprobe(MPI_ANY_SOURCE, 13, MPI_COMM_WORLD, &flag, &st);
  } while (!flag);
  int n = 0;
  MPI_Get_count(&st, MPI_DOUBLE, &n);
  CHECK(n == 3 && st.MPI_SOURCE == p, "Get_count doubles %d", n);
  MPI_Get_count(&st, MPI_INT, &n);
  CHECK(n == 6, "Get_count ints %d", n);
  MPI_Get_count(&st, MPI_LONG_DOUBLE, &n);
  CHECK(n == MPI_UNDEFINED, "Get_count of a partial element %d", n);
  double got[3] = {0, 0, 0};
  MPI_Recv(got, 3, MPI_DOUBLE, p, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(got[0] == 1.5 && got[2] == 3.5, "values %g %g", got[0], got[2]);
  MPI_Wait(&s, MPI_STATUS_IGNORE);
}

static void proc_null(void) {
  MPI_Status st;
  int v = 5;
  CHECK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "send");
  MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
  int n = -1;
  MPI_Get_count(&st, MPI_INT, &n);
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && n == 0 && v == 5,
        "recv from PROC_NULL: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, n);
  MPI_Request r[2];
  MPI_Isend(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[0]);
  MPI_Irecv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[1]);
  MPI_Status sts[2];
  MPI_Waitall(2, r, sts);
  CHECK(sts[1].MPI_SOURCE == MPI_PROC_NULL, "Irecv from PROC_NULL");
  MPI_Sendrecv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, &v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD,
               &st);
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Sendrecv with PROC_NULL");
  MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Probe of PROC_NULL");
  /* Nothing to send may name no type (MPI_DATATYPE_NULL with count 0), as
   * MPICH takes it; a count of one is still MPI_ERR_TYPE (errors.c). */
  const int p = partner();
  MPI_Request none;
  CHECK(MPI_Isend(NULL, 0, MPI_DATATYPE_NULL, p, 17, MPI_COMM_WORLD, &none) == MPI_SUCCESS,
        "Isend of no data with MPI_DATATYPE_NULL");
  CHECK(MPI_Recv(NULL, 0, MPI_DATATYPE_NULL, p, 17, MPI_COMM_WORLD, &st) == MPI_SUCCESS,
        "Recv of no data with MPI_DATATYPE_NULL");
  MPI_Wait(&none, MPI_STATUS_IGNORE);
  MPI_Get_count(&st, MPI_BYTE, &n);
  CHECK(n == 0 && st.MPI_SOURCE == p && st.MPI_TAG == 17, "the empty message: %d bytes", n);
  CHECK(MPI_Bcast(NULL, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD) == MPI_SUCCESS,
        "Bcast of no data with MPI_DATATYPE_NULL");
}

static void fragment_edges_and_test(void) {
  /* Sizes around each protocol limit and two fragments, and around the
   * payloads that fill a shared-memory record's first cache line (its
   * headers of 24, 32 and 48 bytes after the ring's 8), exchanged with
   * Sendrecv; then a Test loop. */
  const int p = partner();
  int sizes[32];
  int count = edge_sizes(sizes, 1 << 20);
  const int line_edges[] = {8, 24, 25, 31, 32, 33, 56};
  for (unsigned k = 0; k < sizeof(line_edges) / sizeof(line_edges[0]); ++k) {
    sizes[count++] = line_edges[k];
  }
  sizes[count++] = 2 * (int)iris_limit("shm_fragment_size") + 1;
  sizes[count++] = 1 << 20;
  for (unsigned k = 0; k < (unsigned)count; ++k) {
    const int n = sizes[k];
    unsigned char *out = malloc((size_t)n + 1);
    unsigned char *in = malloc((size_t)n + 1);
    fill(out, n, rank + (int)k);
    MPI_Status st;
    MPI_Sendrecv(out, n, MPI_BYTE, p, 20, in, n, MPI_BYTE, p, 20, MPI_COMM_WORLD, &st);
    int got = -1;
    MPI_Get_count(&st, MPI_BYTE, &got);
    CHECK(got == n && same(in, n, p + (int)k), "sendrecv of %d bytes", n);
    free(out);
    free(in);
  }
  int v = -1;
  const int mine = rank;
  MPI_Request r;
  MPI_Irecv(&v, 1, MPI_INT, p, 21, MPI_COMM_WORLD, &r);
  MPI_Send(&mine, 1, MPI_INT, p, 21, MPI_COMM_WORLD);
  int flag = 0;
  while (!flag) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
  CHECK(v == p && r == MPI_REQUEST_NULL, "Test loop got %d", v);
  /* Zero bytes from a NULL buffer. */
  MPI_Sendrecv(NULL, 0, MPI_INT, p, 22, NULL, 0, MPI_INT, p, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* Deep queues: receives of distinct tags, with wildcards among them. */
enum { deep_n = 3000, deep_most = 2 * deep_n };
struct deep_receive {
  int any_source;
  int tag; /* -1: MPI_ANY_TAG */
};

/* Which receive message m takes by MPI's rules for one sender (the oldest
 * receive still open that matches it, in post order), marked taken; -1 if
 * none. */
static int deep_match(const struct deep_receive *rs, int receives, char *taken, int tag) {
  for (int r = 0; r < receives; ++r) {
    if (!taken[r] && (rs[r].tag == -1 || rs[r].tag == tag)) {
      taken[r] = 1;
      return r;
    }
  }
  return -1;
}

static void deep_queues_with_wildcards(void) {
  /* Thousands of receives of distinct tags, some by MPI_ANY_SOURCE, and an
   * MPI_ANY_TAG one after every 97th and 200 at the end, posted before the
   * messages come in reverse tag order (the wildcards take the first ones, so more messages
   * follow for the receives left open); then the same messages left
   * unexpected before the same receives. The matching's bins grow and
   * shrink under them (device/matching/): every message must reach the
   * receive MPI's order gives it. */
  if (size < 2) return;
  MPI_Comm pair; /* ranks 0 and 1: the barriers below are theirs */
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
  if (pair == MPI_COMM_NULL) return;
  struct deep_receive *rs = malloc(deep_most * sizeof *rs);
  int *tags = malloc(deep_most * sizeof(int));
  int *want = malloc(deep_most * sizeof(int));
  int *got = malloc(deep_most * sizeof(int));
  int *ids = malloc(deep_most * sizeof(int));
  char *taken = calloc(deep_most, 1);
  MPI_Request *r = malloc(deep_most * sizeof(MPI_Request));
  int receives = 0, messages = 0;
  for (int i = 0; i < deep_n; ++i) {
    rs[receives++] = (struct deep_receive){i % 89 == 7, i};
    if (i % 97 == 5) rs[receives++] = (struct deep_receive){0, -1};
  }
  /* MPI_ANY_TAG ones last, taken from a queue whose bins halve meanwhile. */
  for (int i = 0; i < 200; ++i) rs[receives++] = (struct deep_receive){0, -1};
  for (int i = 0; i < deep_n; ++i) {
    tags[messages] = deep_n - 1 - i;
    want[messages] = deep_match(rs, receives, taken, tags[messages]);
    ++messages;
  }
  for (int open = 0; open < receives; ++open) {
    if (taken[open]) continue;
    /* Scattered tags: consecutive ones never share a bin (the bins hash
     * by Fibonacci multiplication), and halving bins must merge some. */
    const unsigned scattered = ((unsigned)open * 2654435761u) ^ ((unsigned)open >> 3) * 40503u;
    tags[messages] = rs[open].tag == -1 ? deep_n + (int)(scattered % 20000u) : rs[open].tag;
    want[messages] = deep_match(rs, receives, taken, tags[messages]);
    ++messages;
  }
  CHECK(messages == receives, "the model left %d receives open", receives - messages);
  for (int m = 0; m < messages; ++m) ids[m] = m;
  for (int unexpected = 0; unexpected < 2; ++unexpected) {
    if (rank == 1) {
      if (!unexpected) MPI_Barrier(pair);
      for (int m = 0; m < messages; ++m) {
        MPI_Isend(&ids[m], 1, MPI_INT, 0, tags[m], pair, &r[m]);
      }
      /* Sends beyond the eager credits wait for their receives. */
      if (unexpected) MPI_Barrier(pair);
      MPI_Waitall(messages, r, MPI_STATUSES_IGNORE);
      continue;
    }
    /* Unexpected: every message there (or announced) before any receive:
     * once the last one is, all are (one sender's messages keep order). */
    if (unexpected) {
      MPI_Barrier(pair);
      int there = 0;
      while (!there) MPI_Iprobe(1, tags[messages - 1], pair, &there, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < receives; ++i) {
      got[i] = -2;
      MPI_Irecv(&got[i], 1, MPI_INT, rs[i].any_source ? MPI_ANY_SOURCE : 1,
                rs[i].tag == -1 ? MPI_ANY_TAG : rs[i].tag, pair, &r[i]);
    }
    if (!unexpected) MPI_Barrier(pair);
    MPI_Waitall(receives, r, MPI_STATUSES_IGNORE);
    int wrong = 0;
    for (int m = 0; m < messages; ++m) {
      if (got[want[m]] != m && wrong++ < 3) {
        CHECK(0, "%s: message %d (tag %d) went elsewhere: receive %d has %d",
              unexpected ? "unexpected" : "posted", m, tags[m], want[m], got[want[m]]);
      }
    }
  }
  MPI_Comm_free(&pair);
  free(r);
  free(taken);
  free(ids);
  free(got);
  free(want);
  free(tags);
  free(rs);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* A barrier between phases keeps each phase's wildcards to its own traffic. */
  void (*const phases[])(void) = {self_messages,           posted_then_unexpected,
                                  unexpected_then_posted,  wildcard_order,
                                  any_source_fan_in,       truncation,
                                  counts_and_probe,        proc_null,
                                  fragment_edges_and_test, deep_queues_with_wildcards};
  for (unsigned i = 0; i < sizeof(phases) / sizeof(phases[0]); ++i) {
    phases[i]();
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 0 && check_failures == 0) printf("p2p: all checks passed on %d ranks\n", size);
  return finish();
}
