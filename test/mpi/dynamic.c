/* Dynamic processes between running jobs: ports, connect and accept, join,
 * and the name service.
 *
 *   dynamic server SERVICE   opens a port, publishes it as SERVICE and accepts
 *                            one connection on MPI_COMM_WORLD (root 0);
 *   dynamic client SERVICE   looks SERVICE up (waiting for it) and connects
 *                            on MPI_COMM_WORLD (root 0);
 *   dynamic                  one job alone: the halves of MPI_COMM_WORLD
 *                            connect to each other (2 ranks or more), two
 *                            ranks join over a TCP socket, and the refusals
 *                            (unknown and doubly published names, a closed
 *                            port, a malformed port name, a connect nobody
 *                            accepts within IRIS_CONNECT_TIMEOUT).
 *
 * Over each intercommunicator made: point-to-point both ways with
 * MPI_ANY_SOURCE, a broadcast from each group's root, an allreduce across,
 * a merge (the accepting group first) with an allreduce and a barrier on
 * it, and MPI_Comm_disconnect. Prints "dynamic: all checks passed on N
 * ranks" from rank 0 of each job. */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "inter.h"

static int rank;
static int size;

static void server(const char *service) {
  char port[MPI_MAX_PORT_NAME] = "";
  if (rank == 0) {
    CHECK(MPI_Open_port(MPI_INFO_NULL, port) == MPI_SUCCESS, "Open_port");
    CHECK(MPI_Publish_name(service, MPI_INFO_NULL, port) == MPI_SUCCESS, "Publish_name");
  }
  MPI_Comm ic = MPI_COMM_NULL;
  CHECK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic) == MPI_SUCCESS, "accept");
  if (ic != MPI_COMM_NULL) exercise(ic, 1, 0, "server");
  if (rank == 0) {
    CHECK(MPI_Unpublish_name(service, MPI_INFO_NULL, port) == MPI_SUCCESS, "Unpublish_name");
    CHECK(MPI_Close_port(port) == MPI_SUCCESS, "Close_port");
  }
}

static void client(const char *service) {
  char port[MPI_MAX_PORT_NAME] = "";
  if (rank == 0) {
    /* The server may not have published yet: look again for up to 60 s. */
    for (int tries = 0; tries < 600; ++tries) {
      if (MPI_Lookup_name(service, MPI_INFO_NULL, port) == MPI_SUCCESS) break;
      usleep(100000);
    }
    CHECK(port[0] != '\0', "no port published as %s", service);
  }
  MPI_Comm ic = MPI_COMM_NULL;
  CHECK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic) == MPI_SUCCESS, "connect");
  if (ic != MPI_COMM_NULL) exercise(ic, 0, 0, "client");
}

static void refusals(void) {
  char port[MPI_MAX_PORT_NAME] = "";
  char name[64];
  snprintf(name, sizeof name, "iris-dynamic-refusals-%d-%ld", rank, (long)getpid());
  CHECK(MPI_Lookup_name(name, MPI_INFO_NULL, port) == MPI_ERR_NAME, "an unknown name found");
  CHECK(MPI_Unpublish_name(name, MPI_INFO_NULL, "x") == MPI_ERR_SERVICE, "unpublished nothing");
  MPI_Open_port(MPI_INFO_NULL, port);
  CHECK(strncmp(port, "iris-port:", 10) == 0, "port name %s", port);
  CHECK(MPI_Publish_name(name, MPI_INFO_NULL, port) == MPI_SUCCESS, "publish");
  CHECK(MPI_Publish_name(name, MPI_INFO_NULL, port) == MPI_ERR_SERVICE, "published twice");
  char found[MPI_MAX_PORT_NAME] = "";
  CHECK(MPI_Lookup_name(name, MPI_INFO_NULL, found) == MPI_SUCCESS && strcmp(found, port) == 0,
        "lookup gave '%s' for '%s'", found, port);
  CHECK(MPI_Unpublish_name(name, MPI_INFO_NULL, "iris-port:other") == MPI_ERR_SERVICE,
        "unpublished the name of another port");
  CHECK(MPI_Unpublish_name(name, MPI_INFO_NULL, port) == MPI_SUCCESS, "unpublish");
  /* Nobody accepts: the connect gives up after IRIS_CONNECT_TIMEOUT (1 s). */
  MPI_Comm ic = MPI_COMM_NULL;
  const double start = MPI_Wtime();
  CHECK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &ic) == MPI_ERR_PORT,
        "a connect nobody accepted succeeded");
  CHECK(MPI_Wtime() - start < 30, "the connect took %.1f s to give up", MPI_Wtime() - start);
  CHECK(ic == MPI_COMM_NULL, "a failed connect gave %d", ic);
  /* A closed port refuses at once. */
  CHECK(MPI_Close_port(port) == MPI_SUCCESS, "Close_port");
  CHECK(MPI_Close_port(port) == MPI_ERR_PORT, "closed twice");
  CHECK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &ic) == MPI_ERR_PORT,
        "a connect to a closed port succeeded");
  CHECK(MPI_Comm_connect("no-such-port", MPI_INFO_NULL, 0, MPI_COMM_SELF, &ic) == MPI_ERR_PORT,
        "a malformed port name was taken");
  CHECK(MPI_Comm_accept("no-such-port", MPI_INFO_NULL, 0, MPI_COMM_SELF, &ic) == MPI_ERR_PORT,
        "accept on a port not open");
}

