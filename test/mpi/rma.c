/* One-sided communication (MPI-3 RMA) at any rank count, on MPI_COMM_WORLD:
 *   A  window flavors: create over malloc'ed memory, allocate, allocate_shared
 *      (every segment queried, then read and written through its pointer)
 *      and dynamic (attach, absolute addresses, detach); their attributes,
 *      group and name; zero-size windows; MPI_Win_free sets MPI_WIN_NULL;
 *   B  fences: a put into the right neighbour and a get from the left one,
 *      1 B to 1 MiB, plain and with NOPRECEDE/NOSUCCEED, and with a
 *      displacement unit and a displacement;
 *   C  derived datatypes at origin and target (vector, indexed, resized),
 *      put and get; the gaps between the strides are left as they were;
 *   D  passive target: exclusive and shared locks, lock_all with flush,
 *      flush_all, flush_local and flush_local_all;
 *   E  exclusive locks exclude: each rank adds 1 to rank 0's counter 20
 *      times by get and put;
 *   F  accumulates: sum (under fence, lock_all and shared locks), replace,
 *      max, min, the bitwise ops, prod, maxloc, minloc, a vector target;
 *      get_accumulate, fetch_and_op (every fetched value differs) and
 *      compare_and_swap (one winner a round);
 *   G  errors: a put outside the window (nothing written past it), puts
 *      outside an epoch, an unlock without a lock, a bad rank, and an error
 *      handler of our own;
 *   H  a target that computes without calling MPI while rank 0 does 20
 *      rounds of lock, put, get, fetch_and_op and unlock with it, then sets
 *      a flag in its memory that ends the computing (after 0.2 s the target
 *      waits for it in MPI instead);
 *   I-M  in rma_more.c (rma.h).
 * Prints "rma: all checks passed on N ranks". */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rma.h"

int rank, size, right, left;

double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The class of a return code (MPI_SUCCESS stays MPI_SUCCESS). */
int error_class(int code) {
  int cls = code;
  if (code != MPI_SUCCESS) MPI_Error_class(code, &cls);
  return cls;
}

MPI_Aint padded(size_t bytes) {
  return (MPI_Aint)((bytes + 63) / 64 * 64);
}

void sync_self(MPI_Win win) {
  MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
  MPI_Win_sync(win);
  MPI_Win_unlock(rank, win);
}

/* ---- A: window flavors ---- */
static void check_window(MPI_Win win, MPI_Comm comm, const char *what, void *base, MPI_Aint bytes,
                         int disp_unit, int flavor) {
  void *b = NULL;
  MPI_Aint *s = NULL;
  int *d = NULL, *f = NULL, *m = NULL, has = 0;
  MPI_Win_get_attr(win, MPI_WIN_BASE, &b, &has);
  CHECK(has && b == base, "A: %s: MPI_WIN_BASE %p, not %p", what, b, base);
  MPI_Win_get_attr(win, MPI_WIN_SIZE, &s, &has);
  CHECK(has && *s == bytes, "A: %s: MPI_WIN_SIZE %ld, not %ld", what, has ? (long)*s : -1L,
        (long)bytes);
  MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &d, &has);
  CHECK(has && *d == disp_unit, "A: %s: MPI_WIN_DISP_UNIT %d, not %d", what, has ? *d : -1,
        disp_unit);
  MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &f, &has);
  CHECK(has && *f == flavor, "A: %s: MPI_WIN_CREATE_FLAVOR %d, not %d", what, has ? *f : -1,
        flavor);
  MPI_Win_get_attr(win, MPI_WIN_MODEL, &m, &has);
  CHECK(has && *m == MPI_WIN_UNIFIED, "A: %s: MPI_WIN_MODEL %d, not MPI_WIN_UNIFIED", what,
        has ? *m : -1);

  MPI_Group wg, cg;
  int cmp = -1;
  MPI_Win_get_group(win, &wg);
  MPI_Comm_group(comm, &cg);
  MPI_Group_compare(wg, cg, &cmp);
  CHECK(cmp == MPI_IDENT, "A: %s: the window's group compares %d to the comm's", what, cmp);
  MPI_Group_free(&wg);
  MPI_Group_free(&cg);

  /* MPI_Win_get_name of a window never named gives the empty string (MPI
   * 4.0, 7.8), but Open MPI 4.1.4 names new windows ("rdma window 3"):
   * that is not checked. */
  char name[MPI_MAX_OBJECT_NAME];
  int length = -1;
  MPI_Win_set_name(win, what);
  MPI_Win_get_name(win, name, &length);
  CHECK(length == (int)strlen(what) && strcmp(name, what) == 0, "A: %s: named \"%s\" (%d)", what,
        name, length);
}

static void free_window(MPI_Win *win, const char *what) {
  MPI_Win_free(win);
  CHECK(*win == MPI_WIN_NULL, "A: %s: MPI_Win_free left the handle", what);
}

/* Odd ranks expose nothing; even ones `size` ints and more, rank 0's slot r
 * taking rank r's put. */
static void test_create_allocate(int allocate) {
  const char *what = allocate ? "allocate" : "create";
  const int n = rank % 2 ? 0 : (int)(padded((size_t)size * sizeof(int)) / (MPI_Aint)sizeof(int));
  const MPI_Aint bytes = (MPI_Aint)n * (MPI_Aint)sizeof(int);
  int *mem = NULL;
  MPI_Win win;
  if (allocate) {
    MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    CHECK(n == 0 || mem != NULL, "A: allocate gave no memory");
  } else {
    mem = n ? malloc((size_t)bytes) : NULL;
    MPI_Win_create(mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  }
  check_window(win, MPI_COMM_WORLD, what, mem, bytes, sizeof(int),
               allocate ? MPI_WIN_FLAVOR_ALLOCATE : MPI_WIN_FLAVOR_CREATE);
  for (int i = 0; i < n; ++i) mem[i] = -1;
  MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
  const int v = 7 * (rank + 1);
  MPI_Put(&v, 1, MPI_INT, 0, rank, 1, MPI_INT, win);
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      CHECK(mem[r] == 7 * (r + 1), "A: %s: slot %d holds %d", what, r, mem[r]);
    }
  }
  free_window(&win, what);
  if (!allocate) free(mem);
}

