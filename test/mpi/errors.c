/* Argument errors and their classes.
 *
 *   errors              every bad argument under MPI_ERRORS_RETURN
 *   errors fatal        an invalid rank under the default handler: the job
 *                       must end with one clear line
 *   errors before-init  MPI_Send before MPI_Init
 *   errors abort N      rank 1 (or 0 alone) calls MPI_Abort with code N
 *   errors abort-handler  rank 0 makes an invalid send under MPI_ERRORS_ABORT
 *   errors unsupported  rank 0 calls MPI_File_open under the default handler
 *   errors no-finalize  rank 1 returns from main without MPI_Finalize (code 0)
 *   errors forked-child every rank forks a child that calls exit(0): the job
 *                       goes on and ends well */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
  /* The nonblocking forms too: their small-message path must leave every
   * bad argument to the checks, and post nothing. */
  r = MPI_REQUEST_NULL;
  expect_class(MPI_Isend(&v, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &r), MPI_ERR_RANK,
               "Isend dest = size");
  expect_class(MPI_Isend(&v, 1, MPI_INT, 0, -2, MPI_COMM_WORLD, &r), MPI_ERR_TAG, "Isend tag -2");
  expect_class(MPI_Isend(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, &r), MPI_ERR_COUNT,
               "Isend count -1");
  expect_class(MPI_Isend(NULL, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &r), MPI_ERR_BUFFER,
               "Isend NULL buffer");
  expect_class(MPI_Isend(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG,
               "Isend NULL request");
  expect_class(MPI_Isend(&v, 1, (MPI_Datatype)12345, 0, 0, MPI_COMM_WORLD, &r), MPI_ERR_TYPE,
               "Isend garbage type");
  expect_class(MPI_Irecv(&v, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &r), MPI_ERR_RANK,
               "Irecv source = size");
  expect_class(MPI_Irecv(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD, &r), MPI_ERR_BUFFER,
               "Irecv NULL buffer");
  expect_class(MPI_Irecv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG,
               "Irecv NULL request");
  expect_class(MPI_Irecv(&v, 1, MPI_INT, 0, 0, MPI_COMM_NULL, &r), MPI_ERR_COMM,
               "Irecv on MPI_COMM_NULL");
  CHECK(r == MPI_REQUEST_NULL, "a refused Isend or Irecv set its request");
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
  expect_class(MPI_Comm_set_errhandler(MPI_COMM_WORLD, (MPI_Errhandler)99), MPI_ERR_ERRHANDLER,
               "bad error handler");
  /* A good call still works after all that. */
  int mine = 42;
  int got = 0;
  MPI_Sendrecv(&mine, 1, MPI_INT, 0, 1, &got, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_SELF,
               MPI_STATUS_IGNORE);
  CHECK(got == 42, "self sendrecv after errors gave %d", got);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* A user error handler that records its calls. */
static int handler_calls = 0;
static MPI_Comm handler_comm = MPI_COMM_NULL;
static int handler_code = MPI_SUCCESS;

static void record_error(MPI_Comm *comm, int *code, ...) {
  ++handler_calls;
  handler_comm = *comm;
  handler_code = *code;
}

static void user_handlers(int size) {
  MPI_Errhandler h = MPI_ERRHANDLER_NULL;
  CHECK(MPI_Comm_create_errhandler(record_error, &h) == MPI_SUCCESS, "create_errhandler failed");
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  CHECK(MPI_Comm_set_errhandler(dup, h) == MPI_SUCCESS, "set of a user handler failed");
  MPI_Errhandler got = MPI_ERRHANDLER_NULL;
  MPI_Comm_get_errhandler(dup, &got);
  CHECK(got == h, "get_errhandler gave 0x%x, set 0x%x", (unsigned)got, (unsigned)h);
  int v = 0;
  int err = MPI_Send(&v, 1, MPI_INT, size, 0, dup);
  CHECK(err == MPI_ERR_RANK, "invalid send under a user handler returned %d", err);
  CHECK(handler_calls == 1 && handler_comm == dup && handler_code == MPI_ERR_RANK,
        "handler: %d calls, comm 0x%x (want 0x%x), code %d", handler_calls, (unsigned)handler_comm,
        (unsigned)dup, handler_code);
  err = MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER);
  CHECK(err == MPI_SUCCESS && handler_calls == 2 && handler_code == MPI_ERR_OTHER,
        "call_errhandler: returned %d, %d calls, code %d", err, handler_calls, handler_code);
  /* An unsupported call reports through its communicator's handler. */
  MPI_File file = MPI_FILE_NULL;
  err = MPI_File_open(dup, "iris-no-file", MPI_MODE_RDONLY, MPI_INFO_NULL, &file);
  CHECK(err == MPI_ERR_UNSUPPORTED_OPERATION && handler_calls == 3 && handler_comm == dup &&
            handler_code == MPI_ERR_UNSUPPORTED_OPERATION && file == MPI_FILE_NULL,
        "File_open under a user handler: returned %d, %d calls, code %d", err, handler_calls,
        handler_code);
  /* Freeing the handle leaves the communicator's handler working. */
  CHECK(MPI_Errhandler_free(&h) == MPI_SUCCESS && h == MPI_ERRHANDLER_NULL, "Errhandler_free");
  err = MPI_Send(&v, 1, MPI_INT, 0, -4, dup);
  CHECK(err == MPI_ERR_TAG && handler_calls == 4 && handler_code == MPI_ERR_TAG,
        "after Errhandler_free: returned %d, %d calls", err, handler_calls);
  /* A predefined handle from get_errhandler may be freed too. */
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got);
  CHECK(MPI_Errhandler_free(&got) == MPI_SUCCESS && got == MPI_ERRHANDLER_NULL,
        "Errhandler_free of a predefined handle");
  CHECK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER) == MPI_SUCCESS,
        "call_errhandler under MPI_ERRORS_RETURN");
  MPI_Comm_free(&dup);
  CHECK(handler_calls == 4, "handler called %d times", handler_calls);
}

