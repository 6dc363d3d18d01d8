/* Non-contiguous messages above the eager limit between pairs of ranks
 * (rank 2k sends to 2k+1), in every pairing of layouts a single-copy read
 * of scattered blocks must handle: a vector of 4 KiB blocks at a stride of
 * 8 KiB into the same layout, into 6 KiB blocks (block edges that do not
 * meet), into and from a contiguous buffer, a struct and an indexed type of
 * large blocks, a vector of small blocks (which stays on the pipeline), a
 * message that arrives before its receive is posted, and a truncated
 * receive. Every byte of each receive buffer is checked: the data where the
 * type puts it, and every gap as it was. The blocks are enough to fill
 * more than one call's worth of iovecs (IOV_MAX). The job test runs this
 * with IRIS_RNDV_ENGINE=cma, auto and pipeline, and under a kernel that
 * refuses CMA, and reads IRIS_STATS to see which path was taken; the last
 * exchange puts two messages in flight, the one `auto` reads with CMA. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { blocks4k = 1500, total = blocks4k * 4096, gap_byte = 0xee };

/* A layout: `count` elements of `type`, whose data in one element is the
 * blocks (offset, length) in order, elements `extent` bytes apart. */
struct layout {
  const char *name;
  MPI_Datatype type;
  int count;
  long extent;
  int nblocks;
  long *at;
  long *len;
  long lead; /* bytes before the address given that the data uses */
  long span; /* bytes the buffer needs from there */
};

static void add_block(struct layout *l, long at, long len) {
  l->at = realloc(l->at, sizeof(long) * (size_t)(l->nblocks + 1));
  l->len = realloc(l->len, sizeof(long) * (size_t)(l->nblocks + 1));
  l->at[l->nblocks] = at;
  l->len[l->nblocks] = len;
  ++l->nblocks;
}

static void layout_done(struct layout *l) {
  MPI_Type_commit(&l->type);
  MPI_Aint lb = 0;
  MPI_Aint extent = 0;
  MPI_Type_get_extent(l->type, &lb, &extent);
  l->extent = (long)extent;
  long lo = 0;
  long hi = 0;
  for (int e = 0; e < l->count; ++e) {
    for (int b = 0; b < l->nblocks; ++b) {
      const long a = e * l->extent + l->at[b];
      if (a < lo) lo = a;
      if (a + l->len[b] > hi) hi = a + l->len[b];
    }
  }
  l->lead = -lo;
  l->span = hi - lo;
  int size = 0;
  MPI_Type_size(l->type, &size);
  long per = 0;
  for (int b = 0; b < l->nblocks; ++b) per += l->len[b];
  CHECK(size == per, "%s: MPI_Type_size %d, not %ld", l->name, size, per);
}

static struct layout vector_of(const char *name, int nb, int block_ints, int stride_ints) {
  struct layout l = {name, MPI_DATATYPE_NULL, 1, 0, 0, NULL, NULL, 0, 0};
  MPI_Type_vector(nb, block_ints, stride_ints, MPI_INT, &l.type);
  for (int i = 0; i < nb; ++i) add_block(&l, (long)i * stride_ints * 4, (long)block_ints * 4);
  layout_done(&l);
  return l;
}

static struct layout contiguous(void) {
  struct layout l = {"contiguous", MPI_DATATYPE_NULL, total, 0, 0, NULL, NULL, 0, 0};
  MPI_Type_dup(MPI_BYTE, &l.type);
  add_block(&l, 0, 1);
  layout_done(&l);
  return l;
}

/* struct { int a[700] at 0; double d[600] at 4096; char c[3000] at 10000 }
 * resized to 16 KiB: 10600 bytes an element, 579 elements. */
static struct layout structure(void) {
  struct layout l = {"struct", MPI_DATATYPE_NULL, 0, 0, 0, NULL, NULL, 0, 0};
  int lens[3] = {700, 600, 3000};
  MPI_Aint displs[3] = {0, 4096, 10000};
  MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
  MPI_Datatype raw;
  MPI_Type_create_struct(3, lens, displs, types, &raw);
  MPI_Type_create_resized(raw, 0, 16384, &l.type);
  MPI_Type_free(&raw);
  add_block(&l, 0, 2800);
  add_block(&l, 4096, 4800);
  add_block(&l, 10000, 3000);
  l.count = total / 10600;
  layout_done(&l);
  return l;
}

