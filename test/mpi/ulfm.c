/* Survivors go on after ranks die (ULFM), under mpiexec --enable-recovery.
 *
 *   ulfm WHERE VICTIMS
 *     WHERE: where the victims die, by SIGKILL:
 *       idle        at once after a barrier;
 *       recv        inside an MPI_Recv that nothing answers;
 *       rendezvous  while sending 64 MiB to the first survivor, which is
 *                   receiving it;
 *       collective  inside a loop of MPI_Allreduce that every rank runs;
 *       shrink      the first victim at once, the others inside the
 *                   MPIX_Comm_shrink that follows;
 *       deciding    the victim (rank 0, the agreement's coordinator) in the
 *                   middle of an MPIX_Comm_agree, once it has sent its
 *                   decision to one rank (IRIS_RECOVERY_DIE_DECIDING): every
 *                   survivor must still return the same flag;
 *       finalize    the victim (rank 0) in the middle of MPI_Finalize's
 *                   agreement, the same way, after the rest ran with it
 *                   alive: the others must still finalize;
 *       window      at once after the first victim took an exclusive lock on
 *                   rank 0's window and wrote there: each survivor's lock
 *                   on it, its lock_all and a PSCW start that waits for the
 *                   victim's post end with MPIX_ERR_PROC_FAILED, not a hang;
 *       am          inside the header handler of the first survivor's active
 *                   message, before any ack: its completion counter's wait,
 *                   its fence and a message queued behind end with
 *                   MPIX_ERR_PROC_FAILED, and a new message to the dead
 *                   rank is refused at the call;
 *       constructors at once after a barrier, the survivors holding an
 *                   intercommunicator between the even and odd ranks of
 *                   the world: MPI_Comm_dup, _split, _create,
 *                   _split_type and MPI_Cart_create of the world, and
 *                   MPI_Comm_dup and MPI_Intercomm_merge of the
 *                   intercommunicator, return MPIX_ERR_PROC_FAILED and
 *                   MPI_COMM_NULL (a shrink first makes one without it);
 *       intercomm   at once after an intercommunicator between the
 *                   world's lower and upper halves is made: the survivors
 *                   agree over it (the flag is the AND of the remote
 *                   group's bits; MPIX_ERR_PROC_FAILED until they
 *                   acknowledge), MPIX_Comm_get_failed names the victims
 *                   of both groups, and its shrink keeps each group's
 *                   survivors in order, over which the leaders exchange a
 *                   message and everyone an inter-Allreduce and an
 *                   MPIX_Comm_iagree (intercomm_survives);
 *       exit3       at once after a barrier, by exit(3) without
 *                   MPI_Finalize: a failure too, reported as a death;
 *       exit0       the same with exit(0);
 *       fatal       at once, while the survivors keep MPI_ERRORS_ARE_FATAL:
 *                   rank 0's receive from it ends the job with one line;
 *       none        nobody (VICTIMS "-"): revoke, shrink and agree work
 *                   without a failure, with or without recovery on, and
 *                   an agreement while an MPIX_Comm_iagree on the same
 *                   communicator runs here is refused, and an
 *                   intercommunicator revoked at once ends the receives
 *                   waiting on it (revoke_intercomm), and collectives
 *                   with a rank that revokes instead of joining end
 *                   (revoke_in_collectives), and a send revoked while
 *                   its receiver reads the buffer (revoke_during_read),
 *                   and one whose message its receiver claimed by
 *                   MPI_Mprobe and receives only after the revocation
 *                   (revoke_after_mprobe).
 *     VICTIMS: world ranks, comma-separated, or "-".
 *
 * Every survivor: meets the failure as MPIX_ERR_PROC_FAILED (or
 * MPIX_ERR_REVOKED once another survivor revoked), revokes MPI_COMM_WORLD,
 * shrinks it (the first time by MPIX_Comm_ishrink) until no failed rank is
 * left in the result (checking that it holds exactly the ranks still
 * alive, in world order), agrees on a flag (then again by MPIX_Comm_iagree)
 * over it (the AND of every survivor's bits, the same at all), then runs a
 * ring of messages of 8 B and 1 MiB and an Allreduce and Bcast over it,
 * every byte checked; MPIX_Comm_get_failed of the world names the victims.
 * Rank 0 prints "ulfm: N survivors went on after WHERE".
 *
 * TEST_THREAD_LEVEL=multiple: at MPI_THREAD_MULTIPLE, with a second
 * thread per rank running MPI_Allreduce over its own duplicate of the
 * world in a loop, from before the death until it fails (with a failure
 * class, as ULFM says) or the main thread revokes that duplicate at the
 * end. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "ulfm.h"

enum { big = 64 << 20, ring_big = 1 << 20 };

int victims[most];
int victim_count = 0;
static int dies_finalizing = -1; /* "finalize": the victim, alive until then */
static int agreed_in_death = 0;  /* "deciding": the flag the first agreement gave */
int me = 0;
int world_size = 0;

