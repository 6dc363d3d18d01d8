/* The blocking collectives that ranks of one node run through a shared
 * segment (device/collectives/node.hpp), against serial references, in a
 * seeded random sequence: Barrier, Bcast, Reduce, Allreduce, Allgather,
 * Alltoall, Gather, Scatter and Scatterv on several
 * communicators at once (world, a dup, the halves of a split, one made and
 * freed every so often), sizes on both sides of a slot, every root, in
 * place and not, a derived datatype in Bcast, a gapped pair type (which
 * goes through messages), a non-commutative user op, and doubles whose sum
 * depends on the order (every rank must get the same bits); a quarter of the
 * steps run with one or two nonblocking Iallreduce, Ibcast, Ibarrier,
 * Ireduce, Iallgather or Ialltoall
 * pending around them.
 *
 *   coll_node [seed] [iterations]
 *   coll_node refused_writes   (with no_cma.c's IRIS_TEST_CMA_REFUSE_WRITES)
 *
 * Also run with IRIS_COLL_SHM=0, IRIS_COLL_CMA=0 and IRIS_COLL_SHM_SLOT=64
 * (jobs_test.cpp), so that the message path, the crossing between the two,
 * and the large steps read in place meet the same sequence. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "seeded.h"

static int rank, size;

static void the_step(MPI_Comm c, int it, int *a, int *b, double *d, double *e);

/* What element i of a pending call's result must be on rank `me` (kind as
 * in one_step; `k` ints a rank, `tag` the call's values). */
static int expected(int kind, int i, int k, int n, int me, int root, int tag) {
  switch (kind) {
    case 1: /* ibcast */
      return value(root, i, tag);
    case 4: /* iallgather: block q is rank q's */
      return value(i / k, i % k, tag);
    case 5: /* ialltoall: block q is block `me` of rank q's */
      return value(i / k, me * k + i % k, tag);
    default: { /* iallreduce, ireduce */
      int want = 0;
      for (int q = 0; q < n; ++q) want += value(q, i, tag);
      return want;
    }
  }
}

/* A step, one time in four with a nonblocking Iallreduce, Ibcast,
 * Ibarrier, Ireduce, Iallgather or Ialltoall pending around it (through the
 * segment too, node.hpp), and sometimes a second one: the blocking call
 * behind them must wait for them in order, and all must come out right. */
static void one_step(MPI_Comm c, int it, int *a, int *b, double *d, double *e) {
  static const char *const names[] = {"iallreduce", "ibcast",     "ibarrier",
                                      "ireduce",    "iallgather", "ialltoall"};
  int me, n;
  MPI_Comm_rank(c, &me);
  MPI_Comm_size(c, &n);
  const int around = next(4) == 0 ? 1 + (int)next(2) : 0;
  /* Up to 40 ints (a slot), or one time in four up to 20,000 or 80,000
   * (large: read in place; an Ireduce from 256 KiB split among the ranks);
   * Iallgather and Ialltoall up to 80,000 in all. */
  int kind[2], k[2], root[2], all[2];
  static int in[2][80000], out[2][80000];
  MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  for (int j = 0; j < around; ++j) {
    kind[j] = (int)next(6);
    k[j] = (int)next(next(4) == 0 ? (next(2) == 0 ? 80000 : 20000) : 40) + 1;
    if (kind[j] >= 4 && k[j] > 80000 / n) k[j] = 80000 / n;
    all[j] = kind[j] >= 4 ? k[j] * n : k[j];
    root[j] = (int)next((unsigned)n);
    const int tag = it + 1 + j;
    for (int i = 0; i < all[j]; ++i) {
      in[j][i] = kind[j] == 4 && i >= k[j] ? -1 : value(me, i, tag);
      out[j][i] = kind[j] == 1 && me == root[j] ? value(root[j], i, tag) : -1;
    }
    if (kind[j] == 0) {
      MPI_Iallreduce(in[j], out[j], k[j], MPI_INT, MPI_SUM, c, &r[j]);
    } else if (kind[j] == 1) {
      MPI_Ibcast(out[j], k[j], MPI_INT, root[j], c, &r[j]);
    } else if (kind[j] == 2) {
      MPI_Ibarrier(c, &r[j]);
    } else if (kind[j] == 3) {
      MPI_Ireduce(in[j], out[j], k[j], MPI_INT, MPI_SUM, root[j], c, &r[j]);
    } else if (kind[j] == 4) {
      MPI_Iallgather(in[j], k[j], MPI_INT, out[j], k[j], MPI_INT, c, &r[j]);
    } else {
      MPI_Ialltoall(in[j], k[j], MPI_INT, out[j], k[j], MPI_INT, c, &r[j]);
    }
  }
  the_step(c, it, a, b, d, e);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  for (int j = 0; j < around; ++j) {
    if (kind[j] == 2 || (kind[j] == 3 && me != root[j])) continue;
    int bad = 0;
    for (int i = 0; i < all[j]; ++i) {
      bad += out[j][i] != expected(kind[j], i, k[j], n, me, root[j], it + 1 + j);
    }
    CHECK(bad == 0, "it %d: %s of %d ints pending around a step: %d wrong", it, names[kind[j]],
          k[j], bad);
  }
}

