// MPI point-to-point bindings: argument checks, then the device.
#include "device/api/check.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

// A request that is complete from the start: an operation with MPI_PROC_NULL.
device::request *proc_null_request(const communicator &comm, device::request_kind kind) {
  device::request *r = device::rt->requests.allocate(kind, &comm);
  r->status_source = MPI_PROC_NULL;
  r->status_tag = MPI_ANY_TAG;
  r->complete = true;
  return r;
}

int send_checks(const char *call, const void *buf, int count, MPI_Datatype type, int dest, int tag,
                MPI_Comm handle, communicator *&comm, std::size_t &bytes) {
  if (int err = api::check_comm(call, handle, comm)) return err;
  if (int err = api::check_buffer(call, *comm, buf, count, type, bytes)) return err;
  if (int err = api::check_dest(call, *comm, dest)) return err;
  return api::check_send_tag(call, *comm, tag);
}

int recv_checks(const char *call, const void *buf, int count, MPI_Datatype type, int source,
                int tag, MPI_Comm handle, communicator *&comm, std::size_t &bytes) {
  if (int err = api::check_comm(call, handle, comm)) return err;
  if (int err = api::check_buffer(call, *comm, buf, count, type, bytes)) return err;
  if (int err = api::check_source(call, *comm, source)) return err;
  return api::check_recv_tag(call, *comm, tag);
}

// Reports a truncated receive through the error handler, as MPI_Recv must.
int recv_result(const char *call, const communicator &comm, const device::request &r) {
  if (r.status_error == MPI_SUCCESS) return MPI_SUCCESS;
  return device::error_raise(&comm, call, r.status_error,
                             "message of rank %d tag %d truncated: receive buffer holds %zu bytes",
                             r.status_source, r.status_tag, r.bytes);
}

// The status a probe reports for a message that has not been received.
void status_of_message(MPI_Status *status, const device::unexpected_msg &m) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = m.key.source;
  status->MPI_TAG = m.key.tag;
  status->MPI_ERROR = MPI_SUCCESS;
  status->iris_cancelled = 0;
  status->iris_bytes = static_cast<MPI_Count>(m.length);
}

}  // namespace

extern "C" {

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  communicator *c = nullptr;
  std::size_t bytes = 0;
  if (int err = send_checks("MPI_Send", buf, count, datatype, dest, tag, comm, c, bytes)) {
    return err;
  }
  if (dest == MPI_PROC_NULL) return MPI_SUCCESS;
  device::request_wait_release(device::send_start(*c, c->context, buf, bytes, dest, tag));
  return MPI_SUCCESS;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request) {
  communicator *c = nullptr;
  std::size_t bytes = 0;
  if (int err = send_checks("MPI_Isend", buf, count, datatype, dest, tag, comm, c, bytes)) {
    return err;
  }
  if (int err = api::check_not_null("MPI_Isend", c, request, "request")) return err;
  device::request *r = nullptr;
  if (dest == MPI_PROC_NULL) {
    r = proc_null_request(*c, device::request_kind::send);
  } else {
    r = device::send_start(*c, c->context, buf, bytes, dest, tag);
    if (r == nullptr) {  // already on its way: hand back a completed request
      r = device::rt->requests.allocate(device::request_kind::send, c);
      r->complete = true;
    }
  }
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
  communicator *c = nullptr;
  std::size_t bytes = 0;
  if (int err = recv_checks("MPI_Recv", buf, count, datatype, source, tag, comm, c, bytes)) {
    return err;
  }
  if (source == MPI_PROC_NULL) {
    api::status_proc_null(status);
    return MPI_SUCCESS;
  }
  device::request *r = device::recv_start(*c, c->context, buf, bytes, source, tag);
  device::progress_until([r] { return r->complete; });
  api::status_fill(status, *r);
  const int result = recv_result("MPI_Recv", *c, *r);
  device::rt->requests.release(r);
  return result;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request) {
  communicator *c = nullptr;
  std::size_t bytes = 0;
  if (int err = recv_checks("MPI_Irecv", buf, count, datatype, source, tag, comm, c, bytes)) {
    return err;
  }
  if (int err = api::check_not_null("MPI_Irecv", c, request, "request")) return err;
  device::request *r = source == MPI_PROC_NULL
                           ? proc_null_request(*c, device::request_kind::recv)
                           : device::recv_start(*c, c->context, buf, bytes, source, tag);
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status) {
  const char *call = "MPI_Sendrecv";
  communicator *c = nullptr;
  std::size_t send_bytes = 0;
  std::size_t recv_bytes = 0;
  if (int err =
          send_checks(call, sendbuf, sendcount, sendtype, dest, sendtag, comm, c, send_bytes)) {
    return err;
  }
  if (int err =
          recv_checks(call, recvbuf, recvcount, recvtype, source, recvtag, comm, c, recv_bytes)) {
    return err;
  }
  device::request *r = nullptr;
  if (source != MPI_PROC_NULL) {
    r = device::recv_start(*c, c->context, recvbuf, recv_bytes, source, recvtag);
  }
  if (dest != MPI_PROC_NULL) {
    device::request_wait_release(
        device::send_start(*c, c->context, sendbuf, send_bytes, dest, sendtag));
  }
  if (r == nullptr) {
    api::status_proc_null(status);
    return MPI_SUCCESS;
  }
  device::progress_until([r] { return r->complete; });
  api::status_fill(status, *r);
  const int result = recv_result(call, *c, *r);
  device::rt->requests.release(r);
  return result;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
  const char *call = "MPI_Iprobe";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_source(call, *c, source)) return err;
  if (int err = api::check_recv_tag(call, *c, tag)) return err;
  if (int err = api::check_not_null(call, c, flag, "flag")) return err;
  if (source == MPI_PROC_NULL) {
    *flag = 1;
    api::status_proc_null(status);
    return MPI_SUCCESS;
  }
  device::progress_poll();
  const device::unexpected_msg *m = device::probe_find(c->context, source, tag);
  *flag = m != nullptr ? 1 : 0;
  if (m != nullptr) status_of_message(status, *m);
  return MPI_SUCCESS;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
  const char *call = "MPI_Probe";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_source(call, *c, source)) return err;
  if (int err = api::check_recv_tag(call, *c, tag)) return err;
  if (source == MPI_PROC_NULL) {
    api::status_proc_null(status);
    return MPI_SUCCESS;
  }
  const device::unexpected_msg *m = nullptr;
  device::progress_until([&] {
    m = device::probe_find(c->context, source, tag);
    return m != nullptr;
  });
  status_of_message(status, *m);
  return MPI_SUCCESS;
}

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count) {
  const char *call = "MPI_Get_count";
  if (int err = api::check_not_null(call, nullptr, status, "status")) return err;
  if (int err = api::check_not_null(call, nullptr, count, "count")) return err;
  const std::size_t extent = device::datatype_extent(datatype);
  if (extent == 0) {
    return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                               static_cast<unsigned>(datatype));
  }
  const auto bytes = static_cast<std::size_t>(status->iris_bytes);
  *count = bytes % extent == 0 ? static_cast<int>(bytes / extent) : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

}  // extern "C"
