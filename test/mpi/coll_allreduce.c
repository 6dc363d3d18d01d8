/* Allreduce through messages in its three forms (MPI_Allreduce,
 * MPI_Iallreduce, MPI_Allreduce_init started twice) against serial
 * references, in a seeded random sequence over the world, its halves (other
 * sizes, often not a power of two) and a dup:
 *  - ints summed, from 0 elements to 80,000, in place and not;
 *  - doubles whose sum depends on the order: every rank must hold the same
 *    bits;
 *  - a non-commutative user op, applied in rank order;
 *  - a user op over a type with gaps (an int resized to 8 bytes): pieces of
 *    the data start at multiples of the extent, and the gaps stay as they
 *    were;
 *  - two nonblocking ones outstanding at once on one communicator;
 *  - at the end, counts that do not match: every rank must be told.
 *
 *   coll_allreduce [seed] [iterations]
 *
 * jobs_test.cpp runs it with each IRIS_COLL_ALLREDUCE algorithm forced
 * (doubling, halving, ring), over shared memory, tcp and 2 nodes, so that
 * every algorithm meets every size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "seeded.h"

static int rank, size;

/* Sums ints that sit 8 bytes apart (the resized type). */
static void gapped_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  const int *x = in;
  int *y = inout;
  for (int i = 0; i < *len; ++i) y[2 * i] += x[2 * i];
}

enum form { blocking, nonblocking, persistent };