static void added_errors(void) {
  int cls = -1;
  int code = -1;
  int arg_code = -1;
  CHECK(MPI_Add_error_class(&cls) == MPI_SUCCESS && cls > MPI_ERR_LASTCODE, "new class %d", cls);
  CHECK(MPI_Add_error_code(cls, &code) == MPI_SUCCESS && code > MPI_ERR_LASTCODE && code != cls,
        "new code %d", code);
  CHECK(MPI_Add_error_code(MPI_ERR_ARG, &arg_code) == MPI_SUCCESS && arg_code > code,
        "new code %d of MPI_ERR_ARG", arg_code);
  CHECK(MPI_Add_error_string(cls, "iris test class") == MPI_SUCCESS, "string of a class");
  CHECK(MPI_Add_error_string(code, "iris test code") == MPI_SUCCESS, "string of a code");
  int got = -1;
  MPI_Error_class(code, &got);
  CHECK(got == cls, "class of the added code: %d, want %d", got, cls);
  MPI_Error_class(cls, &got);
  CHECK(got == cls, "class of the added class: %d", got);
  MPI_Error_class(arg_code, &got);
  CHECK(got == MPI_ERR_ARG, "class of the added MPI_ERR_ARG code: %d", got);
  char text[MPI_MAX_ERROR_STRING];
  int length = -1;
  MPI_Error_string(code, text, &length);
  CHECK(strcmp(text, "iris test code") == 0 && length == 14, "string \"%s\" (%d)", text, length);
  MPI_Error_string(cls, text, &length);
  CHECK(strcmp(text, "iris test class") == 0, "class string \"%s\"", text);
  MPI_Error_string(arg_code, text, &length);
  CHECK(length == 0 && text[0] == '\0', "an added code without a string gave \"%s\"", text);
  expect_class(MPI_ERR_LASTCODE, MPI_ERR_LASTCODE, "MPI_ERR_LASTCODE");
  expect_class(MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_UNSUPPORTED_OPERATION, "unsupported");
  expect_class(MPI_ERR_INFO_NOKEY, MPI_ERR_INFO_NOKEY, "MPI-4 class");
  expect_class(MPI_Error_class(arg_code + 1000, &got), MPI_ERR_ARG, "class of an unknown code");
  expect_class(MPI_Error_string(-5, text, &length), MPI_ERR_ARG, "string of an unknown code");
  expect_class(MPI_Add_error_string(MPI_ERR_ARG, "mine"), MPI_ERR_ARG, "string of a builtin");
  expect_class(MPI_Add_error_code(code, &got), MPI_ERR_ARG, "code of a code");
  expect_class(MPI_Add_error_code(123456789, &got), MPI_ERR_ARG, "code of no class");
  /* A user handler receives an added code as it is. */
  MPI_Errhandler h = MPI_ERRHANDLER_NULL;
  MPI_Comm_create_errhandler(record_error, &h);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, h);
  MPI_Comm_call_errhandler(MPI_COMM_SELF, code);
  CHECK(handler_code == code && handler_comm == MPI_COMM_SELF, "handler got code %d on 0x%x",
        handler_code, (unsigned)handler_comm);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
  MPI_Errhandler_free(&h);
}

