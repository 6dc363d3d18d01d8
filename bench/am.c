/* One-sided and active-message figures between rank 0 (the origin) and
 * rank 1 (the target), OSU-style.
 *
 *   mpiexec -n 2 am [max_bytes=4194304] [trials=5] [busy_seconds=1] [cap_seconds=15]
 *
 * Two halves, chosen at compile time:
 * - MPI one-sided, built with any MPI: a window from MPI_Win_allocate that
 *   rank 0 holds under MPI_Win_lock_all. put_lat_us: MPI_Put then
 *   MPI_Win_flush; get_lat_us: MPI_Get then MPI_Win_flush; put_bw_MBps: 64
 *   MPI_Put then one flush. sendrecv_rtt_us is a reference, not one-sided:
 *   an MPI_Send of the size answered by an 8-byte MPI_Send, the two-sided
 *   shape of the active-message round trip. An MPI whose MPI_Win_allocate
 *   fails prints the reason and skips the one-sided lines.
 * - Iris's MPIX active messages, built when mpi.h defines MPIX_COUNTER_NULL:
 *   MPIX_Put / MPIX_Get into memory rank 1 exposed. put_lat_us waits on the
 *   completion counter, put_fence_lat_us on MPIX_Am_fence, get_lat_us on the
 *   origin counter, put_bw_MBps on 64 completions. am_rtt_us: an MPIX_Amsend
 *   of the size whose completion handler at rank 1 sends an 8-byte
 *   MPIX_Amsend back from inside the handler; rank 0 waits on the counter
 *   that reply increments.
 * Sizes 8 B to max_bytes: by factors of 8 to 256 KiB, then of 4. Each
 * figure is the median of `trials` timed trials after a warm-up of a
 * tenth; rank 1 waits in MPI_Barrier meanwhile. MB/s are 1e6 B/s.
 *
 * Busy target (each half): rank 1 computes for busy_seconds (a spin on
 * clock_gettime, no MPI call), then waits in MPI_Barrier, while rank 0 does
 * 100 rounds of an 8-byte put and its completion, then an 8-byte get and
 * its completion (MPI: lock_all, put, flush, get, flush, ..., unlock_all,
 * all timed). busy_s is rank 0's time, busy_ratio that over busy_seconds,
 * busy_rounds_in_compute the rounds done before the compute ended. Rank 0
 * stops after cap_seconds (busy_rounds then says how many it did). One
 * sample a run; am.sh's rounds give its median. The MPI half then does the
 * same with the one-sided issue's round (busy_lock_*): lock (shared), 8 B
 * put, 8 B get, 8 B fetch_and_op, unlock.
 *
 * The MPI half also measures, at 8 B under lock_all: get_bw_MBps (64 gets,
 * one flush), acc_lat_us (MPI_Accumulate SUM of one long long + flush),
 * fop_lat_us (MPI_Fetch_and_op + flush), cas_lat_us (MPI_Compare_and_swap
 * + flush); and per epoch on rank 0: fence_round_us (an 8-byte put, then
 * MPI_Win_fence on both ranks), pscw_round_us (rank 0 starts, puts 8 B and
 * completes; rank 1 posts and waits).
 *
 * Output: "# " lines say what ran; every other line is
 * "api figure bytes value", api "mpi" or "mpix" (am.sh reads them). */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { window = 64, max_trials = 31, busy_rounds = 100, small = 8 };

static char *buf;  /* the origin's data, every rank */
static char *sink; /* where two-sided and active messages land */
static size_t max_bytes;
static int trials = 5;
static double busy_seconds = 1, cap_seconds = 15;
static MPI_Win win = MPI_WIN_NULL;
static char *win_base;

