/* The small-message rate as the OSU micro-benchmarks measure it
 * (osu_mbw_mr with one pair, osu_bw's -b single|multiple), not as pt2pt.c
 * does: each window is `window` MPI_Isend of `bytes` from rank 0 matched
 * by as many MPI_Irecv at rank 1, both MPI_Waitall, then rank 1 sends a
 * 4-byte ack that rank 0 receives. `skip` windows of warm-up, then
 * `iterations` timed ones, all in one timed run; the run repeats `trials`
 * times in the process and each is printed, the first one too (a short
 * program meets what warm-up hides).
 *
 *   mpiexec -n 2 rate [bytes=8] [buffers=single|multiple] [iterations=100]
 *                     [skip=10] [trials=5] [window=64]
 *
 * buffers=single: every message of a window from (and into) one buffer, as
 * OSU's default; multiple: a buffer per message, each on its own cache
 * lines, as osu_bw -b multiple.
 * Prints `trial N: R M msgs/s` per trial and `median: R M msgs/s`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { max_window = 1024, max_trials = 101 };

static int compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int bytes = argc > 1 ? atoi(argv[1]) : 8;
  const int multiple = argc > 2 && strcmp(argv[2], "multiple") == 0;
  const int iterations = argc > 3 ? atoi(argv[3]) : 100;
  const int skip = argc > 4 ? atoi(argv[4]) : 10;
  int trials = argc > 5 ? atoi(argv[5]) : 5;
  const int window = argc > 6 ? atoi(argv[6]) : 64;
  if (size < 2 || bytes < 0 || iterations < 1 || skip < 0 || window < 1 || window > max_window) {
    if (rank == 0) fprintf(stderr, "rate: 2 ranks, bytes >= 0, 1 <= window <= %d\n", max_window);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (trials < 1) trials = 1;
  if (trials > max_trials) trials = max_trials;

  /* A buffer per message starts on its own 64-byte line. */
  const size_t stride = ((size_t)bytes + 63) / 64 * 64 + 64;
  const size_t length = multiple ? stride * (size_t)window : stride;
  char *buffer = aligned_alloc(4096, (length + 4095) / 4096 * 4096);
  memset(buffer, rank, length);
  char ack[4] = {0};
  MPI_Request requests[max_window];
  double rates[max_trials];

  for (int t = 0; t < trials; ++t) {
    double start = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < skip + iterations; ++i) {
      if (i == skip) start = MPI_Wtime();
      if (rank == 0) {
        for (int w = 0; w < window; ++w) {
          MPI_Isend(buffer + (multiple ? stride * (size_t)w : 0), bytes, MPI_CHAR, 1, 100,
                    MPI_COMM_WORLD, &requests[w]);
        }
        MPI_Waitall(window, requests, MPI_STATUSES_IGNORE);
        MPI_Recv(ack, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        for (int w = 0; w < window; ++w) {
          MPI_Irecv(buffer + (multiple ? stride * (size_t)w : 0), bytes, MPI_CHAR, 0, 100,
                    MPI_COMM_WORLD, &requests[w]);
        }
        MPI_Waitall(window, requests, MPI_STATUSES_IGNORE);
        MPI_Send(ack, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
      }
    }
    const double seconds = MPI_Wtime() - start;
    rates[t] = (double)iterations * window / seconds / 1e6;
    if (rank == 0) printf("trial %d: %.3f M msgs/s\n", t, rates[t]);
  }
  if (rank == 0) {
    qsort(rates, (size_t)trials, sizeof(double), compare);
    const double median =
        trials % 2 ? rates[trials / 2] : 0.5 * (rates[trials / 2 - 1] + rates[trials / 2]);
    printf("median: %.3f M msgs/s (%d B, %s buffer%s, window %d, %d+%d windows)\n", median, bytes,
           multiple ? "a" : "one", multiple ? " per message" : "", window, skip, iterations);
  }
  free(buffer);
  MPI_Finalize();
  return 0;
}
