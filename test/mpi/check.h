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

/* Finalizes and returns the process's exit code. */
static int finish(void) {
  MPI_Finalize();
  return check_failures == 0 ? 0 : 1;
}

#endif
