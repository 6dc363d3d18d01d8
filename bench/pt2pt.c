/* Point-to-point latency, bandwidth and message rate between ranks 0 and 1.
 *
 *   mpiexec -n 2 pt2pt [max_bytes] [trials]
 *
 * latency:   ping-pong, half the round-trip time (us), like osu_latency
 * bandwidth: a window of 64 MPI_Isend then one short ack per window (GB/s,
 *            1e9 bytes/s), like osu_bw
 * bibw:      both ranks stream a window of 64 to each other (GB/s, sum of
 *            both directions), like osu_bibw
 * rate:      8-byte messages per second in windows of 64, one pair, like
 *            osu_mbw_mr
 * Each figure is the median of `trials` timed trials (default 7), after a
 * warm-up. Plain MPI: it builds with any MPI's mpicc, so the same source
 * measures Iris, MPICH and Open MPI side by side. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { window = 64, max_trials = 31 };

static int compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *values, int n) {
  qsort(values, (size_t)n, sizeof(double), compare);
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

static int iterations_for(size_t bytes, int base) {
  if (bytes >= (1 << 20)) return base / 20 > 10 ? base / 20 : 10;
  if (bytes >= (64 << 10)) return base / 4;
  return base;
}

/* Seconds per round trip, one trial. */
static double pingpong(int rank, char *buf, size_t bytes, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - start) / iters;
}

/* Seconds per window of `window` messages, one trial. */
static double stream(int rank, char *buf, size_t bytes, int iters) {
  MPI_Request requests[window];
  char ack = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      for (int w = 0; w < window; ++w) {
        MPI_Isend(buf, (int)bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &requests[w]);
      }
      MPI_Waitall(window, requests, MPI_STATUSES_IGNORE);
      MPI_Recv(&ack, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      for (int w = 0; w < window; ++w) {
        MPI_Irecv(buf, (int)bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &requests[w]);
      }
      MPI_Waitall(window, requests, MPI_STATUSES_IGNORE);
      MPI_Send(&ack, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - start) / iters;
}

/* Seconds per window exchanged both ways, one trial. */
static double bidirectional(int rank, char *out, char *in, size_t bytes, int iters) {
  MPI_Request requests[2 * window];
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  if (rank > 1) return 1;
  const int peer = 1 - rank;
  for (int i = 0; i < iters; ++i) {
    for (int w = 0; w < window; ++w) {
      MPI_Irecv(in, (int)bytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &requests[w]);
    }
    for (int w = 0; w < window; ++w) {
      MPI_Isend(out, (int)bytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &requests[window + w]);
    }
    MPI_Waitall(2 * window, requests, MPI_STATUSES_IGNORE);
  }
  return (MPI_Wtime() - start) / iters;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t max_bytes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 0) : (size_t)4 << 20;
  int trials = argc > 2 ? atoi(argv[2]) : 7;
  if (trials < 1 || trials > max_trials) trials = 7;
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "pt2pt: run with at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  char *buf = malloc(max_bytes > 0 ? max_bytes : 1);
  memset(buf, 7, max_bytes > 0 ? max_bytes : 1);
  char library[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(library, &length);
  if (rank == 0) {
    printf("# %.*s\n", (int)strcspn(library, "\n"), library);
    printf("# median of %d trials; latency = half round trip; bandwidth = window of %d\n", trials,
           window);
    printf("%10s %14s %16s %12s\n", "bytes", "latency(us)", "bandwidth(GB/s)", "bibw(GB/s)");
  }
  double lat[max_trials];
  double bw[max_trials];
  double bibw[max_trials];
  char *in = malloc(max_bytes > 0 ? max_bytes : 1);
  memset(in, 0, max_bytes > 0 ? max_bytes : 1);
  for (size_t bytes = 0; bytes <= max_bytes; bytes = bytes ? bytes * 2 : 1) {
    const int lat_iters = iterations_for(bytes, 2000);
    const int bw_iters = iterations_for(bytes, 100) / 4 + 1;
    pingpong(rank, buf, bytes, lat_iters / 10 + 1); /* warm-up */
    for (int t = 0; t < trials; ++t) lat[t] = pingpong(rank, buf, bytes, lat_iters) / 2;
    stream(rank, buf, bytes, 1);
    for (int t = 0; t < trials; ++t) {
      bw[t] = (double)bytes * window / stream(rank, buf, bytes, bw_iters);
    }
    bidirectional(rank, buf, in, bytes, 1);
    for (int t = 0; t < trials; ++t) {
      bibw[t] = 2.0 * (double)bytes * window / bidirectional(rank, buf, in, bytes, bw_iters);
    }
    if (rank == 0) {
      printf("%10zu %14.3f %16.4f %12.4f\n", bytes, median(lat, trials) * 1e6,
             median(bw, trials) / 1e9, median(bibw, trials) / 1e9);
      fflush(stdout);
    }
  }
  /* Message rate: 8-byte messages, windows of 64, one pair. */
  double rate[max_trials];
  stream(rank, buf, 8, 100);
  for (int t = 0; t < trials; ++t) rate[t] = window / stream(rank, buf, 8, 2000);
  if (rank == 0) printf("# 8-byte message rate: %.3f M msgs/s\n", median(rate, trials) / 1e6);
  free(in);
  free(buf);
  MPI_Finalize();
  return 0;
}
