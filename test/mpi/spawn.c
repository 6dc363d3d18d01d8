/* MPI_Comm_spawn. The parents (any number of ranks) spawn three copies of
 * this program with the info keys host (this host), wdir and soft; the
 * children find their parents with MPI_Comm_get_parent, and both sides
 * check the intercommunicator (inter.h: point-to-point, a large message,
 * broadcasts, an allreduce, a merge with the parents first) and
 * disconnect. The children's root tells the parents' root its working
 * directory (wdir) and its world size. Then the refusals: a program that is
 * not there (MPI_ERR_SPAWN, in every errcode, after its launcher's own
 * message), another host, maxprocs 0. Then MPI_Comm_spawn_multiple of two
 * commands, whose children are one world, MPI_APPNUM numbering them; the
 * first has a wdir, the second none (its children work where the parents
 * do). Then rank 0 alone spawns two children, and MPI_Intercomm_create joins
 * the whole parent world and them: every parent sends to every child,
 * though only rank 0 met them. MPI_UNIVERSE_SIZE follows
 * IRIS_UNIVERSE_SIZE (7 unless set). Prints "spawn: all checks passed on N ranks" from the parents'
 * rank 0. `spawn threads`: the same spawn at MPI_THREAD_MULTIPLE, worked
 * over by several threads at once (threaded(), below). `spawn abort`: rank
 * 0 spawns two children, which print their pids, send it a message and
 * then sleep outside MPI for two minutes, and aborts the job with code 5
 * once both messages came (the job test checks that the children end with
 * it). `spawn die` (under --enable-recovery): the second of two children
 * dies at once, and the parents and the first child agree over the spawn's
 * intercommunicator, shrink it and go on (die_parents, below). */
#define _DEFAULT_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "inter.h"

enum { children = 3 };

/* An intercommunicator between the two worlds made by Intercomm_create
 * over the spawn's (peer_comm an intercommunicator: remote_leader is a rank
 * of the other group): sizes, and a value each way between the leaders and
 * from every rank to the other group's rank (own rank % its size). */
static void intercomm_again(MPI_Comm ic, int is_parent) {
  MPI_Comm again = MPI_COMM_NULL;
  CHECK(MPI_Intercomm_create(MPI_COMM_WORLD, 0, ic, 0, 123, &again) == MPI_SUCCESS,
        "Intercomm_create over the spawn's intercommunicator");
  if (again == MPI_COMM_NULL) return;
  int lsize = -1;
  int rsize = -1;
  int lrank = -1;
  int peer_rsize = -1;
  MPI_Comm_size(again, &lsize);
  MPI_Comm_remote_size(again, &rsize);
  MPI_Comm_rank(again, &lrank);
  MPI_Comm_remote_size(ic, &peer_rsize);
  CHECK(rsize == peer_rsize, "Intercomm_create's remote size %d, the spawn's %d", rsize,
        peer_rsize);
  int out = (is_parent ? 1000 : 2000) + lrank;
  MPI_Request req;
  MPI_Isend(&out, 1, MPI_INT, lrank % rsize, 7, again, &req);
  for (int j = 0; j < rsize; ++j) {
    if (j % lsize != lrank) continue;
    int in = -1;
    MPI_Recv(&in, 1, MPI_INT, j, 7, again, MPI_STATUS_IGNORE);
    CHECK(in == (is_parent ? 2000 : 1000) + j, "Intercomm_create: got %d from remote rank %d", in,
          j);
  }
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Comm_free(&again);
}

/* `multiple`: started by MPI_Comm_spawn_multiple (one of the first command,
 * two of the second): MPI_APPNUM numbers the commands; else it is absent. */