/* Indexed blocks of 512 to 1535 ints with gaps of 1 to 64 ints between. */
static struct layout indexed(void) {
  struct layout l = {"indexed", MPI_DATATYPE_NULL, 1, 0, 0, NULL, NULL, 0, 0};
  int n = 0;
  int *lens = NULL;
  int *displs = NULL;
  long at = 0;
  long bytes = 0;
  for (int i = 0; bytes < total; ++i) {
    long len = 4L * (512 + (i * 389) % 1024);
    if (bytes + len > total) len = total - bytes;
    lens = realloc(lens, sizeof(int) * (size_t)(n + 1));
    displs = realloc(displs, sizeof(int) * (size_t)(n + 1));
    lens[n] = (int)(len / 4);
    displs[n] = (int)(at / 4);
    add_block(&l, at, len);
    ++n;
    bytes += len;
    at += len + 4L * (1 + (i * 7) % 64);
  }
  MPI_Type_indexed(n, lens, displs, MPI_INT, &l.type);
  free(lens);
  free(displs);
  layout_done(&l);
  return l;
}

static long packed_total(const struct layout *l) {
  long t = 0;
  for (int b = 0; b < l->nblocks; ++b) t += l->len[b];
  return t * l->count;
}

/* The byte at packed position p of message `m`. */
static unsigned char data_byte(long p, int m) {
  return (unsigned char)((p * 131 + p / 4099 + m * 17) % 251);
}

static unsigned char *buffer_for(const struct layout *l) {
  unsigned char *b = malloc((size_t)l->span + 1);
  memset(b, gap_byte, (size_t)l->span + 1);
  return b;
}

static void fill(unsigned char *origin, const struct layout *l, int m) {
  long p = 0;
  for (int e = 0; e < l->count; ++e) {
    for (int b = 0; b < l->nblocks; ++b) {
      for (long k = 0; k < l->len[b]; ++k) origin[e * l->extent + l->at[b] + k] = data_byte(p++, m);
    }
  }
}

/* Every byte of the receive buffer: the first `bytes` of the message where
 * the layout puts them, the gap byte everywhere else. */
static void verify(const char *what, unsigned char *base, const struct layout *l, long bytes,
                   int m) {
  unsigned char *want = malloc((size_t)l->span + 1);
  memset(want, gap_byte, (size_t)l->span + 1);
  unsigned char *origin = want + l->lead;
  long p = 0;
  for (int e = 0; e < l->count && p < bytes; ++e) {
    for (int b = 0; b < l->nblocks && p < bytes; ++b) {
      for (long k = 0; k < l->len[b] && p < bytes; ++k) {
        origin[e * l->extent + l->at[b] + k] = data_byte(p++, m);
      }
    }
  }
  long bad = -1;
  for (long k = 0; k <= l->span; ++k) {
    if (want[k] != base[k]) {
      bad = k;
      break;
    }
  }
  CHECK(bad < 0, "%s: byte %ld of the buffer (%ld from its origin) is %d, not %d", what, bad,
        bad - l->lead, bad < 0 ? 0 : base[bad], bad < 0 ? 0 : want[bad]);
  free(want);
}

static int rank;
static int message = 0;

/* One message from `from` (on the sender) into `to` (on the receiver);
 * `late`: the receive is posted only after the message arrived. */
