// Error reporting: the code that first sees an error reports it here, once.
// Also the error handlers (predefined and user-defined) and the error
// classes and codes a program adds (MPI_Add_error_class/code/string).
#pragma once

#include <string>

namespace iris::device {

struct communicator;

// Applies the communicator's error handler (MPI_COMM_WORLD's when `comm` is
// null) and returns `error_class`. MPI_ERRORS_RETURN only returns; a user
// handler is called with (the communicator's handle, the code) first;
// MPI_ERRORS_ARE_FATAL prints one line "iris: rank R: CALL: reason" to stderr
// and ends the whole job with exit code 1; MPI_ERRORS_ABORT does the same as
// MPI_Abort(comm, error_class) would (the exit code is the class).
[[gnu::format(printf, 4, 5)]] int error_raise(const communicator *comm, const char *call,
                                              int error_class, const char *format, ...);
// The same for an object that is no communicator (a window): its handler
// and handle, which a user handler gets.
[[gnu::format(printf, 5, 6)]] int error_raise_object(int handler, int handle, const char *call,
                                                     int error_class, const char *format, ...);

// Prints "iris: rank R: CALL: reason" and ends the job with exit code 1.
[[noreturn, gnu::format(printf, 2, 3)]] void fatal(const char *call, const char *format, ...);

// The text of a predefined error class, or nullptr for any other number.
const char *error_class_text(int error_class);

// User error handlers: handles from MPI_ERRORS_ABORT + 1 upwards. Objects live until the
// process ends: a communicator may still use a handler its creator freed.
using comm_errhandler_fn = void(int *comm, int *code, ...);
int errhandler_create(comm_errhandler_fn *fn);
// Whether `handle` names a predefined handler or one made by
// errhandler_create.
bool errhandler_valid(int handle);

// Added error classes and codes share the numbers above MPI_ERR_LASTCODE.
// Each returns the new number, or -1 when the numbers run out.
int error_class_add();
int error_code_add(int error_class);
// The class of `code` (predefined or added), or -1 for an unknown number.
int error_class_of(int code);
// Sets the string of an added code or class; false when `code` was not added.
bool error_string_set(int code, std::string text);
// The text of `code`: the predefined text, the string set for an added code
// ("" when none was set), or nullptr for an unknown number.
const char *error_code_text(int code);
// The largest error code or class in use (the MPI_LASTUSEDCODE attribute).
// MPI-4.1 removal of an added class or code (nullptr, or why not); and of
// the string of one (false when it has none).
const char *error_remove(int code, bool is_class);
bool error_string_remove(int code);
int error_last_used();

}  // namespace iris::device