static int child(MPI_Comm parent, int multiple) {
  int size = -1;
  int rank = -1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  CHECK(size == children, "the children's world has %d ranks", size);
  char name[MPI_MAX_OBJECT_NAME] = "";
  int length = 0;
  MPI_Comm_get_name(parent, name, &length);
  CHECK(strcmp(name, "MPI_COMM_PARENT") == 0, "the parent communicator is named '%s'", name);
  int *appnum = NULL;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
  if (multiple) {
    CHECK(flag == 1 && *appnum == (rank == 0 ? 0 : 1), "rank %d: MPI_APPNUM %d (flag %d)", rank,
          flag ? *appnum : -1, flag);
  } else {
    CHECK(flag == 0, "MPI_APPNUM present (%d) for a single command", flag ? *appnum : -1);
  }
  if (rank == 0) {
    char cwd[PATH_MAX] = "";
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    MPI_Send(cwd, PATH_MAX, MPI_CHAR, 0, 21, parent);
    MPI_Send(&size, 1, MPI_INT, 0, 22, parent);
  }
  if (multiple && rank == 1) { /* the second command's: it gave no wdir */
    char cwd[PATH_MAX] = "";
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    MPI_Send(cwd, PATH_MAX, MPI_CHAR, 0, 23, parent);
  }
  if (!multiple) intercomm_again(parent, 0);
  exercise(parent, 0, 0, "child");
  MPI_Comm again = MPI_COMM_WORLD;
  MPI_Comm_get_parent(&again);
  CHECK(again == MPI_COMM_NULL, "MPI_Comm_get_parent gave %d after the disconnect", again);
  return finish();
}

/* MPI_Intercomm_create over the world of each side, after a spawn by parent
 * rank 0 alone (`peer`: the spawn's intercommunicator there and at the
 * children, MPI_COMM_NULL at the other parents, which never met the
 * children); then every parent sends its rank to every child, and every
 * child checks them. */
static void alone_join(MPI_Comm peer, int is_parent) {
  MPI_Comm ic2 = MPI_COMM_NULL;
  CHECK(MPI_Intercomm_create(MPI_COMM_WORLD, 0, peer, 0, 77, &ic2) == MPI_SUCCESS,
        "%s: Intercomm_create of both worlds", is_parent ? "parent" : "child");
  if (ic2 == MPI_COMM_NULL) return;
  int remote = -1;
  int rank = -1;
  MPI_Comm_remote_size(ic2, &remote);
  MPI_Comm_rank(ic2, &rank);
  if (is_parent) {
    for (int j = 0; j < remote; ++j) MPI_Send(&rank, 1, MPI_INT, j, 31, ic2);
  } else {
    for (int j = 0; j < remote; ++j) {
      int got = -1;
      MPI_Recv(&got, 1, MPI_INT, j, 31, ic2, MPI_STATUS_IGNORE);
      CHECK(got == j, "child %d: got %d from parent %d", rank, got, j);
    }
  }
  CHECK(MPI_Barrier(ic2) == MPI_SUCCESS, "barrier over the new intercommunicator");
  MPI_Comm_free(&ic2);
}

/* `spawn abort`'s children: their pids on stdout, then nothing on stdout or
 * stderr; once they told the parents' root they are ready, no MPI call for
 * two minutes. */
static int abort_child(int argc, char **argv) {
  printf("spawn abort: child pid %d\n", (int)getpid());
  fflush(stdout);
  const int none = open("/dev/null", O_WRONLY);
  dup2(none, 1);
  dup2(none, 2);
  MPI_Init(&argc, &argv);
  MPI_Comm parent = MPI_COMM_NULL;
  MPI_Comm_get_parent(&parent);
  const int ready = 1;
  MPI_Send(&ready, 1, MPI_INT, 0, 9, parent);
  for (int i = 0; i < 1200; ++i) usleep(100000);
  MPI_Finalize();
  return 0;
}

static int abort_parents(const char *program) {
  char self[PATH_MAX] = "";
  CHECK(realpath(program, self) != NULL, "realpath %s", program);
  char *args[] = {"abort-child", NULL};
  MPI_Comm ic = MPI_COMM_NULL;
  int errcodes[2] = {-1, -1};
  CHECK(
      MPI_Comm_spawn(self, args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, errcodes) == MPI_SUCCESS,
      "spawn");
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    for (int child = 0; child < 2; ++child) {
      int ready = 0;
      MPI_Recv(&ready, 1, MPI_INT, child, 9, ic, MPI_STATUS_IGNORE);
    }
    MPI_Abort(MPI_COMM_WORLD, 5); /* the children sleep outside MPI now */
  }
  MPI_Barrier(MPI_COMM_WORLD); /* ended by the abort */
  CHECK(0, "rank %d outlived the abort", rank);
  return 1;
}