static int shared_ints(int r) {
  return r % 3 == 1 ? 0 : 4 + r;
}
static int shared_unit(int r) {
  return r % 2 ? 1 : (int)sizeof(int);
}

static void test_shared(void) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int nr, ns;
  MPI_Comm_rank(node, &nr);
  MPI_Comm_size(node, &ns);
  const int n = shared_ints(nr);
  const MPI_Aint bytes = (MPI_Aint)n * (MPI_Aint)sizeof(int);
  int *mine = NULL;
  MPI_Win win;
  MPI_Win_allocate_shared(bytes, shared_unit(nr), MPI_INFO_NULL, node, &mine, &win);
  check_window(win, node, "allocate_shared", mine, bytes, shared_unit(nr), MPI_WIN_FLAVOR_SHARED);
  int **segments = malloc(sizeof(int *) * (size_t)ns);
  for (int r = 0; r < ns; ++r) {
    MPI_Aint sz = -1;
    int du = -1;
    segments[r] = NULL;
    MPI_Win_shared_query(win, r, &sz, &du, &segments[r]);
    CHECK(sz == (MPI_Aint)shared_ints(r) * (MPI_Aint)sizeof(int) && du == shared_unit(r),
          "A: shared_query(%d): size %ld, disp_unit %d", r, (long)sz, du);
    if (r == nr) CHECK(segments[r] == mine, "A: shared_query(self) is not the base pointer");
  }
  {
    /* MPI_PROC_NULL: the segment of the lowest rank with one, here 0. */
    MPI_Aint sz = -1;
    int du = -1;
    int *p = NULL;
    MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &du, &p);
    CHECK(p == segments[0] && sz == (MPI_Aint)shared_ints(0) * (MPI_Aint)sizeof(int) &&
              du == shared_unit(0),
          "A: shared_query(MPI_PROC_NULL): %p, size %ld, disp_unit %d", (void *)p, (long)sz, du);
  }
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  for (int i = 0; i < n; ++i) mine[i] = 1000 * nr + i;
  MPI_Win_sync(win);
  MPI_Barrier(node);
  MPI_Win_sync(win);
  int bad = 0;
  for (int r = 0; r < ns; ++r) {
    for (int i = 0; i < shared_ints(r); ++i) bad += segments[r][i] != 1000 * r + i;
  }
  CHECK(bad == 0, "A: %d ints read through the shared pointers differ", bad);
  MPI_Barrier(node); /* all read before anyone writes into another's */
  const int nright = (nr + 1) % ns, nleft = (nr + ns - 1) % ns;
  for (int i = 0; i < shared_ints(nright); ++i) segments[nright][i] = -(1000 * nr + i);
  MPI_Win_sync(win);
  MPI_Barrier(node);
  MPI_Win_sync(win);
  bad = 0;
  for (int i = 0; i < n; ++i) bad += mine[i] != -(1000 * nleft + i);
  CHECK(bad == 0, "A: %d ints written by the left neighbour through its pointer differ", bad);
  MPI_Win_unlock_all(win);
  free_window(&win, "allocate_shared");
  free(segments);
  MPI_Comm_free(&node);
}

