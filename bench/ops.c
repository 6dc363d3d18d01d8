/* The reduction kernels alone: MPI_Reduce_local over 256 KiB (in cache)
 * for each predefined op on C integer and floating types, the best of 5
 * runs of 200 calls each. Plain MPI, so the same source measures Iris,
 * MPICH and Open MPI.
 *
 *   mpiexec -n 1 ops
 *
 * Prints `type op microseconds` per pair. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int bytes = 1 << 18;
  char *a = malloc(bytes), *b = malloc(bytes);
  for (int i = 0; i < bytes; ++i) {
    a[i] = (char)(i * 7);
    b[i] = (char)(i * 3);
  }
  struct {
    MPI_Datatype t;
    const char *tn;
    int size;
  } types[] = {{MPI_CHAR, "char", 1},        {MPI_SHORT, "short", 2}, {MPI_INT, "int", 4},
               {MPI_LONG, "long", 8},        {MPI_FLOAT, "float", 4}, {MPI_DOUBLE, "double", 8},
               {MPI_UNSIGNED, "unsigned", 4}};
  struct {
    MPI_Op op;
    const char *on;
  } ops[] = {{MPI_SUM, "sum"},   {MPI_MAX, "max"},   {MPI_MIN, "min"},
             {MPI_PROD, "prod"}, {MPI_BAND, "band"}, {MPI_LAND, "land"}};
  for (unsigned t = 0; t < sizeof types / sizeof *types; ++t) {
    for (unsigned o = 0; o < sizeof ops / sizeof *ops; ++o) {
      if ((ops[o].op == MPI_BAND || ops[o].op == MPI_LAND) &&
          (types[t].t == MPI_FLOAT || types[t].t == MPI_DOUBLE))
        continue;
      double best = 1e9;
      for (int r = 0; r < 5; ++r) {
        double t0 = MPI_Wtime();
        for (int k = 0; k < 200; ++k)
          MPI_Reduce_local(a, b, bytes / types[t].size, types[t].t, ops[o].op);
        double dt = (MPI_Wtime() - t0) / 200 * 1e6;
        if (dt < best) best = dt;
        memcpy(b, a, 64);
      }
      printf("%s %s %.2f\n", types[t].tn, ops[o].on, best);
    }
  }
  MPI_Finalize();
  return 0;
}
