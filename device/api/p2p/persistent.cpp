// Persistent requests: MPI_*_init records an operation, MPI_Start runs it
// again on the same request, the Wait and Test calls leave it inactive
// instead of freeing it, and MPI_Request_free ends it.
//
// The request keeps its datatype in `unpack_type` (alive even if the user
// frees the handle) and, for a non-contiguous one, its scratch buffer across
// restarts: a restart packs into the same buffer instead of allocating.
#include "device/api/check.hpp"
#include "device/collectives/schedule.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

int init_send(const char *call, device::persistent_op op, const void *buf, int count,
              MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *request) {
  communicator *c = nullptr;
  device::typed_buffer tb;
  if (int err = api::check_typed_send(call, buf, count, type, dest, tag, comm, c, tb)) return err;
  if (int err = api::check_not_null(call, c, request, "request")) return err;
  device::request *r = device::rt->requests.allocate(device::request_kind::send, c);
  r->persistent = {op, tb.base, tb.packed_bytes(), dest, tag, count, type, comm};
  r->unpack_type = tb.type;
  r->complete = true;  // inactive until started
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

// Runs a persistent request's operation again on the same request.
int start(device::request &r) {
  if (r.persistent.op == device::persistent_op::coll) {
    device::schedule_start(r);
    return MPI_SUCCESS;
  }
  const device::persistent_args a = r.persistent;
  const communicator &c = *r.comm;
  const device::dtype *type = r.unpack_type;
  void *scratch = r.scratch;  // restart forgets it
  device::rt->requests.restart(&r);
  r.unpack_type = type;
  r.scratch = scratch;
  const device::typed_buffer tb{a.buffer, a.count, type};
  device::request *out = nullptr;
  if (a.peer == MPI_PROC_NULL) {
    r.status_source = MPI_PROC_NULL;
    r.status_tag = MPI_ANY_TAG;
    r.complete = true;
    return MPI_SUCCESS;
  }
  switch (a.op) {
    case device::persistent_op::recv:
      return api::typed_result("MPI_Start", c,
                               device::typed_recv_start(c, c.context, tb, a.peer, a.tag, out, &r),
                               a.bytes);
    case device::persistent_op::bsend: {
      // Copied into the attached buffer (or an error), so complete; the
      // copy's send stays held for MPI_Cancel, as MPI_Ibsend's does.
      r.complete = true;
      device::request *sent = nullptr;
      const int err = api::bsend_checked("MPI_Start", c, tb, a.peer, a.tag, &sent);
      api::bsend_attach(r, sent);
      return err;
    }
    case device::persistent_op::send:
    case device::persistent_op::ssend:
      return api::typed_result("MPI_Start", c,
                               device::typed_send_start(c, c.context, tb, a.peer, a.tag,
                                                        a.op == device::persistent_op::ssend
                                                            ? device::send_mode::synchronous
                                                            : device::send_mode::standard,
                                                        true, out, &r),
                               a.bytes);
    case device::persistent_op::ext:
    case device::persistent_op::coll:
    case device::persistent_op::none:
      break;
  }
  return MPI_ERR_INTERN;
}

int start_checked(const char *call, MPI_Request handle) {
  device::request *r = device::rt->requests.from_handle(handle);
  if (r == nullptr || r->persistent.op == device::persistent_op::none) {
    return device::error_raise(nullptr, call, MPI_ERR_REQUEST,
                               "request 0x%x is not a persistent request",
                               static_cast<unsigned>(handle));
  }
  if (r->active) {
    return device::error_raise(r->comm, call, MPI_ERR_REQUEST,
                               "request 0x%x is already active; wait for it first",
                               static_cast<unsigned>(handle));
  }
  if (r->persistent.op == device::persistent_op::ext) return r->ext->start(*r);
  return start(*r);
}

}  // namespace

extern "C" {

int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return init_send("MPI_Send_init", device::persistent_op::send, buf, count, datatype, dest, tag,
                   comm, request);
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return init_send("MPI_Ssend_init", device::persistent_op::ssend, buf, count, datatype, dest, tag,
                   comm, request);
}

// A ready send is a standard send (see MPI_Rsend).
int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return init_send("MPI_Rsend_init", device::persistent_op::send, buf, count, datatype, dest, tag,
                   comm, request);
}

int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return init_send("MPI_Bsend_init", device::persistent_op::bsend, buf, count, datatype, dest, tag,
                   comm, request);
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                  MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Recv_init";
  communicator *c = nullptr;
  device::typed_buffer tb;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_typed_buffer(call, *c, buf, count, datatype, tb)) return err;
  if (int err = api::check_source(call, *c, source)) return err;
  if (int err = api::check_recv_tag(call, *c, tag)) return err;
  if (int err = api::check_not_null(call, c, request, "request")) return err;
  device::request *r = device::rt->requests.allocate(device::request_kind::recv, c);
  r->persistent = {
      device::persistent_op::recv, buf, tb.packed_bytes(), source, tag, count, datatype, comm};
  r->unpack_type = tb.type;
  r->complete = true;  // inactive until started
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

int MPI_Start(MPI_Request *request) {
  const device::api_guard guard;
  if (int err = api::check_initialized("MPI_Start")) return err;
  if (int err = api::check_not_null("MPI_Start", nullptr, request, "request")) return err;
  return start_checked("MPI_Start", *request);
}

int MPI_Startall(int count, MPI_Request requests[]) {
  const device::api_guard guard;
  const char *call = "MPI_Startall";
  if (int err = api::check_initialized(call)) return err;
  if (count < 0 || (count > 0 && requests == nullptr)) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "invalid request array of %d", count);
  }
  for (int i = 0; i < count; ++i) {
    if (int err = start_checked(call, requests[i])) return err;
  }
  return MPI_SUCCESS;
}

}  // extern "C"