static void test_dynamic(void) {
  MPI_Win win;
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  /* MPI 4.0, 12.2.6: base MPI_BOTTOM and size 0; 12.2.4: disp_unit 1. */
  check_window(win, MPI_COMM_WORLD, "create_dynamic", MPI_BOTTOM, 0, 1, MPI_WIN_FLAVOR_DYNAMIC);
  /* Two regions: puts land in the second, gets read the first. */
  int *first = malloc(8 * sizeof(int)), *second = malloc(8 * sizeof(int));
  for (int i = 0; i < 8; ++i) first[i] = 100 * rank + i, second[i] = -1;
  MPI_Win_attach(win, first, 8 * sizeof(int));
  MPI_Win_attach(win, second, 8 * sizeof(int));
  MPI_Aint mine[2], *all = malloc(2 * sizeof(MPI_Aint) * (size_t)size);
  MPI_Get_address(first, &mine[0]);
  MPI_Get_address(second, &mine[1]);
  MPI_Allgather(mine, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD);
  int out[8], in[8];
  for (int i = 0; i < 8; ++i) out[i] = 10000 + 100 * rank + i, in[i] = -2;
  MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
  MPI_Put(out, 6, MPI_INT, right, MPI_Aint_add(all[2 * right + 1], sizeof(int)), 6, MPI_INT, win);
  MPI_Get(in, 8, MPI_INT, left, all[2 * left], 8, MPI_INT, win);
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  int bad = 0;
  for (int i = 0; i < 8; ++i) {
    bad += in[i] != 100 * left + i;
    bad += second[i] != (i >= 1 && i <= 6 ? 10000 + 100 * left + i - 1 : -1);
  }
  CHECK(bad == 0, "A: dynamic: %d ints differ", bad);
  /* Two adjacent regions, attached one by one: an op may span both (as
   * MPICH's win_dynamic_rma_flush_get does). Each rank's pair takes a put
   * of 12 ints from the left, then a SUM of 12 ones, across the seam. */
  int *pair = calloc(16, sizeof(int));
  MPI_Win_attach(win, pair, 8 * sizeof(int));
  MPI_Win_attach(win, pair + 8, 8 * sizeof(int));
  MPI_Aint pair_at = 0;
  MPI_Get_address(pair, &pair_at);
  MPI_Allgather(&pair_at, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
  int twelve[12], ones[12], back[16];
  for (int i = 0; i < 12; ++i) twelve[i] = 100 * rank + i, ones[i] = 1;
  const MPI_Aint seam = MPI_Aint_add(all[right], 2 * sizeof(int));
  MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
  CHECK(MPI_Put(twelve, 12, MPI_INT, right, seam, 12, MPI_INT, win) == MPI_SUCCESS,
        "A: dynamic: a put across two regions was refused");
  MPI_Win_fence(0, win);
  CHECK(MPI_Accumulate(ones, 12, MPI_INT, right, seam, 12, MPI_INT, MPI_SUM, win) == MPI_SUCCESS,
        "A: dynamic: an accumulate across two regions was refused");
  MPI_Win_fence(0, win);
  CHECK(MPI_Get(back, 16, MPI_INT, right, all[right], 16, MPI_INT, win) == MPI_SUCCESS,
        "A: dynamic: a get across two regions was refused");
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  bad = 0;
  for (int i = 0; i < 16; ++i) bad += back[i] != (i >= 2 && i < 14 ? 100 * rank + i - 1 : 0);
  CHECK(bad == 0, "A: dynamic: %d ints across two regions differ (back[2] %d)", bad, back[2]);
  MPI_Win_detach(win, pair + 8);
  MPI_Win_detach(win, pair);
  free(pair);
  MPI_Win_detach(win, second);
  MPI_Win_detach(win, first);
  free_window(&win, "create_dynamic");
  free(first);
  free(second);
  free(all);
}

/* ---- B: fences ---- */
static unsigned char pattern(int owner, size_t i, size_t n) {
  return (unsigned char)((size_t)owner * 37u + i * 11u + n);
}

static void test_fence(void) {
  const size_t max = 1u << 20;
  unsigned char *mem = NULL;
  MPI_Win win;
  /* [0, max) takes the puts; [max, 2 max) is read by the gets. */
  MPI_Win_allocate((MPI_Aint)(2 * max), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  unsigned char *src = malloc(max), *dst = malloc(max);
  const size_t sizes[] = {1, 8, 1000, 65536, 1u << 20};
  for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
    const size_t n = sizes[k];
    for (int asserts = 0; asserts < 2; ++asserts) {
      memset(mem, 0xEE, n < max ? n + 1 : max);
      for (size_t i = 0; i < n; ++i) {
        mem[max + i] = pattern(rank, i, n);
        src[i] = pattern(rank + 1000, i, n);
      }
      memset(dst, 0, n);
      MPI_Win_fence(asserts ? MPI_MODE_NOPRECEDE : 0, win);
      MPI_Put(src, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win);
      MPI_Get(dst, (int)n, MPI_BYTE, left, (MPI_Aint)max, (int)n, MPI_BYTE, win);
      MPI_Win_fence(asserts ? MPI_MODE_NOSUCCEED : 0, win);
      size_t put_bad = 0, get_bad = 0;
      for (size_t i = 0; i < n; ++i) {
        put_bad += mem[i] != pattern(left + 1000, i, n);
        get_bad += dst[i] != pattern(left, i, n);
      }
      CHECK(put_bad == 0 && get_bad == 0, "B: %zu bytes (asserts %d): %zu put, %zu got differ", n,
            asserts, put_bad, get_bad);
      CHECK(n == max || mem[n] == 0xEE, "B: %zu bytes: the put wrote past its end", n);
    }
  }
  MPI_Win_free(&win);
  free(src);
  free(dst);

  /* disp_unit sizeof(int): 10 ints put at displacement 5, got from 20. */
  int *ints = malloc(64 * sizeof(int));
  MPI_Win_create(ints, 64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  for (int i = 0; i < 64; ++i) ints[i] = i < 20 ? -1 : 1000 * rank + i;
  int out[10], in[10];
  for (int i = 0; i < 10; ++i) out[i] = -(100 * rank + i), in[i] = 0;
  MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
  MPI_Put(out, 10, MPI_INT, right, 5, 10, MPI_INT, win);
  MPI_Get(in, 10, MPI_INT, left, 20, 10, MPI_INT, win);
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  int bad = 0;
  for (int i = 0; i < 20; ++i) bad += ints[i] != (i >= 5 && i < 15 ? -(100 * left + i - 5) : -1);
  for (int i = 0; i < 10; ++i) bad += in[i] != 1000 * left + 20 + i;
  CHECK(bad == 0, "B: disp_unit 4: %d ints differ", bad);
  MPI_Win_free(&win);
  free(ints);
}

/* ---- C: derived datatypes ---- */
/* The window: 64 ints, [0, 32) take the puts (-1 elsewhere), [32, 64) hold
 * 1000 * owner + i for the gets. */
static void reset_typed(int *w) {
  for (int i = 0; i < 64; ++i) w[i] = i < 32 ? -1 : 1000 * rank + i;
}

static void test_datatypes(void) {
  int *w = NULL;
  MPI_Win win;
  MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w, &win);
  int expect[32], origin[16];
  int bad;

  /* C1: 8 contiguous ints into every other int at the target, from 1. */
  MPI_Datatype every_other;
  MPI_Type_vector(8, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  reset_typed(w);
  for (int i = 0; i < 16; ++i) origin[i] = i < 8 ? 100 * rank + i : -7;
  int got[16];
  for (int i = 0; i < 16; ++i) got[i] = -7;
  MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
  MPI_Put(origin, 8, MPI_INT, right, 1, 1, every_other, win);
  MPI_Get(got, 8, MPI_INT, left, 32, 1, every_other, win);
  MPI_Win_fence(0, win);
  bad = 0;
  for (int i = 0; i < 32; ++i) expect[i] = -1;
  for (int k = 0; k < 8; ++k) expect[1 + 2 * k] = 100 * left + k;
  for (int i = 0; i < 32; ++i) bad += w[i] != expect[i];
  CHECK(bad == 0, "C: vector target put: %d ints differ", bad);
  bad = 0;
  for (int i = 0; i < 16; ++i) bad += got[i] != (i < 8 ? 1000 * left + 32 + 2 * i : -7);
  CHECK(bad == 0, "C: vector target get: %d ints differ", bad);

  /* C2: an indexed origin (positions 0, 3, 4, 8, 9, 10), 6 contiguous at
   * the target. */
  MPI_Datatype indexed;
  const int lengths[3] = {1, 2, 3}, displs[3] = {0, 3, 8};
  const int picked[6] = {0, 3, 4, 8, 9, 10};
  MPI_Type_indexed(3, lengths, displs, MPI_INT, &indexed);
  MPI_Type_commit(&indexed);
  reset_typed(w);
  for (int i = 0; i < 16; ++i) origin[i] = 100 * rank + i, got[i] = -7;
  MPI_Win_fence(0, win);
  MPI_Put(origin, 1, indexed, right, 20, 6, MPI_INT, win);
  MPI_Get(got, 1, indexed, left, 40, 6, MPI_INT, win);
  MPI_Win_fence(0, win);
  for (int i = 0; i < 32; ++i) expect[i] = -1;
  for (int k = 0; k < 6; ++k) expect[20 + k] = 100 * left + picked[k];
  bad = 0;
  for (int i = 0; i < 32; ++i) bad += w[i] != expect[i];
  CHECK(bad == 0, "C: indexed origin put: %d ints differ", bad);
  int want_got[16];
  for (int i = 0; i < 16; ++i) want_got[i] = -7;
  for (int k = 0; k < 6; ++k) want_got[picked[k]] = 1000 * left + 40 + k;
  bad = 0;
  for (int i = 0; i < 16; ++i) bad += got[i] != want_got[i];
  CHECK(bad == 0, "C: indexed origin get: %d ints differ", bad);

  /* C3: both strided: every other int at the origin; at the target, pairs
   * of ints 5 ints apart (a resized contiguous pair), from 2. */
  MPI_Datatype pair, spaced_pairs;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_create_resized(pair, 0, 5 * (MPI_Aint)sizeof(int), &spaced_pairs);
  MPI_Type_commit(&spaced_pairs);
  MPI_Datatype origin_stride;
  MPI_Type_vector(6, 1, 2, MPI_INT, &origin_stride);
  MPI_Type_commit(&origin_stride);
  const int at[6] = {0, 1, 5, 6, 10, 11};
  reset_typed(w);
  for (int i = 0; i < 16; ++i) origin[i] = 100 * rank + i, got[i] = -7;
  MPI_Win_fence(0, win);
  MPI_Put(origin, 1, origin_stride, right, 2, 3, spaced_pairs, win);
  MPI_Get(got, 1, origin_stride, left, 33, 3, spaced_pairs, win);
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  for (int i = 0; i < 32; ++i) expect[i] = -1;
  for (int k = 0; k < 6; ++k) expect[2 + at[k]] = 100 * left + 2 * k;
  bad = 0;
  for (int i = 0; i < 32; ++i) bad += w[i] != expect[i];
  CHECK(bad == 0, "C: strided to resized put: %d ints differ", bad);
  for (int i = 0; i < 16; ++i) want_got[i] = -7;
  for (int k = 0; k < 6; ++k) want_got[2 * k] = 1000 * left + 33 + at[k];
  bad = 0;
  for (int i = 0; i < 16; ++i) bad += got[i] != want_got[i];
  CHECK(bad == 0, "C: strided from resized get: %d ints differ", bad);

  MPI_Type_free(&every_other);
  MPI_Type_free(&indexed);
  MPI_Type_free(&pair);
  MPI_Type_free(&spaced_pairs);
  MPI_Type_free(&origin_stride);
  MPI_Win_free(&win);
}

/* ---- D: passive target ---- */
static void test_passive(void) {
  /* [0, 4): the exclusive puts; [8, 8 + size): rank 0's slots for the
   * shared locks; [8 + size]: the left neighbour's lock_all word. */
  const int n = 8 + size + 1, word = 8 + size;
  int *w = NULL;
  MPI_Win win;
  MPI_Win_allocate(padded((size_t)n * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w,
                   &win);
  for (int i = 0; i < n; ++i) w[i] = -1;
  sync_self(win);
  MPI_Barrier(MPI_COMM_WORLD);

  int out[4];
  for (int k = 0; k < 4; ++k) out[k] = 10 * rank + k;
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
  MPI_Put(out, 4, MPI_INT, right, 0, 4, MPI_INT, win);
  MPI_Win_unlock(right, win);

  const int mine = 3 * (rank + 1);
  MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
  MPI_Put(&mine, 1, MPI_INT, 0, 8 + rank, 1, MPI_INT, win);
  MPI_Win_unlock(0, win);

  MPI_Barrier(MPI_COMM_WORLD);
  sync_self(win);
  int bad = 0;
  for (int k = 0; k < 4; ++k) bad += w[k] != 10 * left + k;
  CHECK(bad == 0, "D: exclusive lock: %d ints differ", bad);
  if (rank == 0) {
    bad = 0;
    for (int r = 0; r < size; ++r) bad += w[8 + r] != 3 * (r + 1);
    CHECK(bad == 0, "D: shared locks: %d slots differ", bad);
  }
  MPI_Barrier(MPI_COMM_WORLD); /* the reads before the next writes */

  /* lock_all: put, complete it, get it back; in four ways. */
  MPI_Win_lock_all(0, win);
  for (int way = 0; way < 4; ++way) {
    int v = 1000 * (way + 1) + rank, back = -1;
    MPI_Put(&v, 1, MPI_INT, right, word, 1, MPI_INT, win);
    switch (way) {
      case 0:
        MPI_Win_flush(right, win);
        break;
      case 1:
        MPI_Win_flush_all(win);
        break;
      case 2: /* the origin buffer is free again; then complete at the target */
        MPI_Win_flush_local(right, win);
        v = -5;
        MPI_Win_flush(right, win);
        break;
      default:
        MPI_Win_flush_local_all(win);
        v = -5;
        MPI_Win_flush_all(win);
        break;
    }
    MPI_Get(&back, 1, MPI_INT, right, word, 1, MPI_INT, win);
    MPI_Win_flush(right, win);
    CHECK(back == 1000 * (way + 1) + rank, "D: way %d: got %d back", way, back);
  }
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  sync_self(win);
  CHECK(w[word] == 4000 + left, "D: the last lock_all put left %d", w[word]);
  MPI_Win_free(&win);
}

/* ---- E: exclusive locks exclude ---- */
static void test_mutual_exclusion(void) {
  long long *counter = NULL;
  MPI_Win win;
  MPI_Win_allocate(padded(sizeof(long long)), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD,
                   &counter, &win);
  *counter = 0;
  sync_self(win);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < 20; ++i) {
    long long c = -1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Get(&c, 1, MPI_LONG_LONG, 0, 0, 1, MPI_LONG_LONG, win);
    MPI_Win_flush(0, win);
    ++c;
    MPI_Put(&c, 1, MPI_LONG_LONG, 0, 0, 1, MPI_LONG_LONG, win);
    MPI_Win_unlock(0, win);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    sync_self(win);
    CHECK(*counter == 20LL * size, "E: the counter is %lld, not %lld", *counter, 20LL * size);
  }
  MPI_Win_free(&win);
}

/* ---- F: accumulates ---- */
#define NACC 8
struct dint {
  double v;
  int i;
};

/* Rank 0's window (every rank has one, only rank 0's is used). */
struct area {
  int sum_i[NACC];
  double sum_d[NACC];
  long long sum_l[NACC];
  int lsum_i[NACC];
  double lsum_d[NACC];
  long long lsum_l[NACC];
  int max_i[NACC], min_i[NACC];
  double max_d[NACC], min_d[NACC];
  unsigned band, bor, bxor;
  double prod;
  int replaced_by_all;
  struct dint maxloc, minloc;
  int vec[2 * NACC];
  long long counter;
  long long cas_word;
  short count_s;
  unsigned char max_b[4];
};
/* Then one per rank. */
struct slot {
  int replaced[4];
  int fetched[4];
};

#define AT(field) ((MPI_Aint)offsetof(struct area, field))

static MPI_Aint slot_at(int r, size_t field) {
  return (MPI_Aint)(sizeof(struct area) + (size_t)r * sizeof(struct slot) + field);
}

static int compare_ll(const void *a, const void *b) {
  const long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

static void test_accumulate(void) {
  const MPI_Aint bytes = padded(sizeof(struct area) + (size_t)size * sizeof(struct slot));
  struct area *a = NULL;
  MPI_Win win;
  MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &a, &win);
  struct slot *slots = (struct slot *)(a + 1);
  memset(a, 0, (size_t)bytes);
  for (int i = 0; i < NACC; ++i) {
    a->max_i[i] = INT_MIN, a->min_i[i] = INT_MAX;
    a->max_d[i] = -1e300, a->min_d[i] = 1e300;
  }
  a->band = ~0u;
  a->prod = 1.0;
  a->maxloc.v = -1e300, a->maxloc.i = -1;
  a->minloc.v = 1e300, a->minloc.i = -1;
  for (int r = 0; r < size; ++r) {
    for (int k = 0; k < 4; ++k) slots[r].fetched[k] = 5 * r + k;
  }

  /* Under fence. */
  int vi[NACC], vmax[NACC];
  double vd[NACC], vmaxd[NACC];
  long long vl[NACC];
  for (int i = 0; i < NACC; ++i) {
    vi[i] = (rank + 1) * (i + 1);
    vd[i] = (rank + 1) * 0.5 + i;
    vl[i] = ((long long)(rank + 1) << 33) + i;
    vmax[i] = rank - i;
    vmaxd[i] = rank * 0.25 - i;
  }
  const unsigned bit = 1u << (rank % 32);
  const unsigned band = ~bit, bor = bit, bxor = bit | 0x80000000u;
  const double factor = 1.0 + (rank % 3) * 0.5;
  const int replacement = rank + 1;
  int replaced[4];
  for (int k = 0; k < 4; ++k) replaced[k] = 10 * rank + k;
  struct dint maxloc = {(double)(rank % 3), rank}, minloc = {(double)((rank + 1) % 3), rank};
  int vec_in[NACC];
  for (int k = 0; k < NACC; ++k) vec_in[k] = rank + 1 + k;
  MPI_Datatype every_other;
  MPI_Type_vector(NACC, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);

  MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
  MPI_Accumulate(vi, NACC, MPI_INT, 0, AT(sum_i), NACC, MPI_INT, MPI_SUM, win);
  MPI_Accumulate(vd, NACC, MPI_DOUBLE, 0, AT(sum_d), NACC, MPI_DOUBLE, MPI_SUM, win);
  MPI_Accumulate(vl, NACC, MPI_LONG_LONG, 0, AT(sum_l), NACC, MPI_LONG_LONG, MPI_SUM, win);
  MPI_Accumulate(vmax, NACC, MPI_INT, 0, AT(max_i), NACC, MPI_INT, MPI_MAX, win);
  MPI_Accumulate(vmax, NACC, MPI_INT, 0, AT(min_i), NACC, MPI_INT, MPI_MIN, win);
  MPI_Accumulate(vmaxd, NACC, MPI_DOUBLE, 0, AT(max_d), NACC, MPI_DOUBLE, MPI_MAX, win);
  MPI_Accumulate(vmaxd, NACC, MPI_DOUBLE, 0, AT(min_d), NACC, MPI_DOUBLE, MPI_MIN, win);
  MPI_Accumulate(&band, 1, MPI_UNSIGNED, 0, AT(band), 1, MPI_UNSIGNED, MPI_BAND, win);
  MPI_Accumulate(&bor, 1, MPI_UNSIGNED, 0, AT(bor), 1, MPI_UNSIGNED, MPI_BOR, win);
  MPI_Accumulate(&bxor, 1, MPI_UNSIGNED, 0, AT(bxor), 1, MPI_UNSIGNED, MPI_BXOR, win);
  MPI_Accumulate(&factor, 1, MPI_DOUBLE, 0, AT(prod), 1, MPI_DOUBLE, MPI_PROD, win);
  MPI_Accumulate(&replacement, 1, MPI_INT, 0, AT(replaced_by_all), 1, MPI_INT, MPI_REPLACE, win);
  MPI_Accumulate(replaced, 4, MPI_INT, 0, slot_at(rank, offsetof(struct slot, replaced)), 4,
                 MPI_INT, MPI_REPLACE, win);
  MPI_Accumulate(&maxloc, 1, MPI_DOUBLE_INT, 0, AT(maxloc), 1, MPI_DOUBLE_INT, MPI_MAXLOC, win);
  MPI_Accumulate(&minloc, 1, MPI_DOUBLE_INT, 0, AT(minloc), 1, MPI_DOUBLE_INT, MPI_MINLOC, win);
  MPI_Accumulate(vec_in, NACC, MPI_INT, 0, AT(vec), 1, every_other, MPI_SUM, win);
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);

  if (rank == 0) {
    const long long tri = (long long)size * (size + 1) / 2;
    unsigned want_band = ~0u, want_bor = 0, want_bxor = 0;
    double want_prod = 1.0;
    struct dint want_maxloc = {-1e300, -1}, want_minloc = {1e300, -1};
    for (int r = 0; r < size; ++r) {
      const unsigned b = 1u << (r % 32);
      want_band &= ~b, want_bor |= b, want_bxor ^= b | 0x80000000u;
      want_prod *= 1.0 + (r % 3) * 0.5;
      const double mx = (double)(r % 3), mn = (double)((r + 1) % 3);
      if (mx > want_maxloc.v) want_maxloc.v = mx, want_maxloc.i = r;
      if (mn < want_minloc.v) want_minloc.v = mn, want_minloc.i = r;
    }
    int bad = 0;
    for (int i = 0; i < NACC; ++i) {
      bad += a->sum_i[i] != (int)tri * (i + 1);
      bad += a->sum_d[i] != (double)tri * 0.5 + (double)i * size;
      bad += a->sum_l[i] != (tri << 33) + (long long)i * size;
      bad += a->max_i[i] != size - 1 - i;
      bad += a->min_i[i] != -i;
      bad += a->max_d[i] != (size - 1) * 0.25 - i;
      bad += a->min_d[i] != (double)-i;
      bad += a->vec[2 * i] != (int)tri + i * size;
      bad += a->vec[2 * i + 1] != 0;
    }
    CHECK(bad == 0, "F: %d sums, maxima, minima or vector elements differ", bad);
    CHECK(a->band == want_band && a->bor == want_bor && a->bxor == want_bxor,
          "F: band %#x bor %#x bxor %#x, not %#x %#x %#x", a->band, a->bor, a->bxor, want_band,
          want_bor, want_bxor);
    CHECK(a->prod == want_prod, "F: prod %g, not %g", a->prod, want_prod);
    CHECK(a->replaced_by_all >= 1 && a->replaced_by_all <= size, "F: replace left %d",
          a->replaced_by_all);
    bad = 0;
    for (int r = 0; r < size; ++r) {
      for (int k = 0; k < 4; ++k) bad += slots[r].replaced[k] != 10 * r + k;
    }
    CHECK(bad == 0, "F: %d replaced ints differ", bad);
    CHECK(a->maxloc.v == want_maxloc.v && a->maxloc.i == want_maxloc.i,
          "F: maxloc (%g, %d), not (%g, %d)", a->maxloc.v, a->maxloc.i, want_maxloc.v,
          want_maxloc.i);
    CHECK(a->minloc.v == want_minloc.v && a->minloc.i == want_minloc.i,
          "F: minloc (%g, %d), not (%g, %d)", a->minloc.v, a->minloc.i, want_minloc.v,
          want_minloc.i);
  }

  /* Under lock_all (ints, doubles) and shared locks (long longs). */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  MPI_Accumulate(vi, NACC, MPI_INT, 0, AT(lsum_i), NACC, MPI_INT, MPI_SUM, win);
  MPI_Accumulate(vd, NACC, MPI_DOUBLE, 0, AT(lsum_d), NACC, MPI_DOUBLE, MPI_SUM, win);
  MPI_Win_unlock_all(win);
  MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
  MPI_Accumulate(vl, NACC, MPI_LONG_LONG, 0, AT(lsum_l), NACC, MPI_LONG_LONG, MPI_SUM, win);
  MPI_Win_unlock(0, win);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    sync_self(win);
    const long long tri = (long long)size * (size + 1) / 2;
    int bad = 0;
    for (int i = 0; i < NACC; ++i) {
      bad += a->lsum_i[i] != (int)tri * (i + 1);
      bad += a->lsum_d[i] != (double)tri * 0.5 + (double)i * size;
      bad += a->lsum_l[i] != (tri << 33) + (long long)i * size;
    }
    CHECK(bad == 0, "F: %d sums under locks differ", bad);
  }

  MPI_Win_lock_all(0, win);
  /* get_accumulate: SUM returns the old value, NO_OP reads the new one. */
  {
    const MPI_Aint at = slot_at(rank, offsetof(struct slot, fetched));
    int add[4] = {100, 100, 100, 100}, old[4] = {-1, -1, -1, -1}, now[4] = {-1, -1, -1, -1};
    MPI_Get_accumulate(add, 4, MPI_INT, old, 4, MPI_INT, 0, at, 4, MPI_INT, MPI_SUM, win);
    MPI_Win_flush(0, win);
    MPI_Get_accumulate(add, 4, MPI_INT, now, 4, MPI_INT, 0, at, 4, MPI_INT, MPI_NO_OP, win);
    MPI_Win_flush(0, win);
    int bad = 0;
    for (int k = 0; k < 4; ++k) bad += old[k] != 5 * rank + k || now[k] != 5 * rank + k + 100;
    CHECK(bad == 0, "F: get_accumulate: %d ints differ (old %d, now %d)", bad, old[0], now[0]);
  }
  /* fetch_and_op: every rank adds 1, 50 times; no two see the same value. */
  enum { kFetches = 50 };
  long long fetched[kFetches];
  const long long one = 1;
  for (int i = 0; i < kFetches; ++i) {
    MPI_Fetch_and_op(&one, &fetched[i], MPI_LONG_LONG, 0, AT(counter), MPI_SUM, win);
    MPI_Win_flush(0, win);
  }
  long long *all = rank == 0 ? malloc(sizeof(long long) * kFetches * (size_t)size) : NULL;
  MPI_Gather(fetched, kFetches, MPI_LONG_LONG, all, kFetches, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    qsort(all, (size_t)kFetches * (size_t)size, sizeof(long long), compare_ll);
    int bad = 0;
    for (long long k = 0; k < (long long)kFetches * size; ++k) bad += all[k] != k;
    CHECK(bad == 0, "F: fetch_and_op: %d fetched values are not 0 .. %d", bad, kFetches * size - 1);
    free(all);
  }
  /* 1- and 2-byte elements: every rank adds 1 to a short, and raises byte
   * rank % 4 to rank + 1. */
  {
    const short one_s = 1;
    short old_s = -1;
    const unsigned char mine_b = (unsigned char)(rank + 1);
    MPI_Fetch_and_op(&one_s, &old_s, MPI_SHORT, 0, AT(count_s), MPI_SUM, win);
    MPI_Accumulate(&mine_b, 1, MPI_UNSIGNED_CHAR, 0, AT(max_b) + rank % 4, 1, MPI_UNSIGNED_CHAR,
                   MPI_MAX, win);
    MPI_Win_flush(0, win);
    CHECK(old_s >= 0 && old_s < size, "F: fetch_and_op on a short found %d", old_s);
  }
  /* compare_and_swap: in each round the ranks that have not won yet try
   * 0 -> rank + 1; exactly one wins, then puts the 0 back. */
  int won = 0;
  for (int round = 0; round < size; ++round) {
    MPI_Barrier(MPI_COMM_WORLD);
    long long result = -1;
    const long long zero = 0, me = rank + 1;
    int wins = 0;
    if (!won) {
      MPI_Compare_and_swap(&me, &zero, &result, MPI_LONG_LONG, 0, AT(cas_word), win);
      MPI_Win_flush(0, win);
      wins = result == 0;
      CHECK(result >= 0 && result <= size, "F: cas round %d: found %lld", round, result);
    }
    /* How many won, and (when one did) the winner's rank + 1. */
    const int mine[2] = {wins, wins ? rank + 1 : 0};
    int sums[2] = {0, 0};
    MPI_Allreduce(mine, sums, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sums[0] == 1, "F: cas round %d: %d winners", round, sums[0]);
    if (!won && !wins) {
      CHECK(result == sums[1], "F: cas round %d: a loser found %lld, the winner is %d", round,
            result, sums[1] - 1);
    }
    if (wins) {
      won = 1;
      long long back = -1;
      MPI_Compare_and_swap(&zero, &me, &back, MPI_LONG_LONG, 0, AT(cas_word), win);
      MPI_Win_flush(0, win);
      CHECK(back == me, "F: cas round %d: the winner found %lld when resetting", round, back);
    }
  }
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    sync_self(win);
    CHECK(a->counter == (long long)kFetches * size, "F: fetch_and_op: the counter is %lld",
          a->counter);
    CHECK(a->cas_word == 0, "F: cas: the word is %lld after the last reset", a->cas_word);
    CHECK(a->count_s == size, "F: the short counter is %d, not %d", a->count_s, size);
    for (int k = 0; k < 4 && k < size; ++k) {
      const int want = (size - 1 - k) / 4 * 4 + k + 1; /* the last rank r % 4 == k, + 1 */
      CHECK(a->max_b[k] == want, "F: byte %d is %d, not %d", k, a->max_b[k], want);
    }
  }
  CHECK(won, "F: cas: this rank never won");
  MPI_Type_free(&every_other);
  MPI_Win_free(&win);
}