static void the_step(MPI_Comm c, int it, int *a, int *b, double *d, double *e) {
  int me, n;
  MPI_Comm_rank(c, &me);
  MPI_Comm_size(c, &n);
  const int kind = (int)next(12);
  /* Up to 80,000 ints: both sides of every slot size (4-16 KiB), large
   * steps of several 64 KiB chunks, and Reduces split among the ranks (from
   * 256 KiB). */
  const int count = next(4) == 0 ? (int)next(next(2) == 0 ? 5000 : 80000) : (int)next(64);
  const int root = (int)next((unsigned)n);
  const int in_place = next(2) == 0;
  if (kind == 0) {
    if (next(4) == 0) {
      /* Rank `root` starts late: nobody may leave before it arrived. */
      double before = 0;
      if (me == root) {
        const struct timespec pause = {0, 2000000};
        nanosleep(&pause, NULL);
        before = MPI_Wtime();
      }
      MPI_Barrier(c);
      const double after = MPI_Wtime();
      MPI_Bcast(&before, 1, MPI_DOUBLE, root, c);
      CHECK(after >= before, "it %d: left the barrier at %.9f before rank %d came at %.9f", it,
            after, root, before);
    } else {
      MPI_Barrier(c);
    }
  } else if (kind == 1) {
    for (int i = 0; i < count; ++i) a[i] = me == root ? value(root, i, it) : -1;
    MPI_Bcast(a, count, MPI_INT, root, c);
    int bad = 0;
    for (int i = 0; i < count; ++i) bad += a[i] != value(root, i, it);
    CHECK(bad == 0, "it %d: bcast of %d ints from %d: %d wrong", it, count, root, bad);
  } else if (kind == 2) {
    /* Every other int of 2 * count: a derived datatype, packed into the slot. */
    MPI_Datatype every_other;
    MPI_Type_vector(count > 0 ? count : 1, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    const int k = count > 0 ? 1 : 0;
    for (int i = 0; i < 2 * count; ++i) a[i] = me == root ? value(root, i, it) : -7;
    MPI_Bcast(a, k, every_other, root, c);
    int bad = 0;
    for (int i = 0; i < 2 * count; ++i)
      bad += a[i] != (i % 2 == 0 || me == root ? value(root, i, it) : -7);
    CHECK(bad == 0, "it %d: bcast of a vector of %d from %d: %d wrong", it, count, root, bad);
    MPI_Type_free(&every_other);
  } else if (kind == 3 || kind == 4) {
    const int all = kind == 4;
    for (int i = 0; i < count; ++i) a[i] = value(me, i, it);
    for (int i = 0; i < count; ++i) b[i] = in_place && (all || me == root) ? a[i] : -1;
    const void *send = in_place && (all || me == root) ? MPI_IN_PLACE : a;
    if (all) {
      MPI_Allreduce(send, b, count, MPI_INT, MPI_SUM, c);
    } else {
      MPI_Reduce(send, b, count, MPI_INT, MPI_SUM, root, c);
    }
    if (all || me == root) {
      int bad = 0;
      for (int i = 0; i < count; ++i) {
        long want = 0;
        for (int r = 0; r < n; ++r) want += value(r, i, it);
        bad += b[i] != want;
      }
      CHECK(bad == 0, "it %d: %s of %d ints (root %d, in place %d): %d wrong", it,
            all ? "allreduce" : "reduce", count, root, in_place, bad);
    }
  } else if (kind == 5) {
    /* Doubles of very different sizes: the sum depends on the order, and
     * every rank must still hold the same bits. */
    for (int i = 0; i < count; ++i) d[i] = (value(me, i, it) + 0.1) * (me % 3 == 0 ? 1e16 : 1.0);
    MPI_Allreduce(d, e, count, MPI_DOUBLE, MPI_SUM, c);
    double *zero = calloc((size_t)n * (count > 0 ? count : 1), sizeof(double));
    MPI_Gather(e, count, MPI_DOUBLE, zero, count, MPI_DOUBLE, 0, c);
    if (me == 0) {
      int differ = 0;
      for (int r = 1; r < n; ++r)
        differ += memcmp(zero, zero + (size_t)r * count, count * sizeof(double)) != 0;
      CHECK(differ == 0, "it %d: allreduce of %d doubles: %d ranks got other bits", it, count,
            differ);
    }
    free(zero);
  } else if (kind == 6) {
    /* A non-commutative user op, applied in rank order. */
    MPI_Op op;
    MPI_Op_create(compose, 0, &op);
    unsigned *m = (unsigned *)a, *got = (unsigned *)b;
    const int pairs = count / 2;
    for (int i = 0; i < pairs; ++i) map_of(me, i, it, m + 2 * i);
    MPI_Reduce(m, got, pairs, MPI_2INT, op, root, c);
    if (me == root) {
      int bad = 0;
      for (int i = 0; i < pairs; ++i) {
        unsigned want[2];
        map_of(n - 1, i, it, want);
        for (int r = n - 2; r >= 0; --r) {
          unsigned f[2];
          int one = 1;
          map_of(r, i, it, f);
          compose(f, want, &one, NULL);
        }
        bad += got[2 * i] != want[0] || got[2 * i + 1] != want[1];
      }
      CHECK(bad == 0, "it %d: non-commutative reduce of %d maps to %d: %d wrong", it, pairs, root,
            bad);
    }
    MPI_Op_free(&op);
  } else if (kind == 8) {
    /* Allgather, in place or not; a vector receive type half the time. */
    const int k = count / n;
    for (int i = 0; i < n * k; ++i) b[i] = -3;
    for (int i = 0; i < k; ++i) {
      a[i] = value(me, i, it);
      if (in_place) b[me * k + i] = a[i];
    }
    MPI_Allgather(in_place ? MPI_IN_PLACE : a, k, MPI_INT, b, k, MPI_INT, c);
    int bad = 0;
    for (int r = 0; r < n; ++r) {
      for (int i = 0; i < k; ++i) bad += b[r * k + i] != value(r, i, it);
    }
    CHECK(bad == 0, "it %d: allgather of %d ints (in place %d): %d wrong", it, k, in_place, bad);
  } else if (kind == 9) {
    /* Alltoall, in place or not: block j of rank r carries (r, j). */
    const int k = count / n;
    int *send = in_place ? b : a;
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < k; ++i) send[j * k + i] = value(me * n + j, i, it);
    }
    if (!in_place) {
      for (int i = 0; i < n * k; ++i) b[i] = -5;
    }
    MPI_Alltoall(in_place ? MPI_IN_PLACE : a, k, MPI_INT, b, k, MPI_INT, c);
    int bad = 0;
    for (int r = 0; r < n; ++r) {
      for (int i = 0; i < k; ++i) bad += b[r * k + i] != value(r * n + me, i, it);
    }
    CHECK(bad == 0, "it %d: alltoall of %d ints (in place %d): %d wrong", it, k, in_place, bad);
  } else if (kind == 10) {
    /* Gather to `root`, in place there or not. */
    const int k = count / n;
    const int here = in_place && me == root;
    for (int i = 0; i < k; ++i) a[i] = value(me * 3 + 1, i, it);
    if (me == root) {
      for (int i = 0; i < n * k; ++i) b[i] = -9;
      if (here) memcpy(b + me * k, a, (size_t)k * sizeof(int));
    }
    MPI_Gather(here ? MPI_IN_PLACE : a, k, MPI_INT, b, k, MPI_INT, root, c);
    if (me == root) {
      int bad = 0;
      for (int r = 0; r < n; ++r) {
        for (int i = 0; i < k; ++i) bad += b[r * k + i] != value(r * 3 + 1, i, it);
      }
      CHECK(bad == 0, "it %d: gather of %d ints to %d (in place %d): %d wrong", it, k, root, here,
            bad);
    }
  } else if (kind == 11) {
    /* Scatter from `root`, the root's block kept in place or not. */
    const int k = count / n;
    const int keep = in_place && me == root;
    if (me == root) {
      for (int r = 0; r < n; ++r) {
        for (int i = 0; i < k; ++i) a[r * k + i] = value(r * 5 + 2, i, it);
      }
    }
    for (int i = 0; i < k; ++i) b[i] = -11;
    /* Odd steps: Scatterv, rank r's block k - r % 3 ints at r * k (the
     * root's table and small blocks through its slot, large ones as
     * messages). No extra draw: the seeds keep their sequences. */
    const int vector = it % 2;
    int counts[64], displs[64];
    for (int r = 0; r < n && r < 64; ++r) {
      counts[r] = k - r % 3 > 0 ? k - r % 3 : 0;
      displs[r] = r * k;
    }
    const int mine = vector ? counts[me] : k;
    if (vector) {
      MPI_Scatterv(a, counts, displs, MPI_INT, keep ? MPI_IN_PLACE : b, mine, MPI_INT, root, c);
    } else {
      MPI_Scatter(a, k, MPI_INT, keep ? MPI_IN_PLACE : b, k, MPI_INT, root, c);
    }
    const int *got = keep ? a + me * k : b;
    int bad = 0;
    for (int i = 0; i < mine; ++i) bad += got[i] != value(me * 5 + 2, i, it);
    if (!keep) {
      for (int i = mine; i < k; ++i) bad += got[i] != -11;
    }
    CHECK(bad == 0, "it %d: %s of %d ints from %d (kept %d): %d wrong", it,
          vector ? "scatterv" : "scatter", mine, root, keep, bad);
  } else {
    /* MPI_DOUBLE_INT has a gap in each element: through messages. */
    struct {
      double v;
      int i;
    } x[64], y[64];
    const int k = count < 64 ? count : 64;
    for (int i = 0; i < k; ++i) x[i].v = value(me, i, it), x[i].i = me;
    MPI_Allreduce(x, y, k, MPI_DOUBLE_INT, MPI_MAXLOC, c);
    int bad = 0;
    for (int i = 0; i < k; ++i) {
      int best = 0;
      for (int r = 1; r < n; ++r) best = value(r, i, it) > value(best, i, it) ? r : best;
      bad += y[i].v != value(best, i, it) || y[i].i != best;
    }
    CHECK(bad == 0, "it %d: maxloc of %d: %d wrong", it, k, bad);
  }
}

