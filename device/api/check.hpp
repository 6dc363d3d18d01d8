// Argument checks shared by the C bindings. Each returns MPI_SUCCESS, or the
// error class after the communicator's error handler has run (which under
// MPI_ERRORS_ARE_FATAL ends the job with a one-line reason).
#pragma once

#include <cstddef>
#include <cstdlib>

#include "device/comm.hpp"
#include "device/datatype.hpp"
#include "device/device.hpp"
#include "device/dtype.hpp"
#include "device/errors.hpp"
#include "include/mpi.h"

namespace iris::api {

using device::communicator;

// Largest tag a user may give (MPI_TAG_UB).
inline constexpr int tag_upper_bound = 0x7fffffff;

inline int check_initialized(const char *call) {
  if (device::rt == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_OTHER,
                               "called outside MPI_Init .. MPI_Finalize");
  }
  return MPI_SUCCESS;
}

// Checks that MPI is initialised and `handle` names a communicator.
inline int check_comm(const char *call, MPI_Comm handle, communicator *&out) {
  if (int err = check_initialized(call)) return err;
  out = device::comm_lookup(handle);
  if (out == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_COMM, "invalid communicator handle 0x%x",
                               static_cast<unsigned>(handle));
  }
  return MPI_SUCCESS;
}

// Checks count, datatype and buffer of a message; on success `bytes` is its
// length.
inline int check_buffer(const char *call, const communicator &comm, const void *buf, int count,
                        MPI_Datatype type, std::size_t &bytes) {
  if (count < 0) {
    return device::error_raise(&comm, call, MPI_ERR_COUNT, "negative count %d", count);
  }
  const std::size_t extent = device::datatype_extent(type);
  if (extent == 0) {
    if (device::dtype_lookup(type) != nullptr) {
      return device::error_raise(&comm, call, MPI_ERR_TYPE,
                                 "derived datatypes are not supported by this call yet (0x%x)",
                                 static_cast<unsigned>(type));
    }
    return device::error_raise(&comm, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                               static_cast<unsigned>(type));
  }
  if (buf == nullptr && count > 0) {
    return device::error_raise(&comm, call, MPI_ERR_BUFFER, "NULL buffer with count %d", count);
  }
  bytes = static_cast<std::size_t>(count) * extent;
  return MPI_SUCCESS;
}

// A message's buffer with any committed datatype. `packed` is set when the
// type is not one contiguous run: the message then travels packed.
struct typed_buffer {
  const device::dtype *type = nullptr;
  std::size_t bytes = 0;
  bool packed = false;
};

inline int check_typed_buffer(const char *call, const communicator &comm, const void *buf,
                              int count, MPI_Datatype type, typed_buffer &out) {
  if (count < 0) {
    return device::error_raise(&comm, call, MPI_ERR_COUNT, "negative count %d", count);
  }
  out.type = device::dtype_lookup(type);
  if (out.type == nullptr || !out.type->committed) {
    return device::error_raise(&comm, call, MPI_ERR_TYPE, "%s datatype handle 0x%x",
                               out.type == nullptr ? "invalid" : "uncommitted",
                               static_cast<unsigned>(type));
  }
  if (buf == nullptr && count > 0 && out.type->packed_size > 0 && out.type->true_lb == 0) {
    return device::error_raise(&comm, call, MPI_ERR_BUFFER, "NULL buffer with count %d", count);
  }
  out.bytes = static_cast<std::size_t>(count) * out.type->packed_size;
  out.packed = !device::dtype_contiguous(*out.type, count);
  return MPI_SUCCESS;
}

inline int check_dest(const char *call, const communicator &comm, int rank) {
  if (rank == MPI_PROC_NULL || (rank >= 0 && rank < comm.size)) return MPI_SUCCESS;
  return device::error_raise(&comm, call, MPI_ERR_RANK,
                             "invalid destination rank %d (communicator size %d)", rank, comm.size);
}

inline int check_source(const char *call, const communicator &comm, int rank) {
  if (rank == MPI_ANY_SOURCE || rank == MPI_PROC_NULL || (rank >= 0 && rank < comm.size)) {
    return MPI_SUCCESS;
  }
  return device::error_raise(&comm, call, MPI_ERR_RANK,
                             "invalid source rank %d (communicator size %d)", rank, comm.size);
}

inline int check_send_tag(const char *call, const communicator &comm, int tag) {
  if (tag >= 0) return MPI_SUCCESS;
  return device::error_raise(&comm, call, MPI_ERR_TAG, "invalid tag %d (send tags are 0..%d)", tag,
                             tag_upper_bound);
}

inline int check_recv_tag(const char *call, const communicator &comm, int tag) {
  if (tag >= 0 || tag == MPI_ANY_TAG) return MPI_SUCCESS;
  return device::error_raise(&comm, call, MPI_ERR_TAG,
                             "invalid tag %d (receive tags are 0..%d or MPI_ANY_TAG)", tag,
                             tag_upper_bound);
}

inline int check_not_null(const char *call, const communicator *comm, const void *p,
                          const char *what) {
  if (p != nullptr) return MPI_SUCCESS;
  return device::error_raise(comm, call, MPI_ERR_ARG, "%s is NULL", what);
}

// Fills a status from a completed request (MPI_STATUS_IGNORE allowed).
inline void status_fill(MPI_Status *status, const device::request &r) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = r.status_source;
  status->MPI_TAG = r.status_tag;
  status->MPI_ERROR = r.status_error;
  status->iris_cancelled = r.cancelled ? 1 : 0;
  status->iris_bytes = static_cast<MPI_Count>(r.cancelled ? 0 : r.status_bytes);
}

