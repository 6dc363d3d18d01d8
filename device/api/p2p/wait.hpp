// What the Wait family lends the other bindings under MPI_THREAD_MULTIPLE.
#pragma once

#include "include/mpi.h"

namespace iris::api {

// MULTIPLE, without the call lock, from a thread that does not hold it
// (wait.cpp): waits for the request `*request` (not null) by spinning on
// its completion and polling through a try-lock of the call lock (aside
// when another thread holds it), then finishes it into this thread's cache
// when it may (a receive of plain bytes without an error, a send complete
// at once). False when it must be finished under the call lock, `*request`
// and `status` untouched: a request this path does not wait for
// (persistent, extended, collective), or an ordinary one now complete.
bool wait_unlocked(MPI_Request *request, MPI_Status *status);

}  // namespace iris::api
