/* Legal programs that a runtime without flow control or with a fetch
 * deadlock would hang or blow up on (seed: "must continue accepting
 * messages, even when cannot source msgs"):
 *   exchange  two ranks Isend hundreds of messages to each other first
 *   all       every rank sends to every other before receiving
 *   flood     all ranks flood rank 0 with thousands of unexpected messages;
 *             its unexpected eager memory must stay within the eager
 *             window per sender
 *   order     one sender mixes eager and rendezvous sizes; the receiver
 *             pre-posts ANY_SOURCE/ANY_TAG receives: message i must land
 *             in receive i whatever protocol it took
 *   returned  a sender out of credits sends again after the receiver has
 *             returned them but before anything has polled: the send must
 *             take them and go eager, not fall back to rendezvous */
#define _DEFAULT_SOURCE /* mkstemp, usleep */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int rank;
static int size;

static int size_of(int i) {
  static const int sizes[] = {0, 8, 1000, 16384, 16385, 70000, 3, 300000};
  return sizes[i % 8];
}

static void fill(unsigned char *p, int n, int seed) {
  for (int i = 0; i < n; ++i) p[i] = (unsigned char)(seed * 7 + i);
}

static int intact(const unsigned char *p, int n, int seed) {
  for (int i = 0; i < n; ++i) {
    if (p[i] != (unsigned char)(seed * 7 + i)) return 0;
  }
  return 1;
}

/* Sends `count` messages of mixed sizes to every rank in `peers` before
 * receiving any, then receives theirs with exact sources and tags. */
static void send_all_first(const int *peers, int npeers, int count) {
  const int total = npeers * count;
  MPI_Request *requests = malloc(sizeof(MPI_Request) * (size_t)total * 2);
  unsigned char **out = malloc(sizeof(unsigned char *) * (size_t)total);
  unsigned char **in = malloc(sizeof(unsigned char *) * (size_t)total);
  for (int k = 0; k < total; ++k) {
    const int peer = peers[k % npeers];
    const int i = k / npeers;
    out[k] = malloc((size_t)size_of(i) + 1);
    fill(out[k], size_of(i), rank * 1000 + i);
    MPI_Isend(out[k], size_of(i), MPI_BYTE, peer, i, MPI_COMM_WORLD, &requests[k]);
  }
  for (int k = 0; k < total; ++k) {
    const int peer = peers[k % npeers];
    const int i = k / npeers;
    in[k] = malloc((size_t)size_of(i) + 1);
    MPI_Irecv(in[k], size_of(i), MPI_BYTE, peer, i, MPI_COMM_WORLD, &requests[total + k]);
  }
  MPI_Waitall(total * 2, requests, MPI_STATUSES_IGNORE);
  for (int k = 0; k < total; ++k) {
    const int peer = peers[k % npeers];
    const int i = k / npeers;
    CHECK(intact(in[k], size_of(i), peer * 1000 + i), "message %d from %d corrupted", i, peer);
    free(out[k]);
    free(in[k]);
  }
  free(requests);
  free(out);
  free(in);
}

static void exchange(void) {
  if (size < 2 || rank > 1) return;
  const int peer = 1 - rank;
  send_all_first(&peer, 1, 400);
}

static void all_to_all(void) {
  int *peers = malloc(sizeof(int) * (size_t)size);
  for (int i = 0; i < size; ++i) peers[i] = (rank + 1 + i) % size;
  send_all_first(peers, size, 24);
  free(peers);
}

static void flood(void) {
  const int per_sender = 2000;
  if (rank != 0) {
    int value[4];
    for (int i = 0; i < per_sender; ++i) {
      value[0] = rank;
      value[1] = i;
      MPI_Send(value, 4, MPI_INT, 0, 7, MPI_COMM_WORLD);
    }
    return;
  }
  /* Let the flood pile up before receiving anything. */
  int waiting = 0;
  const double start = MPI_Wtime();
  while (MPI_Wtime() - start < 0.3)
    MPI_Iprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &waiting, MPI_STATUS_IGNORE);
  int *next = calloc((size_t)size, sizeof(int));
  for (int k = 0; k < per_sender * (size - 1); ++k) {
    int value[4];
    MPI_Status st;
    MPI_Recv(value, 4, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st);
    const int s = st.MPI_SOURCE;
    CHECK(value[0] == s && value[1] == next[s], "from %d got #%d, expected #%d", s, value[1],
          next[s]);
    next[s] = value[1] + 1;
  }
  free(next);
  MPI_Count peak = -1;
  MPI_Count bound = 0;
  MPIX_Stat_get("unexpected_bytes_peak", &peak);
  MPIX_Stat_get("unexpected_bytes_bound", &bound); /* the peers' credit windows, summed */
  CHECK(peak <= bound, "unexpected eager memory peaked at %lld bytes, bound %lld", (long long)peak,
        (long long)bound);
  if (size > 1)
    printf("flood: peak unexpected eager memory %lld bytes (bound %lld)\n", (long long)peak,
           (long long)bound);
}

