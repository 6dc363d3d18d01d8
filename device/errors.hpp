// Error reporting: the code that first sees an error reports it here, once.
#pragma once

namespace iris::device {

struct communicator;

// Applies the communicator's error handler (MPI_COMM_WORLD's when `comm` is
// null). Under MPI_ERRORS_RETURN it returns `error_class`; otherwise it prints
// one line "iris: rank R: CALL: reason" to stderr and ends the whole job.
[[gnu::format(printf, 4, 5)]] int error_raise(const communicator *comm, const char *call,
                                              int error_class, const char *format, ...);

// Prints "iris: rank R: CALL: reason" and ends the job with exit code 1.
[[noreturn, gnu::format(printf, 2, 3)]] void fatal(const char *call, const char *format, ...);

// The text of an error class, or nullptr for an unknown one.
const char *error_class_text(int error_class);

}  // namespace iris::device
