/* A plain OSU-style ping-pong between ranks 0 and 1: one buffer, reused;
 * a tenth of the iterations as warm-up, then the timed ones.
 *
 *   mpiexec -n 2 pingpong [bytes=262144] [iterations=1000]
 *
 * Prints "bytes latency" with the latency as half the round trip (us),
 * averaged over the timed iterations, as osu_latency does. Plain MPI: it
 * builds with any MPI's mpicc (engines.sh runs it beside MPICH and Open
 * MPI). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long asked = argc > 1 ? atol(argv[1]) : 262144;
  const int iterations = argc > 2 ? atoi(argv[2]) : 1000;
  if (size < 2 || asked < 0 || asked > 1L << 30 || iterations < 1) {
    if (rank == 0) fprintf(stderr, "usage: mpiexec -n 2 pingpong [bytes] [iterations]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int bytes = (int)asked, warm_up = iterations / 10;
  char *buf = malloc(bytes > 0 ? (size_t)bytes : 1);
  for (int i = 0; i < bytes; ++i) buf[i] = (char)i;
  double start = 0;
  for (int i = 0; i < warm_up + iterations; ++i) {
    if (i == warm_up) {
      MPI_Barrier(MPI_COMM_WORLD);
      start = MPI_Wtime();
    }
    if (rank == 0) {
      MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
  }
  const double us = (MPI_Wtime() - start) / iterations / 2 * 1e6;
  if (rank == 0) printf("%d %.2f\n", bytes, us);
  free(buf);
  MPI_Finalize();
  return 0;
}