/* ---- G: errors ---- */
#ifdef IRIS_MPI_H_INCLUDED
const int kRangeMustBeReported = 1;
#else
const int kRangeMustBeReported = 0;
#endif

static int handler_calls, handler_code;
static MPI_Win handler_win;

static void on_error(MPI_Win *win, int *code, ...) {
  ++handler_calls;
  handler_win = *win;
  handler_code = *code;
}

/* The class of what an operation returned, else of what the call that
 * completes it returned: an implementation may report either. */
static int first_class(int op, int sync) {
  return error_class(op) != MPI_SUCCESS ? error_class(op) : error_class(sync);
}

static void test_errors(void) {
  /* 16 ints of window, then 16 of guard that must stay as they are. */
  enum { kWindow = 16, kGuard = 16 };
  int *buffer = malloc((kWindow + kGuard) * sizeof(int));
  for (int i = 0; i < kWindow + kGuard; ++i) buffer[i] = i < kWindow ? 0 : 0x5A5A;
  MPI_Win win;
  MPI_Win_create(buffer, kWindow * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
  MPI_Win_get_errhandler(win, &eh);
  CHECK(eh == MPI_ERRORS_RETURN, "G: MPI_Win_get_errhandler is not MPI_ERRORS_RETURN");
  MPI_Errhandler_free(&eh);
  int out[4] = {1, 2, 3, 4}, op, sync, cls;

  /* Before any epoch. */
  op = MPI_Put(out, 1, MPI_INT, right, 0, 1, MPI_INT, win);
  CHECK(error_class(op) == MPI_ERR_RMA_SYNC, "G: a put before any epoch: class %d",
        error_class(op));

  /* Beyond the end: 4 ints at 16, and 4 ints at 14 (across the end). MPI
   * 4.0 (12.3) makes such a put erroneous but does not ask that it be
   * detected: MPICH 4.0.2 and Open MPI 4.1.4's osc sm, ucx and pt2pt return
   * MPI_SUCCESS and write into the guard, Open MPI's osc rdma reports
   * MPI_ERR_RMA_RANGE. So an error reported must be of that class and leave
   * the guard as it was, and Iris must report it. */
  int reported = 0;
  for (int at = kWindow; at >= kWindow - 2; at -= 2) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    op = MPI_Put(out, 4, MPI_INT, right, at, 4, MPI_INT, win);
    sync = MPI_Win_unlock(right, win);
    cls = first_class(op, sync);
    CHECK(cls == MPI_ERR_RMA_RANGE || (cls == MPI_SUCCESS && !kRangeMustBeReported),
          "G: a put at %d: class %d (put %d, unlock %d)", at, cls, error_class(op),
          error_class(sync));
    reported += cls != MPI_SUCCESS;
  }
  int all_reported = 0;
  MPI_Allreduce(&reported, &all_reported, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

  /* An unlock without a lock. */
  cls = error_class(MPI_Win_unlock(right, win));
  CHECK(cls == MPI_ERR_RMA_SYNC, "G: an unlock without a lock: class %d", cls);

  /* A bad target rank, in an epoch (MPI_PROC_NULL is a good one). */
  MPI_Win_lock_all(0, win);
  cls = error_class(MPI_Put(out, 1, MPI_INT, size, 0, 1, MPI_INT, win));
  CHECK(cls == MPI_ERR_RANK, "G: a put to rank %d: class %d", size, cls);
  cls = error_class(MPI_Put(out, 1, MPI_INT, -100, 0, 1, MPI_INT, win));
  CHECK(cls == MPI_ERR_RANK, "G: a put to rank -100: class %d", cls);
  cls = error_class(MPI_Put(out, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
  CHECK(cls == MPI_SUCCESS, "G: a put to MPI_PROC_NULL: class %d", cls);
  MPI_Win_unlock_all(win);

  /* After the fence that ends the fence epochs. */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
  op = MPI_Put(out, 1, MPI_INT, right, 0, 1, MPI_INT, win);
  CHECK(op == MPI_SUCCESS, "G: a put in a fence epoch: class %d", error_class(op));
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  op = MPI_Put(out, 1, MPI_INT, right, 0, 1, MPI_INT, win);
  CHECK(error_class(op) == MPI_ERR_RMA_SYNC, "G: a put after MPI_MODE_NOSUCCEED: class %d",
        error_class(op));
  MPI_Barrier(MPI_COMM_WORLD);
  if (all_reported == 2) {
    int bad = 0;
    for (int i = kWindow; i < kWindow + kGuard; ++i) bad += buffer[i] != 0x5A5A;
    CHECK(bad == 0, "G: %d ints past the window were written", bad);
  }

  /* An error handler of our own. */
  MPI_Errhandler mine;
  MPI_Win_create_errhandler(on_error, &mine);
  MPI_Win_set_errhandler(win, mine);
  MPI_Win_get_errhandler(win, &eh);
  CHECK(eh == mine, "G: MPI_Win_get_errhandler is not the handler just set");
  MPI_Errhandler_free(&eh);
  MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
  CHECK(handler_calls == 1 && handler_win == win && handler_code == MPI_ERR_OTHER,
        "G: the handler was called %d times, last with code %d", handler_calls, handler_code);
  MPI_Errhandler_free(&mine);
  MPI_Win_free(&win);
  free(buffer);
}

/* ---- H: a target that computes ---- */
struct busy {
  int flag;
  int data;
  long long counter;
};

static void test_busy_target(void) {
  if (size < 2) return;
  struct busy *b = NULL;
  MPI_Win win;
  MPI_Win_allocate(padded(sizeof(struct busy)), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &b, &win);
  b->flag = 0, b->data = 0, b->counter = 0;
  sync_self(win);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    /* Computes until the flag arrives, 0.2 s at most, calling nothing of
     * MPI. Then waits for the flag in MPI, 5 s at most in all: MPICH 4.0.2
     * grants the first lock only once the target is in MPI (Open MPI's osc
     * sm does not need it), so only the values are checked, not when the
     * rounds were done. */
    const double start = seconds();
    volatile double x = 0;
    volatile int *flag = &b->flag;
    double now = start;
    /* The flag's plain load while the target's progress thread writes it
     * is what the unified model allows, and a race to ThreadSanitizer: in
     * that build the compute does not look at the flag. */
#ifdef __SANITIZE_THREAD__
    const int look = 0;
#else
    const int look = 1;
#endif
    while ((!look || *flag == 0) && now - start < 0.2) {
      for (int i = 0; i < 1000; ++i) x = x * 0.5 + i;
      now = seconds();
    }
    int seen = look ? *flag : 0;
    while (!seen && now - start < 5) {
      MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
      MPI_Win_sync(win);
      seen = *flag;
      MPI_Win_unlock(1, win);
      now = seconds();
    }
    CHECK(seen == 1, "H: the flag did not arrive in %.1f s", now - start);
    sync_self(win);
    CHECK(b->data == 20 && b->counter == 20, "H: data %d, counter %lld", b->data, b->counter);
  } else if (rank == 0) {
    const long long one = 1;
    for (int round = 1; round <= 20; ++round) {
      int back = -1;
      long long old = -1;
      MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
      MPI_Put(&round, 1, MPI_INT, 1, offsetof(struct busy, data), 1, MPI_INT, win);
      MPI_Win_flush(1, win);
      MPI_Get(&back, 1, MPI_INT, 1, offsetof(struct busy, data), 1, MPI_INT, win);
      MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, 1, offsetof(struct busy, counter), MPI_SUM, win);
      MPI_Win_unlock(1, win);
      CHECK(back == round && old == round - 1, "H: round %d: got %d, fetched %lld", round, back,
            old);
    }
    const int set = 1;
    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
    MPI_Put(&set, 1, MPI_INT, 1, offsetof(struct busy, flag), 1, MPI_INT, win);
    MPI_Win_flush(1, win);
    MPI_Win_unlock(1, win);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_free(&win);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  right = (rank + 1) % size;
  left = (rank + size - 1) % size;
  test_create_allocate(0);
  test_create_allocate(1);
  test_shared();
  test_dynamic();
  test_fence();
  test_datatypes();
  test_passive();
  test_mutual_exclusion();
  test_accumulate();
  test_errors();
  test_busy_target();
  test_pscw();
  test_requests();
  test_info_attrs();
  test_mpich_cases();
  test_lazy_locks();
  test_remote();
  check_failures += rma_more_failures() + rma_remote_failures();
  if (rank == 0 && check_failures == 0) printf("rma: all checks passed on %d ranks\n", size);
  return finish();
}
