// MPI-4 point-to-point additions: Isendrecv and Isendrecv_replace (a
// request made of a send and a receive), generalized requests
// (Grequest_start/complete) and the MPI-4.1 status setters.
//
// Both kinds of request are device requests with a request_ext: the
// completion bindings (wait.cpp) ask the extension whether the operation has
// finished and let it hand back the outcome.
#include <cstdlib>
#include <cstring>

#include "device/api/check.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

// A send and a receive that complete together. The receive's outcome is the
// request's; the send may have gone from a packed copy (`r.scratch`).
struct sendrecv_ext final : device::request_ext {
  device::request *send = nullptr;  // nullptr: nothing sent (MPI_PROC_NULL) or already released
  device::request *recv = nullptr;

  ~sendrecv_ext() override {
    // Released before both parts completed (Request_free): let the device
    // release them when they do.
    for (device::request *part : {send, recv}) {
      if (part == nullptr) continue;
      part->freed = true;
      if (part->complete) {
        device::rt->requests.release(part);
      }
    }
  }
  void poll(device::request &r) override {
    r.complete = (send == nullptr || send->complete) && recv->complete;
  }
  int finish(device::request &r, void *status) override {
    (void)r;
    api::status_fill(static_cast<MPI_Status *>(status), *recv);
    const int error = recv->status_error;
    if (send != nullptr) device::rt->requests.release(send);
    device::rt->requests.release(recv);
    send = recv = nullptr;
    return error;
  }
  int peek(device::request &r, void *status) override {
    (void)r;
    api::status_fill(static_cast<MPI_Status *>(status), *recv);
    return MPI_SUCCESS;
  }
  void cancel(device::request &r) override {
    (void)r;
    if (send != nullptr) device::request_cancel(*send);
    device::request_cancel(*recv);
  }
  // The parts are handed to the device by the destructor.
  bool free(device::request &r) override {
    (void)r;
    return true;
  }
};

// Starts the receive of an Isendrecv(_replace) and wraps it with `send` into
// a request. On failure the parts are withdrawn.
int sendrecv_request(const char *call, const communicator &c, device::request *send,
                     device::request *recv, void *scratch, MPI_Request *request) {
  device::request *r = device::rt->requests.allocate(device::request_kind::recv, &c);
  auto *ext = new sendrecv_ext;
  ext->send = send;
  ext->recv = recv;
  r->ext = ext;
  r->scratch = scratch;
  *request = device::request_handle(*r);
  (void)call;
  return MPI_SUCCESS;
}

// Withdraws a receive posted for a call that then failed.
void recv_withdraw(device::request *r) {
  device::request_cancel(*r);
  device::progress_until([r] { return r->complete; });
  device::rt->requests.release(r);
}

}  // namespace

extern "C" {

int MPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                  MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Isendrecv";
  if (int err = api::check_not_null(call, nullptr, request, "request")) return err;
  communicator *c = nullptr;
  device::typed_buffer stb;
  if (int err =
          api::check_typed_send(call, sendbuf, sendcount, sendtype, dest, sendtag, comm, c, stb)) {
    return err;
  }
  device::request *recv = nullptr;
  if (int err = api::recv_post(call, recvbuf, recvcount, recvtype, source, recvtag, comm, recv)) {
    return err;
  }
  device::request *send = nullptr;
  if (dest != MPI_PROC_NULL) {
    const device::typed_status st = device::typed_send_start(
        *c, c->context, stb, dest, sendtag, device::send_mode::standard, true, send);
    if (int err = api::typed_result(call, *c, st, stb.packed_bytes())) {
      recv_withdraw(recv);
      return err;
    }
  }
  return sendrecv_request(call, *c, send, recv, nullptr, request);
}

int MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                          int source, int recvtag, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Isendrecv_replace";
  if (int err = api::check_not_null(call, nullptr, request, "request")) return err;
  communicator *c = nullptr;
  device::typed_buffer tb;
  if (int err = api::check_typed_send(call, buf, count, datatype, dest, sendtag, comm, c, tb)) {
    return err;
  }
  if (int err = api::check_source(call, *c, source)) return err;
  if (int err = api::check_recv_tag(call, *c, recvtag)) return err;
  // The outgoing data is packed into a copy first, so the receive may land
  // in the buffer at once; the copy lives as long as the request.
  const std::size_t bytes = tb.packed_bytes();
  void *copy = nullptr;
  if (dest != MPI_PROC_NULL) {
    copy = std::malloc(bytes != 0 ? bytes : 1);
    if (copy == nullptr) {
      return device::error_raise(c, call, MPI_ERR_NO_MEM, "cannot allocate %zu bytes", bytes);
    }
    device::typed_pack(tb, copy);
  }
  device::request *recv = nullptr;
  if (int err = api::recv_post(call, buf, count, datatype, source, recvtag, comm, recv)) {
    std::free(copy);
    return err;
  }
  device::request *send = nullptr;
  if (dest != MPI_PROC_NULL) {
    send = device::send_start(*c, c->context, copy, bytes, dest, sendtag,
                              device::send_mode::standard, true);
  }
  return sendrecv_request(call, *c, send, recv, copy, request);
}

int MPI_Status_set_source(MPI_Status *status, int source) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Status_set_source", nullptr, status, "status")) {
    return err;
  }
  status->MPI_SOURCE = source;
  return MPI_SUCCESS;
}