/* `spawn die` (under mpiexec --enable-recovery, whose children's launcher
 * inherits it): the parents spawn two children and the second dies at
 * once. The parents and the other child agree over the spawn's
 * intercommunicator (the remote group's AND; MPIX_ERR_PROC_FAILED until
 * acknowledged), acknowledge, agree again, and shrink it: one child is
 * left, which gets every parent's rank and sends back the sum. Before, the
 * netmod's report of a dead process of another job was dropped, and the
 * agreement waited for it for ever. */
static void die_agree(MPI_Comm ic, int mine, int want, const char *who) {
  int flag = mine;
  int err = MPIX_Comm_agree(ic, &flag);
  int cls = err;
  MPI_Error_class(err, &cls);
  CHECK(err == MPI_SUCCESS || cls == MPIX_ERR_PROC_FAILED, "%s: agree returned %d", who, err);
  CHECK(flag == want, "%s: agree gave 0x%x, not 0x%x", who, flag, want);
  int acked = -1;
  MPIX_Comm_ack_failed(ic, 8, &acked);
  CHECK(acked == 1, "%s: acknowledged %d failures, not 1", who, acked);
  flag = mine;
  CHECK(MPIX_Comm_agree(ic, &flag) == MPI_SUCCESS && flag == want, "%s: the second agree", who);
}

static int die_child(MPI_Comm parent) {
  MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 1) raise(SIGKILL);
  int parents = -1;
  MPI_Comm_remote_size(parent, &parents);
  die_agree(parent, 0x6, 0x3, "child");
  MPI_Comm s = MPI_COMM_NULL;
  CHECK(MPIX_Comm_shrink(parent, &s) == MPI_SUCCESS, "child: shrink failed");
  int size = -1, sum = 0;
  MPI_Comm_size(s, &size);
  CHECK(size == 1, "child: %d children left, not 1", size);
  for (int p = 0; p < parents; ++p) {
    int r = -1;
    MPI_Recv(&r, 1, MPI_INT, p, 31, s, MPI_STATUS_IGNORE);
    sum += r;
  }
  MPI_Send(&sum, 1, MPI_INT, 0, 32, s);
  MPI_Comm_free(&s);
  return finish();
}

static int die_parents(const char *program) {
  char self[PATH_MAX] = "";
  CHECK(realpath(program, self) != NULL, "realpath %s", program);
  char *args[] = {"die-child", NULL};
  MPI_Comm ic = MPI_COMM_NULL;
  CHECK(MPI_Comm_spawn(self, args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, MPI_ERRCODES_IGNORE) ==
            MPI_SUCCESS,
        "spawn");
  MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  die_agree(ic, 0x3, 0x6, "parent");
  MPI_Group failed = MPI_GROUP_NULL;
  MPIX_Comm_get_failed(ic, &failed);
  int nfailed = -1;
  MPI_Group_size(failed, &nfailed);
  CHECK(nfailed == 1, "parent: %d failed, not 1", nfailed);
  MPI_Group_free(&failed);
  MPI_Comm s = MPI_COMM_NULL;
  CHECK(MPIX_Comm_shrink(ic, &s) == MPI_SUCCESS, "parent: shrink failed");
  int children_left = -1;
  MPI_Comm_remote_size(s, &children_left);
  CHECK(children_left == 1, "parent: %d children left, not 1", children_left);
  MPI_Send(&rank, 1, MPI_INT, 0, 31, s);
  if (rank == 0) {
    int sum = -1;
    MPI_Recv(&sum, 1, MPI_INT, 0, 32, s, MPI_STATUS_IGNORE);
    CHECK(sum == size * (size - 1) / 2, "parent: the child summed %d", sum);
  }
  MPI_Comm_free(&s);
  if (rank == 0 && check_failures == 0) printf("spawn die: all checks passed\n");
  return finish();
}

