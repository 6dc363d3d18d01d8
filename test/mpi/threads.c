/* MPI_THREAD_MULTIPLE: four threads per rank calling MPI at once.
 *   A. each thread on its own communicator and tag, a ring exchange of every
 *      protocol's sizes, checking every byte and the order;
 *   B. all threads on one communicator, receiving with MPI_ANY_SOURCE and
 *      MPI_ANY_TAG: each message arrives exactly once, in order per sender
 *      thread as each receiving thread sees them;
 *   C. the same through MPI_Mprobe / MPI_Improbe and MPI_Mrecv;
 *   D. one array of receive requests completed by Waitany, Test, Waitsome and
 *      Waitall from different threads, each on its own slice;
 *   E. Comm_dup, Comm_split, Allreduce and Iallreduce from every thread at
 *      once, each on its own parent communicator;
 *   F. one thread blocked in MPI_Recv while the others send and receive;
 *   G. a receive posted while another thread of its rank waits: thread 0 of
 *      every rank sends thread 1 of its right neighbour a rendezvous-sized
 *      message with a blocking MPI_Send; thread 1 posts the receive for it
 *      (then, in a second round, with MPI_ANY_SOURCE and MPI_ANY_TAG) 20 ms
 *      later, when thread 0 is most likely waiting, and makes no MPI call
 *      until the send has finished. The sends can only finish if thread 0's
 *      wait posts that receive (under MULTIPLE an MPI_Irecv may be posted by
 *      the next thread that holds the call lock, device/recv_multiple.hpp).
 *      Threads 2 and 3 make no call. The sleep only makes that order likely;
 *      nothing is timed.
 *   H. small messages finished without the call lock: each thread, on its
 *      own communicator, 300 windows of 8 Irecvs and 8 Isends of 0-64 bytes
 *      (most go at once, so their requests return to the thread's cache and
 *      their handles come back), finished in turn by MPI_Waitall, MPI_Wait
 *      on each (sends first), MPI_Test loops, and MPI_Waitany, MPI_Testany,
 *      MPI_Testall, MPI_Waitsome and MPI_Testsome loops (then once more on
 *      the all-null array: MPI_UNDEFINED); every byte, count, source and tag
 *      checked, and every handle MPI_REQUEST_NULL after;
 *   I. intercommunicators from every thread at once: each thread splits a
 *      duplicate of its own communicator into the even and the odd ranks and
 *      joins the halves with MPI_Intercomm_create, duplicates the result
 *      (MPI_Comm_dup) and splits it (MPI_Comm_split), merges it
 *      (MPI_Intercomm_merge), sends across each with MPI_ANY_SOURCE and
 *      MPI_ANY_TAG and its own payload (two threads' communicators on one
 *      context would hand one thread's bytes to another: every byte, count,
 *      source and tag checked), and frees them all, four rounds.
 *   J. a large message received while another thread holds the call lock:
 *      in each pair of ranks (2k, 2k+1), thread 1 of the even rank receives
 *      a 1 MiB message (rendezvous, many data packets) with MPI_Irecv and
 *      MPI_Wait while its thread 0 sits in a user op of MPI_Reduce_local
 *      (user ops run with the call lock held) until that receive is done or
 *      a time limit passes. The receive is posted before, and the odd rank
 *      told to send during, the hold. Every byte is checked. With `aside` the transport must
 *      deliver it during the hold (an aside pass answers the RTS and copies
 *      the data: device/README.md, "Threads") in one of up to 5 rounds (the
 *      first may only switch aside passes on), and MPIX_Stat_get counts it
 *      in "rendezvous_aside" and "data_aside"; without it one round, with
 *      a short hold, checks the bytes only.
 *   K. the same with the roles turned: thread 1 of the even rank sends the
 *      1 MiB message (MPI_Isend, its RTS under the call lock before the
 *      hold; MPI_Wait during it) and the odd rank receives it once told to.
 *      With `aside` the send must complete during the hold (its CTS taken
 *      and its data written without the call lock: device/README.md,
 *      "Rendezvous sends without the call lock"), counted in
 *      "data_sent_aside".
 * Usage: threads [messages per thread] [aside] */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

enum { T = 4, MAXTAG = T };

static int rank, size, messages = 60;
static int eager_limit;
static MPI_Comm own[T]; /* one per thread */
static MPI_Comm shared;
static int failures; /* from threads: atomics */

