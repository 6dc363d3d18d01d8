/* Matching with deep queues, 2 ranks: time per message (us) as the queues
 * grow, N = 1, 10, 100, 1000, 10000.
 *
 *   mpiexec -n 2 deep_queues [repeats=5]
 *
 * posted:     rank 1 posts N receives of distinct tags, then rank 0 sends
 *             N messages of 8 bytes in reverse tag order: each message
 *             matches the last receive still posted.
 * unexpected: rank 0 sends N messages of distinct tags before rank 1
 *             posts anything, then rank 1 receives them in reverse tag
 *             order: each receive matches the last message still queued.
 * Each figure is the median over `repeats`, timed on rank 1 from the
 * barrier that releases the sender to the last completion. An MPI whose
 * matching walks its queues grows linearly in N. Plain MPI: it builds with
 * any MPI's mpicc. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { max_n = 10000, max_repeats = 31 };

static int compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One round of `n` messages; rank 1 returns the time per message (us). */
static double round_of(int rank, int n, int unexpected, MPI_Request *reqs, long *buf) {
  double start = 0;
  if (!unexpected) {
    if (rank == 1) {
      for (int i = 0; i < n; ++i) MPI_Irecv(&buf[i], 1, MPI_LONG, 0, i, MPI_COMM_WORLD, &reqs[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    if (rank == 0) {
      for (int i = n - 1; i >= 0; --i) {
        buf[i] = i;
        MPI_Isend(&buf[i], 1, MPI_LONG, 1, i, MPI_COMM_WORLD, &reqs[i]);
      }
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
  } else {
    if (rank == 0) {
      for (int i = 0; i < n; ++i) {
        buf[i] = i;
        MPI_Isend(&buf[i], 1, MPI_LONG, 1, i, MPI_COMM_WORLD, &reqs[i]);
      }
    }
    /* Rank 1 waits until the messages are there (or announced). */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
      int flag = 0;
      while (!flag) MPI_Iprobe(0, 0, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      start = MPI_Wtime();
      for (int i = n - 1; i >= 0; --i) {
        MPI_Irecv(&buf[i], 1, MPI_LONG, 0, i, MPI_COMM_WORLD, &reqs[i]);
      }
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
  }
  const double us = (MPI_Wtime() - start) / n * 1e6;
  if (rank == 1) {
    for (int i = 0; i < n; ++i) {
      if (buf[i] != i) {
        fprintf(stderr, "deep_queues: message %d carried %ld\n", i, buf[i]);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return us;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int repeats = argc > 1 ? atoi(argv[1]) : 5;
  if (repeats < 1 || repeats > max_repeats) repeats = 5;
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "deep_queues: run it on 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * max_n);
  long *buf = malloc(sizeof(long) * max_n);
  if (rank == 1) printf("%8s %14s %18s\n", "N", "posted(us/msg)", "unexpected(us/msg)");
  for (int n = 1; n <= max_n; n *= 10) {
    double t[2][max_repeats];
    for (int kind = 0; kind < 2; ++kind) {
      for (int r = 0; r < repeats; ++r) t[kind][r] = round_of(rank, n, kind, reqs, buf);
      qsort(t[kind], (size_t)repeats, sizeof(double), compare);
    }
    if (rank == 1) printf("%8d %14.3f %18.3f\n", n, t[0][repeats / 2], t[1][repeats / 2]);
  }
  free(reqs);
  free(buf);
  MPI_Finalize();
  return 0;
}