static int child_alone(MPI_Comm parent) {
  alone_join(parent, 0);
  MPI_Comm_disconnect(&parent);
  return finish();
}

/* `spawn refused` (2 or more parents): parent rank 1 has
 * IRIS_DYNAMIC_PEERS=0 (`spawn refused multiple`: and runs at
 * MPI_THREAD_MULTIPLE while the others run at SINGLE), so it cannot reach
 * other jobs; rank 0
 * alone spawns a child, and the Intercomm_create of both worlds fails with
 * MPI_ERR_OTHER everywhere (the parents cannot send their cards, so the
 * child cannot reach parent rank 1), without a hang; then the spawn's
 * intercommunicator still disconnects. */
static int refused(MPI_Comm parent) {
  MPI_Comm peer = parent;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (parent == MPI_COMM_NULL && rank == 0) {
    char *child_args[] = {"refused", NULL};
    char self[PATH_MAX] = "";
    CHECK(realpath("/proc/self/exe", self) != NULL, "realpath /proc/self/exe");
    CHECK(MPI_Comm_spawn(self, child_args, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &peer,
                         MPI_ERRCODES_IGNORE) == MPI_SUCCESS,
          "spawn from rank 0 alone");
  }
  MPI_Comm ic2 = MPI_COMM_WORLD;
  const int err = MPI_Intercomm_create(MPI_COMM_WORLD, 0, peer, 0, 78, &ic2);
  int error_class = -1;
  MPI_Error_class(err, &error_class);
  CHECK(error_class == MPI_ERR_OTHER, "%s %d: Intercomm_create gave class %d, not MPI_ERR_OTHER",
        parent == MPI_COMM_NULL ? "parent" : "child", rank, error_class);
  if (peer != MPI_COMM_NULL) MPI_Comm_disconnect(&peer);
  if (parent == MPI_COMM_NULL && check_failures == 0 && rank == 0) {
    printf("spawn refused: all checks passed\n");
  }
  return finish();
}

/* `threads`: every process at MPI_THREAD_MULTIPLE (mpi4py's default, and
 * mpi4py.futures' pools of spawned workers run so). The parents spawn
 * three children; on each side `workers` threads work at once, thread t
 * over its own dup of the spawn's intercommunicator: child c is served by
 * parent c % parents, which sends it a task (an int) and a 256 KiB block
 * (a rendezvous over tcp), task_rounds times; the child's thread checks
 * the block, answers task * 2 + t and sends the block back inverted, which
 * the parent's thread checks. Meanwhile each side's main thread runs
 * inter.h's exercise over the spawn's intercommunicator itself. */
enum { workers = 2, task_rounds = 40, block_bytes = 1 << 18 };

struct worker {
  MPI_Comm comm;
  int is_parent;
  int t;
  int failures;
};

static unsigned char pattern(int round, int child, int t, int inverted) {
  const unsigned char v = (unsigned char)(round * 7 + child * 3 + t + 1);
  return inverted ? (unsigned char)~v : v;
}

static int block_is(const unsigned char *block, unsigned char v) {
  for (int i = 0; i < block_bytes; ++i) {
    if (block[i] != v) return 0;
  }
  return 1;
}