static void mixed_order(void) {
  if (size < 2 || rank > 1) return;
  const int count = 64;
  const int biggest = 300000;
  if (rank == 1) {
    MPI_Request *r = malloc(sizeof(MPI_Request) * count);
    unsigned char **out = malloc(sizeof(unsigned char *) * count);
    for (int i = 0; i < count; ++i) {
      out[i] = malloc((size_t)size_of(i) + 4);
      fill(out[i], size_of(i), i);
      MPI_Isend(out[i], size_of(i), MPI_BYTE, 0, i % 3, MPI_COMM_WORLD, &r[i]);
    }
    MPI_Waitall(count, r, MPI_STATUSES_IGNORE);
    for (int i = 0; i < count; ++i) free(out[i]);
    free(out);
    free(r);
    return;
  }
  MPI_Request *r = malloc(sizeof(MPI_Request) * count);
  MPI_Status *st = malloc(sizeof(MPI_Status) * count);
  unsigned char *in = malloc((size_t)count * biggest);
  for (int i = 0; i < count; ++i) {
    MPI_Irecv(in + (size_t)i * biggest, biggest, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
              MPI_COMM_WORLD, &r[i]);
  }
  MPI_Waitall(count, r, st);
  for (int i = 0; i < count; ++i) {
    int n = -1;
    MPI_Get_count(&st[i], MPI_BYTE, &n);
    CHECK(n == size_of(i) && st[i].MPI_TAG == i % 3 && intact(in + (size_t)i * biggest, n, i),
          "receive %d got %d bytes tag %d: out of order", i, n, st[i].MPI_TAG);
  }
  free(in);
  free(st);
  free(r);
}

static MPI_Count stat(const char *name) {
  MPI_Count value = -1;
  MPIX_Stat_get(name, &value);
  return value;
}

/* Rank 0 spends its credits at rank 1 (rank 1 receives nothing yet), so its
 * last message goes by rendezvous. Rank 1 then matches them all, which
 * returns the credits, and says so through a file, not MPI, so that rank 0
 * polls nothing in between. Rank 0's next eager-sized send must find the
 * returned credits itself. */
static void returned_credits(void) {
  if (size < 2 || rank > 1) return;
  enum { bytes = 1000, most = 100000, tag = 5 };
  char path[64] = "/tmp/iris-credits.XXXXXX";
  if (rank == 0) {
    const int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp failed");
    close(fd);
  }
  /* The path goes to rank 1 and a word comes back: whatever connects the
   * pair is up, both ways, before any credit moves. */
  int word = 0;
  if (rank == 0) {
    MPI_Send(path, sizeof path, MPI_CHAR, 1, tag, MPI_COMM_WORLD);
    MPI_Recv(&word, 1, MPI_INT, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(path, sizeof path, MPI_CHAR, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&word, 1, MPI_INT, 0, tag, MPI_COMM_WORLD);
  }
  char done_path[80];
  snprintf(done_path, sizeof done_path, "%s.done", path);
  static unsigned char out[bytes];
  MPI_Request *r = malloc(sizeof(MPI_Request) * (most + 1));
  int sent = 0;
  if (rank == 0) {
    const MPI_Count stalls = stat("credit_stalls");
    const MPI_Count eager = stat("eager");
    while (sent < most && stat("credit_stalls") == stalls) {
      MPI_Isend(out, bytes, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &r[sent++]);
      if (sent == 1 && stat("eager") == eager) break; /* this size never goes eager here */
    }
    const int eager_here = stat("eager") != eager;
    CHECK(sent < most, "%d sends never ran out of credits", sent);
    MPI_Send(&sent, 1, MPI_INT, 1, tag + 1, MPI_COMM_WORLD);
    for (int waited = 0; access(done_path, F_OK) != 0; ++waited) {
      CHECK(waited < 60000, "rank 1 never said it had received");
      if (waited >= 60000) break;
      usleep(1000);
    }
    const MPI_Count before = stat("credit_stalls");
    MPI_Isend(out, bytes, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &r[sent++]);
    CHECK(!eager_here || stat("credit_stalls") == before,
          "a send went by rendezvous although rank 1 had returned its credits");
    MPI_Waitall(sent, r, MPI_STATUSES_IGNORE);
    unlink(done_path);
    unlink(path);
  } else {
    static unsigned char in[bytes];
    MPI_Recv(&sent, 1, MPI_INT, 0, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < sent; ++i) {
      MPI_Irecv(in, bytes, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &r[i]);
    }
    FILE *done = fopen(done_path, "w");
    CHECK(done != NULL, "cannot create %s", done_path);
    if (done != NULL) fclose(done);
    MPI_Recv(in, bytes, MPI_BYTE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Waitall(sent, r, MPI_STATUSES_IGNORE);
  }
  free(r);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  void (*const phases[])(void) = {exchange, all_to_all, flood, mixed_order, returned_credits};
  for (unsigned i = 0; i < sizeof(phases) / sizeof(phases[0]); ++i) {
    phases[i]();
    MPI_Barrier(MPI_COMM_WORLD);
  }
  /* The device counts every single-copy read; shm's CMA and a netmod's RMA
   * are the transports' own counters, and a job without one reads 0. */
  const MPI_Count reads = stat("rendezvous_read");
  const MPI_Count cma = stat("rendezvous_cma"), rma = stat("rendezvous_rma");
  CHECK(reads >= 0 && cma >= 0 && rma >= 0 && cma + rma == reads,
        "rank %d: single-copy reads %lld, by cma %lld, by rma %lld", rank, (long long)reads,
        (long long)cma, (long long)rma);
  if (rank == 0 && check_failures == 0) printf("deadlock: all checks passed on %d ranks\n", size);
  return finish();
}