#define TCHECK(cond, ...)                                                                  \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "rank %d: threads.c:%d: check failed: %s: ", rank, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                        \
      fputc('\n', stderr);                                                                 \
      __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);                                  \
    }                                                                                      \
  } while (0)

static unsigned char byte_of(int from, int t, int seq, int j) {
  return (unsigned char)(from * 131 + t * 17 + seq * 7 + j);
}

static int size_of(int seq, int t) {
  const int edge = eager_limit > 0 ? eager_limit : 1;
  const int sizes[] = {0, 1, 8, 200, edge - 1, edge, edge + 1, 70000};
  return sizes[(seq * 3 + t) % 8];
}

static void fill(unsigned char *buf, int n, int from, int t, int seq) {
  for (int j = 0; j < n; ++j) buf[j] = byte_of(from, t, seq, j);
}

static int bad_byte(const unsigned char *buf, int n, int from, int t, int seq) {
  for (int j = 0; j < n; ++j) {
    if (buf[j] != byte_of(from, t, seq, j)) return j;
  }
  return -1;
}

static void run_threads(void *(*body)(void *)) {
  pthread_t threads[T];
  long ids[T];
  for (int t = 0; t < T; ++t) {
    ids[t] = t;
    pthread_create(&threads[t], NULL, body, &ids[t]);
  }
  for (int t = 0; t < T; ++t) pthread_join(threads[t], NULL);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* A. A ring on the thread's own communicator and tag, windows of 4. */
static void *own_ring(void *arg) {
  const int t = (int)*(long *)arg;
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  enum { W = 4 };
  unsigned char *out[W], *in[W];
  for (int w = 0; w < W; ++w) {
    out[w] = malloc(70000);
    in[w] = malloc(70000);
  }
  for (int base = 0; base < messages; base += W) {
    MPI_Request reqs[2 * W];
    int n = 0;
    for (int w = 0; w < W && base + w < messages; ++w, ++n) {
      const int seq = base + w;
      MPI_Irecv(in[w], 70000, MPI_BYTE, from, t, own[t], &reqs[2 * w]);
      fill(out[w], size_of(seq, t), rank, t, seq);
      MPI_Isend(out[w], size_of(seq, t), MPI_BYTE, to, t, own[t], &reqs[2 * w + 1]);
    }
    MPI_Status statuses[2 * W];
    TCHECK(MPI_Waitall(2 * n, reqs, statuses) == MPI_SUCCESS, "thread %d", t);
    for (int w = 0; w < n; ++w) {
      const int seq = base + w;
      int count = -1;
      MPI_Get_count(&statuses[2 * w], MPI_BYTE, &count);
      TCHECK(count == size_of(seq, t), "thread %d message %d: %d bytes", t, seq, count);
      TCHECK(statuses[2 * w].MPI_SOURCE == from && statuses[2 * w].MPI_TAG == t, "thread %d", t);
      const int at = bad_byte(in[w], count, from, t, seq);
      TCHECK(at < 0, "thread %d message %d: byte %d differs", t, seq, at);
    }
  }
  for (int w = 0; w < W; ++w) {
    free(out[w]);
    free(in[w]);
  }
  return NULL;
}

/* H, modes 3-7: a window finished by MPI_Waitany, MPI_Testany, MPI_Testall,
 * MPI_Waitsome or MPI_Testsome, each status stored at its request's place;
 * then the all-null array: MPI_UNDEFINED. */
static void finish_window(int mode, int n, MPI_Request reqs[], MPI_Status statuses[], int t) {
  int left = n, index = -2, flag = 0, outcount = -2;
  int indices[16];
  MPI_Status one, some[16];
  while (left > 0) {
    switch (mode) {
      case 3:
      case 4:
        if (mode == 3) {
          TCHECK(MPI_Waitany(n, reqs, &index, &one) == MPI_SUCCESS, "thread %d waitany", t);
          flag = 1;
        } else {
          TCHECK(MPI_Testany(n, reqs, &index, &flag, &one) == MPI_SUCCESS, "thread %d testany", t);
        }
        if (!flag) {
          TCHECK(index == MPI_UNDEFINED, "thread %d: testany index %d without a flag", t, index);
          break;
        }
        TCHECK(index >= 0 && index < n && reqs[index] == MPI_REQUEST_NULL, "thread %d: index %d", t,
               index);
        if (index < 0 || index >= n) return;
        statuses[index] = one;
        --left;
        break;
      case 5:
        TCHECK(MPI_Testall(n, reqs, &flag, statuses) == MPI_SUCCESS, "thread %d testall", t);
        if (flag) left = 0;
        break;
      default:
        if (mode == 6) {
          TCHECK(MPI_Waitsome(n, reqs, &outcount, indices, some) == MPI_SUCCESS,
                 "thread %d waitsome", t);
          TCHECK(outcount >= 1, "thread %d: waitsome outcount %d", t, outcount);
        } else {
          TCHECK(MPI_Testsome(n, reqs, &outcount, indices, some) == MPI_SUCCESS,
                 "thread %d testsome", t);
        }
        if (outcount < 0 || outcount > left) return;
        for (int k = 0; k < outcount; ++k) {
          const int i = indices[k];
          TCHECK(i >= 0 && i < n && reqs[i] == MPI_REQUEST_NULL, "thread %d: index %d", t, i);
          if (i >= 0 && i < n) statuses[i] = some[k];
        }
        left -= outcount;
    }
  }
  index = flag = outcount = -2;
  switch (mode) {
    case 3:
      MPI_Waitany(n, reqs, &index, MPI_STATUS_IGNORE);
      TCHECK(index == MPI_UNDEFINED, "thread %d: waitany on nulls: %d", t, index);
      break;
    case 4:
      MPI_Testany(n, reqs, &index, &flag, MPI_STATUS_IGNORE);
      TCHECK(index == MPI_UNDEFINED && flag == 1, "thread %d: testany on nulls", t);
      break;
    case 5:
      MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
      TCHECK(flag == 1, "thread %d: testall on nulls", t);
      break;
    default:
      if (mode == 6) {
        MPI_Waitsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
      } else {
        MPI_Testsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
      }
      TCHECK(outcount == MPI_UNDEFINED, "thread %d: some on nulls: %d", t, outcount);
  }
}

/* H. Windows of small messages finished eight ways. */
static void *small_windows(void *arg) {
  const int t = (int)*(long *)arg;
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  enum { W = 8, ROUNDS = 300 };
  unsigned char out[W][64], in[W][64];
  for (int round = 0; round < ROUNDS; ++round) {
    MPI_Request reqs[2 * W];
    MPI_Status statuses[2 * W];
    for (int w = 0; w < W; ++w) {
      const int seq = round * W + w;
      const int n = (seq * 7 + t) % 65;
      MPI_Irecv(in[w], 64, MPI_BYTE, from, t, own[t], &reqs[w]);
      fill(out[w], n, rank, t, seq);
      MPI_Isend(out[w], n, MPI_BYTE, to, t, own[t], &reqs[W + w]);
    }
    const int mode = round % 8;
    if (mode >= 3) {
      finish_window(mode, 2 * W, reqs, statuses, t);
    } else if (mode == 0) {
      TCHECK(MPI_Waitall(2 * W, reqs, statuses) == MPI_SUCCESS, "thread %d waitall", t);
    } else {
      for (int k = 0; k < 2 * W; ++k) {
        const int i = (k + W) % (2 * W); /* the sends first: complete at once */
        if (mode == 1) {
          TCHECK(MPI_Wait(&reqs[i], &statuses[i]) == MPI_SUCCESS, "thread %d wait", t);
        } else {
          int flag = 0;
          while (!flag) MPI_Test(&reqs[i], &flag, &statuses[i]);
        }
      }
    }
    for (int w = 0; w < W; ++w) {
      const int seq = round * W + w;
      const int n = (seq * 7 + t) % 65;
      int count = -1;
      MPI_Get_count(&statuses[w], MPI_BYTE, &count);
      TCHECK(count == n, "thread %d message %d: %d bytes, not %d", t, seq, count, n);
      TCHECK(statuses[w].MPI_SOURCE == from && statuses[w].MPI_TAG == t, "thread %d status", t);
      const int at = bad_byte(in[w], count, from, t, seq);
      TCHECK(at < 0, "thread %d message %d: byte %d differs", t, seq, at);
      TCHECK(reqs[w] == MPI_REQUEST_NULL && reqs[W + w] == MPI_REQUEST_NULL,
             "thread %d round %d: a request left", t, round);
    }
  }
  return NULL;
}

/* B and C: every thread sends `messages` to every other rank with its own
 * tag, and receives as many with wildcards. seen[] counts each (source, tag,
 * seq) once; each receiving thread sees one sender thread's messages in
 * order. */
static int *seen;
static int probing;

static void *wildcards(void *arg) {
  const int t = (int)*(long *)arg;
  const int peers = size - 1;
  MPI_Request *sends = malloc(sizeof(MPI_Request) * (size_t)(messages * peers));
  int(*out)[16] = malloc(sizeof(int[16]) * (size_t)(messages * peers));
  int n = 0;
  for (int seq = 0; seq < messages; ++seq) {
    for (int p = 0; p < size; ++p) {
      if (p == rank) continue;
      out[n][0] = rank, out[n][1] = t, out[n][2] = seq;
      for (int k = 3; k < 16; ++k) out[n][k] = rank * 1000 + seq * 10 + k;
      MPI_Isend(out[n], seq % 5 == 0 ? 16 : 3, MPI_INT, p, t, shared, &sends[n]);
      ++n;
    }
  }
  int *last = malloc(sizeof(int) * (size_t)(size * MAXTAG));
  for (int k = 0; k < size * MAXTAG; ++k) last[k] = -1;
  for (int k = 0; k < n; ++k) {
    int in[16] = {0};
    MPI_Status st;
    if (probing) {
      MPI_Message msg = MPI_MESSAGE_NULL;
      if (t % 2 == 0) {
        MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, shared, &msg, &st);
      } else {
        int flag = 0;
        while (!flag) MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, shared, &flag, &msg, &st);
      }
      int probed = -1;
      MPI_Get_count(&st, MPI_INT, &probed);
      MPI_Mrecv(in, 16, MPI_INT, &msg, &st);
      int got = -1;
      MPI_Get_count(&st, MPI_INT, &got);
      TCHECK(probed == got && msg == MPI_MESSAGE_NULL, "thread %d: probed %d, got %d", t, probed,
             got);
    } else {
      MPI_Recv(in, 16, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, shared, &st);
    }
    const int src = st.MPI_SOURCE, tag = st.MPI_TAG;
    TCHECK(src >= 0 && src < size && src != rank && tag >= 0 && tag < MAXTAG, "src %d tag %d", src,
           tag);
    if (!(src >= 0 && src < size && tag >= 0 && tag < MAXTAG)) continue;
    TCHECK(in[0] == src && in[1] == tag, "thread %d: header %d %d from %d tag %d", t, in[0], in[1],
           src, tag);
    const int seq = in[2];
    TCHECK(seq > last[src * MAXTAG + tag], "thread %d: from %d tag %d: %d after %d", t, src, tag,
           seq, last[src * MAXTAG + tag]);
    last[src * MAXTAG + tag] = seq;
    if (seq >= 0 && seq < messages) {
      if (seq % 5 == 0) {
        for (int j = 3; j < 16; ++j) {
          TCHECK(in[j] == src * 1000 + seq * 10 + j, "thread %d: int %d of %d", t, j, seq);
        }
      }
      __atomic_fetch_add(&seen[(src * MAXTAG + tag) * messages + seq], 1, __ATOMIC_RELAXED);
    }
  }
  MPI_Waitall(n, sends, MPI_STATUSES_IGNORE);
  free(last);
  free(out);
  free(sends);
  return NULL;
}

