#include "device/runtime/errors.hpp"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/base/threading.hpp"
#include "device/core/comm.hpp"
#include "device/runtime/runtime.hpp"
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

[[noreturn]] void end_job(const std::string &line, int exit_code = 1) {
  // One write, so that lines from several ranks do not interleave.
  if (::write(STDERR_FILENO, line.data(), line.size()) < 0) {
    // Nothing more can be said; the exit below still ends the job.
  }
  if (rt != nullptr && rt->pmi) rt->pmi->abort(exit_code, line);
  std::_Exit(exit_code);
}

// User error handlers, indexed by handle - first_user_errhandler. Only
// MPI_Init's thread or one thread at a time (MPI_THREAD_SERIALIZED) calls in.
constexpr int first_user_errhandler = MPI_ERRORS_ABORT + 1;
std::vector<comm_errhandler_fn *> user_errhandlers;

// Added error classes and codes, indexed by number - (MPI_ERR_LASTCODE + 1).
struct added_error {
  int error_class;
  std::string text;
  bool removed = false;  // MPI_Remove_error_class/code (MPI-4.1): the number stays used
};
std::vector<added_error> added_errors;
constexpr int max_added_errors = 1 << 20;

const added_error *added_error_of(int code) {
  const long index = static_cast<long>(code) - (MPI_ERR_LASTCODE + 1);
  if (index < 0 || index >= static_cast<long>(added_errors.size())) return nullptr;
  const added_error &e = added_errors[static_cast<std::size_t>(index)];
  return e.removed ? nullptr : &e;
}

}  // namespace

namespace {

// The handler `handler` of the object `handle` (a communicator or window)
// for `error_class`.
int raise_to(int handler, int handle, const char *call, int error_class, const char *format,
             va_list args) {
  if (handler == MPI_ERRORS_RETURN) return error_class;
  if (handler >= first_user_errhandler &&
      handler - first_user_errhandler < static_cast<int>(user_errhandlers.size())) {
    int code = error_class;
    user_errhandlers[static_cast<std::size_t>(handler - first_user_errhandler)](&handle, &code);
    return error_class;
  }
  const std::string line = format_line(call, format, args);
  // MPI_ERRORS_ABORT acts as MPI_Abort(comm, code) would: the job ends with
  // the code. MPI_ERRORS_ARE_FATAL ends it as a failure (exit code 1).
  end_job(line,
          handler == MPI_ERRORS_ABORT && error_class > 0 && error_class < 256 ? error_class : 1);
}

}  // namespace

int error_raise(const communicator *comm, const char *call, int error_class, const char *format,
                ...) {
  const api_guard guard;  // also for the unsupported functions' table, which holds none
  if (comm == nullptr && rt != nullptr) comm = comm_lookup(MPI_COMM_WORLD);
  const int handler = comm != nullptr ? comm->errhandler : MPI_ERRORS_ARE_FATAL;
  va_list args;
  va_start(args, format);
  const int err =
      raise_to(handler, comm != nullptr ? comm->handle : 0, call, error_class, format, args);
  va_end(args);
  return err;
}

