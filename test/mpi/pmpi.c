/* A profiling tool's view of Iris: this program defines MPI_Init, MPI_Send,
 * MPI_Recv and MPI_Type_create_resized itself, each counting its calls and
 * passing them on through PMPI_. It checks that
 *  - the wrappers run and reach Iris (the data arrive, counts match the
 *    program's own calls exactly);
 *  - Iris's calls between its own bindings are not seen by the wrappers:
 *    collectives, Sendrecv and Type_create_subarray (built inside Iris with
 *    Type_create_resized) add nothing to the counts.
 * Built by the build tree's mpicc (jobs_test.cpp, Pmpi.*), as a tool user
 * would. Needs 2 ranks or more. */
#include <mpi.h>
#include <stdio.h>

static int inits = 0;
static int sends = 0;
static int recvs = 0;
static int resizes = 0;
static long sent_bytes = 0;

int MPI_Init(int *argc, char ***argv) {
  ++inits;
  return PMPI_Init(argc, argv);
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  ++sends;
  int size = 0;
  PMPI_Type_size(datatype, &size);
  sent_bytes += (long)size * count;
  return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
  ++recvs;
  return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
}

int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                            MPI_Datatype *newtype) {
  ++resizes;
  return PMPI_Type_create_resized(oldtype, lb, extent, newtype);
}

static int failures = 0;

#define EXPECT(cond, ...)                                      \
  do {                                                         \
    if (!(cond)) {                                             \
      fprintf(stderr, "pmpi: line %d: %s: ", __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                            \
      fputc('\n', stderr);                                     \
      ++failures;                                              \
    }                                                          \
  } while (0)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT(inits == 1, "MPI_Init wrapper ran %d times", inits);

  /* Rank 0 sends 3 messages to every other rank, which returns their sum. */
  const int rounds = 3;
  if (rank == 0) {
    for (int r = 1; r < size; ++r) {
      for (int k = 0; k < rounds; ++k) {
        int v[4] = {r, k, r * k, 7};
        MPI_Send(v, 4, MPI_INT, r, k, MPI_COMM_WORLD);
      }
    }
    for (int r = 1; r < size; ++r) {
      int sum = -1;
      MPI_Recv(&sum, 1, MPI_INT, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      EXPECT(sum == rounds * r + (rounds - 1) * rounds / 2 + r * (rounds - 1) * rounds / 2 +
                        7 * rounds,
             "rank %d returned %d", r, sum);
    }
    EXPECT(sends == rounds * (size - 1), "%d sends counted", sends);
    EXPECT(recvs == size - 1, "%d receives counted", recvs);
    EXPECT(sent_bytes == (long)rounds * (size - 1) * 4 * (long)sizeof(int), "%ld bytes counted",
           sent_bytes);
  } else {
    int sum = 0;
    for (int k = 0; k < rounds; ++k) {
      int v[4] = {-1, -1, -1, -1};
      MPI_Recv(v, 4, MPI_INT, 0, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      EXPECT(v[0] == rank && v[1] == k && v[2] == rank * k && v[3] == 7, "message %d", k);
      sum += v[0] + v[1] + v[2] + v[3];
    }
    MPI_Send(&sum, 1, MPI_INT, 0, 99, MPI_COMM_WORLD);
    EXPECT(sends == 1, "%d sends counted", sends);
    EXPECT(recvs == rounds, "%d receives counted", recvs);
  }

  /* Iris's own calls between bindings stay inside Iris. */
  const int sends_before = sends;
  const int recvs_before = recvs;
  int value = rank;
  int total = 0;
  MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Allreduce(&rank, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT(value == 0 && total == size * (size - 1) / 2, "bcast %d, allreduce %d", value, total);
  int got = -1;
  MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 5, &got, 1, MPI_INT, (rank - 1 + size) % size,
               5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  EXPECT(got == (rank - 1 + size) % size, "sendrecv gave %d", got);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT(sends == sends_before && recvs == recvs_before,
         "collectives and Sendrecv reached the wrappers (%d sends, %d receives)",
         sends - sends_before, recvs - recvs_before);
  const int sizes[2] = {4, 6};
  const int subsizes[2] = {2, 3};
  const int starts[2] = {1, 2};
  MPI_Datatype sub;
  MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &sub);
  MPI_Aint lb = -1;
  MPI_Aint extent = -1;
  MPI_Type_get_extent(sub, &lb, &extent);
  EXPECT(lb == 0 && extent == 24 * (MPI_Aint)sizeof(int), "subarray lb %ld extent %ld", (long)lb,
         (long)extent);
  EXPECT(resizes == 0, "Iris's own Type_create_resized reached the wrapper %d times", resizes);
  MPI_Datatype resized;
  MPI_Type_create_resized(MPI_INT, 0, 8, &resized);
  EXPECT(resizes == 1, "%d resizes counted", resizes);
  MPI_Type_free(&resized);
  MPI_Type_free(&sub);

  int all = 0;
  PMPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && all == 0) printf("pmpi: all checks passed on %d ranks\n", size);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