static void exchange(const char *what, const struct layout *from, const struct layout *to,
                     int late) {
  const int m = ++message;
  const int peer = rank ^ 1;
  if (rank % 2 == 0) {
    unsigned char *b = buffer_for(from);
    fill(b + from->lead, from, m);
    MPI_Request req;
    MPI_Isend(b + from->lead, from->count, from->type, peer, m, MPI_COMM_WORLD, &req);
    if (late) MPI_Barrier(MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    free(b);
  } else {
    unsigned char *b = buffer_for(to);
    if (late) {
      int arrived = 0;
      MPI_Status probe;
      while (!arrived) MPI_Iprobe(peer, m, MPI_COMM_WORLD, &arrived, &probe);
      MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Status st;
    const int err = MPI_Recv(b + to->lead, to->count, to->type, peer, m, MPI_COMM_WORLD, &st);
    const long sent = packed_total(from);
    const long room = packed_total(to);
    int got = -1;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if (sent > room) {
      int cls = 0;
      MPI_Error_class(err, &cls);
      CHECK(cls == MPI_ERR_TRUNCATE, "%s: error class %d, not MPI_ERR_TRUNCATE", what, cls);
    } else {
      CHECK(err == MPI_SUCCESS, "%s: error %d", what, err);
      CHECK(got == sent, "%s: %d bytes, not %ld", what, got, sent);
    }
    verify(what, b, to, sent < room ? sent : room, m);
    free(b);
  }
}

/* Two messages in flight: `a` (small blocks: pipelined) and then `b`, both
 * receives posted first, so that `b` is matched while `a` streams (what the
 * `auto` engine reads with CMA). */
static void two_at_once(const struct layout *a, const struct layout *b) {
  const int m = ++message;
  const int peer = rank ^ 1;
  unsigned char *ba = buffer_for(a);
  unsigned char *bb = buffer_for(b);
  MPI_Request req[2];
  if (rank % 2 == 0) {
    fill(ba + a->lead, a, m);
    fill(bb + b->lead, b, m + 1);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Isend(ba + a->lead, a->count, a->type, peer, m, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(bb + b->lead, b->count, b->type, peer, m + 1, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  } else {
    MPI_Irecv(ba + a->lead, a->count, a->type, peer, m, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(bb + b->lead, b->count, b->type, peer, m + 1, MPI_COMM_WORLD, &req[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    verify("two at once, first", ba, a, packed_total(a), m);
    verify("two at once, second", bb, b, packed_total(b), m + 1);
  }
  ++message;
  free(ba);
  free(bb);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (size % 2 != 0) {
    if (rank == 0) fprintf(stderr, "scattered: needs an even number of ranks\n");
    ++check_failures;
    return finish();
  }
  struct layout v4 = vector_of("vector 4 KiB / 8 KiB", blocks4k, 1024, 2048);
  struct layout v6 = vector_of("vector 6 KiB / 10 KiB", total / 6144, 1536, 2560);
  struct layout small = vector_of("vector 64 B / 128 B", total / 64, 16, 32);
  struct layout c = contiguous();
  struct layout s = structure();
  struct layout x = indexed();
  struct layout sc = c; /* contiguous bytes of the struct pair's total */
  sc.count = (int)packed_total(&s);
  struct layout shortv = vector_of("short", blocks4k - 500, 1024, 2048);

  exchange("vector into vector", &v4, &v4, 0);
  exchange("vector into other blocks", &v4, &v6, 0);
  exchange("other blocks into vector", &v6, &v4, 0);
  exchange("contiguous into vector", &c, &v4, 0);
  exchange("vector into contiguous", &v4, &c, 0);
  exchange("struct into struct", &s, &s, 0);
  exchange("struct into contiguous", &s, &sc, 0);
  exchange("contiguous into struct", &sc, &s, 0);
  exchange("indexed into indexed", &x, &x, 0);
  exchange("indexed into vector", &x, &v4, 0);
  exchange("small blocks into small blocks", &small, &small, 0);
  exchange("small blocks into vector", &small, &v4, 0);
  exchange("vector into small blocks", &v4, &small, 0);
  exchange("vector, unexpected", &v4, &v6, 1);
  exchange("vector, truncated", &v4, &shortv, 0);
  two_at_once(&small, &v4);

  MPI_Barrier(MPI_COMM_WORLD);
  int failures = 0;
  MPI_Allreduce(&check_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && failures == 0) printf("scattered: all checks passed on %d ranks\n", size);
  struct layout *made[] = {&v4, &v6, &small, &c, &s, &x, &shortv}; /* sc shares c's */
  for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); ++i) {
    MPI_Type_free(&made[i]->type);
    free(made[i]->at);
    free(made[i]->len);
  }
  return finish();
}
