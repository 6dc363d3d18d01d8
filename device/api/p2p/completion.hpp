// What the completion bindings share (wait.cpp: the Wait and Test families;
// request.cpp: Request_free, Cancel and the Request_get_status family):
// resolving and checking request handles, and handing a completed request's
// outcome back.
#pragma once

#include "device/api/check.hpp"
#include "device/protocols/recovery.hpp"

namespace iris::api::completion {

// Resolves a handle that is not MPI_REQUEST_NULL; reports a bad one.
inline int request_of(const char *call, MPI_Request handle, device::request *&out) {
  out = device::rt->requests.from_handle(handle);
  if (out != nullptr) return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPI_ERR_REQUEST, "invalid request handle 0x%x",
                             static_cast<unsigned>(handle));
}

// How many requests of an array check_requests remembers for its caller
// (`remember`): one window of an OSU-style stream.
inline constexpr int remembered_requests = 64;

// Checks an array argument: every entry is MPI_REQUEST_NULL or live. With
// `finished_prefix`, also counts the entries from the first on that are
// null or complete ordinary requests (MPI_Waitall: one look at each handle
// of a window of sends that completed at once, not two). With `remember`,
// stores the first remembered_requests entries' requests there (nullptr for
// MPI_REQUEST_NULL), so that the caller looks none of them up again.
inline int check_requests(const char *call, int count, const MPI_Request requests[],
                          int *finished_prefix = nullptr, device::request **remember = nullptr) {
  if (int err = api::check_initialized(call)) return err;
  if (count < 0)
    return device::error_raise(nullptr, call, MPI_ERR_COUNT, "negative count %d", count);
  if (count > 0) {
    if (int err = api::check_not_null(call, nullptr, requests, "array_of_requests")) return err;
  }
  bool prefix = finished_prefix != nullptr;
  for (int i = 0; i < count; ++i) {
    device::request *r = nullptr;
    if (requests[i] != MPI_REQUEST_NULL) {
      if (int err = request_of(call, requests[i], r)) return err;
    }
    if (remember != nullptr && i < remembered_requests) remember[i] = r;
    if (!prefix) continue;
    // An extension is asked only once every handle is known to be good.
    if (r == nullptr || (r->ext == nullptr && device::request_done(*r))) {
      ++*finished_prefix;
    } else {
      prefix = false;
    }
  }
  return MPI_SUCCESS;
}

// The live request of a checked, non-null handle.
inline device::request &live(MPI_Request handle) {
  return *device::rt->requests.from_handle(handle);
}

// A persistent request that is not started counts as null for the Wait and
// Test calls, but keeps its handle.
inline bool inactive(MPI_Request handle) {
  if (handle == MPI_REQUEST_NULL) return true;
  const device::request &r = live(handle);
  return r.persistent.op != device::persistent_op::none && !r.active;
}

// Whether `r` is complete; an extension is asked first (request_ext::poll).
// An acquire load (request_done): a receive posted without the call lock
// may be completed by a thread that polls without it (request::aside).
// A receive from any source that an unacknowledged failure blocks counts
// as done: request_finish hands back MPIX_ERR_PROC_FAILED_PENDING and
// leaves it posted.
inline bool is_done(device::request &r) {
  if (!device::request_done(r) && r.ext != nullptr) r.ext->poll(r);
  if (device::rt->troubled && !device::request_done(r)) [[unlikely]] {
    return device::recovery_blocks(r);
  }
  return device::request_done(r);
}

// Whether a request the Wait calls look at is finished: null (nullptr),
// inactive, or done.
inline bool finished(device::request *r) {
  return r == nullptr || (r->persistent.op != device::persistent_op::none && !r->active) ||
         is_done(*r);
}
inline bool finished(MPI_Request handle) {
  return finished(handle == MPI_REQUEST_NULL ? nullptr : &live(handle));
}

// The outcome of a complete request without an extension.
inline int ordinary_outcome(const device::request &r, MPI_Status *status) {
  api::status_fill(status, r);
  // A send reports only what a failure or a revocation ended it with.
  return r.kind != device::request_kind::send ? r.status_error
         : r.status_error == MPI_ERR_PROC_FAILED || r.status_error == MPI_ERR_REVOKED
             ? r.status_error
             : MPI_SUCCESS;
}

