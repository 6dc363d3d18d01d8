/* threads' phases about waiting and the call lock (threads.c's main runs
 * them, and its first comment describes them):
 *   F. one thread blocked in MPI_Recv while the others send and receive;
 *   G. a receive posted while another thread of its rank waits in a blocking
 *      rendezvous MPI_Send;
 *   J. a large message received while another thread holds the call lock;
 *   K. the same sent while another thread holds the call lock. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "threads.h"

/* F. Thread 0 blocks in MPI_Recv for a message the others send last. */
static pthread_barrier_t others_done;

static void *blocked(void *arg) {
  const int t = (int)*(long *)arg;
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  if (t == 0) {
    int word = -1;
    MPI_Status st;
    MPI_Recv(&word, 1, MPI_INT, from, 99, own[0], &st);
    TCHECK(word == from * 7 && st.MPI_SOURCE == from, "blocked receive got %d", word);
    return NULL;
  }
  for (int seq = 0; seq < messages; ++seq) {
    unsigned char out[64], in[64];
    fill(out, 64, rank, t, seq);
    MPI_Sendrecv(out, 64, MPI_BYTE, to, t, in, 64, MPI_BYTE, from, t, own[t], MPI_STATUS_IGNORE);
    const int at = bad_byte(in, 64, from, t, seq);
    TCHECK(at < 0, "thread %d message %d: byte %d differs", t, seq, at);
  }
  pthread_barrier_wait(&others_done);
  if (t == 1) {
    const int word = rank * 7;
    MPI_Send(&word, 1, MPI_INT, to, 99, own[0]);
  }
  return NULL;
}

void blocked_run(void) {
  pthread_barrier_init(&others_done, NULL, T - 1);
  run_threads(blocked);
  pthread_barrier_destroy(&others_done);
}

/* G. Thread 1 posts, then makes no MPI call until thread 0's blocking
 * rendezvous send to the right neighbour has finished. */
static pthread_barrier_t posted, sent;
static int wild;
int rendezvous_bytes = 70000; /* past the live eager limit */

static void *left_posted(void *arg) {
  const int t = (int)*(long *)arg;
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  const int big = rendezvous_bytes;
  if (t > 1) return NULL;
  unsigned char *data = malloc(big);
  if (t == 1) {
    int word = -1;
    MPI_Request reqs[2];
    /* The first receive of a fresh thread fills its request cache under the
     * call lock; the second may then be posted without it. */
    MPI_Irecv(&word, 1, MPI_INT, from, 6, own[t], &reqs[0]);
    pthread_barrier_wait(&posted);
    const struct timespec later = {0, 20 * 1000 * 1000};
    nanosleep(&later, NULL);
    MPI_Irecv(data, big, MPI_BYTE, wild ? MPI_ANY_SOURCE : from, wild ? MPI_ANY_TAG : 7, own[t],
              &reqs[1]);
    pthread_barrier_wait(&sent); /* no MPI call from here until the send finished */
    MPI_Status st[2];
    MPI_Waitall(2, reqs, st);
    TCHECK(word == from * 5 + t, "thread %d: small message %d", t, word);
    TCHECK(st[1].MPI_SOURCE == from && st[1].MPI_TAG == 7, "thread %d: from %d tag %d", t,
           st[1].MPI_SOURCE, st[1].MPI_TAG);
    const int at = bad_byte(data, big, from, t, 0);
    TCHECK(at < 0, "thread %d: rendezvous message: byte %d differs", t, at);
  } else {
    const int word = rank * 5 + t + 1;
    fill(data, big, rank, t + 1, 0);
    pthread_barrier_wait(&posted);
    MPI_Send(data, big, MPI_BYTE, to, 7, own[t + 1]);
    MPI_Send(&word, 1, MPI_INT, to, 6, own[t + 1]);
    pthread_barrier_wait(&sent);
  }
  free(data);
  return NULL;
}

void left_posted_run(void) {
  pthread_barrier_init(&posted, NULL, 2);
  pthread_barrier_init(&sent, NULL, 2);
  for (wild = 0; wild < 2; ++wild) run_threads(left_posted);
  pthread_barrier_destroy(&posted);
  pthread_barrier_destroy(&sent);
}

/* J. Thread 0 of the even rank of a pair holds the call lock in a user op
 * while thread 1 receives a large message from the odd rank. Each round,
 * thread 1 posts its receive first and tells the odd rank to send only once
 * the hold has begun, so that the message can neither arrive before its
 * receive (unexpected: answered by the call lock's holder) nor complete
 * before the hold. */
enum { held_bytes = 1 << 20, held_rounds = 5 };
int expect_aside;
static pthread_barrier_t hold_ready, hold_done;
static int holding;       /* the user op has begun: atomics */
static int received_flag; /* thread 1's receive is done: atomics */
static int held_sends;    /* K: thread 1 of the even rank sends instead */
static int hold_round;
static int held_delivered; /* a round's receive completed during the hold */
static double held_seconds;

static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void pause_briefly(void) {
  const struct timespec pause = {0, 100 * 1000};
  nanosleep(&pause, NULL);
}