static void allreduce(enum form f, const void *in, void *out, int count, MPI_Datatype t, MPI_Op op,
                      MPI_Comm c) {
  MPI_Request r;
  if (f == blocking) {
    MPI_Allreduce(in, out, count, t, op, c);
  } else if (f == nonblocking) {
    MPI_Iallreduce(in, out, count, t, op, c, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else {
    /* Started twice: the second start must give the same result. */
    MPI_Allreduce_init(in, out, count, t, op, c, MPI_INFO_NULL, &r);
    MPI_Start(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Start(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Request_free(&r);
  }
}

static int draw_count(void) {
  switch (next(4)) {
    case 0:
      return (int)next(9); /* fewer than the ranks, often */
    case 1:
      return (int)next(200);
    case 2:
      return 15000 + (int)next(3000); /* both sides of 64 KiB */
    default:
      return next(3) == 0 ? (int)next(80000) : (int)next(20000);
  }
}

static void one_step(MPI_Comm c, int it, int *a, int *b, double *d, double *e, MPI_Op noncomm,
                     MPI_Op gapped, MPI_Datatype spaced) {
  int me, n;
  MPI_Comm_rank(c, &me);
  MPI_Comm_size(c, &n);
  const int kind = (int)next(5);
  const enum form f = (enum form)next(3);
  const int count = draw_count();
  const int in_place = next(2) == 0;
  if (kind == 0) {
    for (int i = 0; i < count; ++i) a[i] = value(me, i, it);
    for (int i = 0; i < count; ++i) b[i] = in_place ? a[i] : -1;
    allreduce(f, in_place ? MPI_IN_PLACE : a, b, count, MPI_INT, MPI_SUM, c);
    int bad = 0;
    for (int i = 0; i < count; ++i) {
      long want = 0;
      for (int r = 0; r < n; ++r) want += value(r, i, it);
      if (f == persistent && in_place) want *= n; /* the second start summed the first's */
      bad += b[i] != want;
    }
    CHECK(bad == 0, "it %d: form %d sum of %d ints over %d (in place %d): %d wrong", it, f, count,
          n, in_place, bad);
  } else if (kind == 1) {
    for (int i = 0; i < count; ++i) d[i] = (value(me, i, it) + 0.1) * (me % 3 == 0 ? 1e16 : 1.0);
    allreduce(f, d, e, count, MPI_DOUBLE, MPI_SUM, c);
    double *all = calloc((size_t)n * (count > 0 ? count : 1), sizeof(double));
    MPI_Gather(e, count, MPI_DOUBLE, all, count, MPI_DOUBLE, 0, c);
    if (me == 0) {
      int differ = 0;
      for (int r = 1; r < n; ++r)
        differ += memcmp(all, all + (size_t)r * count, count * sizeof(double)) != 0;
      CHECK(differ == 0, "it %d: form %d sum of %d doubles over %d: %d ranks got other bits", it, f,
            count, n, differ);
    }
    free(all);
  } else if (kind == 2) {
    unsigned *m = (unsigned *)a, *got = (unsigned *)b;
    const int pairs = count / 2;
    for (int i = 0; i < pairs; ++i) map_of(me, i, it, m + 2 * i);
    allreduce(f == persistent ? blocking : f, m, got, pairs, MPI_2INT, noncomm, c);
    int bad = 0;
    for (int i = 0; i < pairs; ++i) {
      unsigned want[2];
      map_of(n - 1, i, it, want);
      for (int r = n - 2; r >= 0; --r) {
        unsigned g[2];
        int one = 1;
        map_of(r, i, it, g);
        compose(g, want, &one, NULL);
      }
      bad += got[2 * i] != want[0] || got[2 * i + 1] != want[1];
    }
    CHECK(bad == 0, "it %d: form %d non-commutative op on %d maps over %d: %d wrong", it, f, pairs,
          n, bad);
  } else if (kind == 3) {
    const int k = count / 2;
    for (int i = 0; i < k; ++i) {
      a[2 * i] = value(me, i, it);
      b[2 * i] = -1;
      a[2 * i + 1] = -2;
      b[2 * i + 1] = -3;
    }
    allreduce(f == persistent ? nonblocking : f, a, b, k, spaced, gapped, c);
    int bad = 0;
    for (int i = 0; i < k; ++i) {
      long want = 0;
      for (int r = 0; r < n; ++r) want += value(r, i, it);
      bad += b[2 * i] != want || b[2 * i + 1] != -3 || a[2 * i + 1] != -2;
    }
    CHECK(bad == 0, "it %d: form %d gapped user op on %d over %d: %d wrong", it, f, k, n, bad);
  } else {
    /* Two at once: each must keep to its own messages. */
    const int k = count / 2;
    for (int i = 0; i < k; ++i) {
      a[i] = value(me, i, it);
      a[k + i] = value(me + 1, i, it);
    }
    MPI_Request r[2];
    MPI_Iallreduce(a, b, k, MPI_INT, MPI_SUM, c, &r[0]);
    MPI_Iallreduce(a + k, b + k, k, MPI_INT, MPI_MAX, c, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    int bad = 0;
    for (int i = 0; i < k; ++i) {
      long sum = 0;
      int max = value(1, i, it);
      for (int q = 0; q < n; ++q) {
        sum += value(q, i, it);
        if (value(q + 1, i, it) > max) max = value(q + 1, i, it);
      }
      bad += b[i] != sum || b[k + i] != max;
    }
    CHECK(bad == 0, "it %d: two outstanding allreduces of %d over %d: %d wrong", it, k, n, bad);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  state = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
  const int iterations = argc > 2 ? atoi(argv[2]) : 200;
  int *a = malloc(160000 * sizeof(int));
  int *b = malloc(160000 * sizeof(int));
  double *d = malloc(80000 * sizeof(double));
  double *e = malloc(80000 * sizeof(double));
  MPI_Op noncomm, gapped;
  MPI_Op_create(compose, 0, &noncomm);
  MPI_Op_create(gapped_sum, 1, &gapped);
  MPI_Datatype spaced;
  MPI_Type_create_resized(MPI_INT, 0, 8, &spaced);
  MPI_Type_commit(&spaced);
  MPI_Comm dup, half;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  /* Halves of unequal sizes when the size is odd (3 of 5: not a power of
   * two). */
  MPI_Comm_split(MPI_COMM_WORLD, rank < (size + 1) / 2, rank, &half);
  for (int it = 0; it < iterations; ++it) {
    const unsigned which = next(3);
    if (which == 2) {
      /* Each half draws its own steps. */
      const uint64_t saved = state;
      state += (uint64_t)(rank < (size + 1) / 2) * 977;
      one_step(half, it, a, b, d, e, noncomm, gapped, spaced);
      state = saved;
      MPI_Barrier(MPI_COMM_WORLD);
      continue;
    }
    one_step(which == 0 ? MPI_COMM_WORLD : dup, it, a, b, d, e, noncomm, gapped, spaced);
  }
  /* Counts that do not match (an erroneous program, as MPICH's
   * errors/coll/iallreducelength has it): rank 0 passes 8 ints, the others
   * 16. Every other rank must be told, in every form, and nobody may hang.
   * (Both counts take the same algorithm: a mismatch across the 64 KiB
   * switch would send ranks down different ones, which is not handled.) */
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  for (int f = blocking; f <= persistent; ++f) {
    const int n = rank == 0 ? 8 : 16;
    int err = MPI_SUCCESS;
    MPI_Request r;
    for (int i = 0; i < 16; ++i) a[i] = i;
    if (f == blocking) {
      err = MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, dup);
    } else if (f == nonblocking) {
      MPI_Iallreduce(a, b, n, MPI_INT, MPI_SUM, dup, &r);
      err = MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      MPI_Allreduce_init(a, b, n, MPI_INT, MPI_SUM, dup, MPI_INFO_NULL, &r);
      MPI_Start(&r);
      err = MPI_Wait(&r, MPI_STATUS_IGNORE);
      MPI_Request_free(&r);
    }
    CHECK(rank == 0 || err != MPI_SUCCESS, "form %d: a count mismatch went unseen on rank %d", f,
          rank);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
  MPI_Type_free(&spaced);
  MPI_Op_free(&gapped);
  MPI_Op_free(&noncomm);
  free(a);
  free(b);
  free(d);
  free(e);
  int failures = check_failures, all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && all == 0) printf("coll_allreduce: all checks passed on %d ranks\n", size);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