static int compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *values, int n) {
  qsort(values, (size_t)n, sizeof(double), compare);
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

static int clamp(size_t n, int lo, int hi) {
  return n < (size_t)lo ? lo : n > (size_t)hi ? hi : (int)n;
}

/* 8, 64, 512, 4 KiB, 32 KiB, 256 KiB, then by 4: 1 MiB, 4 MiB, ... */
static size_t next_size(size_t bytes) {
  return bytes < ((size_t)256 << 10) ? bytes * 8 : bytes * 4;
}

/* About 16 MiB a trial, 20 to 2000 operations. */
static int latency_iterations(size_t bytes) {
  return clamp(((size_t)16 << 20) / bytes, 20, 2000);
}

/* About 64 MiB a trial, 4 to 100 windows. */
static int window_iterations(size_t bytes) {
  return clamp(((size_t)64 << 20) / (window * bytes), 4, 100);
}

/* Seconds of `iters` operations on rank 0 (0 elsewhere); both ranks call it. */
typedef double op_fn(int rank, size_t bytes, int iters);

/* The median over the trials of seconds per operation, on rank 0. */
static double measure(int rank, op_fn *op, size_t bytes, int iters) {
  double seconds[max_trials];
  MPI_Barrier(MPI_COMM_WORLD);
  op(rank, bytes, iters / 10 > 0 ? iters / 10 : 1); /* warm-up */
  for (int t = 0; t < trials; ++t) {
    MPI_Barrier(MPI_COMM_WORLD);
    seconds[t] = op(rank, bytes, iters) / iters;
  }
  return rank == 0 ? median(seconds, trials) : 0;
}

static void print(const char *api, const char *figure, size_t bytes, double value) {
  printf("%s %s %zu %.6g\n", api, figure, bytes, value);
  fflush(stdout);
}

static void spin(double seconds) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec) <
           seconds);
}

/* Rank 1 computes, rank 0 does busy_rounds rounds of round(); begin and end
 * (either may be NULL) are timed with them. */
static void busy_target(int rank, const char *api, const char *figure, const char *what,
                        void (*begin)(void), void (*round)(void), void (*end)(void)) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) spin(busy_seconds);
  if (rank == 0) {
    const double start = MPI_Wtime();
    int done = 0, during = 0;
    if (begin) begin();
    for (; done < busy_rounds && MPI_Wtime() - start < cap_seconds; ++done) {
      round();
      if (MPI_Wtime() - start <= busy_seconds) ++during;
    }
    if (end) end();
    const double elapsed = MPI_Wtime() - start;
    printf(
        "# %s busy target: %d rounds (%s) in %.6f s, %.6fx the target's %g s compute; %d done "
        "while it computed%s\n",
        api, done, what, elapsed, elapsed / busy_seconds, busy_seconds, during,
        done < busy_rounds ? " (capped)" : "");
    char name[64];
    snprintf(name, sizeof name, "%s_s", figure);
    print(api, name, small, elapsed);
    snprintf(name, sizeof name, "%s_ratio", figure);
    print(api, name, small, elapsed / busy_seconds);
    snprintf(name, sizeof name, "%s_rounds_in_compute", figure);
    print(api, name, small, during);
    snprintf(name, sizeof name, "%s_rounds", figure);
    print(api, name, small, done);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- MPI one-sided ---- */

static double mpi_put_lat(int rank, size_t bytes, int iters) {
  if (rank != 0) return 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    MPI_Put(buf, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
    MPI_Win_flush(1, win);
  }
  return MPI_Wtime() - start;
}

static double mpi_get_lat(int rank, size_t bytes, int iters) {
  if (rank != 0) return 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    MPI_Get(buf, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
    MPI_Win_flush(1, win);
  }
  return MPI_Wtime() - start;
}

/* Seconds per window of puts. */
static double mpi_put_bw(int rank, size_t bytes, int iters) {
  if (rank != 0) return 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    for (int w = 0; w < window; ++w) {
      MPI_Put(buf, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
    }
    MPI_Win_flush(1, win);
  }
  return MPI_Wtime() - start;
}

/* Seconds per window of gets. */
static double mpi_get_bw(int rank, size_t bytes, int iters) {
  if (rank != 0) return 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    for (int w = 0; w < window; ++w) {
      MPI_Get(buf, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
    }
    MPI_Win_flush(1, win);
  }
  return MPI_Wtime() - start;
}

/* The atomics, one 8-byte element and a flush each. */
static double mpi_acc_lat(int rank, size_t bytes, int iters) {
  (void)bytes;
  if (rank != 0) return 0;
  const long long one = 1;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    MPI_Accumulate(&one, 1, MPI_LONG_LONG, 1, 0, 1, MPI_LONG_LONG, MPI_SUM, win);
    MPI_Win_flush(1, win);
  }
  return MPI_Wtime() - start;
}