static void *work(void *arg) {
  struct worker *w = arg;
  int lrank = -1;
  int lsize = -1;
  int rsize = -1;
  MPI_Comm_rank(w->comm, &lrank);
  MPI_Comm_size(w->comm, &lsize);
  MPI_Comm_remote_size(w->comm, &rsize);
  unsigned char *block = malloc(block_bytes);
  for (int round = 0; round < task_rounds && block != NULL; ++round) {
    if (w->is_parent) {
      for (int c = lrank; c < rsize; c += lsize) {
        const int task = round * 100 + c;
        int answer = -1;
        memset(block, pattern(round, c, w->t, 0), block_bytes);
        MPI_Send(&task, 1, MPI_INT, c, w->t, w->comm);
        MPI_Send(block, block_bytes, MPI_BYTE, c, 10 + w->t, w->comm);
        MPI_Recv(&answer, 1, MPI_INT, c, w->t, w->comm, MPI_STATUS_IGNORE);
        MPI_Recv(block, block_bytes, MPI_BYTE, c, 10 + w->t, w->comm, MPI_STATUS_IGNORE);
        if (answer != task * 2 + w->t || !block_is(block, pattern(round, c, w->t, 1))) {
          fprintf(stderr, "parent %d thread %d: round %d, child %d answered %d (want %d)%s\n",
                  lrank, w->t, round, c, answer, task * 2 + w->t,
                  block_is(block, pattern(round, c, w->t, 1)) ? "" : ", its block differs");
          ++w->failures;
        }
      }
    } else {
      const int p = lrank % rsize;
      int task = -1;
      MPI_Recv(&task, 1, MPI_INT, p, w->t, w->comm, MPI_STATUS_IGNORE);
      MPI_Recv(block, block_bytes, MPI_BYTE, p, 10 + w->t, w->comm, MPI_STATUS_IGNORE);
      if (task != round * 100 + lrank || !block_is(block, pattern(round, lrank, w->t, 0))) {
        fprintf(stderr, "child %d thread %d: round %d, task %d (want %d)%s\n", lrank, w->t, round,
                task, round * 100 + lrank,
                block_is(block, pattern(round, lrank, w->t, 0)) ? "" : ", its block differs");
        ++w->failures;
      }
      const int answer = task * 2 + w->t;
      memset(block, pattern(round, lrank, w->t, 1), block_bytes);
      MPI_Send(&answer, 1, MPI_INT, p, w->t, w->comm);
      MPI_Send(block, block_bytes, MPI_BYTE, p, 10 + w->t, w->comm);
    }
  }
  if (block == NULL) ++w->failures;
  free(block);
  return NULL;
}

