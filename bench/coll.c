/* OSU-style collective latency: for each size, `iters` calls of one
 * collective with a barrier between calls, timed call by call on every rank;
 * the figure is the mean over the ranks of each rank's mean time, as
 * osu_allreduce and its siblings print it. Plain MPI, so the same source
 * measures Iris, MPICH and Open MPI (coll.sh runs them side by side).
 *
 *   coll OP [max_bytes] [iters]
 *   OP: allreduce bcast reduce allgather alltoall gather scatter barrier,
 *       allgatherv, gatherv, scatterv, alltoallv, alltoallw (every count the
 *       size, as osu_alltoallv; alltoallw with MPI_CHAR everywhere), or
 *       iallreduce ireduce ibcast ibarrier iallgather iallgatherv ialltoall
 *       igather iscatter igatherv iscatterv ialltoallv (nonblocking, below)
 *
 * Sizes are per rank's contribution (allgather, alltoall, gather, scatter:
 * per block; root 0):
 * 8 B, 64 B, 1 KiB, 8 KiB, 64 KiB and 1 MiB, up to max_bytes (default
 * 1 MiB), the columns and two between; MPI_CHAR data reduced
 * with MPI_SUM as OSU 7.4 does by default; a tenth of the calls (at least
 * 10) run first as warm-up. Prints "op ranks bytes mean_us".
 *
 * The nonblocking ops are measured as osu_iallreduce and its siblings do:
 * first the start and MPI_Wait alone (the pure time, printed as above),
 * then the start, a computation as long as the pure time (a busy loop
 * that calls no MPI), MPI_Wait. Overlap = 100 - (overall - compute) / pure
 * * 100, at least 0, from the means over ranks, printed as
 * "OP_overlap ranks bytes percent": 100 means the collective hid entirely
 * behind the computation. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, size;

/* Allgatherv's and Gatherv's counts and displacements, as osu_allgatherv's
 * and osu_gatherv's: every rank
 * `bytes`, in rank order. */
static int counts[1024], displs[1024];
static MPI_Datatype chars[1024]; /* alltoallw's types: MPI_CHAR each */
static const int *counts_of(int bytes) {
  for (int i = 0; i < size; ++i) counts[i] = bytes;
  return counts;
}
static const int *displs_of(int bytes) {
  for (int i = 0; i < size; ++i) displs[i] = i * bytes;
  return displs;
}

static void start(const char *op, char *a, char *b, int bytes, MPI_Request *r) {
  if (strcmp(op, "iallreduce") == 0) {
    MPI_Iallreduce(a, b, bytes, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD, r);
  } else if (strcmp(op, "ireduce") == 0) {
    MPI_Ireduce(a, b, bytes, MPI_CHAR, MPI_SUM, 0, MPI_COMM_WORLD, r);
  } else if (strcmp(op, "ibcast") == 0) {
    MPI_Ibcast(a, bytes, MPI_CHAR, 0, MPI_COMM_WORLD, r);
  } else if (strcmp(op, "iallgather") == 0) {
    MPI_Iallgather(a, bytes, MPI_CHAR, b, bytes, MPI_CHAR, MPI_COMM_WORLD, r);
  } else if (strcmp(op, "ialltoall") == 0) {
    MPI_Ialltoall(a, bytes, MPI_CHAR, b, bytes, MPI_CHAR, MPI_COMM_WORLD, r);
  } else if (strcmp(op, "igather") == 0) {
    MPI_Igather(a, bytes, MPI_CHAR, b, bytes, MPI_CHAR, 0, MPI_COMM_WORLD, r);
  } else if (strcmp(op, "iallgatherv") == 0) {
    MPI_Iallgatherv(a, bytes, MPI_CHAR, b, counts_of(bytes), displs_of(bytes), MPI_CHAR,
                    MPI_COMM_WORLD, r);
  } else if (strcmp(op, "iscatter") == 0) {
    MPI_Iscatter(a, bytes, MPI_CHAR, b, bytes, MPI_CHAR, 0, MPI_COMM_WORLD, r);
  } else if (strcmp(op, "igatherv") == 0) {
    MPI_Igatherv(a, bytes, MPI_CHAR, b, counts_of(bytes), displs_of(bytes), MPI_CHAR, 0,
                 MPI_COMM_WORLD, r);
  } else if (strcmp(op, "iscatterv") == 0) {
    MPI_Iscatterv(a, counts_of(bytes), displs_of(bytes), MPI_CHAR, b, bytes, MPI_CHAR, 0,
                  MPI_COMM_WORLD, r);
  } else if (strcmp(op, "ialltoallv") == 0) {
    MPI_Ialltoallv(a, counts_of(bytes), displs_of(bytes), MPI_CHAR, b, counts_of(bytes),
                   displs_of(bytes), MPI_CHAR, MPI_COMM_WORLD, r);
  } else {
    MPI_Ibarrier(MPI_COMM_WORLD, r);
  }
}

