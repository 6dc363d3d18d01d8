/* Every rank exchanges messages with every other rank and checks every byte.
 *
 *   allpairs [rounds] [sizes] [hold]
 *                               rounds (default 1) of one message of each
 *                               size (comma-separated, default 8) to every
 *                               other rank; prints the time of the exchange,
 *                               then waits `hold` seconds (default 0) before
 *                               MPI_Finalize, so that bench/scale.sh sees
 *                               the memory of a job that has exchanged
 *   allpairs pingpong [iters] [bytes]
 *                               ranks 0 and 1 ping-pong while every other
 *                               rank sits in a blocking receive
 *
 * Rank 0 prints "allpairs: N ranks, ... all bytes checked" on success; any
 * wrong byte, count or source ends the job with a non-zero code. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static unsigned char pattern(int from, int to, int round, size_t i) {
  return (unsigned char)(from * 7 + to * 13 + round * 3 + i + (i >> 8));
}

static int exchange(int rank, int size, int round, size_t bytes, unsigned char *out,
                    unsigned char *in, MPI_Request *requests) {
  int n = 0;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    MPI_Irecv(in + (size_t)peer * bytes, (int)bytes, MPI_BYTE, peer, round, MPI_COMM_WORLD,
              &requests[n++]);
  }
  /* Start with the next rank, so that not every rank floods rank 0 first. */
  for (int k = 1; k < size; ++k) {
    const int peer = (rank + k) % size;
    unsigned char *buffer = out + (size_t)peer * bytes;
    for (size_t i = 0; i < bytes; ++i) buffer[i] = pattern(rank, peer, round, i);
    MPI_Isend(buffer, (int)bytes, MPI_BYTE, peer, round, MPI_COMM_WORLD, &requests[n++]);
  }
  MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
  int errors = 0;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    const unsigned char *got = in + (size_t)peer * bytes;
    for (size_t i = 0; i < bytes; ++i) {
      if (got[i] != pattern(peer, rank, round, i)) {
        if (errors++ == 0) {
          fprintf(stderr, "allpairs: rank %d: byte %zu of %zu from rank %d in round %d is %d\n",
                  rank, i, bytes, peer, round, got[i]);
        }
        break;
      }
    }
  }
  return errors;
}

static int pingpong(int rank, int size, int iters, int bytes) {
  char *buffer = calloc((size_t)bytes + 1, 1);
  int release = 0;
  if (rank >= 2) {
    /* Blocking receive: this rank polls (and yields) until rank 0 is done. */
    MPI_Recv(&release, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    const int peer = 1 - rank;
    double best = 1e30;
    for (int trial = 0; trial < 5; ++trial) {
      const double start = MPI_Wtime();
      for (int i = 0; i < iters; ++i) {
        if (rank == 0) {
          MPI_Send(buffer, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
          MPI_Recv(buffer, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(buffer, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(buffer, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
      }
      const double t = (MPI_Wtime() - start) / (2.0 * iters);
      if (t < best) best = t;
    }
    if (rank == 0) {
      printf("allpairs pingpong: %d ranks, %d bytes, %.3f us half round trip (best of 5 x %d)\n",
             size, bytes, best * 1e6, iters);
      for (int peer = 2; peer < size; ++peer) {
        MPI_Send(&release, 1, MPI_INT, peer, 99, MPI_COMM_WORLD);
      }
    }
  }
  free(buffer);
  return 0;
}

int main(int argc, char **argv) {
  const double begin = now();
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double init_time = now() - begin, init_max = 0;
  MPI_Reduce(&init_time, &init_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (argc > 1 && strcmp(argv[1], "pingpong") == 0) {
    const int iters = argc > 2 ? atoi(argv[2]) : 10000;
    const int bytes = argc > 3 ? atoi(argv[3]) : 8;
    pingpong(rank, size, iters, bytes);
    MPI_Finalize();
    return 0;
  }
  const int rounds = argc > 1 ? atoi(argv[1]) : 1;
  const char *sizes = argc > 2 ? argv[2] : "8";
  int errors = 0;
  MPI_Request *requests = malloc(sizeof(MPI_Request) * 2 * (size_t)size);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (const char *s = sizes; *s != '\0';) {
    char *end = NULL;
    const size_t bytes = strtoul(s, &end, 10);
    unsigned char *out = malloc(bytes * (size_t)size + 1);
    unsigned char *in = malloc(bytes * (size_t)size + 1);
    for (int round = 0; round < rounds; ++round) {
      errors += exchange(rank, size, round, bytes, out, in, requests);
    }
    free(out);
    free(in);
    s = *end == ',' ? end + 1 : end;
  }
  double elapsed = MPI_Wtime() - start, elapsed_max = 0;
  MPI_Reduce(&elapsed, &elapsed_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && total == 0) {
    printf(
        "allpairs: %d ranks, %d rounds of sizes %s, all bytes checked; start-up %.3f s, "
        "exchange %.3f s\n",
        size, rounds, sizes, init_max, elapsed_max);
  }
  free(requests);
  const int hold = argc > 3 ? atoi(argv[3]) : 0;
  if (hold > 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    const struct timespec pause = {hold, 0};
    nanosleep(&pause, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
