/* Derived-datatype bandwidth: rank 0 sends `bytes` of data laid out by a
 * derived type, rank 1 receives it into the same layout. Each trial times
 * `reps` sends (then a 1-byte ack); the figure is the median of the trials,
 * in GB/s (1e9 bytes of data per second, the gaps not counted). Plain MPI,
 * so the same source builds with MPICH's and Open MPI's mpicc.
 *   mpiexec -n 2 dtype_bw [bytes] [trials] [reps]
 * Layouts: vectors of 1, 8, 64 and 1024 ints per block at twice the block
 * length (1024 ints: 4 KiB blocks at a stride of 8 KiB), an indexed type of
 * blocks of 1 to 16 ints at irregular gaps, and an array of structs
 * { int; double; char[5]; } (17 bytes of data in 24). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rec {
  int i;
  double d;
  char c[5];
};

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a;
  const double y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Makes the layout `which` holding about `bytes` of data: its type, the
 * count to send, and the span of memory it needs. Returns 0 past the end. */
static int make(int which, long bytes, MPI_Datatype *type, int *count, long *span, char *name) {
  const int blocks[4] = {1, 8, 64, 1024};
  if (which < 4) {
    const int bl = blocks[which];
    const long n = bytes / (long)(bl * sizeof(int)); /* blocks */
    MPI_Type_vector((int)n, bl, 2 * bl, MPI_INT, type);
    *count = 1;
    *span = n * 2 * bl * (long)sizeof(int);
    sprintf(name, "vector %d int%s stride %d", bl, bl > 1 ? "s" : "", 2 * bl);
  } else if (which == 4) {
    /* 64 blocks of 1..16 ints at gaps of 1..8 ints; repeated to the size. */
    int lens[64];
    int displs[64];
    int at = 0;
    int ints = 0;
    unsigned x = 12345;
    for (int k = 0; k < 64; ++k) {
      x = x * 1103515245u + 12345u;
      lens[k] = 1 + (int)((x >> 16) % 16);
      x = x * 1103515245u + 12345u;
      displs[k] = at;
      at += lens[k] + 1 + (int)((x >> 16) % 8);
      ints += lens[k];
    }
    MPI_Datatype one;
    MPI_Type_indexed(64, lens, displs, MPI_INT, &one);
    MPI_Type_create_resized(one, 0, (MPI_Aint)at * (MPI_Aint)sizeof(int), type);
    MPI_Type_free(&one);
    *count = (int)(bytes / ((long)ints * (long)sizeof(int)));
    *span = (long)*count * at * (long)sizeof(int);
    sprintf(name, "indexed 1-16 ints");
  } else if (which == 5) {
    int lens[3] = {1, 1, 5};
    MPI_Aint displs[3] = {0, 8, 16};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Datatype one;
    MPI_Type_create_struct(3, lens, displs, types, &one);
    MPI_Type_create_resized(one, 0, sizeof(struct rec), type);
    MPI_Type_free(&one);
    *count = (int)(bytes / 17);
    *span = (long)*count * (long)sizeof(struct rec);
    sprintf(name, "struct int,double,char[5]");
  } else {
    return 0;
  }
  MPI_Type_commit(type);
  return 1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long bytes = argc > 1 ? atol(argv[1]) : 32L << 20;
  const int trials = argc > 2 ? atoi(argv[2]) : 5;
  const int reps = argc > 3 ? atoi(argv[3]) : 3;
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "dtype_bw: run on 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0)
    printf("# layout, data bytes, GB/s (median of %d trials of %d sends)\n", trials, reps);
  MPI_Datatype type;
  int count = 0;
  long span = 0;
  char name[64];
  for (int which = 0; make(which, bytes, &type, &count, &span, name); ++which) {
    char *buf = malloc((size_t)span);
    memset(buf, rank, (size_t)span);
    int size_of = 0;
    MPI_Type_size(type, &size_of);
    const double data = (double)size_of * count;
    double *rate = malloc(sizeof(double) * (size_t)trials);
    char ack = 0;
    /* One untimed round to warm up. */
    for (int t = -1; t < trials; ++t) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      for (int r = 0; r < reps; ++r) {
        if (rank == 0) {
          MPI_Send(buf, count, type, 1, 1, MPI_COMM_WORLD);
        } else {
          MPI_Recv(buf, count, type, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
      }
      if (rank == 0) {
        MPI_Recv(&ack, 1, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Send(&ack, 1, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
      }
      if (t >= 0) rate[t] = data * reps / (MPI_Wtime() - start) / 1e9;
    }
    qsort(rate, (size_t)trials, sizeof(double), cmp);
    if (rank == 0) printf("%s\t%.0f\t%.3f\n", name, data, rate[trials / 2]);
    fflush(stdout);
    free(rate);
    free(buf);
    MPI_Type_free(&type);
  }
  MPI_Finalize();
  return 0;
}
