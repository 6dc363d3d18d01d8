/* The README's demo: a token travels around the ring of ranks, each rank
 * adding its own rank, then every rank reports what it saw. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  char host[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(host, &length);

  const int laps = 3;
  long token = 0;
  const int next = (rank + 1) % size;
  const int prev = (rank + size - 1) % size;
  double start = MPI_Wtime();
  for (int lap = 0; lap < laps; ++lap) {
    if (rank == 0) {
      token += 1;
      MPI_Send(&token, 1, MPI_LONG, next, lap, MPI_COMM_WORLD);
      MPI_Recv(&token, 1, MPI_LONG, prev, lap, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&token, 1, MPI_LONG, prev, lap, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      token += rank + 1;
      MPI_Send(&token, 1, MPI_LONG, next, lap, MPI_COMM_WORLD);
    }
  }
  double elapsed = MPI_Wtime() - start;
  /* Every lap adds 1 + 2 + ... + size. */
  const long expected = (long)laps * size * (size + 1) / 2;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    printf("ring of %d ranks on %s: token %ld after %d laps (expected %ld) in %.1f us\n", size,
           host, token, laps, expected, elapsed * 1e6);
  }
  int ok = rank != 0 || token == expected;
  MPI_Finalize();
  return ok ? 0 : 1;
}
