/* What recovery (ULFM) costs after a rank dies, under
 * mpiexec --enable-recovery: the last rank kills itself with SIGKILL right
 * after a barrier, and the others measure, on the host's one monotonic
 * clock (MPI_Wtime; every rank on one host):
 *   detect   from the barrier to the end, with MPIX_ERR_PROC_FAILED, of a
 *            receive from the dead rank (the launcher's word, then the
 *            device's); the slowest survivor;
 *   revoke   from rank 0's MPIX_Comm_revoke to the end, with
 *            MPIX_ERR_REVOKED, of a receive from rank 0 at each other
 *            survivor; the slowest;
 *   shrink   MPIX_Comm_shrink of the world with its dead rank; the slowest;
 *   shrink0  MPIX_Comm_shrink of the result, which has no failure (median
 *            of `reps`, at rank 0);
 *   agree    MPIX_Comm_agree on it (median of `reps` * 10, at rank 0).
 * Prints one line: "ulfm ranks=N detect_ms=... revoke_us=... shrink_us=...
 * shrink0_us=... agree_us=...". Only Iris has ULFM here (Debian's MPICH
 * and Open MPI 4.1 do not), so it runs alone.
 *
 * The victim dies `pause_ms` after MPI_Init (default 200): a death within
 * ~40 ms of the launcher's last message to a survivor (MPI_Init's fence)
 * reaches it only after TCP's delayed acknowledgement on the launcher's
 * loopback socket (pmi/README.md), which a long run never meets.
 *
 *   mpiexec --enable-recovery -n N ulfm [reps=20] [pause_ms=200] */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare);
  return v[n / 2];
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int reps = argc > 1 ? atoi(argv[1]) : 20;
  const int pause_ms = argc > 2 ? atoi(argv[2]) : 200;
  const struct timespec pause = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
  nanosleep(&pause, NULL);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int victim = size - 1;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  if (rank == victim) raise(SIGKILL);
  int x = 0;
  if (MPI_Recv(&x, 1, MPI_INT, victim, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS) {
    fprintf(stderr, "ulfm: rank %d: a receive from the dead rank succeeded\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const double detect = MPI_Wtime() - start;
  /* Every survivor has detected before rank 0 revokes. */
  int flag = 1;
  MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
  double revoked_at = 0, revoke_start = 0;
  if (rank == 0) {
    revoke_start = MPI_Wtime();
    MPIX_Comm_revoke(MPI_COMM_WORLD);
  } else {
    MPI_Recv(&x, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    revoked_at = MPI_Wtime();
  }
  double t = MPI_Wtime();
  MPI_Comm s;
  MPIX_Comm_shrink(MPI_COMM_WORLD, &s);
  const double shrink = MPI_Wtime() - t;
  double mine[3] = {detect, revoked_at, shrink}, worst[3];
  MPI_Reduce(mine, worst, 3, MPI_DOUBLE, MPI_MAX, 0, s);
  double *times = malloc(sizeof(double) * (size_t)reps * 10);
  for (int i = 0; i < reps; ++i) {
    MPI_Barrier(s);
    t = MPI_Wtime();
    MPI_Comm s2;
    MPIX_Comm_shrink(s, &s2);
    times[i] = MPI_Wtime() - t;
    MPI_Comm_free(&s2);
  }
  const double shrink0 = median(times, reps);
  for (int i = 0; i < reps * 10; ++i) {
    MPI_Barrier(s);
    t = MPI_Wtime();
    flag = 1;
    MPIX_Comm_agree(s, &flag);
    times[i] = MPI_Wtime() - t;
  }
  const double agree = median(times, reps * 10);
  if (rank == 0) {
    printf(
        "ulfm ranks=%d detect_ms=%.2f revoke_us=%.1f shrink_us=%.1f shrink0_us=%.1f "
        "agree_us=%.1f\n",
        size, worst[0] * 1e3, (worst[1] - revoke_start) * 1e6, worst[2] * 1e6, shrink0 * 1e6,
        agree * 1e6);
  }
  free(times);
  MPI_Comm_free(&s);
  MPI_Finalize();
  return 0;
}
