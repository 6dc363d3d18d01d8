// MPI point-to-point bindings: argument checks, then the device.
#include <climits>

#include "device/api/check.hpp"
#include "device/api/p2p/wait.hpp"
#include "device/protocols/recovery.hpp"
#include "device/protocols/recv_multiple.hpp"
#include "device/protocols/send.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

// Reports a truncated receive through the error handler, as MPI_Recv must.
int recv_result(const char *call, const communicator &comm, const device::request &r) {
  if (r.status_error == MPI_SUCCESS) return MPI_SUCCESS;
  if (r.status_error == MPI_ERR_PROC_FAILED || r.status_error == MPI_ERR_REVOKED) {
    int from = r.peer;
    if (from < 0 && r.key.source >= 0 && r.key.source < comm.size) {
      from = comm.world_rank[static_cast<std::size_t>(r.key.source)];
    }
    if (!device::recovery_failed(from)) from = -1;  // a collective's live peer
    return api::failure_raise(call, comm, r.status_error, from);
  }
  if (r.status_error == MPI_ERR_TYPE) {
    return device::error_raise(&comm, call, MPI_ERR_TYPE,
                               "message of rank %d tag %d (%zu bytes) ends part-way through an "
                               "element of the receive datatype: the type signatures differ",
                               r.status_source, r.status_tag, r.status_bytes);
  }
  return device::error_raise(&comm, call, r.status_error,
                             "message of rank %d tag %d truncated: receive buffer holds %zu bytes",
                             r.status_source, r.status_tag, r.bytes);
}

// Waits for a receive posted by recv_post, unpacks it, reports its status
// and frees it.
int recv_complete(const char *call, device::request *r, MPI_Status *status) {
  device::progress_until([r] {
    return device::request_done(*r) || (device::rt->troubled && device::recovery_blocks(*r));
  });
  // A blocking receive from any source that a failure left waiting ends
  // with MPIX_ERR_PROC_FAILED (a nonblocking one stays posted).
  if (!device::request_done(*r)) device::recovery_fail(*r, MPI_ERR_PROC_FAILED);
  api::status_fill(status, *r);
  const int result = recv_result(call, *r->comm, *r);
  device::rt->requests.release(r);
  return result;
}

int status_type(const char *call, const MPI_Status *status, MPI_Datatype handle,
                const device::dtype *&t) {
  if (int err = api::check_not_null(call, nullptr, status, "status")) return err;
  t = device::dtype_lookup(handle);
  if (t != nullptr) return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                             static_cast<unsigned>(handle));
}

int probe_checks(const char *call, int source, int tag, MPI_Comm comm, communicator *&c) {
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_source(call, *c, source)) return err;
  return api::check_recv_tag(call, *c, tag);
}

// MPI_THREAD_MULTIPLE: MPI_Send (request null) or MPI_Isend without the call
// lock (device/README.md, "Threads"): a message of a predefined type on a
// published intracommunicator to a shared VC, eager and going out at once.
// Returns false, having done nothing, for anything else, bad arguments
// included: the binding then runs under the call lock and reports them.
bool send_unlocked(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request) {
  device::runtime *r = device::rt;
  if (r == nullptr || count < 0 || tag < 0 || r->troubled) return false;
  const communicator *c = device::comm_lookup_published(*r, comm);
  if (c == nullptr || dest < 0 || dest >= c->size) return false;
  device::vc &to = r->vcs[static_cast<std::size_t>(c->world_rank[static_cast<std::size_t>(dest)])];
  if (!to.shared) return false;
  const device::detail::builtin_slot &slot =
      device::detail::builtin_types[static_cast<unsigned>(type) & 0xffU];
  if (slot.handle != type || slot.type == nullptr) return false;
  const device::typed_buffer tb{const_cast<void *>(buf), count, slot.type};
  if (!tb.contiguous() || (buf == nullptr && count > 0)) return false;
  device::request *req = nullptr;
  if (request != nullptr) {
    req = device::request_cache_take();
    if (req == nullptr) return false;
  }
  if (!device::send_unlocked(to, *c, c->context, tb.base, tb.packed_bytes(), tag, req)) {
    if (req != nullptr) device::request_cache_put(req);
    return false;
  }
  if (request != nullptr) *request = device::request_handle(*req);
  return true;
}