static int threaded(MPI_Comm parent, const char *program, int provided) {
  const int is_parent = parent == MPI_COMM_NULL;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  CHECK(provided == MPI_THREAD_MULTIPLE, "provided thread level %d", provided);
  MPI_Comm ic = parent;
  if (is_parent) {
    char self[PATH_MAX] = "";
    char *args[] = {"threads", NULL};
    int errcodes[children] = {-1, -1, -1};
    CHECK(realpath(program, self) != NULL, "realpath %s", program);
    CHECK(MPI_Comm_spawn(self, args, children, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, errcodes) ==
              MPI_SUCCESS,
          "spawn at MPI_THREAD_MULTIPLE");
    for (int i = 0; i < children; ++i) {
      CHECK(errcodes[i] == MPI_SUCCESS, "errcode %d is %d", i, errcodes[i]);
    }
  }
  if (ic == MPI_COMM_NULL) return finish();
  struct worker w[workers];
  pthread_t threads[workers];
  for (int t = 0; t < workers; ++t) {
    w[t] = (struct worker){MPI_COMM_NULL, is_parent, t, 0};
    CHECK(MPI_Comm_dup(ic, &w[t].comm) == MPI_SUCCESS, "dup %d of the spawn's", t);
  }
  for (int t = 0; t < workers; ++t) pthread_create(&threads[t], NULL, work, &w[t]);
  /* It ends with the disconnect of the spawn's intercommunicator (its
   * copy of the handle): the dups stay. */
  exercise(ic, is_parent, 0,
           is_parent ? "parent, beside its threads" : "child, beside its threads");
  for (int t = 0; t < workers; ++t) {
    pthread_join(threads[t], NULL);
    CHECK(w[t].failures == 0, "thread %d: %d failures", t, w[t].failures);
    MPI_Comm_disconnect(&w[t].comm);
  }
  if (is_parent && check_failures == 0 && rank == 0) printf("spawn threads: all checks passed\n");
  return finish();
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "abort-child") == 0) return abort_child(argc, argv);
  setenv("IRIS_UNIVERSE_SIZE", "7", 0); /* room for the children, as launchers with slots give */
  const int refusal = argc > 1 && strcmp(argv[1], "refused") == 0;
  const char *launcher_rank = getenv("PMIX_RANK"); /* set by Iris's mpiexec */
  const int multiple = refusal && argc > 2 && strcmp(argv[2], "multiple") == 0;
  const int threads = argc > 1 && strcmp(argv[1], "threads") == 0;
  int level = threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
  if (refusal && launcher_rank != NULL && atoi(launcher_rank) == 1) {
    setenv("IRIS_DYNAMIC_PEERS", "0", 1);
    if (multiple) level = MPI_THREAD_MULTIPLE;
  }
  int provided = -1;
  MPI_Init_thread(&argc, &argv, level, &provided);
  MPI_Comm parent = MPI_COMM_WORLD;
  MPI_Comm_get_parent(&parent);
  if (refusal) return refused(parent);
  if (argc > 1 && strcmp(argv[1], "abort") == 0) return abort_parents(argv[0]);
  if (argc > 1 && strcmp(argv[1], "die-child") == 0) return die_child(parent);
  if (argc > 1 && strcmp(argv[1], "die") == 0) return die_parents(argv[0]);
  if (threads) return threaded(parent, argv[0], provided);
  if (parent != MPI_COMM_NULL && argc > 1 && strcmp(argv[1], "alone") == 0) {
    return child_alone(parent);
  }
  if (parent != MPI_COMM_NULL) return child(parent, argc > 1 && strcmp(argv[1], "multi") == 0);
  int rank = -1;
  int size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int *universe = NULL;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &universe, &flag);
  const int want =
      atoi(getenv("IRIS_UNIVERSE_SIZE")) > size ? atoi(getenv("IRIS_UNIVERSE_SIZE")) : size;
  CHECK(flag == 1 && *universe == want, "MPI_UNIVERSE_SIZE %d, IRIS_UNIVERSE_SIZE says %d",
        flag ? *universe : -1, want);

  char wdir[PATH_MAX];
  CHECK(realpath("/tmp", wdir) != NULL, "realpath /tmp");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "host", "localhost");
  MPI_Info_set(info, "wdir", wdir);
  MPI_Info_set(info, "soft", "1:3");
  char *args[] = {"child", NULL};
  char self[PATH_MAX] = "";
  CHECK(realpath(argv[0], self) != NULL, "realpath %s", argv[0]);
  MPI_Comm ic = MPI_COMM_NULL;
  int errcodes[children] = {-1, -1, -1};
  CHECK(MPI_Comm_spawn(self, args, children, info, 0, MPI_COMM_WORLD, &ic, errcodes) == MPI_SUCCESS,
        "spawn");
  for (int i = 0; i < children; ++i) {
    CHECK(errcodes[i] == MPI_SUCCESS, "errcode %d is %d", i, errcodes[i]);
  }
  if (ic != MPI_COMM_NULL) {
    int rsize = -1;
    MPI_Comm_remote_size(ic, &rsize);
    CHECK(rsize == children, "%d children", rsize);
    if (rank == 0) {
      char cwd[PATH_MAX] = "";
      int their_size = -1;
      MPI_Recv(cwd, PATH_MAX, MPI_CHAR, 0, 21, ic, MPI_STATUS_IGNORE);
      MPI_Recv(&their_size, 1, MPI_INT, 0, 22, ic, MPI_STATUS_IGNORE);
      CHECK(strcmp(cwd, wdir) == 0, "the children work in %s, not %s", cwd, wdir);
      CHECK(their_size == children, "the children's world has %d", their_size);
    }
    intercomm_again(ic, 1);
    exercise(ic, 1, 0, "parent");
  }
  MPI_Info_free(&info);

  /* A program that is not there: its launcher says so and ends. */
  int codes[2] = {-1, -1};
  ic = MPI_COMM_WORLD;
  CHECK(MPI_Comm_spawn("/nonexistent/iris-no-such-program", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0,
                       MPI_COMM_WORLD, &ic, codes) == MPI_ERR_SPAWN,
        "spawned a missing program");
  CHECK(codes[0] == MPI_ERR_SPAWN && codes[1] == MPI_ERR_SPAWN, "errcodes %d, %d", codes[0],
        codes[1]);
  CHECK(ic == MPI_COMM_NULL, "a failed spawn gave %d", ic);
  MPI_Info elsewhere;
  MPI_Info_create(&elsewhere);
  MPI_Info_set(elsewhere, "host", "iris-no-such-host.invalid");
  CHECK(MPI_Comm_spawn(self, args, 1, elsewhere, 0, MPI_COMM_WORLD, &ic, MPI_ERRCODES_IGNORE) ==
            MPI_ERR_SPAWN,
        "spawned on another host");
  MPI_Info_free(&elsewhere);
  CHECK(MPI_Comm_spawn(self, args, 0, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, MPI_ERRCODES_IGNORE) ==
            MPI_ERR_ARG,
        "spawned 0 processes");
  /* Two commands, one world of children: one of the first, two of the
   * second (the same program here), numbered by MPI_APPNUM. */
  char *commands[2] = {self, self};
  char *multi_args[] = {"multi", NULL};
  char **argvs[2] = {multi_args, multi_args};
  const int maxprocs[2] = {1, 2};
  int multi_codes[3] = {-1, -1, -1};
  /* A wdir for the first command only: the second's children work where
   * the parents do. */
  MPI_Info wdirs[2];
  MPI_Info_create(&wdirs[0]);
  MPI_Info_set(wdirs[0], "wdir", wdir);
  wdirs[1] = MPI_INFO_NULL;
  CHECK(MPI_Comm_spawn_multiple(2, commands, argvs, maxprocs, wdirs, 0, MPI_COMM_WORLD, &ic,
                                multi_codes) == MPI_SUCCESS,
        "spawn_multiple of two commands");
  MPI_Info_free(&wdirs[0]);
  CHECK(multi_codes[0] == MPI_SUCCESS && multi_codes[2] == MPI_SUCCESS, "errcodes %d .. %d",
        multi_codes[0], multi_codes[2]);
  if (ic != MPI_COMM_NULL) {
    if (rank == 0) {
      char cwd[PATH_MAX] = "";
      int their_size = -1;
      MPI_Recv(cwd, PATH_MAX, MPI_CHAR, 0, 21, ic, MPI_STATUS_IGNORE);
      MPI_Recv(&their_size, 1, MPI_INT, 0, 22, ic, MPI_STATUS_IGNORE);
      CHECK(their_size == children, "spawn_multiple's children's world has %d", their_size);
      CHECK(strcmp(cwd, wdir) == 0, "the first command's child works in %s, not %s", cwd, wdir);
      char here[PATH_MAX] = "";
      CHECK(getcwd(here, sizeof here) != NULL, "getcwd");
      MPI_Recv(cwd, PATH_MAX, MPI_CHAR, 1, 23, ic, MPI_STATUS_IGNORE);
      CHECK(strcmp(cwd, here) == 0, "the second command's child works in %s, not %s", cwd, here);
    }
    exercise(ic, 1, 0, "parent of spawn_multiple");
  }
  /* Rank 0 alone spawns two children; then an intercommunicator between
   * the whole parent world and the children (MPICH's spaiccreate). */
  MPI_Comm alone = MPI_COMM_NULL;
  if (rank == 0) {
    char *alone_args[] = {"alone", NULL};
    CHECK(MPI_Comm_spawn(self, alone_args, 2, MPI_INFO_NULL, 0, MPI_COMM_SELF, &alone,
                         MPI_ERRCODES_IGNORE) == MPI_SUCCESS,
          "spawn from rank 0 alone");
  }
  alone_join(alone, 1);
  if (alone != MPI_COMM_NULL) MPI_Comm_disconnect(&alone);
  if (check_failures == 0 && rank == 0) printf("spawn: all checks passed on %d ranks\n", size);
  return finish();
}