// Hands back a completed request's outcome and returns its error class (a
// receive's truncation). An ordinary request is freed; a persistent one
// becomes inactive and keeps its handle. `live_request` is the one `handle`
// names, already looked up (nullptr for MPI_REQUEST_NULL).
[[gnu::always_inline]] inline int request_finish(device::request *live_request, MPI_Request *handle,
                                                 MPI_Status *status) {
  // The common case first: a done request, neither persistent nor extended.
  if (live_request != nullptr && live_request->ext == nullptr &&
      live_request->persistent.op == device::persistent_op::none &&
      device::request_done(*live_request)) [[likely]] {
    const int error = ordinary_outcome(*live_request, status);
    device::rt->requests.release(live_request);
    *handle = MPI_REQUEST_NULL;
    return error;
  }
  if (live_request == nullptr ||
      (live_request->persistent.op != device::persistent_op::none && !live_request->active)) {
    api::status_empty(status);  // null or inactive, as inactive() says
    return MPI_SUCCESS;
  }
  device::request &r = *live_request;
  if (!device::request_done(r)) {  // blocked by a failure (is_done): it stays
    api::status_empty(status);
    if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = MPI_ERR_PROC_FAILED_PENDING;
    return MPI_ERR_PROC_FAILED_PENDING;
  }
  int error = MPI_SUCCESS;
  if (r.ext != nullptr) {
    error = r.ext->finish(r, status);
  } else {
    error = ordinary_outcome(r, status);
  }
  if (r.persistent.op != device::persistent_op::none) {
    r.active = false;
    return error;
  }
  device::rt->requests.release(&r);
  *handle = MPI_REQUEST_NULL;
  return error;
}
inline int request_finish(MPI_Request *handle, MPI_Status *status) {
  return request_finish(*handle == MPI_REQUEST_NULL ? nullptr : &live(*handle), handle, status);
}

inline int single_result(const char *call, const device::communicator *comm, int error) {
  if (error == MPI_SUCCESS) return MPI_SUCCESS;
  if (error == MPI_ERR_TYPE) {
    return device::error_raise(comm, call, error,
                               "a message ends part-way through an element of the receive "
                               "datatype: the type signatures differ");
  }
  if (error == MPI_ERR_PROC_FAILED || error == MPI_ERR_PROC_FAILED_PENDING ||
      error == MPI_ERR_REVOKED) {
    const char *why = error == MPI_ERR_REVOKED ? "the communicator was revoked"
                      : error == MPI_ERR_PROC_FAILED
                          ? "a process this operation involves died (MPIX_Comm_get_failed "
                            "names it)"
                          : "a receive from any source waits while a failure in the "
                            "communicator is not acknowledged (MPIX_Comm_ack_failed)";
    return device::error_raise(comm, call, error, "%s", why);
  }
  if (device::error_class_of(error) == MPI_ERR_TRUNCATE) {
    return device::error_raise(comm, call, error,
                               "a message did not fit its receive: a buffer too small, or ranks of "
                               "a collective passing counts that do not match");
  }
  return device::error_raise(comm, call, error,
                             "the request ended with error code %d (a generalized request's query "
                             "or free function, or the operation the request stood for)",
                             error);
}

inline int in_status_result(const char *call, bool any_error) {
  if (!any_error) return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPI_ERR_IN_STATUS,
                             "a request ended with an error (a message that did not fit, a "
                             "failed process); see the statuses");
}

inline MPI_Status *status_at(MPI_Status statuses[], int i) {
  return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

// The calls with an array of statuses write MPI_ERROR only when they return
// MPI_ERR_IN_STATUS: into status k from the first error on, and MPI_SUCCESS
// into the statuses before it.
inline void status_error_note(MPI_Status statuses[], int k, int error, bool &any_error) {
  const bool first = error != MPI_SUCCESS && !any_error;
  any_error = any_error || error != MPI_SUCCESS;
  if (statuses == MPI_STATUSES_IGNORE || !any_error) return;
  if (first) {
    for (int j = 0; j < k; ++j) statuses[j].MPI_ERROR = MPI_SUCCESS;
  }
  statuses[k].MPI_ERROR = error;
}

// The index of the first completed non-null request, -1 if none, or
// MPI_UNDEFINED when all are null.
inline int first_finished(int count, const MPI_Request requests[]) {
  bool any_active = false;
  for (int i = 0; i < count; ++i) {
    if (inactive(requests[i])) continue;
    any_active = true;
    if (is_done(live(requests[i]))) return i;
  }
  return any_active ? -1 : MPI_UNDEFINED;
}

}  // namespace iris::api::completion
