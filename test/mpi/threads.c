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
 * Usage: threads [messages per thread] [aside]
 *
 * This file holds A, B, C, D and H, the counts of MPIX_Stat_get at the end,
 * the message pattern every phase uses and main, which runs every phase;
 * threads_comms.c holds E and I, threads_lock.c F, G, J and K. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "threads.h"

int rank, size, messages = 60;
static int eager_limit;
MPI_Comm own[T]; /* one per thread */
static MPI_Comm shared;
int failures; /* from threads: atomics */

static unsigned char byte_of(int from, int t, int seq, int j) {
  return (unsigned char)(from * 131 + t * 17 + seq * 7 + j);
}

int size_of(int seq, int t) {
  const int edge = eager_limit > 0 ? eager_limit : 1;
  const int sizes[] = {0, 1, 8, 200, edge - 1, edge, edge + 1, 70000};
  return sizes[(seq * 3 + t) % 8];
}

void fill(unsigned char *buf, int n, int from, int t, int seq) {
  for (int j = 0; j < n; ++j) buf[j] = byte_of(from, t, seq, j);
}

int bad_byte(const unsigned char *buf, int n, int from, int t, int seq) {
  for (int j = 0; j < n; ++j) {
    if (buf[j] != byte_of(from, t, seq, j)) return j;
  }
  return -1;
}

void run_threads(void *(*body)(void *)) {
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
  blocked_run();
  if (size > 1) left_posted_run();
  run_threads(small_windows);
  if (size > 1) run_threads(intercomms);
  if (size > 1) {
    const MPI_Count answered = iris_limit("rendezvous_aside"), copied = iris_limit("data_aside");
    const MPI_Count sent = iris_limit("data_sent_aside");
    held_lock_run();
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