// Under MULTIPLE, whether a blocking send of these arguments would stream
// its data without the call lock (rendezvous.hpp, "aside sends"): dense
// bytes past the eager limit of a shared VC whose transport allows it. A
// guess from what the checks would accept, nothing more: a wrong one costs
// a request (or a locked wait), never correctness.
bool streams_aside(const void *buf, int count, MPI_Datatype type, int dest, MPI_Comm comm) {
  device::runtime *r = device::rt;
  if (r == nullptr || device::call_lock_held() || r->troubled) return false;
  const communicator *c = device::comm_lookup_published(*r, comm);
  if (c == nullptr || dest < 0 || dest >= c->size) return false;
  const device::vc &to =
      r->vcs[static_cast<std::size_t>(c->world_rank[static_cast<std::size_t>(dest)])];
  const std::size_t bytes = api::dense_bytes(buf, count, type);
  return to.shared && bytes != SIZE_MAX && bytes > to.eager_limit &&
         to.via->streams_sends_aside(to);
}

// MPI_Send of a message that streams without the call lock: started under
// the lock as an MPI_Isend (its RTS), waited for without it, so that this
// thread writes its data under the VC's lock alone; finished under the lock.
int send_blocking_aside(const char *call, const void *buf, int count, MPI_Datatype type, int dest,
                        int tag, MPI_Comm comm) {
  MPI_Request handle = MPI_REQUEST_NULL;
  device::request *r = nullptr;
  {
    const device::api_guard guard;
    if (int err = api::send_binding(call, buf, count, type, dest, tag, comm,
                                    device::send_mode::standard, &handle)) {
      return err;
    }
    r = device::rt->requests.from_handle(handle);
    if (r != nullptr) device::send_join_aside(*r);
  }
  if (r == nullptr || api::wait_unlocked(&handle, MPI_STATUS_IGNORE)) return MPI_SUCCESS;
  const device::api_guard guard;  // complete, or not one to wait for without the lock
  device::request_wait_release(r);
  return MPI_SUCCESS;
}

// MPI_Send (`nonblocking` false) or MPI_Isend under MULTIPLE: without the
// call lock when it can go at once, else under it, as below MULTIPLE (an
// MPI_Send that streams aside waits without it); a locked MPI_Isend then
// refills this thread's request cache.
[[gnu::noinline]] int send_multiple(const char *call, const void *buf, int count, MPI_Datatype type,
                                    int dest, int tag, MPI_Comm comm, bool nonblocking,
                                    MPI_Request *request) {
  if ((!nonblocking || request != nullptr) &&
      send_unlocked(buf, count, type, dest, tag, comm, request)) {
    return MPI_SUCCESS;
  }
  if (!nonblocking && streams_aside(buf, count, type, dest, comm)) {
    return send_blocking_aside(call, buf, count, type, dest, tag, comm);
  }
  const device::api_guard guard;
  if (nonblocking) {
    if (int err = api::check_not_null(call, nullptr, request, "request")) return err;
  }
  const int result = api::send_binding(call, buf, count, type, dest, tag, comm,
                                       device::send_mode::standard, request);
  if (nonblocking) {
    // A large one may stream without the call lock from here on.
    device::request *r =
        result == MPI_SUCCESS ? device::rt->requests.from_handle(*request) : nullptr;
    if (r != nullptr) device::send_join_aside(*r);
    device::request_cache_fill();
  }
  return result;
}

// MPI_THREAD_MULTIPLE: MPI_Irecv matched without the call lock
// (recv_multiple.hpp):
// a predefined contiguous type on a published intracommunicator, from a
// valid source (not MPI_PROC_NULL) with a valid tag, with a request in this
// thread's cache. Returns false, having done nothing, for anything else, bad
// arguments included: the binding then runs under the call lock.
bool recv_unlocked(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   MPI_Request *request) {
  device::runtime *r = device::rt;
  if (r == nullptr || request == nullptr || count < 0 || (tag < 0 && tag != MPI_ANY_TAG) ||
      r->troubled) {
    return false;
  }
  const communicator *c = device::comm_lookup_published(*r, comm);
  if (c == nullptr || (source != MPI_ANY_SOURCE && (source < 0 || source >= c->size))) {
    return false;
  }
  const device::detail::builtin_slot &slot =
      device::detail::builtin_types[static_cast<unsigned>(type) & 0xffU];
  if (slot.handle != type || slot.type == nullptr) return false;
  const device::typed_buffer tb{buf, count, slot.type};
  if (!tb.contiguous() || (buf == nullptr && count > 0)) return false;
  device::request *req = device::request_cache_take();
  if (req == nullptr) return false;
  req->kind = device::request_kind::recv;
  req->comm = c;
  req->key = device::match_key{c->context, source, tag};
  req->buffer = static_cast<std::byte *>(tb.base);
  req->bytes = tb.packed_bytes();
  *request = device::request_handle(*req);
  device::recv_post_unlocked(*c->queues, *req);
  return true;
}