static void wildcards_run(int probe) {
  probing = probe;
  seen = calloc((size_t)(size * MAXTAG * messages), sizeof(int));
  run_threads(wildcards);
  for (int src = 0; src < size; ++src) {
    for (int tag = 0; tag < MAXTAG; ++tag) {
      for (int seq = 0; seq < messages; ++seq) {
        const int want = src == rank ? 0 : 1;
        const int got = seen[(src * MAXTAG + tag) * messages + seq];
        CHECK(got == want, "%s: from %d tag %d message %d received %d times",
              probe ? "mprobe" : "recv", src, tag, seq, got);
      }
    }
  }
  free(seen);
}

/* D. One array of receives; thread t completes slice t its own way. */
enum { K = 6 };
static MPI_Request slice_reqs[T * K];
static unsigned char slice_in[T * K][256];

static void *slices(void *arg) {
  const int t = (int)*(long *)arg;
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  unsigned char out[K][256];
  MPI_Request sends[K];
  for (int k = 0; k < K; ++k) {
    fill(out[k], 256, rank, t, k);
    MPI_Isend(out[k], 256, MPI_BYTE, to, t * K + k, shared, &sends[k]);
  }
  MPI_Request *mine = &slice_reqs[t * K];
  int done = 0;
  if (t == 0) {
    for (; done < K; ++done) {
      int index = -1;
      MPI_Waitany(K, mine, &index, MPI_STATUS_IGNORE);
      TCHECK(index >= 0 && index < K && mine[index] == MPI_REQUEST_NULL, "waitany %d", index);
    }
  } else if (t == 1) {
    while (done < K) {
      for (int k = 0; k < K; ++k) {
        int flag = 0;
        if (mine[k] == MPI_REQUEST_NULL) continue;
        MPI_Test(&mine[k], &flag, MPI_STATUS_IGNORE);
        done += flag;
      }
    }
  } else if (t == 2) {
    while (done < K) {
      int outcount = 0, indices[K];
      MPI_Waitsome(K, mine, &outcount, indices, MPI_STATUSES_IGNORE);
      TCHECK(outcount >= 1, "waitsome %d", outcount);
      done += outcount;
    }
  } else {
    MPI_Waitall(K, mine, MPI_STATUSES_IGNORE);
    done = K;
  }
  for (int k = 0; k < K; ++k) {
    TCHECK(mine[k] == MPI_REQUEST_NULL, "thread %d request %d", t, k);
    const int at = bad_byte(slice_in[t * K + k], 256, from, t, k);
    TCHECK(at < 0, "thread %d slice %d: byte %d differs", t, k, at);
  }
  MPI_Waitall(K, sends, MPI_STATUSES_IGNORE);
  return NULL;
}