static double mpi_fop_lat(int rank, size_t bytes, int iters) {
  (void)bytes;
  if (rank != 0) return 0;
  const long long one = 1;
  long long old = 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, 1, 0, MPI_SUM, win);
    MPI_Win_flush(1, win);
  }
  return MPI_Wtime() - start;
}

static double mpi_cas_lat(int rank, size_t bytes, int iters) {
  (void)bytes;
  if (rank != 0) return 0;
  long long compare = 0, origin = 0, old = 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    origin = compare + 1;
    MPI_Compare_and_swap(&origin, &compare, &old, MPI_LONG_LONG, 1, 8, win);
    MPI_Win_flush(1, win);
    compare = old;
  }
  return MPI_Wtime() - start;
}

/* Active target, both ranks: a fence epoch with one 8-byte put from rank
 * 0; a PSCW epoch (rank 1 posts and waits, rank 0 starts, puts and
 * completes). */
static double mpi_fence_round(int rank, size_t bytes, int iters) {
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) MPI_Put(buf, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
    MPI_Win_fence(0, win);
  }
  return rank == 0 ? MPI_Wtime() - start : 0;
}

static MPI_Group peer_group; /* the other rank */
static double mpi_pscw_round(int rank, size_t bytes, int iters) {
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      MPI_Win_start(peer_group, 0, win);
      MPI_Put(buf, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
      MPI_Win_complete(win);
    } else if (rank == 1) {
      MPI_Win_post(peer_group, 0, win);
      MPI_Win_wait(win);
    }
  }
  return rank == 0 ? MPI_Wtime() - start : 0;
}

static double sendrecv_rtt(int rank, size_t bytes, int iters) {
  char reply[small] = {0};
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(reply, small, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(sink, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(reply, small, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
  }
  return MPI_Wtime() - start;
}

static void mpi_lock_all(void) {
  MPI_Win_lock_all(0, win);
}
static void mpi_unlock_all(void) {
  MPI_Win_unlock_all(win);
}
static void mpi_busy_round(void) {
  MPI_Put(buf, small, MPI_BYTE, 1, 0, small, MPI_BYTE, win);
  MPI_Win_flush(1, win);
  MPI_Get(buf, small, MPI_BYTE, 1, 0, small, MPI_BYTE, win);
  MPI_Win_flush(1, win);
}
/* The one-sided issue's round: lock, put, get, fetch-and-op, unlock. */
static void mpi_busy_lock_round(void) {
  const long long one = 1;
  long long old = 0;
  MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
  MPI_Put(buf, small, MPI_BYTE, 1, 0, small, MPI_BYTE, win);
  MPI_Get(buf + small, small, MPI_BYTE, 1, small, small, MPI_BYTE, win);
  MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, 1, 2 * small, MPI_SUM, win);
  MPI_Win_unlock(1, win);
}

/* A window of max_bytes on every rank; false (on every rank) if the MPI
 * has no one-sided communication. */
static int mpi_window(int rank) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  /* The atomics and the busy rounds use the first 24 bytes. */
  const size_t bytes = max_bytes > 64 ? max_bytes : 64;
  const int rc =
      MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_base, &win);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  int ok = rc == MPI_SUCCESS, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (ok != all) MPI_Abort(MPI_COMM_WORLD, 3); /* a window on one rank only */
  if (!all && rank == 0) {
    char why[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, why, &length);
    printf("# mpi: MPI_Win_allocate failed (%.*s): no one-sided lines\n", length, why);
  }
  if (all) memset(win_base, 0, bytes);
  return all;
}