// MPI_Irecv under MULTIPLE: without the call lock when it can, else under it
// as below MULTIPLE, refilling this thread's request cache.
[[gnu::noinline]] int recv_multiple(void *buf, int count, MPI_Datatype type, int source, int tag,
                                    MPI_Comm comm, MPI_Request *request) {
  if (recv_unlocked(buf, count, type, source, tag, comm, request)) return MPI_SUCCESS;
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Irecv", nullptr, request, "request")) return err;
  device::request *r = nullptr;
  if (int err = api::recv_post("MPI_Irecv", buf, count, type, source, tag, comm, r)) return err;
  *request = device::request_handle(*r);
  device::request_cache_fill();
  return MPI_SUCCESS;
}

// MPI_Recv: posted and waited for without the call lock when it can (an
// MPI_Irecv and MPI_Wait's unlocked halves), so that a blocking receive
// too is matched by its thread and may be delivered by a waiting thread
// without the lock. Anything else runs as below MULTIPLE, under the lock.
[[gnu::noinline]] int recv_blocking_multiple(void *buf, int count, MPI_Datatype type, int source,
                                             int tag, MPI_Comm comm, MPI_Status *status) {
  MPI_Request handle = MPI_REQUEST_NULL;
  if (!device::call_lock_held() && recv_unlocked(buf, count, type, source, tag, comm, &handle)) {
    device::request *r = device::rt->requests.from_handle(handle);
    if (api::wait_unlocked(&handle, status)) return MPI_SUCCESS;
    // Complete, with an error to raise or a full cache; or not yet, a
    // failure or revocation having become known (wait_unlocked).
    const device::api_guard guard;
    return recv_complete("MPI_Recv", r, status);
  }
  const device::api_guard guard;
  device::request *r = nullptr;
  if (int err = api::recv_post("MPI_Recv", buf, count, type, source, tag, comm, r)) return err;
  device::request_cache_fill();
  return recv_complete("MPI_Recv", r, status);
}

}  // namespace

extern "C" {

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return device::api_send_call(
      [&] {
        device::request *r = nullptr;
        if (api::send_fast(buf, count, datatype, dest, tag, comm, false, r)) [[likely]] {
          if (r == nullptr) return MPI_SUCCESS;
          return api::send_wait_release("MPI_Send", *r->comm, r);
        }
        return api::send_binding("MPI_Send", buf, count, datatype, dest, tag, comm,
                                 device::send_mode::standard, nullptr);
      },
      [&] {
        return send_multiple("MPI_Send", buf, count, datatype, dest, tag, comm, false, nullptr);
      });
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request) {
  return device::api_send_call(
      [&] {
        device::request *r = nullptr;
        if (request != nullptr && api::send_fast(buf, count, datatype, dest, tag, comm, true, r))
            [[likely]] {
          *request = device::request_handle(*r);
          return MPI_SUCCESS;
        }
        if (int err = api::check_not_null("MPI_Isend", nullptr, request, "request")) return err;
        return api::send_binding("MPI_Isend", buf, count, datatype, dest, tag, comm,
                                 device::send_mode::standard, request);
      },
      [&] {
        return send_multiple("MPI_Isend", buf, count, datatype, dest, tag, comm, true, request);
      });
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  const device::api_guard guard;
  return api::send_binding("MPI_Ssend", buf, count, datatype, dest, tag, comm,
                           device::send_mode::synchronous, nullptr);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Issend", nullptr, request, "request")) return err;
  return api::send_binding("MPI_Issend", buf, count, datatype, dest, tag, comm,
                           device::send_mode::synchronous, request);
}