static void run(const char *op, char *a, char *b, int bytes) {
  if (op[0] == 'i') {
    MPI_Request r;
    start(op, a, b, bytes, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else if (strcmp(op, "allreduce") == 0) {
    MPI_Allreduce(a, b, bytes, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD);
  } else if (strcmp(op, "bcast") == 0) {
    MPI_Bcast(a, bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
  } else if (strcmp(op, "reduce") == 0) {
    MPI_Reduce(a, b, bytes, MPI_CHAR, MPI_SUM, 0, MPI_COMM_WORLD);
  } else if (strcmp(op, "allgather") == 0) {
    MPI_Allgather(a, bytes, MPI_CHAR, b, bytes, MPI_CHAR, MPI_COMM_WORLD);
  } else if (strcmp(op, "alltoall") == 0) {
    MPI_Alltoall(a, bytes, MPI_CHAR, b, bytes, MPI_CHAR, MPI_COMM_WORLD);
  } else if (strcmp(op, "gather") == 0) {
    MPI_Gather(a, bytes, MPI_CHAR, b, bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
  } else if (strcmp(op, "scatter") == 0) {
    MPI_Scatter(a, bytes, MPI_CHAR, b, bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
  } else if (strcmp(op, "allgatherv") == 0) {
    MPI_Allgatherv(a, bytes, MPI_CHAR, b, counts_of(bytes), displs_of(bytes), MPI_CHAR,
                   MPI_COMM_WORLD);
  } else if (strcmp(op, "gatherv") == 0) {
    MPI_Gatherv(a, bytes, MPI_CHAR, b, counts_of(bytes), displs_of(bytes), MPI_CHAR, 0,
                MPI_COMM_WORLD);
  } else if (strcmp(op, "scatterv") == 0) {
    MPI_Scatterv(a, counts_of(bytes), displs_of(bytes), MPI_CHAR, b, bytes, MPI_CHAR, 0,
                 MPI_COMM_WORLD);
  } else if (strcmp(op, "alltoallv") == 0) {
    MPI_Alltoallv(a, counts_of(bytes), displs_of(bytes), MPI_CHAR, b, counts_of(bytes),
                  displs_of(bytes), MPI_CHAR, MPI_COMM_WORLD);
  } else if (strcmp(op, "alltoallw") == 0) {
    MPI_Alltoallw(a, counts_of(bytes), displs_of(bytes), chars, b, counts_of(bytes),
                  displs_of(bytes), chars, MPI_COMM_WORLD);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Busy work for `seconds`, with no MPI call. */
static void compute(double seconds) {
  volatile double x = 0;
  const double t0 = now();
  while (now() - t0 < seconds) {
    for (int i = 0; i < 100; ++i) x += i * 0.5;
  }
}

static double mean_over_ranks(double mine) {
  double sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / size;
}

/* The second half of an osu_i* run: start, compute as long as `pure` (the
 * mean over ranks of start + wait, in seconds), wait. */
static void overlap(const char *op, char *a, char *b, long bytes, int n, int warm, double pure) {
  double total = 0, computing = 0;
  for (int i = 0; i < warm + n; ++i) {
    MPI_Request r;
    const double t0 = MPI_Wtime();
    start(op, a, b, (int)bytes, &r);
    const double c0 = MPI_Wtime();
    compute(pure);
    const double c = MPI_Wtime() - c0;
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    const double t = MPI_Wtime() - t0;
    if (i >= warm) {
      total += t;
      computing += c;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const double overall = mean_over_ranks(total / n), comp = mean_over_ranks(computing / n);
  double pct = 100.0 - (overall - comp) / pure * 100.0;
  if (pct < 0) pct = 0;
  if (rank == 0) printf("%s_overlap %d %ld %.1f\n", op, size, bytes, pct);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *op = argc > 1 ? argv[1] : "allreduce";
  for (int i = 0; i < size && i < 1024; ++i) chars[i] = MPI_CHAR;
  const long max = argc > 2 ? atol(argv[2]) : 1 << 20;
  const int iters = argc > 3 ? atoi(argv[3]) : 1000;
  const char *plain = op[0] == 'i' && strcmp(op, "ibarrier") != 0 ? op + 1 : op;
  const int blocks = strcmp(plain, "allgather") == 0 || strcmp(plain, "alltoall") == 0 ||
                             strcmp(plain, "allgatherv") == 0 || strcmp(plain, "gather") == 0 ||
                             strcmp(plain, "gatherv") == 0 || strcmp(plain, "scatter") == 0 ||
                             strcmp(plain, "scatterv") == 0 || strcmp(plain, "alltoallv") == 0 ||
                             strcmp(plain, "alltoallw") == 0
                         ? size
                         : 1;
  char *a = malloc((size_t)max * blocks);
  char *b = malloc((size_t)max * blocks);
  memset(a, 1, (size_t)max * blocks);
  memset(b, 0, (size_t)max * blocks);
  const int barrier = strcmp(op, "barrier") == 0 || strcmp(op, "ibarrier") == 0;
  /* As the OSU benchmarks do before measuring. (Iris's nonblocking
   * collectives use the node's segment once a blocking one has made it.) */
  MPI_Barrier(MPI_COMM_WORLD);
  static const long sizes[] = {8, 64, 1024, 8192, 65536, 1048576};
  for (int z = 0; z < 6; ++z) {
    const long bytes = barrier ? 0 : sizes[z];
    if (bytes > max) break;
    /* Fewer calls for large sizes, as OSU does above 8 KiB. */
    const int n = bytes > 8192 ? (iters / 10 > 10 ? iters / 10 : 10) : iters;
    const int warm = n / 10 > 10 ? n / 10 : 10;
    double total = 0;
    for (int i = 0; i < warm + n; ++i) {
      const double t0 = MPI_Wtime();
      run(op, a, b, (int)bytes);
      const double t = MPI_Wtime() - t0;
      if (i >= warm) total += t;
      if (!barrier) MPI_Barrier(MPI_COMM_WORLD);
    }
    const double pure = mean_over_ranks(total / n);
    if (rank == 0) printf("%s %d %ld %.3f\n", op, size, bytes, pure * 1e6);
    if (op[0] == 'i') overlap(op, a, b, bytes, n, warm, pure);
    if (barrier) break;
  }
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