// The empty status a null or inactive request reports.
inline void status_empty(MPI_Status *status) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  status->MPI_ERROR = MPI_SUCCESS;
  status->iris_cancelled = 0;
  status->iris_bytes = 0;
}

// The status of an operation with MPI_PROC_NULL: source MPI_PROC_NULL, tag
// MPI_ANY_TAG, count 0.
inline void status_proc_null(MPI_Status *status) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = MPI_PROC_NULL;
  status->MPI_TAG = MPI_ANY_TAG;
  status->MPI_ERROR = MPI_SUCCESS;
  status->iris_cancelled = 0;
  status->iris_bytes = 0;
}

// Waits for every buffered send (MPI_Buffer_detach, MPI_Finalize).
void buffered_sends_drain();
// A buffered send as MPI_Bsend makes it (for persistent Bsend_init + Start).
int bsend_start(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);

// The status a probe reports for a message that has not been received.
inline void status_of_message(MPI_Status *status, const device::unexpected_msg &m) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = m.key.source;
  status->MPI_TAG = m.key.tag;
  status->MPI_ERROR = MPI_SUCCESS;
  status->iris_cancelled = 0;
  status->iris_bytes = static_cast<MPI_Count>(m.length);
}

// A request that is complete from the start: an operation with MPI_PROC_NULL.
inline device::request *proc_null_request(const communicator &comm, device::request_kind kind) {
  device::request *r = device::rt->requests.allocate(kind, &comm);
  r->status_source = MPI_PROC_NULL;
  r->status_tag = MPI_ANY_TAG;
  r->complete = true;
  return r;
}

inline int send_checks(const char *call, const void *buf, int count, MPI_Datatype type, int dest,
                       int tag, MPI_Comm handle, communicator *&comm, std::size_t &bytes) {
  if (int err = check_comm(call, handle, comm)) return err;
  if (int err = check_buffer(call, *comm, buf, count, type, bytes)) return err;
  if (int err = check_dest(call, *comm, dest)) return err;
  return check_send_tag(call, *comm, tag);
}

// Unpacks a completed receive of a non-contiguous datatype into the user's
// buffer (what arrived of it).
inline void recv_unpack(device::request &r) {
  if (r.unpack_to == nullptr) return;
  device::dtype_unpack_range(r.scratch, 0, r.status_bytes, r.unpack_to, r.unpack_count,
                             *r.unpack_type);
  r.unpack_to = nullptr;
}

// Every send binding but the buffered ones: checks, then the device. With a
// null `request` the call blocks until the buffer may be reused. A
// non-contiguous datatype is packed into a scratch buffer the request owns.
inline int send_binding(const char *call, const void *buf, int count, MPI_Datatype type, int dest,
                        int tag, MPI_Comm handle, device::send_mode mode, MPI_Request *request) {
  communicator *c = nullptr;
  typed_buffer tb;
  if (int err = check_comm(call, handle, c)) return err;
  if (int err = check_typed_buffer(call, *c, buf, count, type, tb)) return err;
  if (int err = check_dest(call, *c, dest)) return err;
  if (int err = check_send_tag(call, *c, tag)) return err;
  if (dest == MPI_PROC_NULL) {
    if (request != nullptr) {
      *request = device::request_handle(*proc_null_request(*c, device::request_kind::send));
    }
    return MPI_SUCCESS;
  }
  void *scratch = nullptr;
  if (tb.packed) {
    scratch = std::malloc(tb.bytes != 0 ? tb.bytes : 1);
    if (scratch == nullptr) {
      return device::error_raise(c, call, MPI_ERR_NO_MEM, "cannot pack %zu bytes", tb.bytes);
    }
    device::dtype_pack_range(buf, count, *tb.type, 0, tb.bytes, scratch);
  }
  device::request *r = device::send_start(*c, c->context, scratch != nullptr ? scratch : buf,
                                          tb.bytes, dest, tag, mode, request != nullptr);
  if (r == nullptr) {
    std::free(scratch);  // the message is in the transport already
    return MPI_SUCCESS;
  }
  r->scratch = scratch;
  if (request == nullptr) {
    device::request_wait_release(r);
  } else {
    *request = device::request_handle(*r);
  }
  return MPI_SUCCESS;
}

// Posts a receive into a buffer of any committed datatype (MPI_PROC_NULL: a
// completed request).
inline int recv_post(const char *call, void *buf, int count, MPI_Datatype type, int source, int tag,
                     MPI_Comm handle, device::request *&out) {
  communicator *c = nullptr;
  typed_buffer tb;
  if (int err = check_comm(call, handle, c)) return err;
  if (int err = check_typed_buffer(call, *c, buf, count, type, tb)) return err;
  if (int err = check_source(call, *c, source)) return err;
  if (int err = check_recv_tag(call, *c, tag)) return err;
  if (source == MPI_PROC_NULL) {
    out = proc_null_request(*c, device::request_kind::recv);
    return MPI_SUCCESS;
  }
  void *scratch = nullptr;
  if (tb.packed) {
    scratch = std::malloc(tb.bytes != 0 ? tb.bytes : 1);
    if (scratch == nullptr) {
      return device::error_raise(c, call, MPI_ERR_NO_MEM, "cannot receive %zu bytes", tb.bytes);
    }
  }
  out =
      device::recv_start(*c, c->context, scratch != nullptr ? scratch : buf, tb.bytes, source, tag);
  if (scratch != nullptr) {
    out->scratch = scratch;
    out->unpack_to = buf;
    out->unpack_count = count;
    out->unpack_type = tb.type;
  }
  return MPI_SUCCESS;
}

}  // namespace iris::api