// A ready send is correct only when the receive is already posted; a
// standard send is then exactly as fast, so it is one.
int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  const device::api_guard guard;
  return api::send_binding("MPI_Rsend", buf, count, datatype, dest, tag, comm,
                           device::send_mode::standard, nullptr);
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Irsend", nullptr, request, "request")) return err;
  return api::send_binding("MPI_Irsend", buf, count, datatype, dest, tag, comm,
                           device::send_mode::standard, request);
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
  return device::api_send_call(
      [&] {
        device::request *r = nullptr;
        if (!api::recv_fast(buf, count, datatype, source, tag, comm, r)) [[unlikely]] {
          if (int err = api::recv_post("MPI_Recv", buf, count, datatype, source, tag, comm, r))
            return err;
        }
        return recv_complete("MPI_Recv", r, status);
      },
      [&] { return recv_blocking_multiple(buf, count, datatype, source, tag, comm, status); });
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request) {
  return device::api_send_call(
      [&] {
        device::request *r = nullptr;
        if (request != nullptr && api::recv_fast(buf, count, datatype, source, tag, comm, r))
            [[likely]] {
          *request = device::request_handle(*r);
          return MPI_SUCCESS;
        }
        if (int err = api::check_not_null("MPI_Irecv", nullptr, request, "request")) return err;
        if (int err = api::recv_post("MPI_Irecv", buf, count, datatype, source, tag, comm, r)) {
          return err;
        }
        *request = device::request_handle(*r);
        return MPI_SUCCESS;
      },
      [&] { return recv_multiple(buf, count, datatype, source, tag, comm, request); });
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status) {
  const device::api_guard guard;
  const char *call = "MPI_Sendrecv";
  device::request *r = nullptr;
  if (int err = api::recv_post(call, recvbuf, recvcount, recvtype, source, recvtag, comm, r)) {
    return err;
  }
  if (int err = api::send_binding(call, sendbuf, sendcount, sendtype, dest, sendtag, comm,
                                  device::send_mode::standard, nullptr)) {
    device::request_cancel(*r);  // the send was refused: withdraw the receive too
    device::progress_until([r] { return r->complete; });
    device::rt->requests.release(r);
    return err;
  }
  return recv_complete(call, r, status);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
  const device::api_guard guard;
  const char *call = "MPI_Iprobe";
  communicator *c = nullptr;
  if (int err = probe_checks(call, source, tag, comm, c)) return err;
  if (int err = api::check_not_null(call, c, flag, "flag")) return err;
  if (source == MPI_PROC_NULL) {
    *flag = 1;
    api::status_probe_proc_null(status);
    return MPI_SUCCESS;
  }
  device::progress_poll();
  const device::unexpected_msg *m = device::probe_find(c->context, source, tag);
  *flag = m != nullptr ? 1 : 0;
  if (m != nullptr) api::status_of_message(status, *m);
  return MPI_SUCCESS;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
  const device::api_guard guard;
  const char *call = "MPI_Probe";
  communicator *c = nullptr;
  if (int err = probe_checks(call, source, tag, comm, c)) return err;
  if (source == MPI_PROC_NULL) {
    api::status_probe_proc_null(status);
    return MPI_SUCCESS;
  }
  const device::unexpected_msg *m = nullptr;
  device::progress_until([&] {
    m = device::probe_find(c->context, source, tag);
    return m != nullptr;
  });
  api::status_of_message(status, *m);
  return MPI_SUCCESS;
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status) {
  const device::api_guard guard;
  const char *call = "MPI_Improbe";
  communicator *c = nullptr;
  if (int err = probe_checks(call, source, tag, comm, c)) return err;
  if (int err = api::check_not_null(call, c, flag, "flag")) return err;
  if (int err = api::check_not_null(call, c, message, "message")) return err;
  if (source == MPI_PROC_NULL) {
    *flag = 1;
    *message = MPI_MESSAGE_NO_PROC;
    api::status_probe_proc_null(status);
    return MPI_SUCCESS;
  }
  device::progress_poll();
  device::unexpected_msg *m = device::message_claim(c->context, source, tag);
  *flag = m != nullptr ? 1 : 0;
  if (m != nullptr) {
    *message = device::message_handle(*m);
    api::status_of_message(status, *m);
  }
  return MPI_SUCCESS;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
  const device::api_guard guard;
  const char *call = "MPI_Mprobe";
  communicator *c = nullptr;
  if (int err = probe_checks(call, source, tag, comm, c)) return err;
  if (int err = api::check_not_null(call, c, message, "message")) return err;
  if (source == MPI_PROC_NULL) {
    *message = MPI_MESSAGE_NO_PROC;
    api::status_probe_proc_null(status);
    return MPI_SUCCESS;
  }
  device::unexpected_msg *m = nullptr;
  device::progress_until(
      [&] { return (m = device::message_claim(c->context, source, tag)) != nullptr; });
  *message = device::message_handle(*m);
  api::status_of_message(status, *m);
  return MPI_SUCCESS;
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
               MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Imrecv";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, message, "message")) return err;
  if (int err = api::check_not_null(call, nullptr, request, "request")) return err;
  communicator *world = device::comm_lookup(MPI_COMM_WORLD);
  device::typed_buffer tb;
  if (*message == MPI_MESSAGE_NO_PROC) {
    if (int err = api::check_typed_buffer(call, *world, buf, count, datatype, tb)) return err;
    *request = device::request_handle(*api::proc_null_request(*world, device::request_kind::recv));
    *message = MPI_MESSAGE_NULL;
    return MPI_SUCCESS;
  }
  device::unexpected_msg *m = device::message_from_handle(*message);
  if (m == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_REQUEST, "invalid message handle 0x%x",
                               static_cast<unsigned>(*message));
  }
  // The message names its communicator by context; the receive reports on it.
  const communicator *c = device::comm_of_context(m->key.context);
  const communicator &on = c != nullptr ? *c : *world;
  if (int err = api::check_typed_buffer(call, on, buf, count, datatype, tb)) return err;
  device::request *r = nullptr;
  if (int err = api::typed_result(call, on, device::typed_recv_claimed(on, m, tb, r),
                                  tb.packed_bytes())) {
    return err;  // the message stays claimed: the call may be repeated
  }
  *request = device::request_handle(*r);
  *message = MPI_MESSAGE_NULL;
  return MPI_SUCCESS;
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
              MPI_Status *status) {
  const device::api_guard guard;
  MPI_Request request = MPI_REQUEST_NULL;
  if (int err = MPI_Imrecv(buf, count, datatype, message, &request)) return err;
  return MPI_Wait(&request, status);
}

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Get_count", nullptr, count, "count")) return err;
  const device::dtype *t = nullptr;
  if (int err = status_type("MPI_Get_count", status, datatype, t)) return err;
  const auto bytes = static_cast<std::size_t>(status->iris_bytes);
  // A count past INT_MAX is MPI_UNDEFINED here (MPI_Get_count_c has it).
  *count = t->packed_size == 0 ? 0
           : bytes % t->packed_size == 0 && bytes / t->packed_size <= INT_MAX
               ? static_cast<int>(bytes / t->packed_size)
               : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