/* With a kernel that lets this job read but not write another rank's memory
 * (no_cma.c): a large Reduce's ranks other than the root write their shares
 * into the root's receive buffer, so every rank, the root too (whose own
 * reads passed), must return MPI_ERR_OTHER, blocking and nonblocking; the
 * segment then goes on. */
static void refused_writes(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int n = 1 << 20;
  char *a = malloc(n), *b = malloc(n);
  memset(a, 1, n);
  for (int root = 0; root<size; root += size - 1> 0 ? size - 1 : 1) {
    int cls = -1;
    MPI_Error_class(MPI_Reduce(a, b, n, MPI_CHAR, MPI_SUM, root, MPI_COMM_WORLD), &cls);
    CHECK(cls == MPI_ERR_OTHER, "Reduce to %d: class %d", root, cls);
    MPI_Request r;
    int err = MPI_Ireduce(a, b, n, MPI_CHAR, MPI_SUM, root, MPI_COMM_WORLD, &r);
    if (err == MPI_SUCCESS) err = MPI_Wait(&r, MPI_STATUS_IGNORE);
    cls = -1;
    MPI_Error_class(err, &cls);
    CHECK(cls == MPI_ERR_OTHER, "Ireduce to %d: class %d", root, cls);
  }
  int one = 1, total = 0;
  const int err = MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(err == MPI_SUCCESS && total == size, "Allreduce after: error %d, %d", err, total);
  free(a);
  free(b);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1 && strcmp(argv[1], "refused_writes") == 0) {
    refused_writes();
    int failures = check_failures, all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("coll_node: refused writes reported on %d ranks\n", size);
    return finish();
  }
  state = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
  const int iterations = argc > 2 ? atoi(argv[2]) : 600;
  int *a = malloc(160000 * sizeof(int));
  int *b = malloc(160000 * sizeof(int));
  double *d = malloc(80000 * sizeof(double));
  double *e = malloc(80000 * sizeof(double));
  MPI_Comm dup, half, made = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  for (int it = 0; it < iterations; ++it) {
    if (it % 50 == 25) {
      /* A communicator made, used and freed: its segment goes with it. */
      if (made != MPI_COMM_NULL) MPI_Comm_free(&made);
      MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &made);
    }
    const unsigned which = next(made != MPI_COMM_NULL ? 4 : 3);
    /* The halves: each half draws its own steps, so the sequence splits. */
    if (which == 2) {
      const uint64_t saved = state;
      state += (uint64_t)(rank % 2) * 977;
      one_step(half, it, a, b, d, e);
      state = saved;
      MPI_Barrier(MPI_COMM_WORLD);
      continue;
    }
    one_step(which == 0 ? MPI_COMM_WORLD : which == 1 ? dup : made, it, a, b, d, e);
  }
  if (made != MPI_COMM_NULL) MPI_Comm_free(&made);
  /* Many communicators, each with one collective, then freed: segments are
   * freed with their communicators (a leak would fill /dev/shm or memory). */
  for (int k = 0; k < 300; ++k) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, c);
    CHECK(total == size, "dup %d: allreduce gave %d", k, total);
    MPI_Comm_free(&c);
  }
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
  free(a);
  free(b);
  free(d);
  free(e);
  int failures = check_failures, all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && all == 0) printf("coll_node: all checks passed on %d ranks\n", size);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
