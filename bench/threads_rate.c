/* MPI_THREAD_MULTIPLE between ranks 0 and 1.
 *
 *   mpiexec -n 2 threads_rate [single|serialized|multiple] [trials] [bytes]
 *
 * latency: a 0- and an 8-byte ping-pong from the main thread, half the round
 *          trip (us), at the thread level asked for (single: MPI_Init), so
 *          that one thread at MULTIPLE is compared with SINGLE;
 * rate:    multiple only: T = 1, 2, 4 threads per rank, thread t of rank 0
 *          streaming 8-byte messages in windows of 64 MPI_Isend to thread t
 *          of rank 1 on its own communicator (as osu_mbw_mr, one short ack
 *          per window), in million messages per second, all threads summed;
 *          serialized: the same with T = 1 only, at MPI_THREAD_SERIALIZED
 *          (no locking), the reference for one thread at MULTIPLE.
 * bandwidth: with `bytes` (more than 8), the rate's streams send messages of
 *          that size instead, in windows of 8 (each window of a thread
 *          reuses its 8 buffers), about 128 MiB a thread a trial, in GB/s,
 *          all threads summed: threads receiving large messages from
 *          different peer threads at once.
 * Each figure is the median of `trials` trials (default 7). Plain MPI: it
 * builds with any MPI's mpicc. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { max_window = 64, max_threads = 4, max_trials = 31 };

static int rank;
static int window = max_window, rate_windows = 400, bytes = 8;
static MPI_Comm comms[max_threads];
static pthread_barrier_t start_line;

static int compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *values, int n) {
  qsort(values, (size_t)n, sizeof(double), compare);
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

static double pingpong(int bytes, int iters) {
  char buf[8] = {0};
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - start) / iters / 2 * 1e6;
}

/* One thread's stream: rate_windows windows of 64 messages and an ack. */
static void *stream(void *arg) {
  const int t = (int)*(long *)arg;
  char *buf = calloc((size_t)window, (size_t)bytes);
  char ack = 0;
  MPI_Request reqs[max_window];
  pthread_barrier_wait(&start_line);
  for (int w = 0; w < rate_windows; ++w) {
    for (int i = 0; i < window; ++i) {
      char *at = buf + (size_t)i * (size_t)bytes;
      if (rank == 0) {
        MPI_Isend(at, bytes, MPI_BYTE, 1, t, comms[t], &reqs[i]);
      } else {
        MPI_Irecv(at, bytes, MPI_BYTE, 0, t, comms[t], &reqs[i]);
      }
    }
    MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
    if (rank == 0) {
      MPI_Recv(&ack, 1, MPI_BYTE, 1, 100 + t, comms[t], MPI_STATUS_IGNORE);
    } else {
      MPI_Send(&ack, 1, MPI_BYTE, 0, 100 + t, comms[t]);
    }
  }
  free(buf);
  return NULL;
}

/* Million messages per second with `n` threads, one trial. */
static double rate(int n) {
  pthread_t threads[max_threads];
  long ids[max_threads];
  pthread_barrier_init(&start_line, NULL, (unsigned)n + 1);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int t = 0; t < n; ++t) {
    ids[t] = t;
    pthread_create(&threads[t], NULL, stream, &ids[t]);
  }
  const double start = MPI_Wtime();
  pthread_barrier_wait(&start_line);
  for (int t = 0; t < n; ++t) pthread_join(threads[t], NULL);
  const double seconds = MPI_Wtime() - start;
  pthread_barrier_destroy(&start_line);
  return (double)n * rate_windows * window / seconds / 1e6;
}

int main(int argc, char **argv) {
  const int multiple = argc > 1 && strcmp(argv[1], "multiple") == 0;
  const int serialized = argc > 1 && strcmp(argv[1], "serialized") == 0;
  int trials = argc > 2 ? atoi(argv[2]) : 7;
  if (trials < 1 || trials > max_trials) trials = 7;
  if (argc > 3 && atoi(argv[3]) > 8) {
    bytes = atoi(argv[3]);
    window = 8;
    rate_windows = (int)((128L << 20) / ((long)window * bytes));
    if (rate_windows < 2) rate_windows = 2;
  }
  int provided = MPI_THREAD_SINGLE, size = 0;
  if (multiple || serialized) {
    MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED,
                    &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2 || (multiple && provided != MPI_THREAD_MULTIPLE) ||
      (serialized && provided < MPI_THREAD_SERIALIZED)) {
    if (rank == 0) fprintf(stderr, "threads_rate: needs 2 ranks and MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double samples[max_trials];
  const int sizes[] = {0, 8};
  for (int s = 0; s < 2 && !serialized; ++s) {
    pingpong(sizes[s], 2000); /* warm-up */
    for (int k = 0; k < trials; ++k) samples[k] = pingpong(sizes[s], 20000);
    if (rank == 0) printf("latency %d B (us): %.3f\n", sizes[s], median(samples, trials));
  }
  if (multiple || serialized) {
    for (int t = 0; t < max_threads; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    for (int n = 1; n <= (serialized ? 1 : max_threads); n *= 2) {
      rate(n); /* warm-up */
      for (int k = 0; k < trials; ++k) samples[k] = rate(n);
      const double m = median(samples, trials);
      if (rank == 0 && bytes == 8) printf("rate %d threads (M msg/s): %.3f\n", n, m);
      if (rank == 0 && bytes != 8) {
        printf("bandwidth %d threads %d B (GB/s): %.3f\n", n, bytes, m * bytes / 1e3);
      }
    }
    for (int t = 0; t < max_threads; ++t) MPI_Comm_free(&comms[t]);
  }
  MPI_Finalize();
  return 0;
}
