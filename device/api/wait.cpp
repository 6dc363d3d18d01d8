// MPI completion bindings: Wait, Waitall, Test.
#include "device/api/check.hpp"

using namespace iris;

namespace {

// Resolves a handle that is not MPI_REQUEST_NULL; reports a bad one.
int request_of(const char *call, MPI_Request handle, device::request *&out) {
  out = device::rt->requests.from_handle(handle);
  if (out != nullptr) return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPI_ERR_REQUEST, "invalid request handle 0x%x",
                             static_cast<unsigned>(handle));
}

// Hands back a completed request's outcome and frees it.
int request_finish(MPI_Request *handle, device::request *r, MPI_Status *status) {
  api::status_fill(status, *r);
  const int error = r->kind == device::request_kind::recv ? r->status_error : MPI_SUCCESS;
  device::rt->requests.release(r);
  *handle = MPI_REQUEST_NULL;
  return error;
}

}  // namespace

extern "C" {

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  const char *call = "MPI_Wait";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, request, "request")) return err;
  if (*request == MPI_REQUEST_NULL) {
    api::status_proc_null(status);
    return MPI_SUCCESS;
  }
  device::request *r = nullptr;
  if (int err = request_of(call, *request, r)) return err;
  device::progress_until([r] { return r->complete; });
  const device::communicator *comm = r->comm;
  if (int error = request_finish(request, r, status)) {
    return device::error_raise(comm, call, error, "receive buffer too small for the message");
  }
  return MPI_SUCCESS;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  const char *call = "MPI_Test";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, request, "request")) return err;
  if (int err = api::check_not_null(call, nullptr, flag, "flag")) return err;
  if (*request == MPI_REQUEST_NULL) {
    *flag = 1;
    api::status_proc_null(status);
    return MPI_SUCCESS;
  }
  device::request *r = nullptr;
  if (int err = request_of(call, *request, r)) return err;
  if (!r->complete) device::progress_poll();
  *flag = r->complete ? 1 : 0;
  if (!r->complete) return MPI_SUCCESS;
  const device::communicator *comm = r->comm;
  if (int error = request_finish(request, r, status)) {
    return device::error_raise(comm, call, error, "receive buffer too small for the message");
  }
  return MPI_SUCCESS;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  const char *call = "MPI_Waitall";
  if (int err = api::check_initialized(call)) return err;
  if (count < 0)
    return device::error_raise(nullptr, call, MPI_ERR_COUNT, "negative count %d", count);
  if (count > 0) {
    if (int err = api::check_not_null(call, nullptr, requests, "array_of_requests")) return err;
  }
  for (int i = 0; i < count; ++i) {
    device::request *r = nullptr;
    if (requests[i] != MPI_REQUEST_NULL) {
      if (int err = request_of(call, requests[i], r)) return err;
    }
  }
  device::progress_until([&] {
    for (int i = 0; i < count; ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      if (!device::rt->requests.from_handle(requests[i])->complete) return false;
    }
    return true;
  });
  bool any_error = false;
  for (int i = 0; i < count; ++i) {
    MPI_Status *status = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
    if (requests[i] == MPI_REQUEST_NULL) {
      api::status_proc_null(status);
      continue;
    }
    const int error =
        request_finish(&requests[i], device::rt->requests.from_handle(requests[i]), status);
    any_error = any_error || error != MPI_SUCCESS;
  }
  if (!any_error) return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPI_ERR_IN_STATUS,
                             "a receive buffer was too small; see the statuses");
}

}  // extern "C"