/* Runs with the call lock held; makes no MPI call. */
static void hold_op(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)in, (void)inout, (void)len, (void)type;
  const double limit = hold_round == 0 || !expect_aside ? 0.5 : 5.0;
  const double start = seconds_now();
  __atomic_store_n(&holding, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&received_flag, __ATOMIC_ACQUIRE) && seconds_now() - start < limit) {
    pause_briefly();
  }
  held_delivered = __atomic_load_n(&received_flag, __ATOMIC_ACQUIRE);
  held_seconds = seconds_now() - start;
}

static void *held_lock(void *arg) {
  const int t = (int)*(long *)arg;
  const int partner = rank ^ 1;
  if (t > 1 || partner >= size) return NULL;
  const int holder = rank % 2 == 0;
  unsigned char *data = malloc(held_bytes);
  int go = 1;
  if (!holder) {
    /* The odd rank's thread 0 sends (J) or receives (K) a message for each
     * go it gets. */
    for (int round = 0; t == 0; ++round) {
      MPI_Recv(&go, 1, MPI_INT, partner, 8000, own[0], MPI_STATUS_IGNORE);
      if (!go) break;
      if (!held_sends) {
        fill(data, held_bytes, rank, 1, round);
        MPI_Send(data, held_bytes, MPI_BYTE, partner, 8001, own[1]);
        continue;
      }
      MPI_Recv(data, held_bytes, MPI_BYTE, partner, 8001, own[1], MPI_STATUS_IGNORE);
      const int at = bad_byte(data, held_bytes, partner, 1, round);
      TCHECK(at < 0, "round %d: byte %d of a message sent during a hold differs", round, at);
    }
    free(data);
    return NULL;
  }
  MPI_Op hold;
  if (t == 0) MPI_Op_create(hold_op, 1, &hold);
  if (t == 1) {
    /* A fresh thread's first receive fills its request cache under the call
     * lock, so that the next is posted without it. */
    MPI_Request warm;
    MPI_Irecv(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, own[1], &warm);
    MPI_Wait(&warm, MPI_STATUS_IGNORE);
  }
  const int rounds = expect_aside ? held_rounds : 1;
  int delivered = 0;
  char outcomes[held_rounds * 32] = "";
  for (int round = 0; round < rounds && !delivered; ++round) {
    MPI_Request message = MPI_REQUEST_NULL;
    if (t == 1 && held_sends) {
      fill(data, held_bytes, rank, 1, round);
      MPI_Isend(data, held_bytes, MPI_BYTE, partner, 8001, own[1], &message);
    } else if (t == 1) {
      MPI_Irecv(data, held_bytes, MPI_BYTE, partner, 8001, own[1], &message);
    }
    pthread_barrier_wait(&hold_ready);
    if (t == 0) {
      hold_round = round;
      int a = 1, b = 2;
      MPI_Reduce_local(&a, &b, 1, MPI_INT, hold);
    } else {
      /* The go goes out during the hold where a small send may go without
       * the call lock (else after it, and the round fails). */
      while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE)) pause_briefly();
      MPI_Send(&go, 1, MPI_INT, partner, 8000, own[0]);
      MPI_Status st;
      MPI_Wait(&message, &st);
      __atomic_store_n(&received_flag, 1, __ATOMIC_RELEASE);
      if (!held_sends) {
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        TCHECK(count == held_bytes && st.MPI_SOURCE == partner, "round %d: %d bytes from %d", round,
               count, st.MPI_SOURCE);
        const int at = bad_byte(data, held_bytes, partner, 1, round);
        TCHECK(at < 0, "round %d: byte %d of a message received during a hold differs", round, at);
      }
    }
    pthread_barrier_wait(&hold_done);
    delivered = held_delivered;
    if (t == 0) {
      const size_t used = strlen(outcomes);
      snprintf(outcomes + used, sizeof outcomes - used, " %d:%s after %.3f s", round,
               delivered ? "in" : "out", held_seconds);
      __atomic_store_n(&received_flag, 0, __ATOMIC_RELEASE);
      __atomic_store_n(&holding, 0, __ATOMIC_RELEASE);
    }
    pthread_barrier_wait(&hold_ready); /* both saw `delivered` and the reset */
  }
  if (t == 0) {
    go = 0;
    MPI_Send(&go, 1, MPI_INT, partner, 8000, own[0]);
    MPI_Op_free(&hold);
    TCHECK(delivered || !expect_aside,
           "no large message was %s while another thread held the call lock in %d rounds "
           "(each round: in or out of the hold, and the hold's length:%s)",
           held_sends ? "sent" : "received", rounds, outcomes);
  }
  free(data);
  return NULL;
}

void held_lock_run(void) {
  pthread_barrier_init(&hold_ready, NULL, 2);
  pthread_barrier_init(&hold_done, NULL, 2);
  for (held_sends = 0; held_sends < 2; ++held_sends) run_threads(held_lock);
  pthread_barrier_destroy(&hold_ready);
  pthread_barrier_destroy(&hold_done);
}
