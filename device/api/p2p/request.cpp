// MPI_Request_free, MPI_Cancel, MPI_Test_cancelled and the
// MPI_Request_get_status family: the request calls that never wait.
#include "device/api/check.hpp"
#include "device/api/p2p/completion.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/rendezvous.hpp"

using namespace iris;
using namespace iris::api::completion;

extern "C" {

int MPI_Request_free(MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Request_free";
  if (int err = api::check_not_null(call, nullptr, request, "request")) return err;
  if (*request == MPI_REQUEST_NULL) {
    return device::error_raise(nullptr, call, MPI_ERR_REQUEST, "MPI_REQUEST_NULL cannot be freed");
  }
  if (int err = check_requests(call, 1, request)) return err;
  device::request &r = live(*request);
  *request = MPI_REQUEST_NULL;
  if (r.ext != nullptr) {
    const bool now = r.ext->free(r);
    const int error = r.ext->freed_error();
    if (now) device::rt->requests.release(&r);
    if (error != MPI_SUCCESS) {
      return device::error_raise(nullptr, call, error,
                                 "the free function of the generalized request returned %d", error);
    }
    return MPI_SUCCESS;
  }
  // The device releases it when it completes.
  if (device::request_mark_freed(r)) {
    device::rt->requests.release(&r);
  }
  return MPI_SUCCESS;
}

int MPI_Cancel(MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Cancel";
  if (int err = api::check_not_null(call, nullptr, request, "request")) return err;
  if (*request == MPI_REQUEST_NULL) {
    return device::error_raise(nullptr, call, MPI_ERR_REQUEST,
                               "MPI_REQUEST_NULL cannot be cancelled");
  }
  if (int err = check_requests(call, 1, request)) return err;
  device::request &r = live(*request);
  if (r.ext != nullptr) {
    r.ext->cancel(r);
    return MPI_SUCCESS;
  }
  device::request_cancel(r);
  return MPI_SUCCESS;
}

int MPI_Test_cancelled(const MPI_Status *status, int *flag) {
  const device::api_guard guard;
  const char *call = "MPI_Test_cancelled";
  if (int err = api::check_not_null(call, nullptr, status, "status")) return err;
  if (int err = api::check_not_null(call, nullptr, flag, "flag")) return err;
  *flag = status->iris_cancelled != 0 ? 1 : 0;
  return MPI_SUCCESS;
}

// Like MPI_Test, but the request stays as it is (not freed, not inactive).
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
  const device::api_guard guard;
  const char *call = "MPI_Request_get_status";
  if (int err = api::check_not_null(call, nullptr, flag, "flag")) return err;
  if (int err = check_requests(call, 1, &request)) return err;
  if (inactive(request)) {
    *flag = 1;
    api::status_empty(status);
    return MPI_SUCCESS;
  }
  device::request &r = live(request);
  if (!is_done(r)) device::progress_poll();
  *flag = is_done(r) ? 1 : 0;
  if (*flag == 0) return MPI_SUCCESS;
  // An extension reports through its finish (a generalized request's query
  // function); the request stays as it is.
  if (r.ext != nullptr) return r.ext->peek(r, status);
  api::status_fill(status, r);
  return MPI_SUCCESS;
}

// MPI-4.1: the Request_get_status calls over arrays. Like
// MPI_Request_get_status, they leave every request as it is.
int MPI_Request_get_status_all(int count, MPI_Request requests[], int *flag,
                               MPI_Status statuses[]) {
  const device::api_guard guard;
  const char *call = "MPI_Request_get_status_all";
  if (int err = api::check_not_null(call, nullptr, flag, "flag")) return err;
  if (int err = check_requests(call, count, requests)) return err;
  device::progress_poll();
  *flag = 0;
  for (int i = 0; i < count; ++i) {
    if (!finished(requests[i])) return MPI_SUCCESS;
  }
  *flag = 1;
  for (int i = 0; i < count; ++i) {
    int done = 0;
    MPI_Request_get_status(requests[i], &done, status_at(statuses, i));
  }
  return MPI_SUCCESS;
}

int MPI_Request_get_status_any(int count, MPI_Request requests[], int *index, int *flag,
                               MPI_Status *status) {
  const device::api_guard guard;
  const char *call = "MPI_Request_get_status_any";
  if (int err = api::check_not_null(call, nullptr, index, "index")) return err;
  if (int err = api::check_not_null(call, nullptr, flag, "flag")) return err;
  if (int err = check_requests(call, count, requests)) return err;
  device::progress_poll();
  const int found = first_finished(count, requests);
  *flag = found != -1 ? 1 : 0;
  *index = found < 0 ? MPI_UNDEFINED : found;
  if (found == MPI_UNDEFINED) api::status_empty(status);
  if (found < 0) return MPI_SUCCESS;
  int done = 0;
  return MPI_Request_get_status(requests[found], &done, status);
}

int MPI_Request_get_status_some(int incount, MPI_Request requests[], int *outcount, int indices[],
                                MPI_Status statuses[]) {
  const device::api_guard guard;
  const char *call = "MPI_Request_get_status_some";
  if (int err = api::check_not_null(call, nullptr, outcount, "outcount")) return err;
  if (int err = check_requests(call, incount, requests)) return err;
  if (incount > 0) {
    if (int err = api::check_not_null(call, nullptr, indices, "array_of_indices")) return err;
  }
  device::progress_poll();
  int n = 0;
  bool any_active = false;
  for (int i = 0; i < incount; ++i) {
    if (inactive(requests[i])) continue;
    any_active = true;
    if (!is_done(live(requests[i]))) continue;
    int done = 0;
    MPI_Request_get_status(requests[i], &done, status_at(statuses, n));
    indices[n++] = i;
  }
  *outcount = any_active ? n : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

}  // extern "C"