static void mpi_half(int rank) {
  for (size_t bytes = small; bytes <= max_bytes; bytes = next_size(bytes)) {
    const double rtt = measure(rank, sendrecv_rtt, bytes, latency_iterations(bytes));
    if (rank == 0) print("mpi", "sendrecv_rtt_us", bytes, rtt * 1e6);
  }
  if (!mpi_window(rank)) return;
  if (rank == 0) mpi_lock_all();
  for (size_t bytes = small; bytes <= max_bytes; bytes = next_size(bytes)) {
    const int lat_iters = latency_iterations(bytes);
    const double put = measure(rank, mpi_put_lat, bytes, lat_iters);
    const double get = measure(rank, mpi_get_lat, bytes, lat_iters);
    const double bw = measure(rank, mpi_put_bw, bytes, window_iterations(bytes));
    const double gbw = measure(rank, mpi_get_bw, bytes, window_iterations(bytes));
    if (rank == 0) {
      print("mpi", "put_lat_us", bytes, put * 1e6);
      print("mpi", "get_lat_us", bytes, get * 1e6);
      print("mpi", "put_bw_MBps", bytes, (double)bytes * window / bw / 1e6);
      print("mpi", "get_bw_MBps", bytes, (double)bytes * window / gbw / 1e6);
    }
  }
  const double acc = measure(rank, mpi_acc_lat, 8, 2000);
  const double fop = measure(rank, mpi_fop_lat, 8, 2000);
  const double cas = measure(rank, mpi_cas_lat, 8, 2000);
  if (rank == 0) {
    print("mpi", "acc_lat_us", 8, acc * 1e6);
    print("mpi", "fop_lat_us", 8, fop * 1e6);
    print("mpi", "cas_lat_us", 8, cas * 1e6);
    mpi_unlock_all();
  }
  MPI_Group world;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  const int other = 1 - rank;
  MPI_Group_incl(world, 1, &other, &peer_group);
  MPI_Group_free(&world);
  MPI_Win_fence(0, win);
  const double fence = measure(rank, mpi_fence_round, small, 1000);
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  const double pscw = measure(rank, mpi_pscw_round, small, 1000);
  MPI_Group_free(&peer_group);
  if (rank == 0) {
    print("mpi", "fence_round_us", small, fence * 1e6);
    print("mpi", "pscw_round_us", small, pscw * 1e6);
  }
  busy_target(rank, "mpi", "busy",
              "8 B put, flush, 8 B get, flush; lock_all and unlock_all timed too", mpi_lock_all,
              mpi_busy_round, mpi_unlock_all);
  busy_target(rank, "mpi", "busy_lock", "lock, 8 B put, 8 B get, 8 B fetch_and_op, unlock", NULL,
              mpi_busy_lock_round, NULL);
  MPI_Win_free(&win);
}

/* ---- Iris's active messages ---- */
#ifdef MPIX_COUNTER_NULL

static char *exposed;                   /* every rank's MPIX_Expose'd memory */
static MPIX_Counter origin_counter;     /* rank 0: origin buffer reusable */
static MPIX_Counter completion_counter; /* rank 0: done at the target */
static MPIX_Counter target_counter;     /* rank 1: puts, gets and requests arrived */
static MPIX_Counter reply_counter;      /* rank 0: replies arrived */
static MPI_Aint peer_exposed;           /* rank 1's exposed base, as rank 0 names it */
static MPI_Aint peer_target_counter;    /* rank 1's target_counter */
static MPI_Aint peer_reply_counter;     /* rank 0's reply_counter, for rank 1's replies */
static int peer_request_handler;        /* rank 1's id of request_arrived */
static int peer_reply_handler;          /* rank 0's id of reply_arrived */
static const char reply_data[small] = "reply";
static char reply_sink[small];

/* At rank 1, from inside the completion handler: the 8-byte reply. */
static void request_done(MPI_Comm comm, void *user_info) {
  const int origin = (int)(intptr_t)user_info;
  MPIX_Amsend(peer_reply_handler, NULL, 0, reply_data, small, origin, comm, peer_reply_counter,
              MPIX_COUNTER_NULL, MPIX_COUNTER_NULL);
}

