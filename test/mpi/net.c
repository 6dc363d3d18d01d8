/* Checks that only make sense through a netmod, run by netns_test and
 * jobs_test with the ranks on different (simulated or namespaced) nodes:
 *
 *   net volume MIB   ranks 0 and 1 each send MIB MiB to the other in 1 MiB
 *                    messages, every byte checked (the namespace test
 *                    counts what crossed the veth)
 *   net huge MIB     rank 0 sends one message of MIB MiB (a datatype of
 *                    1 MiB blocks: more than 2 GiB needs one) to rank 1,
 *                    which checks it
 *   net die          rank 1 dies (SIGKILL) in the middle of a large
 *                    transfer from rank 0; the job must end, not hang */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { mib = 1 << 20 };

static unsigned char byte_at(uint64_t i, int seed) {
  return (unsigned char)((i * 131 + (i >> 20) * 7 + (uint64_t)seed) & 0xff);
}

static void volume(int rank, int mibs) {
  if (rank > 1) return;
  const int peer = 1 - rank;
  unsigned char *out = malloc(mib);
  unsigned char *in = malloc(mib);
  for (int m = 0; m < mibs; ++m) {
    for (uint64_t i = 0; i < mib; ++i) out[i] = byte_at(i, rank * 1000 + m);
    MPI_Sendrecv(out, mib, MPI_BYTE, peer, m, in, mib, MPI_BYTE, peer, m, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < mib; ++i) bad += in[i] != byte_at(i, peer * 1000 + m);
    CHECK(bad == 0, "message %d: %llu bytes wrong", m, (unsigned long long)bad);
  }
  free(out);
  free(in);
}

/* Word-sized pattern, so that filling and checking gigabytes stays quick. */
static uint64_t word_at(uint64_t i) {
  return i * 0x9e3779b97f4a7c15ULL + 5;
}

static void huge(int rank, int mibs) {
  if (rank > 1) return;
  const uint64_t bytes = (uint64_t)mibs * mib;
  const uint64_t words = bytes / sizeof(uint64_t);
  MPI_Datatype block;
  MPI_Type_contiguous(mib, MPI_BYTE, &block);
  MPI_Type_commit(&block);
  uint64_t *buf = malloc(bytes);
  CHECK(buf != NULL, "cannot allocate %llu bytes", (unsigned long long)bytes);
  if (buf == NULL) return;
  if (rank == 0) {
    for (uint64_t i = 0; i < words; ++i) buf[i] = word_at(i);
    MPI_Send(buf, mibs, block, 1, 0, MPI_COMM_WORLD);
  } else {
    memset(buf, 0, bytes);
    MPI_Status st;
    MPI_Recv(buf, mibs, block, 0, 0, MPI_COMM_WORLD, &st);
    int count = -1;
    MPI_Get_count(&st, block, &count);
    CHECK(count == mibs, "received %d blocks of %d", count, mibs);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < words; ++i) bad += buf[i] != word_at(i);
    CHECK(bad == 0, "%llu of %llu words wrong", (unsigned long long)bad, (unsigned long long)words);
  }
  free(buf);
  MPI_Type_free(&block);
}

static void die(int rank) {
  const int bytes = 64 * mib;
  unsigned char *buf = calloc(bytes, 1);
  if (rank == 0) {
    MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    CHECK(0, "the send to a rank that died completed");
  } else if (rank == 1) {
    MPI_Request r;
    MPI_Irecv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
    int done = 0;
    for (int i = 0; i < 200 && !done; ++i) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    raise(SIGKILL);
  } else {
    /* The others wait for a message that never comes. */
    MPI_Recv(buf, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  free(buf);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *mode = argc > 1 ? argv[1] : "";
  const int amount = argc > 2 ? atoi(argv[2]) : 1;
  if (size < 2) {
    CHECK(0, "net needs at least 2 ranks");
  } else if (strcmp(mode, "volume") == 0) {
    volume(rank, amount);
  } else if (strcmp(mode, "huge") == 0) {
    huge(rank, amount);
  } else if (strcmp(mode, "die") == 0) {
    die(rank);
  } else {
    CHECK(0, "unknown mode '%s'", mode);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("net %s: all checks passed\n", mode);
  return finish();
}
