/* Argument errors and their classes.
 *
 *   errors              every bad argument under MPI_ERRORS_RETURN
 *   errors fatal        an invalid rank under the default handler: the job
 *                       must end with one clear line
 *   errors before-init  MPI_Send before MPI_Init
 *   errors abort N      rank 1 (or 0 alone) calls MPI_Abort with code N */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void expect_class(int err, int want, const char *what) {
  int cls = -1;
  MPI_Error_class(err, &cls);
  CHECK(cls == want, "%s: class %d, expected %d", what, cls, want);
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(err, text, &length);
  CHECK(length > 0 && (int)strlen(text) == length, "%s: empty error string", what);
}

static void returned_classes(int size) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler);
  CHECK(handler == MPI_ERRORS_RETURN, "errhandler not set");
  int v = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  expect_class(MPI_Send(&v, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "dest = size");
  expect_class(MPI_Send(&v, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "dest = -7");
  expect_class(MPI_Recv(&v, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
               MPI_ERR_RANK, "source out of range");
  expect_class(MPI_Send(&v, 1, MPI_INT, 0, -3, MPI_COMM_WORLD), MPI_ERR_TAG, "send tag -3");
  expect_class(MPI_Send(&v, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG,
               "send with MPI_ANY_TAG");
  expect_class(MPI_Irecv(&v, 1, MPI_INT, 0, -9, MPI_COMM_WORLD, &r), MPI_ERR_TAG, "recv tag -9");
  expect_class(MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "count -1");
  expect_class(MPI_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE,
               "MPI_DATATYPE_NULL");
  expect_class(MPI_Send(&v, 1, (MPI_Datatype)12345, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE,
               "garbage datatype");
  expect_class(MPI_Send(&v, 1, MPI_COMM_WORLD, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE,
               "a communicator passed as a datatype");
  expect_class(MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_COMM_NULL");
  expect_class(MPI_Send(&v, 1, MPI_INT, 0, 0, (MPI_Comm)0x1000ffff), MPI_ERR_COMM,
               "garbage communicator");
  expect_class(MPI_Send(NULL, 1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER, "NULL buffer");
  expect_class(MPI_Recv(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_BUFFER,
               "NULL receive buffer");
  r = (MPI_Request)0x70001234;
  expect_class(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_ERR_REQUEST, "bogus request");
  r = MPI_COMM_WORLD;
  expect_class(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_ERR_REQUEST, "communicator as request");
  int size_out = 0;
  expect_class(MPI_Comm_size(MPI_COMM_NULL, &size_out), MPI_ERR_COMM, "Comm_size of NULL");
  expect_class(MPI_Comm_rank(MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "Comm_rank into NULL");
  expect_class(MPI_Barrier((MPI_Comm)7), MPI_ERR_COMM, "Barrier on garbage");
  MPI_Status st;
  memset(&st, 0, sizeof(st));
  int count = 0;
  expect_class(MPI_Get_count(&st, MPI_DATATYPE_NULL, &count), MPI_ERR_TYPE, "Get_count type");
  expect_class(MPI_Comm_set_errhandler(MPI_COMM_WORLD, (MPI_Errhandler)99), MPI_ERR_ARG,
               "bad error handler");
  /* A good call still works after all that. */
  int mine = 42;
  int got = 0;
  MPI_Sendrecv(&mine, 1, MPI_INT, 0, 1, &got, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_SELF,
               MPI_STATUS_IGNORE);
  CHECK(got == 42, "self sendrecv after errors gave %d", got);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "return";
  if (strcmp(mode, "before-init") == 0) {
    int v = 0;
    MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD); /* must end the process */
    return 0;
  }
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (strcmp(mode, "fatal") == 0) {
    int v = 0;
    if (rank == 0) MPI_Send(&v, 1, MPI_INT, size + 90, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD); /* the others wait here until the job ends */
    return 0;
  }
  if (strcmp(mode, "abort") == 0) {
    if (rank == (size > 1 ? 1 : 0)) MPI_Abort(MPI_COMM_WORLD, argc > 2 ? atoi(argv[2]) : 1);
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
  }
  returned_classes(size);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("errors: all classes as expected\n");
  return finish();
}