// Basic elements received (pairs count two), or MPI_UNDEFINED when the
// bytes end inside a basic element.
int MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Get_elements_x", nullptr, count, "count")) return err;
  const device::dtype *t = nullptr;
  if (int err = status_type("MPI_Get_elements_x", status, datatype, t)) return err;
  const std::int64_t n = device::dtype_elements(*t, static_cast<std::size_t>(status->iris_bytes));
  *count = n < 0 ? MPI_UNDEFINED : static_cast<MPI_Count>(n);
  return MPI_SUCCESS;
}

int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Get_elements", nullptr, count, "count")) return err;
  MPI_Count n = 0;
  if (int err = MPI_Get_elements_x(status, datatype, &n)) return err;
  *count = n <= INT_MAX ? static_cast<int>(n) : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int MPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count) {
  const device::api_guard guard;
  const char *call = "MPI_Status_set_elements_x";
  const device::dtype *t = nullptr;
  if (int err = status_type(call, status, datatype, t)) return err;
  if (count < 0) {
    return device::error_raise(nullptr, call, MPI_ERR_COUNT, "negative count %lld",
                               static_cast<long long>(count));
  }
  status->iris_bytes =
      static_cast<MPI_Count>(device::dtype_bytes_of_elements(*t, static_cast<std::size_t>(count)));
  return MPI_SUCCESS;
}

int MPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count) {
  const device::api_guard guard;
  return MPI_Status_set_elements_x(status, datatype, count);
}

int MPI_Status_set_cancelled(MPI_Status *status, int flag) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Status_set_cancelled", nullptr, status, "status")) {
    return err;
  }
  status->iris_cancelled = flag != 0 ? 1 : 0;
  return MPI_SUCCESS;
}

}  // extern "C"