int is_victim(int r) {
  for (int i = 0; i < victim_count; ++i) {
    if (victims[i] == r) return 1;
  }
  return 0;
}

static void die_now(int sig) {
  (void)sig;
  raise(SIGKILL);
}

/* SIGKILL after `ms` milliseconds, wherever this rank is then. */
static void die_in(int ms) {
  signal(SIGALRM, die_now);
  struct itimerval t;
  memset(&t, 0, sizeof t);
  t.it_value.tv_sec = ms / 1000;
  t.it_value.tv_usec = (ms % 1000) * 1000;
  setitimer(ITIMER_REAL, &t, NULL);
}

int failure(int err) {
  int cls = err;
  MPI_Error_class(err, &cls);
  return cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_REVOKED ||
         cls == MPIX_ERR_PROC_FAILED_PENDING;
}

/* TEST_THREAD_LEVEL=multiple (see the top). */
static MPI_Comm helper_comm = MPI_COMM_NULL;
static pthread_t helper;

static void *helper_main(void *arg) {
  (void)arg;
  const long want = (long)world_size * (world_size - 1) / 2;
  for (;;) {
    long mine = me, sum = -1;
    const int err = MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, helper_comm);
    if (err != MPI_SUCCESS) {
      CHECK(failure(err), "the second thread's Allreduce returned %d", err);
      return NULL;
    }
    CHECK(sum == want, "the second thread's Allreduce gave %ld, not %ld", sum, want);
    const struct timespec pause = {0, 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

/* "am": a victim dies as a message reaches it, before anything answers. */
static void *dies_here(MPI_Comm comm, int origin, const void *uhdr, int uhdr_len, MPI_Aint data_len,
                       MPIX_Am_completion_fn **completion, void **user_info) {
  (void)comm, (void)origin, (void)uhdr, (void)uhdr_len, (void)data_len, (void)completion;
  (void)user_info;
  if (is_victim(me)) raise(SIGKILL);
  return NULL;
}

/* The victims die where WHERE says; the survivors meet it. */
static void meet_failure(const char *where) {
  const int first_survivor = 0;
  if (strcmp(where, "deciding") == 0) {
    if (is_victim(me)) setenv("IRIS_RECOVERY_DIE_DECIDING", "1", 1);
    int flag = ~(1 << (me % 31));
    const int err = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    CHECK(err == MPI_SUCCESS || failure(err), "the agreement its coordinator died in returned %d",
          err);
    agreed_in_death = flag;
  } else if (strcmp(where, "finalize") == 0) {
    /* Nothing yet: the victim dies in MPI_Finalize. */
  } else if (strcmp(where, "none") == 0) {
    /* A second agreement on a communicator while one is under way here
     * is refused; the first completes. */
    MPI_Request req = MPI_REQUEST_NULL;
    int flag = ~(1 << (me % 31)), other = 1;
    CHECK(MPIX_Comm_iagree(MPI_COMM_WORLD, &flag, &req) == MPI_SUCCESS, "iagree failed");
    CHECK(MPIX_Comm_agree(MPI_COMM_WORLD, &other) != MPI_SUCCESS,
          "an agreement while an iagree is under way was not refused");
    CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "waiting for the iagree failed");
    CHECK(world_size > 30 || flag == ~((1 << world_size) - 1), "iagree gave 0x%x", flag);
    CHECK(MPIX_Comm_revoke(MPI_COMM_NULL) != MPI_SUCCESS, "revoking MPI_COMM_NULL succeeded");
    revoke_intercomm();
    revoke_during_read();
    revoke_after_mprobe();
    revoke_in_collectives();
  } else if (strcmp(where, "intercomm") == 0) {
    intercomm_survives();
  } else if (strcmp(where, "idle") == 0 || strcmp(where, "shrink") == 0 ||
             strcmp(where, "fatal") == 0 || strncmp(where, "exit", 4) == 0) {
    if (is_victim(me) && strcmp(where, "exit3") == 0) exit(3);
    if (is_victim(me) && strcmp(where, "exit0") == 0) exit(0);
    if (is_victim(me) && (strcmp(where, "shrink") != 0 || me == victims[0])) raise(SIGKILL);
    if (is_victim(me)) return; /* dies in the shrink */
    int x = 0;
    const int err = MPI_Recv(&x, 1, MPI_INT, victims[0], 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(failure(err), "a receive from dead rank %d returned %d", victims[0], err);
  } else if (strcmp(where, "recv") == 0) {
    if (is_victim(me)) {
      die_in(200);
      int x = 0;
      MPI_Recv(&x, 1, MPI_INT, first_survivor, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CHECK(0, "the victim's receive returned");
    }
    /* A wildcard receive waits: the failure answers it (pending, then
     * failed once acknowledged and waited for no more). */
    int x = 0;
    MPI_Request req;
    MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &req);
    const int err = MPI_Wait(&req, MPI_STATUS_IGNORE);
    int cls = err;
    MPI_Error_class(err, &cls);
    /* Or revoked already by a survivor that went on first. */
    CHECK(cls == MPIX_ERR_PROC_FAILED_PENDING || cls == MPIX_ERR_REVOKED,
          "a wildcard receive returned %d, not pending", err);
    if (cls == MPIX_ERR_PROC_FAILED_PENDING) {
      CHECK(req != MPI_REQUEST_NULL, "a pending wildcard receive was freed");
      int acked = 0;
      MPIX_Comm_ack_failed(MPI_COMM_WORLD, world_size, &acked);
      CHECK(acked >= 1, "acknowledged %d failures", acked);
      MPI_Group g;
      MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &g);
      int n = 0;
      MPI_Group_size(g, &n);
      CHECK(n == acked, "the acknowledged group has %d ranks, not %d", n, acked);
      if (g != MPI_GROUP_EMPTY) MPI_Group_free(&g);
      MPI_Cancel(&req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
  } else if (strcmp(where, "rendezvous") == 0) {
    char *data = malloc(big);
    if (is_victim(me)) {
      memset(data, 0x5a, big);
      die_in(30);
      for (;;) MPI_Send(data, big, MPI_CHAR, first_survivor, 3, MPI_COMM_WORLD);
    }
    if (me == first_survivor) {
      for (int round = 0;; ++round) {
        memset(data, 0, big);
        const int err =
            MPI_Recv(data, big, MPI_CHAR, victims[0], 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS) {
          CHECK(failure(err), "the 64 MiB receive returned %d", err);
          break;
        }
        CHECK(data[0] == 0x5a && data[big - 1] == 0x5a, "round %d of 64 MiB came wrong", round);
      }
    } else {
      int x = 0;
      const int err = MPI_Recv(&x, 1, MPI_INT, victims[0], 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CHECK(failure(err), "a receive from dead rank %d returned %d", victims[0], err);
    }
    free(data);
  } else if (strcmp(where, "collective") == 0) {
    if (is_victim(me)) die_in(100);
    for (long round = 0;; ++round) {
      long sum = 0;
      const long one = 1;
      const int err = MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      if (err != MPI_SUCCESS) {
        CHECK(failure(err), "Allreduce round %ld returned %d", round, err);
        break;
      }
      CHECK(sum == world_size, "Allreduce round %ld: %ld, not %d", round, sum, world_size);
    }
  } else if (strcmp(where, "am") == 0) {
    int handler = -1;
    MPIX_Am_register(dies_here, &handler);
    MPI_Barrier(MPI_COMM_WORLD);
    if (is_victim(me)) {
      int x = 0; /* waits (on a communicator no revocation ends): the message kills it */
      MPI_Recv(&x, 1, MPI_INT, 0, 99, MPI_COMM_SELF, MPI_STATUS_IGNORE);
      CHECK(0, "victim %d's receive returned", me);
    }
    if (me == first_survivor) {
      static char payload[3][4096];
      for (int v = 0; v < victim_count; ++v) {
        MPIX_Counter sent, done, behind;
        MPIX_Counter_create(&sent);
        MPIX_Counter_create(&done);
        MPIX_Counter_create(&behind);
        const int target = victims[v];
        CHECK(MPIX_Amsend(handler, NULL, 0, payload[0], 8, target, MPI_COMM_WORLD, 0, sent, done) ==
                  MPI_SUCCESS,
              "an active message to rank %d failed at once", target);
        /* Behind it, large enough to go in pieces or be pulled. */
        const int err = MPIX_Amsend(handler, NULL, 0, payload[1], sizeof payload[1], target,
                                    MPI_COMM_WORLD, 0, MPIX_COUNTER_NULL, behind);
        CHECK(err == MPI_SUCCESS || failure(err), "a queued active message returned %d", err);
        int e = MPIX_Counter_wait(done, 1);
        CHECK(failure(e), "a completion counter at dead rank %d ended with %d", target, e);
        e = MPIX_Counter_wait(behind, 1);
        CHECK(failure(e), "a message behind it ended with %d", e);
        e = MPIX_Am_fence(MPI_COMM_WORLD, target);
        CHECK(failure(e), "the fence on dead rank %d ended with %d", target, e);
        CHECK(MPIX_Am_fence(MPI_COMM_WORLD, target) == MPI_SUCCESS,
              "a second fence reported the death again");
        e = MPIX_Amsend(handler, NULL, 0, payload[2], 8, target, MPI_COMM_WORLD, 0,
                        MPIX_COUNTER_NULL, MPIX_COUNTER_NULL);
        CHECK(failure(e), "a new message to dead rank %d was not refused (%d)", target, e);
        MPIX_Counter_set(done, 0);
        MPI_Count value = -1;
        MPIX_Counter_get(done, &value);
        CHECK(value == 0, "a counter set to 0 reads %lld", (long long)value);
        MPIX_Counter_free(&sent);
        MPIX_Counter_free(&done);
        MPIX_Counter_free(&behind);
      }
    } else {
      int x = 0;
      const int err = MPI_Recv(&x, 1, MPI_INT, victims[0], 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CHECK(failure(err), "a receive from dead rank %d returned %d", victims[0], err);
    }
  } else if (strcmp(where, "constructors") == 0) {
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, me % 2 == 0 ? 1 : 0, 17, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    /* A copy of the world that nobody revokes: a receive from each victim
     * on it ends only once this rank knows that victim died (one on the
     * world may end first by another survivor's revocation). */
    MPI_Comm watch;
    MPI_Comm_dup(MPI_COMM_WORLD, &watch);
    MPI_Comm_set_errhandler(watch, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    if (is_victim(me)) raise(SIGKILL);
    int x = 0, err = MPI_SUCCESS;
    for (int v = 0; v < victim_count; ++v) {
      err = MPI_Recv(&x, 1, MPI_INT, victims[v], 7, watch, MPI_STATUS_IGNORE);
      CHECK(failure(err), "a receive from dead rank %d returned %d", victims[v], err);
    }
    MPI_Comm_free(&watch);
    MPI_Group world_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    const int dims[1] = {world_size}, periods[1] = {0};
    const char *names[7] = {"MPI_Comm_dup",        "MPI_Comm_split",  "MPI_Comm_create",
                            "MPI_Comm_split_type", "MPI_Cart_create", "MPI_Comm_dup (inter)",
                            "MPI_Intercomm_merge"};
    for (int k = 0; k < 7; ++k) {
      MPI_Comm made = MPI_COMM_SELF; /* must become MPI_COMM_NULL */
      switch (k) {
        case 0:
          err = MPI_Comm_dup(MPI_COMM_WORLD, &made);
          break;
        case 1:
          err = MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &made);
          break;
        case 2:
          err = MPI_Comm_create(MPI_COMM_WORLD, world_group, &made);
          break;
        case 3:
          err = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &made);
          break;
        case 4:
          err = MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &made);
          break;
        case 5:
          err = MPI_Comm_dup(inter, &made);
          break;
        default:
          err = MPI_Intercomm_merge(inter, me % 2, &made);
          break;
      }
      CHECK(failure(err), "%s over a dead rank returned %d", names[k], err);
      CHECK(made == MPI_COMM_NULL, "%s over a dead rank made a communicator", names[k]);
    }
    MPI_Group_free(&world_group);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  } else if (strcmp(where, "window") == 0) {
    int *mem = NULL;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    *mem = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == victims[0]) {
      /* Holds the lock for good: the flush makes sure it has it. */
      const int five = 5;
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, first_survivor, 0, win);
      MPI_Put(&five, 1, MPI_INT, first_survivor, 0, 1, MPI_INT, win);
      MPI_Win_flush(first_survivor, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (is_victim(me)) raise(SIGKILL);
    int err = MPI_Win_lock(MPI_LOCK_SHARED, first_survivor, 0, win);
    if (err == MPI_SUCCESS) { /* a lock asked for with the epoch's first completion */
      int x = 0;
      MPI_Get(&x, 1, MPI_INT, first_survivor, 0, 1, MPI_INT, win);
      err = MPI_Win_unlock(first_survivor, win);
    }
    CHECK(failure(err), "a lock that dead rank %d holds ended with %d", victims[0], err);
    err = MPI_Win_lock_all(0, win);
    if (err == MPI_SUCCESS) err = MPI_Win_unlock_all(win);
    CHECK(failure(err), "lock_all beside dead rank %d's lock ended with %d", victims[0], err);
    MPI_Group world_group, dead;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, 1, &victims[0], &dead);
    err = MPI_Win_start(dead, 0, win);
    CHECK(failure(err), "a PSCW start waiting for dead rank %d's post ended with %d", victims[0],
          err);
    MPI_Group_free(&dead);
    MPI_Group_free(&world_group);
    MPI_Win_free(&win);
    CHECK(win == MPI_WIN_NULL, "the window was not freed");
  } else {
    CHECK(0, "unknown WHERE %s", where);
  }
}

static void go_on(MPI_Comm c) {
  int rank = 0, size = 0;
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  /* The bits: every survivor clears one of its own. */
  int flag = ~(1 << (me % 31));
  CHECK(MPIX_Comm_agree(c, &flag) == MPI_SUCCESS, "agree failed");
  /* Again without waiting: polled by MPI_Test while ranks do other work. */
  int again = ~(1 << (me % 31)), done = 0;
  MPI_Request req;
  CHECK(MPIX_Comm_iagree(c, &again, &req) == MPI_SUCCESS, "iagree failed");
  while (!done) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  CHECK(again == flag, "iagree gave 0x%x, agree 0x%x", again, flag);
  int want = ~0;
  int alive[most];
  int n = 0;
  for (int r = 0; r < world_size; ++r) {
    if (!is_victim(r)) {
      want &= ~(1 << (r % 31));
      alive[n++] = r;
    }
  }
  CHECK(flag == want, "agreed flag 0x%x, not 0x%x", flag, want);
  CHECK(size == n, "the shrunk communicator has %d ranks, not %d", size, n);
  CHECK(rank < n && alive[rank] == me, "rank %d of the shrunk communicator is world %d", rank, me);
  /* A ring, 8 B and 1 MiB. */
  char *out = malloc(ring_big), *in = malloc(ring_big);
  const int ring_sizes[2] = {8, ring_big};
  for (int k = 0; k < 2; ++k) {
    const int bytes = ring_sizes[k];
    for (int i = 0; i < bytes; ++i) out[i] = (char)(rank * 31 + i);
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    CHECK(MPI_Sendrecv(out, bytes, MPI_CHAR, to, 1, in, bytes, MPI_CHAR, from, 1, c,
                       MPI_STATUS_IGNORE) == MPI_SUCCESS,
          "ring of %d B failed", bytes);
    for (int i = 0; i < bytes; ++i) {
      if (in[i] != (char)(from * 31 + i)) {
        CHECK(0, "ring of %d B: byte %d wrong", bytes, i);
        break;
      }
    }
  }
  free(out);
  free(in);
  long sum = 0;
  const long mine = me;
  CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c) == MPI_SUCCESS, "allreduce failed");
  long want_sum = 0;
  for (int i = 0; i < n; ++i) want_sum += alive[i];
  CHECK(sum == want_sum, "allreduce %ld, not %ld", sum, want_sum);
  int root_value = rank == size - 1 ? 4242 : 0;
  CHECK(MPI_Bcast(&root_value, 1, MPI_INT, size - 1, c) == MPI_SUCCESS, "bcast failed");
  CHECK(root_value == 4242, "bcast gave %d", root_value);
  int low = agreed_in_death, high = agreed_in_death;
  MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_INT, MPI_MIN, c);
  MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_INT, MPI_MAX, c);
  CHECK(low == high, "survivors returned different flags from one agreement: 0x%x and 0x%x", low,
        high);
}