static void *request_arrived(MPI_Comm comm, int origin, const void *uhdr, int uhdr_len,
                             MPI_Aint data_len, MPIX_Am_completion_fn **completion,
                             void **user_info) {
  (void)comm, (void)uhdr, (void)uhdr_len;
  *completion = request_done;
  *user_info = (void *)(intptr_t)origin;
  return data_len > 0 ? sink : NULL;
}

static void *reply_arrived(MPI_Comm comm, int origin, const void *uhdr, int uhdr_len,
                           MPI_Aint data_len, MPIX_Am_completion_fn **completion,
                           void **user_info) {
  (void)comm, (void)origin, (void)uhdr, (void)uhdr_len;
  *completion = NULL;
  *user_info = NULL;
  return data_len > 0 ? reply_sink : NULL;
}

/* No target counter (0): completion then means the bytes are in place at
 * the target, what MPI_Win_flush promises; a target counter would add the
 * target's own step (a notify and its ack) to every put. */
static void mpix_put(size_t bytes, MPIX_Counter completion) {
  MPIX_Put(buf, (MPI_Aint)bytes, 1, peer_exposed, MPI_COMM_WORLD, 0, MPIX_COUNTER_NULL, completion);
}

static void mpix_get(size_t bytes) {
  MPIX_Get(buf, (MPI_Aint)bytes, 1, peer_exposed, MPI_COMM_WORLD, 0, origin_counter);
}

static double mpix_put_lat(int rank, size_t bytes, int iters) {
  if (rank != 0) return 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    mpix_put(bytes, completion_counter);
    MPIX_Counter_wait(completion_counter, 1);
  }
  return MPI_Wtime() - start;
}

static double mpix_put_fence_lat(int rank, size_t bytes, int iters) {
  if (rank != 0) return 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    mpix_put(bytes, MPIX_COUNTER_NULL);
    MPIX_Am_fence(MPI_COMM_WORLD, 1);
  }
  return MPI_Wtime() - start;
}

static double mpix_get_lat(int rank, size_t bytes, int iters) {
  if (rank != 0) return 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    mpix_get(bytes);
    MPIX_Counter_wait(origin_counter, 1);
  }
  return MPI_Wtime() - start;
}

static double mpix_put_bw(int rank, size_t bytes, int iters) {
  if (rank != 0) return 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    for (int w = 0; w < window; ++w) mpix_put(bytes, completion_counter);
    MPIX_Counter_wait(completion_counter, window);
  }
  return MPI_Wtime() - start;
}

static double am_rtt(int rank, size_t bytes, int iters) {
  if (rank != 0) return 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    MPIX_Amsend(peer_request_handler, NULL, 0, buf, (MPI_Aint)bytes, 1, MPI_COMM_WORLD, 0,
                MPIX_COUNTER_NULL, MPIX_COUNTER_NULL);
    MPIX_Counter_wait(reply_counter, 1);
  }
  return MPI_Wtime() - start;
}

static void mpix_busy_round(void) {
  mpix_put(small, completion_counter);
  MPIX_Counter_wait(completion_counter, 1);
  mpix_get(small);
  MPIX_Counter_wait(origin_counter, 1);
}

