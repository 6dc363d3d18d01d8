/* How much of a nonblocking collective hides behind computation: the median
 * time of MPI_Allreduce followed by a computation as long as the allreduce,
 * against MPI_Iallreduce, the same computation calling MPI_Test every 1/100
 * of it, then MPI_Wait. A ratio (overlapped / blocking) near 0.5 means the
 * whole collective hid behind the work; 1 means none did. Plain MPI, so the
 * same source builds with any mpicc.
 *   mpiexec -n 4 nbc_overlap [ints] [trials]                (default 262144 15) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), by_value);
  return v[n / 2];
}

/* `units` slices of busy work; with a request, MPI_Test after each. */
static void work(int units, MPI_Request *r) {
  volatile double x = 0;
  for (int u = 0; u < units; ++u) {
    for (int i = 0; i < 10000; ++i) x += i * 0.5;
    if (r != NULL && *r != MPI_REQUEST_NULL) {
      int flag = 0;
      MPI_Test(r, &flag, MPI_STATUS_IGNORE);
    }
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int n = argc > 1 ? atoi(argv[1]) : 1 << 18;
  const int trials = argc > 2 ? atoi(argv[2]) : 15;
  int *in = malloc(sizeof(int) * (size_t)n);
  int *out = malloc(sizeof(int) * (size_t)n);
  double *coll = malloc(sizeof(double) * (size_t)trials);
  double *blocking = malloc(sizeof(double) * (size_t)trials);
  double *overlapped = malloc(sizeof(double) * (size_t)trials);
  for (int i = 0; i < n; ++i) in[i] = i;
  /* Calibrate: as many units of work as one allreduce takes (rank 0's). */
  for (int k = 0; k < trials; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t = MPI_Wtime();
    MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    coll[k] = MPI_Wtime() - t;
  }
  double unit = MPI_Wtime();
  work(100, NULL);
  unit = (MPI_Wtime() - unit) / 100;
  int units = (int)(median(coll, trials) / unit);
  MPI_Bcast(&units, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (units < 100) units = 100;
  MPI_Request r = MPI_REQUEST_NULL;
  for (int k = 0; k < trials; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    work(units, NULL);
    blocking[k] = MPI_Wtime() - t;
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    MPI_Iallreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    work(units, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    overlapped[k] = MPI_Wtime() - t;
  }
  const double b = median(blocking, trials), o = median(overlapped, trials);
  if (rank == 0) {
    printf(
        "ints %d: allreduce %.2f ms, allreduce+work %.2f ms, iallreduce+work %.2f ms, "
        "ratio %.2f\n",
        n, median(coll, trials) * 1e3, b * 1e3, o * 1e3, o / b);
  }
  free(in);
  free(out);
  free(coll);
  free(blocking);
  free(overlapped);
  MPI_Finalize();
  return 0;
}