int main(int argc, char **argv) {
  const char *level = getenv("TEST_THREAD_LEVEL");
  const int multiple = level != NULL && strcmp(level, "multiple") == 0;
  int provided = -1;
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  CHECK(!multiple || provided == MPI_THREAD_MULTIPLE, "provided thread level %d", provided);
  if (multiple) {
    MPI_Comm_dup(MPI_COMM_WORLD, &helper_comm);
    MPI_Comm_set_errhandler(helper_comm, MPI_ERRORS_RETURN);
    pthread_create(&helper, NULL, helper_main, NULL);
  }
  if (argc < 3) {
    if (me == 0) fprintf(stderr, "usage: ulfm WHERE VICTIMS\n");
    MPI_Finalize();
    return 2;
  }
  const char *where = argv[1];
  for (char *p = strtok(argv[2], ","); p != NULL && victim_count < most; p = strtok(NULL, ",")) {
    if (strcmp(p, "-") != 0) victims[victim_count++] = atoi(p);
  }
  if (strcmp(where, "finalize") == 0 && victim_count > 0) {
    dies_finalizing = victims[0];
    victim_count = 0;
  }
  /* A victim leaves as soon as its own part is done: a survivor still in
   * the barrier may meet its death there (ULFM promises no uniform end). */
  const int first = MPI_Barrier(MPI_COMM_WORLD);
  CHECK(first == MPI_SUCCESS || failure(first), "the first barrier returned %d", first);
  /* Only now: a survivor that met the death in the barrier would end the
   * job there, and the receive's line (the one `fatal` checks) never came. */
  if (strcmp(where, "fatal") == 0) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  meet_failure(where);
  MPIX_Comm_revoke(MPI_COMM_WORLD);
  int revoked = 0;
  MPIX_Comm_is_revoked(MPI_COMM_WORLD, &revoked);
  CHECK(revoked, "the world is not revoked after MPIX_Comm_revoke");
  int x = 0;
  const int err = MPI_Send(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
  CHECK(err != MPI_SUCCESS && failure(err), "a send on the revoked world returned %d", err);
  const int barrier_err = MPI_Barrier(MPI_COMM_WORLD);
  CHECK(barrier_err != MPI_SUCCESS && failure(barrier_err),
        "a barrier on the revoked world returned %d", barrier_err);
  if (strcmp(where, "shrink") == 0 && is_victim(me)) die_in(5);
  /* Shrink until the survivors are all that is left: a victim that dies
   * during a shrink may be in its result, if nobody had seen it dead yet. */
  MPI_Comm c = MPI_COMM_WORLD;
  for (int tries = 0; tries < 200; ++tries) {
    MPI_Comm s = MPI_COMM_NULL;
    if (tries == 0) { /* the first without blocking */
      MPI_Request req;
      CHECK(MPIX_Comm_ishrink(c, &s, &req) == MPI_SUCCESS, "ishrink failed");
      CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "waiting for ishrink failed");
    } else {
      CHECK(MPIX_Comm_shrink(c, &s) == MPI_SUCCESS, "shrink failed");
    }
    if (c != MPI_COMM_WORLD) MPI_Comm_free(&c);
    c = s;
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int size = 0;
    MPI_Comm_size(c, &size);
    if (size == world_size - victim_count) break;
    const struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  go_on(c);
  MPI_Group failed;
  MPIX_Comm_get_failed(MPI_COMM_WORLD, &failed);
  int nfailed = 0;
  MPI_Group_size(failed, &nfailed);
  CHECK(nfailed == victim_count, "the world's failed group has %d ranks, not %d", nfailed,
        victim_count);
  int size = 0, rank = 0;
  MPI_Comm_size(c, &size);
  MPI_Comm_rank(c, &rank);
  check_failures += ulfm_more_failures();
  if (rank == 0 && check_failures == 0) {
    printf("ulfm: %d survivors went on after %s\n", size, where);
    fflush(stdout);
  }
  MPI_Comm_free(&c);
  if (multiple) {
    MPIX_Comm_revoke(helper_comm);
    pthread_join(helper, NULL);
    MPI_Comm_free(&helper_comm);
  }
  if (me == dies_finalizing) setenv("IRIS_RECOVERY_DIE_DECIDING", "1", 1);
  MPI_Finalize();
  return check_failures == 0 ? 0 : 1;
}