/* Calls of unsupported families return their class and change nothing. */
static void unsupported_calls(void) {
  int buf[4] = {0, 0, 0, 0};
  MPI_File fh = MPI_FILE_NULL;
  expect_class(MPI_File_open(MPI_COMM_WORLD, "iris-no-file", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
               MPI_ERR_UNSUPPORTED_OPERATION, "File_open");
  CHECK(fh == MPI_FILE_NULL, "File_open wrote its output");
  expect_class(MPI_File_read_at_all(fh, 0, buf, 1, MPI_INT, MPI_STATUS_IGNORE),
               MPI_ERR_UNSUPPORTED_OPERATION, "File_read_at_all");
  /* A program that never calls MPI_Init: its launcher ends without it. */
  MPI_Comm inter = MPI_COMM_NULL;
  expect_class(MPI_Comm_spawn("true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                              MPI_ERRCODES_IGNORE),
               MPI_ERR_SPAWN, "Comm_spawn");
  MPI_Comm parent = MPI_COMM_WORLD;
  CHECK(MPI_Comm_get_parent(&parent) == MPI_SUCCESS && parent == MPI_COMM_NULL,
        "Comm_get_parent gave 0x%x", (unsigned)parent);
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(MPI_ERR_UNSUPPORTED_OPERATION, text, &length);
  CHECK(length > 0, "no string for MPI_ERR_UNSUPPORTED_OPERATION");
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
  if (strcmp(mode, "abort-handler") == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ABORT);
    int v = 0;
    if (rank == 0) MPI_Send(&v, 1, MPI_INT, -7, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
  }
  if (strcmp(mode, "no-finalize") == 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) return 0; /* erroneous: the job must end, not hang */
    MPI_Finalize();
    return 0;
  }
  if (strcmp(mode, "forked-child") == 0) {
    /* The child runs the process's exit handlers, MPI's among them: they
     * must leave the parent's job alone. */
    const pid_t child = fork();
    if (child == 0) exit(0);
    int status = -1;
    CHECK(child > 0 && waitpid(child, &status, 0) == child, "fork or wait failed");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    int v = rank, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size * (size - 1) / 2, "allreduce after the fork gave %d", sum);
    MPI_Finalize();
    if (rank == 0) printf("errors: forked children left the job alone\n");
    return 0;
  }
  if (strcmp(mode, "unsupported") == 0) {
    MPI_File file;
    if (rank == 0) {
      MPI_File_open(MPI_COMM_SELF, "iris-no-file", MPI_MODE_RDONLY, MPI_INFO_NULL, &file);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
  }
  returned_classes(size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  user_handlers(size);
  added_errors();
  unsupported_calls();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && check_failures == 0) printf("errors: all classes as expected\n");
  return finish();
}
