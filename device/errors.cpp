#include "device/errors.hpp"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "device/comm.hpp"
#include "device/runtime.hpp"
#include "include/mpi.h"

namespace iris::device {
namespace {

std::string format_line(const char *call, const char *format, va_list args) {
  char reason[768];
  std::vsnprintf(reason, sizeof(reason), format, args);
  char line[1024];
  if (rt != nullptr) {
    std::snprintf(line, sizeof(line), "iris: rank %d: %s: %s\n", rt->rank, call, reason);
  } else {
    std::snprintf(line, sizeof(line), "iris: %s: %s\n", call, reason);
  }
  return line;
}

[[noreturn]] void end_job(const std::string &line) {
  // One write, so that lines from several ranks do not interleave.
  if (::write(STDERR_FILENO, line.data(), line.size()) < 0) {
    // Nothing more can be said; the exit below still ends the job.
  }
  if (rt != nullptr && rt->pmi) rt->pmi->abort(1, line);
  std::_Exit(1);
}

}  // namespace

int error_raise(const communicator *comm, const char *call, int error_class, const char *format,
                ...) {
  if (comm == nullptr && rt != nullptr) comm = comm_lookup(MPI_COMM_WORLD);
  const int handler = comm != nullptr ? comm->errhandler : MPI_ERRORS_ARE_FATAL;
  if (handler == MPI_ERRORS_RETURN) return error_class;
  va_list args;
  va_start(args, format);
  const std::string line = format_line(call, format, args);
  va_end(args);
  end_job(line);
}

void fatal(const char *call, const char *format, ...) {
  va_list args;
  va_start(args, format);
  const std::string line = format_line(call, format, args);
  va_end(args);
  end_job(line);
}

const char *error_class_text(int error_class) {
  switch (error_class) {
    case MPI_SUCCESS:
      return "no error";
    case MPI_ERR_BUFFER:
      return "invalid buffer pointer";
    case MPI_ERR_COUNT:
      return "invalid count argument";
    case MPI_ERR_TYPE:
      return "invalid datatype";
    case MPI_ERR_TAG:
      return "invalid tag";
    case MPI_ERR_COMM:
      return "invalid communicator";
    case MPI_ERR_RANK:
      return "invalid rank";
    case MPI_ERR_ROOT:
      return "invalid root";
    case MPI_ERR_GROUP:
      return "invalid group";
    case MPI_ERR_OP:
      return "invalid reduction operation";
    case MPI_ERR_TOPOLOGY:
      return "invalid topology";
    case MPI_ERR_DIMS:
      return "invalid dimension argument";
    case MPI_ERR_ARG:
      return "invalid argument";
    case MPI_ERR_UNKNOWN:
      return "unknown error";
    case MPI_ERR_TRUNCATE:
      return "message truncated: receive buffer too small";
    case MPI_ERR_OTHER:
      return "other error";
    case MPI_ERR_INTERN:
      return "internal error";
    case MPI_ERR_IN_STATUS:
      return "error code is in the status";
    case MPI_ERR_PENDING:
      return "pending request";
    case MPI_ERR_REQUEST:
      return "invalid request";
    case MPI_ERR_NO_MEM:
      return "out of memory";
    case MPI_ERR_UNSUPPORTED_OPERATION:
      return "operation not supported by Iris";
    case MPI_ERR_PROC_FAILED:
      return "a peer process failed";
    default:
      return nullptr;
  }
}

}  // namespace iris::device