/* The even ranks accept, the odd ranks connect, within one job. */
static void halves(void) {
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  char port[MPI_MAX_PORT_NAME] = "";
  if (rank == 0) {
    MPI_Open_port(MPI_INFO_NULL, port);
    MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 1, 99, MPI_COMM_WORLD);
  } else if (rank == 1) {
    MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Comm ic = MPI_COMM_NULL;
  if (rank % 2 == 0) {
    CHECK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &ic) == MPI_SUCCESS, "halves: accept");
  } else {
    CHECK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &ic) == MPI_SUCCESS, "halves: connect");
  }
  exercise(ic, rank % 2 == 0, 1, "halves");
  if (rank == 0) MPI_Close_port(port);
  MPI_Comm_free(&half);
}

/* Ranks 0 and 1 join over a TCP socket on the loopback. */
static void join(void) {
  int fd = -1;
  if (rank == 0) {
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(listener, (struct sockaddr *)&a, sizeof a);
    listen(listener, 1);
    getsockname(listener, (struct sockaddr *)&a, &len);
    int port = ntohs(a.sin_port);
    MPI_Send(&port, 1, MPI_INT, 1, 98, MPI_COMM_WORLD);
    fd = accept(listener, NULL, NULL);
    close(listener);
  } else if (rank == 1) {
    int port = 0;
    MPI_Recv(&port, 1, MPI_INT, 0, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)port);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "join: connect to the socket");
  }
  if (rank <= 1) {
    MPI_Comm ic = MPI_COMM_NULL;
    CHECK(MPI_Comm_join(fd, &ic) == MPI_SUCCESS, "join");
    int rsize = -1;
    MPI_Comm_remote_size(ic, &rsize);
    CHECK(rsize == 1, "join: remote size %d", rsize);
    int mine = rank;
    int theirs = -1;
    MPI_Sendrecv(&mine, 1, MPI_INT, 0, 5, &theirs, 1, MPI_INT, 0, 5, ic, MPI_STATUS_IGNORE);
    CHECK(theirs == 1 - rank, "join: got %d", theirs);
    MPI_Comm_disconnect(&ic);
    close(fd);
  }
  /* A socket that is not another joiner's: a clear error, no hang. */
  if (rank == 0) {
    int pair[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
    close(pair[1]);
    MPI_Comm ic = MPI_COMM_NULL;
    CHECK(MPI_Comm_join(pair[0], &ic) == MPI_ERR_OTHER, "join over a closed socket");
    close(pair[0]);
  }
}

int main(int argc, char **argv) {
  if (getenv("IRIS_CONNECT_TIMEOUT") == NULL) setenv("IRIS_CONNECT_TIMEOUT", "1", 1);
  /* TEST_THREAD_LEVEL=multiple: everything again at MPI_THREAD_MULTIPLE
   * (mpi4py's default level). */
  const char *level = getenv("TEST_THREAD_LEVEL");
  int provided = -1;
  const int multiple = level != NULL && strcmp(level, "multiple") == 0;
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  CHECK(!multiple || provided == MPI_THREAD_MULTIPLE, "provided thread level %d", provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  if (argc == 3 && strcmp(argv[1], "server") == 0) {
    server(argv[2]);
  } else if (argc == 3 && strcmp(argv[1], "client") == 0) {
    client(argv[2]);
  } else {
    refusals();
    if (size >= 2) {
      halves();
      join();
    }
  }
  if (check_failures == 0 && rank == 0) printf("dynamic: all checks passed on %d ranks\n", size);
  return finish();
}