static void mpix_half(int rank) {
  MPIX_Counter *counters[] = {&origin_counter, &completion_counter, &target_counter,
                              &reply_counter};
  for (size_t i = 0; i < sizeof counters / sizeof *counters; ++i) MPIX_Counter_create(counters[i]);
  /* From MPI_Alloc_mem, as MPI_Win_allocate's memory: Iris serves it from
   * a block the node's ranks map, so that puts and gets are plain copies. */
  MPI_Alloc_mem((MPI_Aint)max_bytes, MPI_INFO_NULL, &exposed);
  memset(exposed, 0, max_bytes);
  MPIX_Expose(exposed, (MPI_Aint)max_bytes);
  int handlers[2];
  MPIX_Am_register(request_arrived, &handlers[0]);
  MPIX_Am_register(reply_arrived, &handlers[1]);
  /* Each rank names the other's memory, counters and handler ids. */
  MPI_Aint mine[3], all[6];
  mine[0] = (MPI_Aint)(uintptr_t)exposed;
  MPIX_Counter_address(target_counter, &mine[1]);
  MPIX_Counter_address(reply_counter, &mine[2]);
  MPI_Allgather(mine, 3, MPI_AINT, all, 3, MPI_AINT, MPI_COMM_WORLD);
  int all_handlers[4];
  MPI_Allgather(handlers, 2, MPI_INT, all_handlers, 2, MPI_INT, MPI_COMM_WORLD);
  peer_exposed = all[3];
  peer_target_counter = all[4];
  peer_reply_counter = all[2];
  peer_request_handler = all_handlers[2];
  peer_reply_handler = all_handlers[1];

  for (size_t bytes = small; bytes <= max_bytes; bytes = next_size(bytes)) {
    const int lat_iters = latency_iterations(bytes);
    const double put = measure(rank, mpix_put_lat, bytes, lat_iters);
    const double fence = measure(rank, mpix_put_fence_lat, bytes, lat_iters);
    const double get = measure(rank, mpix_get_lat, bytes, lat_iters);
    const double bw = measure(rank, mpix_put_bw, bytes, window_iterations(bytes));
    const double rtt = measure(rank, am_rtt, bytes, lat_iters);
    if (rank == 0) {
      print("mpix", "put_lat_us", bytes, put * 1e6);
      print("mpix", "put_fence_lat_us", bytes, fence * 1e6);
      print("mpix", "get_lat_us", bytes, get * 1e6);
      print("mpix", "put_bw_MBps", bytes, (double)bytes * window / bw / 1e6);
      print("mpix", "am_rtt_us", bytes, rtt * 1e6);
    }
  }
  busy_target(rank, "mpix", "busy",
              "8 B MPIX_Put, completion counter, 8 B MPIX_Get, origin counter", NULL,
              mpix_busy_round, NULL);
  MPIX_Am_fence(MPI_COMM_WORLD, MPI_ANY_SOURCE);
  MPI_Barrier(MPI_COMM_WORLD);
  MPIX_Conceal(exposed);
  for (size_t i = 0; i < sizeof counters / sizeof *counters; ++i) MPIX_Counter_free(counters[i]);
  MPI_Free_mem(exposed);
}

#endif /* MPIX_COUNTER_NULL */

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  max_bytes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 0) : (size_t)4 << 20;
  if (argc > 2) trials = atoi(argv[2]);
  if (argc > 3) busy_seconds = atof(argv[3]);
  if (argc > 4) cap_seconds = atof(argv[4]);
  if (size != 2 || max_bytes < small || max_bytes > (size_t)1 << 30 || trials < 1 ||
      trials > max_trials || busy_seconds <= 0 || cap_seconds <= 0) {
    if (rank == 0) {
      fprintf(stderr,
              "usage: mpiexec -n 2 am [max_bytes >= 8] [trials 1-%d] [busy_seconds] "
              "[cap_seconds]\n",
              max_trials);
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  buf = malloc(max_bytes);
  sink = malloc(max_bytes);
  memset(buf, 7, max_bytes);
  memset(sink, 0, max_bytes);
  char library[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(library, &length);
  if (rank == 0) {
    printf("# %.*s\n", (int)strcspn(library, "\n"), library);
    printf("# am: median of %d trials; window of %d; busy target %g s, cap %g s\n", trials, window,
           busy_seconds, cap_seconds);
    printf("# api figure bytes value\n");
    fflush(stdout);
  }
  mpi_half(rank);
#ifdef MPIX_COUNTER_NULL
  mpix_half(rank);
#else
  if (rank == 0) printf("# mpix: not built (mpi.h has no MPIX_COUNTER_NULL)\n");
#endif
  free(sink);
  free(buf);
  MPI_Finalize();
  return 0;
}
