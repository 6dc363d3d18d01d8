/* threads' communicator phases (threads.c's main runs them, and its first
 * comment describes them):
 *   E. Comm_dup, Comm_split, Allreduce and Iallreduce from every thread at
 *      once, each on its own parent communicator;
 *   I. intercommunicators from every thread at once: created, duplicated,
 *      split and merged, with messages across each. */
#include <stdlib.h>

#include "threads.h"

/* E. Constructors from every thread, each on its own parent. */
void *constructors(void *arg) {
  const int t = (int)*(long *)arg;
  for (int round = 0; round < 3; ++round) {
    MPI_Comm dup, split;
    TCHECK(MPI_Comm_dup(own[t], &dup) == MPI_SUCCESS, "thread %d dup", t);
    TCHECK(MPI_Comm_split(dup, rank % 2, size - rank, &split) == MPI_SUCCESS, "split");
    int n = -1, me = -1;
    MPI_Comm_size(split, &n);
    MPI_Comm_rank(split, &me);
    const int same = (size - rank % 2 + 1) / 2; /* ranks of this parity */
    TCHECK(n == same, "thread %d: split of %d ranks, want %d", t, n, same);
    TCHECK(me == (size - 1 - rank) / 2, "thread %d: rank %d in the split", t, me);
    int sum = -1;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, split);
    int want = 0;
    for (int r = rank % 2; r < size; r += 2) want += r;
    TCHECK(sum == want, "thread %d: allreduce %d, want %d", t, sum, want);
    int word = t * 10 + round, heard = -1;
    MPI_Sendrecv(&word, 1, MPI_INT, (rank + 1) % size, 5, &heard, 1, MPI_INT,
                 (rank + size - 1) % size, 5, dup, MPI_STATUS_IGNORE);
    TCHECK(heard == word, "thread %d: heard %d on its dup", t, heard);
    int total = -1;
    MPI_Request coll;
    MPI_Iallreduce(&word, &total, 1, MPI_INT, MPI_SUM, dup, &coll);
    MPI_Wait(&coll, MPI_STATUS_IGNORE);
    TCHECK(total == size * word, "thread %d: iallreduce %d, want %d", t, total, size * word);
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
  }
  return NULL;
}

/* I. Every rank of the other group sends every rank of this one a message
 * of this thread's; received with wildcards, each sender once. */
static int world_of_remote(int color, int r) {
  return 2 * r + (1 - color);
}

static void across(MPI_Comm inter, int t, int seq, int color) {
  int local_n = -1, remote_n = -1;
  MPI_Comm_size(inter, &local_n);
  MPI_Comm_remote_size(inter, &remote_n);
  const int evens = (size + 1) / 2;
  TCHECK(local_n == (color == 0 ? evens : size - evens) && remote_n == size - local_n,
         "thread %d: groups of %d and %d", t, local_n, remote_n);
  const int n = size_of(seq, t);
  unsigned char *out = malloc(70000), *in = malloc(70000);
  MPI_Request *sends = malloc(sizeof(MPI_Request) * (size_t)remote_n);
  int *heard = calloc((size_t)remote_n, sizeof(int));
  fill(out, n, rank, t, seq);
  for (int r = 0; r < remote_n; ++r) MPI_Isend(out, n, MPI_BYTE, r, seq % 7, inter, &sends[r]);
  for (int k = 0; k < remote_n; ++k) {
    MPI_Status st;
    MPI_Recv(in, 70000, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &st);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    const int src = st.MPI_SOURCE;
    TCHECK(src >= 0 && src < remote_n && st.MPI_TAG == seq % 7 && count == n,
           "thread %d message %d: from %d tag %d, %d bytes (want %d)", t, seq, src, st.MPI_TAG,
           count, n);
    if (src < 0 || src >= remote_n || count != n) continue;
    TCHECK(heard[src]++ == 0, "thread %d message %d: twice from %d", t, seq, src);
    const int at = bad_byte(in, n, world_of_remote(color, src), t, seq);
    TCHECK(at < 0, "thread %d message %d from %d: byte %d differs", t, seq, src, at);
  }
  MPI_Waitall(remote_n, sends, MPI_STATUSES_IGNORE);
  free(heard);
  free(sends);
  free(in);
  free(out);
}

/* A ring over the merged communicator (the even ranks first). */
static void merged_ring(MPI_Comm merged, int t, int seq) {
  const int evens = (size + 1) / 2;
  int me = -1, n = -1;
  MPI_Comm_rank(merged, &me);
  MPI_Comm_size(merged, &n);
  TCHECK(n == size && me == (rank % 2 == 0 ? rank / 2 : evens + rank / 2),
         "thread %d: rank %d of %d in the merged communicator", t, me, n);
  const int left = (me + n - 1) % n;
  const int left_world = left < evens ? 2 * left : 2 * (left - evens) + 1;
  const int bytes = size_of(seq, t);
  unsigned char *out = malloc(70000), *in = malloc(70000);
  fill(out, bytes, rank, t, seq);
  MPI_Status st;
  MPI_Sendrecv(out, bytes, MPI_BYTE, (me + 1) % n, 3, in, 70000, MPI_BYTE, MPI_ANY_SOURCE,
               MPI_ANY_TAG, merged, &st);
  int count = -1;
  MPI_Get_count(&st, MPI_BYTE, &count);
  TCHECK(st.MPI_SOURCE == left && st.MPI_TAG == 3 && count == bytes,
         "thread %d merged: from %d tag %d, %d bytes", t, st.MPI_SOURCE, st.MPI_TAG, count);
  if (count == bytes) {
    const int at = bad_byte(in, bytes, left_world, t, seq);
    TCHECK(at < 0, "thread %d merged message %d: byte %d differs", t, seq, at);
  }
  free(in);
  free(out);
}

void *intercomms(void *arg) {
  const int t = (int)*(long *)arg;
  const int color = rank % 2;
  for (int round = 0; round < 4; ++round) {
    MPI_Comm parent, half, inter, dup, split, merged;
    TCHECK(MPI_Comm_dup(own[t], &parent) == MPI_SUCCESS, "thread %d dup", t);
    TCHECK(MPI_Comm_split(parent, color, rank, &half) == MPI_SUCCESS, "thread %d split", t);
    /* The leaders are rank 0 of each half: world (and parent) ranks 0 and 1. */
    TCHECK(MPI_Intercomm_create(half, 0, parent, 1 - color, 40 + t, &inter) == MPI_SUCCESS,
           "thread %d Intercomm_create", t);
    TCHECK(MPI_Comm_dup(inter, &dup) == MPI_SUCCESS, "thread %d dup of the intercomm", t);
    TCHECK(MPI_Comm_split(inter, 0, rank, &split) == MPI_SUCCESS, "thread %d inter split", t);
    TCHECK(MPI_Intercomm_merge(inter, color, &merged) == MPI_SUCCESS, "thread %d merge", t);
    const int seq = round * 8;
    across(inter, t, seq, color);
    across(dup, t, seq + 1, color);
    across(split, t, seq + 2, color);
    merged_ring(merged, t, seq + 3);
    across(inter, t, seq + 4, color);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Comm_free(&parent);
  }
  return NULL;
}