/* E. Constructors from every thread, each on its own parent. */
static void *constructors(void *arg) {
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

/* G. Thread 1 posts, then makes no MPI call until thread 0's blocking
 * rendezvous send to the right neighbour has finished. */
static pthread_barrier_t posted, sent;
static int wild;
static int rendezvous_bytes = 70000; /* past the live eager limit */

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

/* J. Thread 0 of the even rank of a pair holds the call lock in a user op
 * while thread 1 receives a large message from the odd rank. Each round,
 * thread 1 posts its receive first and tells the odd rank to send only once
 * the hold has begun, so that the message can neither arrive before its
 * receive (unexpected: answered by the call lock's holder) nor complete
 * before the hold. */
enum { held_bytes = 1 << 20, held_rounds = 5 };
static int expect_aside;
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

static void *intercomms(void *arg) {
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

int main(int argc, char **argv) {
  int provided = -1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1) messages = atoi(argv[1]);
  expect_aside = argc > 2 && strcmp(argv[2], "aside") == 0;
  CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
  int queried = -1;
  MPI_Query_thread(&queried);
  CHECK(queried == MPI_THREAD_MULTIPLE, "Query_thread says %d", queried);
  eager_limit = (int)iris_limit("eager_limit");
  if (eager_limit >= rendezvous_bytes) rendezvous_bytes = eager_limit + 1;
  if (eager_limit > 60000) eager_limit = 60000;
  for (int t = 0; t < T; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &own[t]);
  MPI_Comm_dup(MPI_COMM_WORLD, &shared);

  run_threads(own_ring);
  if (size > 1) {
    wildcards_run(0);
    wildcards_run(1);
  }
  for (int i = 0; i < T * K; ++i) {
    MPI_Irecv(slice_in[i], 256, MPI_BYTE, (rank + size - 1) % size, i, shared, &slice_reqs[i]);
  }
  run_threads(slices);
  run_threads(constructors);
  pthread_barrier_init(&others_done, NULL, T - 1);
  run_threads(blocked);
  pthread_barrier_destroy(&others_done);
  if (size > 1) {
    pthread_barrier_init(&posted, NULL, 2);
    pthread_barrier_init(&sent, NULL, 2);
    for (wild = 0; wild < 2; ++wild) run_threads(left_posted);
    pthread_barrier_destroy(&posted);
    pthread_barrier_destroy(&sent);
  }
  run_threads(small_windows);
  if (size > 1) run_threads(intercomms);
  if (size > 1) {
    const MPI_Count answered = iris_limit("rendezvous_aside"), copied = iris_limit("data_aside");
    const MPI_Count sent = iris_limit("data_sent_aside");
    pthread_barrier_init(&hold_ready, NULL, 2);
    pthread_barrier_init(&hold_done, NULL, 2);
    for (held_sends = 0; held_sends < 2; ++held_sends) run_threads(held_lock);
    pthread_barrier_destroy(&hold_ready);
    pthread_barrier_destroy(&hold_done);
    if (expect_aside && rank % 2 == 0 && rank + 1 < size) {
      CHECK(iris_limit("rendezvous_aside") > answered && iris_limit("data_aside") > copied,
            "MPIX_Stat_get counted %lld rendezvous and %lld data packets delivered aside",
            (long long)(iris_limit("rendezvous_aside") - answered),
            (long long)(iris_limit("data_aside") - copied));
      CHECK(iris_limit("data_sent_aside") > sent,
            "MPIX_Stat_get counted no data packets sent aside");
    }
  }

  /* MPIX_Stat_get counts the sends that went without the call lock too:
   * small MPI_Sends to a neighbour, which go unlocked over every transport
   * that allows it, each add one to "eager" (or to "rendezvous", where a
   * starved configuration's credits run out). The receives are posted
   * first: a send that goes by rendezvous waits for its match. */
  enum { counted = 16 };
  const MPI_Count sent_before = iris_limit("eager") + iris_limit("rendezvous");
  char words[counted][8];
  MPI_Request received[counted];
  for (int i = 0; i < counted; ++i) {
    MPI_Irecv(words[i], 8, MPI_CHAR, (rank + size - 1) % size, 7000 + i, shared, &received[i]);
  }
  const char word[8] = {0};
  for (int i = 0; i < counted; ++i) {
    MPI_Send(word, 8, MPI_CHAR, (rank + 1) % size, 7000 + i, shared);
  }
  MPI_Waitall(counted, received, MPI_STATUSES_IGNORE);
  const MPI_Count sent = iris_limit("eager") + iris_limit("rendezvous") - sent_before;
  CHECK(sent >= counted, "MPIX_Stat_get counted %lld sends of %d", (long long)sent, (int)counted);

  /* MPI_Recv is matched without the call lock too, like MPI_Irecv
   * ("recv_unlocked"), and a truncated one still says so as MPI_Recv does,
   * with its status filled. */
  if (size > 1) {
    const MPI_Count unlocked_before = iris_limit("recv_unlocked");
    const int from = (rank + size - 1) % size, to = (rank + 1) % size;
    char in[8], out[16] = "truncated here";
    for (int i = 0; i < counted; ++i) {
      MPI_Request sent_word;
      MPI_Isend(word, 8, MPI_CHAR, to, 7100 + i, shared, &sent_word);
      MPI_Recv(in, 8, MPI_CHAR, from, 7100 + i, shared, MPI_STATUS_IGNORE);
      MPI_Wait(&sent_word, MPI_STATUS_IGNORE);
    }
    const MPI_Count unlocked = iris_limit("recv_unlocked") - unlocked_before;
    CHECK(unlocked >= counted, "%lld of %d MPI_Recvs matched without the call lock",
          (long long)unlocked, (int)counted);
    MPI_Comm_set_errhandler(shared, MPI_ERRORS_RETURN);
    MPI_Request long_one;
    MPI_Isend(out, 16, MPI_CHAR, to, 7200, shared, &long_one);
    MPI_Status st;
    const int err = MPI_Recv(in, 8, MPI_CHAR, from, 7200, shared, &st);
    int cls = MPI_SUCCESS;
    MPI_Error_class(err, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "a truncated MPI_Recv returned class %d", cls);
    CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 7200,
          "a truncated MPI_Recv's status says rank %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
    MPI_Wait(&long_one, MPI_STATUS_IGNORE);
    MPI_Comm_set_errhandler(shared, MPI_ERRORS_ARE_FATAL);
  }

  check_failures += __atomic_load_n(&failures, __ATOMIC_RELAXED);
  for (int t = 0; t < T; ++t) MPI_Comm_free(&own[t]);
  MPI_Comm_free(&shared);
  int total = 0;
  MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && total == 0) printf("threads: all checks passed on %d ranks\n", size);
  return finish();
}
