/* A randomized many-to-many message storm. Every rank sends `count` messages
 * of random sizes and tags to random peers (itself included) and receives
 * what the others sent it, with wildcards, checking every byte and that each
 * sender's messages arrive in the order they were sent.
 *
 *   storm [seed] [count]
 *
 * Every rank derives every other rank's schedule from the seed, so each knows
 * exactly what it must receive. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct {
  int dest;
  int tag;
  int bytes;
} message;

static uint64_t next_random(uint64_t *state) {
  /* xorshift64*: fast and the same on every rank. */
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 2685821657736338717ULL;
}

/* Edges of every protocol limit (edge_sizes: the inline unexpected bytes,
 * eager limits, fragments up to largest_message), plus multi-fragment
 * sizes; the same on every rank. */
enum { largest_message = 262144 };
static int sizes[24];
static int size_count;

static int pick_size(uint64_t *state) {
  const uint64_t r = next_random(state);
  if (r % 3 == 0) return (int)(next_random(state) % 2048);
  return sizes[r % (uint64_t)size_count];
}

static message *schedule(int source, int size, int count, uint64_t seed) {
  message *m = malloc(sizeof(message) * (size_t)count);
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)source * 7919 + 1;
  for (int i = 0; i < count; ++i) {
    m[i].dest = (int)(next_random(&state) % (uint64_t)size);
    m[i].tag = (int)(next_random(&state) % 5);
    m[i].bytes = pick_size(&state);
  }
  return m;
}

static unsigned char pattern(int source, int index, int offset) {
  return (unsigned char)(source * 131 + index * 31 + offset * 7 + (offset >> 8));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
  const int count = argc > 2 ? atoi(argv[2]) : 200;

  size_count = edge_sizes(sizes, largest_message);
  sizes[size_count++] = 4096;
  sizes[size_count++] = 100003;
  sizes[size_count++] = largest_message;
  message **plans = malloc(sizeof(message *) * (size_t)size);
  for (int s = 0; s < size; ++s) plans[s] = schedule(s, size, count, seed);

  /* Send everything first, nonblocking: receivers must keep accepting. */
  MPI_Request *requests = malloc(sizeof(MPI_Request) * (size_t)count);
  unsigned char **buffers = malloc(sizeof(unsigned char *) * (size_t)count);
  for (int i = 0; i < count; ++i) {
    const message *m = &plans[rank][i];
    buffers[i] = malloc((size_t)m->bytes + 1);
    for (int j = 0; j < m->bytes; ++j) buffers[i][j] = pattern(rank, i, j);
    MPI_Isend(buffers[i], m->bytes, MPI_BYTE, m->dest, m->tag, MPI_COMM_WORLD, &requests[i]);
  }

  /* What this rank must receive, per source, in send order. */
  int expected_total = 0;
  int *next_index = calloc((size_t)size, sizeof(int));
  for (int s = 0; s < size; ++s) {
    for (int i = 0; i < count; ++i) expected_total += plans[s][i].dest == rank;
  }
  unsigned char *in = malloc(largest_message + 64);
  for (int received = 0; received < expected_total; ++received) {
    MPI_Status status;
    if (received % 2 == 0) {
      /* Probe any, then receive exactly that message by source and tag. */
      MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
      MPI_Recv(in, largest_message + 64, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
               MPI_COMM_WORLD, &status);
    } else {
      MPI_Request r;
      MPI_Irecv(in, largest_message + 64, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                &r);
      MPI_Wait(&r, &status);
    }
    const int s = status.MPI_SOURCE;
    CHECK(s >= 0 && s < size, "source %d", s);
    if (s < 0 || s >= size) break;
    /* The next message source s sent to this rank. */
    int i = next_index[s];
    while (i < count && plans[s][i].dest != rank) ++i;
    CHECK(i < count, "an extra message from rank %d", s);
    if (i >= count) break;
    next_index[s] = i + 1;
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    CHECK(status.MPI_TAG == plans[s][i].tag, "message %d from %d: tag %d, sent %d", i, s,
          status.MPI_TAG, plans[s][i].tag);
    CHECK(bytes == plans[s][i].bytes, "message %d from %d: %d bytes, sent %d (out of order?)", i, s,
          bytes, plans[s][i].bytes);
    for (int j = 0; j < bytes && j < plans[s][i].bytes; ++j) {
      if (in[j] != pattern(s, i, j)) {
        CHECK(in[j] == pattern(s, i, j), "message %d from %d: byte %d differs", i, s, j);
        break;
      }
    }
  }
  MPI_Waitall(count, requests, MPI_STATUSES_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) {
    printf("storm: %d ranks, %d messages each, all bytes and orders checked\n", size, count);
  }
  for (int i = 0; i < count; ++i) free(buffers[i]);
  for (int s = 0; s < size; ++s) free(plans[s]);
  free(buffers);
  free(requests);
  free(plans);
  free(next_index);
  free(in);
  return finish();
}