int MPI_Status_set_tag(MPI_Status *status, int tag) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Status_set_tag", nullptr, status, "status")) return err;
  status->MPI_TAG = tag;
  return MPI_SUCCESS;
}

int MPI_Status_set_error(MPI_Status *status, int error) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Status_set_error", nullptr, status, "status")) {
    return err;
  }
  status->MPI_ERROR = error;
  return MPI_SUCCESS;
}

}  // extern "C"

namespace {

// MPI_Status_get_source, _tag and _error: one public field of a status.
int status_field(const char *call, const MPI_Status *status, int MPI_Status::*field, int *out) {
  if (int err = api::check_not_null(call, nullptr, status, "status")) return err;
  if (int err = api::check_not_null(call, nullptr, out, "the result")) return err;
  *out = status->*field;
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Status_get_source(MPI_Status *status, int *source) {
  const device::api_guard guard;
  return status_field("MPI_Status_get_source", status, &MPI_Status::MPI_SOURCE, source);
}

int MPI_Status_get_tag(MPI_Status *status, int *tag) {
  const device::api_guard guard;
  return status_field("MPI_Status_get_tag", status, &MPI_Status::MPI_TAG, tag);
}

int MPI_Status_get_error(MPI_Status *status, int *error) {
  const device::api_guard guard;
  return status_field("MPI_Status_get_error", status, &MPI_Status::MPI_ERROR, error);
}

}  // extern "C"

// Generalized requests (MPI-4.1 section 13.2): complete when the user calls
// MPI_Grequest_complete. Wait and Test then call query_fn for the status and
// free_fn; Request_get_status calls query_fn only; MPI_Cancel calls
// cancel_fn with whether the request is complete; Request_free calls
// free_fn once the request is complete (at once, or in Grequest_complete).
namespace {

struct grequest_ext final : device::request_ext {
  MPI_Grequest_query_function *query = nullptr;
  MPI_Grequest_free_function *free_fn = nullptr;
  MPI_Grequest_cancel_function *cancel_fn = nullptr;
  void *extra_state = nullptr;
  bool user_freed = false;
  int free_result = MPI_SUCCESS;  // what free_fn returned in MPI_Request_free

  void poll(device::request &r) override { (void)r; }
  int query_into(MPI_Status *status) {
    MPI_Status local{};
    MPI_Status *s = status != MPI_STATUS_IGNORE ? status : &local;
    s->MPI_SOURCE = MPI_UNDEFINED;
    s->MPI_TAG = MPI_UNDEFINED;
    s->MPI_ERROR = MPI_SUCCESS;
    s->iris_cancelled = 0;
    s->iris_bytes = 0;
    return query(extra_state, s);
  }
  int finish(device::request &r, void *status) override {
    (void)r;
    const int queried = query_into(static_cast<MPI_Status *>(status));
    const int freed = free_fn(extra_state);
    return queried != MPI_SUCCESS ? queried : freed;
  }
  int peek(device::request &r, void *status) override {
    (void)r;
    return query_into(static_cast<MPI_Status *>(status));
  }
  void cancel(device::request &r) override { (void)cancel_fn(extra_state, r.complete ? 1 : 0); }
  bool free(device::request &r) override {
    if (!r.complete) {
      user_freed = true;  // MPI_Grequest_complete calls free_fn and releases it
      return false;
    }
    free_result = free_fn(extra_state);
    return true;
  }
  int freed_error() const override { return free_result; }
};

int grequest_null_query(void *, MPI_Status *) {
  return MPI_SUCCESS;
}
int grequest_null_free(void *) {
  return MPI_SUCCESS;
}
int grequest_null_cancel(void *, int) {
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                       MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                       MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Grequest_start";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, request, "request")) return err;
  communicator *self = device::comm_lookup(MPI_COMM_SELF);
  device::request *r = device::rt->requests.allocate(device::request_kind::recv, self);
  auto *ext = new grequest_ext;
  ext->query = query_fn != nullptr ? query_fn : grequest_null_query;
  ext->free_fn = free_fn != nullptr ? free_fn : grequest_null_free;
  ext->cancel_fn = cancel_fn != nullptr ? cancel_fn : grequest_null_cancel;
  ext->extra_state = extra_state;
  r->ext = ext;
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

int MPI_Grequest_complete(MPI_Request request) {
  const device::api_guard guard;
  const char *call = "MPI_Grequest_complete";
  if (int err = api::check_initialized(call)) return err;
  device::request *r = device::rt->requests.from_handle(request);
  auto *ext = r != nullptr ? dynamic_cast<grequest_ext *>(r->ext) : nullptr;
  if (ext == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_REQUEST,
                               "request 0x%x is not a generalized request",
                               static_cast<unsigned>(request));
  }
  if (r->complete) {
    return device::error_raise(nullptr, call, MPI_ERR_REQUEST,
                               "generalized request 0x%x is already complete",
                               static_cast<unsigned>(request));
  }
  r->complete = true;
  if (ext->user_freed) {
    // Freed by the user before: its free function runs now, and what it
    // returns is this call's (MPI-4.1 13.2).
    const int freed = ext->free_fn(ext->extra_state);
    device::rt->requests.release(r);
    if (freed != MPI_SUCCESS) {
      return device::error_raise(nullptr, call, freed,
                                 "the free function of the generalized request returned %d", freed);
    }
  }
  return MPI_SUCCESS;
}

}  // extern "C"