int error_raise_object(int handler, int handle, const char *call, int error_class,
                       const char *format, ...) {
  const api_guard guard;
  va_list args;
  va_start(args, format);
  const int err = raise_to(handler, handle, call, error_class, format, args);
  va_end(args);
  return err;
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
    case MPI_ERR_ACCESS:
      return "permission denied";
    case MPI_ERR_AMODE:
      return "invalid file access mode";
    case MPI_ERR_ASSERT:
      return "invalid assertion argument";
    case MPI_ERR_BAD_FILE:
      return "invalid file name";
    case MPI_ERR_BASE:
      return "invalid base argument";
    case MPI_ERR_CONVERSION:
      return "data conversion failed";
    case MPI_ERR_DISP:
      return "invalid displacement argument";
    case MPI_ERR_DUP_DATAREP:
      return "data representation already defined";
    case MPI_ERR_FILE_EXISTS:
      return "file exists";
    case MPI_ERR_FILE_IN_USE:
      return "file in use";
    case MPI_ERR_FILE:
      return "invalid file handle";
    case MPI_ERR_INFO_KEY:
      return "invalid info key";
    case MPI_ERR_INFO_NOKEY:
      return "info key not defined";
    case MPI_ERR_INFO_VALUE:
      return "invalid info value";
    case MPI_ERR_INFO:
      return "invalid info object";
    case MPI_ERR_IO:
      return "I/O error";
    case MPI_ERR_KEYVAL:
      return "invalid attribute key";
    case MPI_ERR_LOCKTYPE:
      return "invalid lock type";
    case MPI_ERR_NAME:
      return "service name not published";
    case MPI_ERR_NOT_SAME:
      return "collective argument not the same on all processes";
    case MPI_ERR_NO_SPACE:
      return "no space left";
    case MPI_ERR_NO_SUCH_FILE:
      return "no such file";
    case MPI_ERR_PORT:
      return "invalid port name";
    case MPI_ERR_PROC_ABORTED:
      return "a peer process aborted";
    case MPI_ERR_QUOTA:
      return "quota exceeded";
    case MPI_ERR_READ_ONLY:
      return "read-only file or file system";
    case MPI_ERR_RMA_ATTACH:
      return "memory cannot be attached to the window";
    case MPI_ERR_RMA_CONFLICT:
      return "conflicting accesses to a window";
    case MPI_ERR_RMA_RANGE:
      return "target memory outside the window";
    case MPI_ERR_RMA_SHARED:
      return "memory cannot be shared";
    case MPI_ERR_RMA_SYNC:
      return "invalid synchronization of RMA calls";
    case MPI_ERR_RMA_FLAVOR:
      return "wrong window flavor";
    case MPI_ERR_SERVICE:
      return "invalid service name";
    case MPI_ERR_SESSION:
      return "invalid session";
    case MPI_ERR_SIZE:
      return "invalid size argument";
    case MPI_ERR_SPAWN:
      return "could not spawn processes";
    case MPI_ERR_UNSUPPORTED_DATAREP:
      return "unsupported data representation";
    case MPI_ERR_VALUE_TOO_LARGE:
      return "value too large to store";
    case MPI_ERR_WIN:
      return "invalid window";
    case MPI_ERR_ERRHANDLER:
      return "invalid error handler";
    case MPI_ERR_PROC_FAILED_PENDING:
      return "a receive from any source waits while a failure is not acknowledged";
    case MPI_ERR_REVOKED:
      return "the communicator was revoked";
    case MPI_ERR_LASTCODE:
      return "last error code";
    default:
      return nullptr;
  }
}

int errhandler_create(comm_errhandler_fn *fn) {
  user_errhandlers.push_back(fn);
  return first_user_errhandler + static_cast<int>(user_errhandlers.size()) - 1;
}

bool errhandler_valid(int handle) {
  if (handle == MPI_ERRORS_ARE_FATAL || handle == MPI_ERRORS_RETURN || handle == MPI_ERRORS_ABORT) {
    return true;
  }
  return handle >= first_user_errhandler &&
         handle - first_user_errhandler < static_cast<int>(user_errhandlers.size());
}

int error_class_add() {
  if (added_errors.size() >= max_added_errors) return -1;
  const int number = MPI_ERR_LASTCODE + 1 + static_cast<int>(added_errors.size());
  added_errors.push_back({number, {}});
  return number;
}

int error_code_add(int error_class) {
  if (added_errors.size() >= max_added_errors) return -1;
  added_errors.push_back({error_class, {}});
  return MPI_ERR_LASTCODE + static_cast<int>(added_errors.size());
}

int error_class_of(int code) {
  if (error_class_text(code) != nullptr) return code;
  const added_error *e = added_error_of(code);
  return e != nullptr ? e->error_class : -1;
}

bool error_string_set(int code, std::string text) {
  const added_error *e = added_error_of(code);
  if (e == nullptr) return false;
  added_errors[static_cast<std::size_t>(code - (MPI_ERR_LASTCODE + 1))].text = std::move(text);
  return true;
}

const char *error_code_text(int code) {
  if (const char *text = error_class_text(code)) return text;
  const added_error *e = added_error_of(code);
  return e != nullptr ? e->text.c_str() : nullptr;
}

const char *error_remove(int code, bool is_class) {
  const added_error *e = added_error_of(code);
  if (e == nullptr) return "not an added error class or code (those are above MPI_ERR_LASTCODE)";
  if ((e->error_class == code) != is_class) {
    return is_class ? "an error code, not a class" : "an error class, not a code";
  }
  // MPI-4.1 9.5: a code's string goes first, and a class's codes.
  if (!is_class && !e->text.empty()) {
    return "the code still has an error string (MPI_Remove_error_string first)";
  }
  if (is_class) {
    for (const added_error &other : added_errors) {
      if (!other.removed && other.error_class == code && &other != e) {
        return "the class still has error codes (remove them first)";
      }
    }
  }
  added_errors[static_cast<std::size_t>(code - (MPI_ERR_LASTCODE + 1))].removed = true;
  return nullptr;
}

bool error_string_remove(int code) {
  const added_error *e = added_error_of(code);
  if (e == nullptr || e->text.empty()) return false;
  added_errors[static_cast<std::size_t>(code - (MPI_ERR_LASTCODE + 1))].text.clear();
  return true;
}

int error_last_used() {
  return MPI_ERR_LASTCODE + static_cast<int>(added_errors.size());
}

}  // namespace iris::device
