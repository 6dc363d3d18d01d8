/* A failed check in an MPI test program prints one line naming the rank, the
 * line and what differed; the program then exits 1 at the end (finish()).
 * The gtest driver runs the programs through mpiexec and asserts on that. */
#ifndef IRIS_TEST_CHECK_H
#define IRIS_TEST_CHECK_H

#include <mpi.h>
#include <stdio.h>

static int check_failures = 0;

#define CHECK(cond, ...)                                                                     \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      int check_rank_ = -1;                                                                  \
      int check_init_ = 0;                                                                   \
      MPI_Initialized(&check_init_);                                                         \
      if (check_init_) MPI_Comm_rank(MPI_COMM_WORLD, &check_rank_);                          \
      fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", check_rank_, __FILE__, __LINE__, \
              #cond);                                                                        \
      fprintf(stderr, __VA_ARGS__);                                                          \
      fputc('\n', stderr);                                                                   \
      ++check_failures;                                                                      \
    }                                                                                        \
  } while (0)

/* The message sizes at which Iris's protocols change, from its live limits
 * (MPIX_Stat_get after MPI_Init), so that tests follow the layout instead of
 * copying numbers from an older one: 0, 1, the inline bytes of an unexpected
 * message, the eager limits and the fragment sizes (shm and netmod), each
 * -1, +0 and +1. Fills `sizes` (room for 20) and returns how many; sizes
 * over `largest` are left out. */
static inline MPI_Count iris_limit(const char *name) {
  MPI_Count value = 0;
  MPIX_Stat_get(name, &value);
  return value;
}

static inline int edge_sizes(int *sizes, MPI_Count largest) {
  static const char *const limits[] = {"inline_bytes", "eager_limit", "shm_fragment_size",
                                       "net_eager_limit", "net_fragment_size"};
  int n = 0;
  sizes[n++] = 0;
  sizes[n++] = 1;
  for (unsigned k = 0; k < sizeof(limits) / sizeof(limits[0]); ++k) {
    const MPI_Count edge = iris_limit(limits[k]);
    for (MPI_Count d = -1; d <= 1; ++d) {
      if (edge + d > 1 && edge + d <= largest) sizes[n++] = (int)(edge + d);
    }
  }
  return n;
}

/* Finalizes and returns the process's exit code. */
static inline int finish(void) {
  MPI_Finalize();
  return check_failures == 0 ? 0 : 1;
}

#endif
