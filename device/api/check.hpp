// Argument checks shared by the C bindings. Each returns MPI_SUCCESS, or the
// error class after the communicator's error handler has run (which under
// MPI_ERRORS_ARE_FATAL ends the job with a one-line reason).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "device/api/device.hpp"
#include "device/core/comm.hpp"
#include "device/datatypes/datatype.hpp"
#include "device/datatypes/dtype.hpp"
#include "device/protocols/recovery.hpp"
#include "device/protocols/typed.hpp"
#include "device/runtime/errors.hpp"
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

// As check_comm, for calls that need an intracommunicator (collectives,
// topologies, most constructors).
inline int check_intracomm(const char *call, MPI_Comm handle, communicator *&out) {
  if (int err = check_comm(call, handle, out)) return err;
  if (!out->inter) return MPI_SUCCESS;
  return device::error_raise(out, call, MPI_ERR_COMM, "not supported on an intercommunicator yet");
}

// Checks count, datatype and buffer of a message of any committed datatype;
// on success `out` describes it for the device (device/typed.hpp), which
// packs it when its elements are not one contiguous run.
inline int check_typed_buffer(const char *call, const communicator &comm, const void *buf,
                              int count, MPI_Datatype type, device::typed_buffer &out) {
  if (count < 0) {
    return device::error_raise(&comm, call, MPI_ERR_COUNT, "negative count %d", count);
  }
  // No data at all may name no type: MPICH (since 4.0.1) takes it, and codes
  // such as ParallelIO and ESMF pass it for a rank that has nothing to send.
  if (type == MPI_DATATYPE_NULL && count == 0) type = MPI_BYTE;
  const device::dtype *t = device::dtype_lookup(type);
  if (t == nullptr) {
    return device::error_raise(&comm, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                               static_cast<unsigned>(type));
  }
  if (!t->committed) {
    return device::error_raise(&comm, call, MPI_ERR_TYPE,
                               "datatype 0x%x is not committed (call MPI_Type_commit first)",
                               static_cast<unsigned>(type));
  }
  // NULL is MPI_BOTTOM: with absolute addresses the data lies elsewhere.
  if (buf == nullptr && count > 0 && t->packed_size > 0 && t->true_lb == 0) {
    return device::error_raise(&comm, call, MPI_ERR_BUFFER, "NULL buffer with count %d", count);
  }
  out = {const_cast<void *>(buf), count, t};
  return MPI_SUCCESS;
}

// What a typed send or receive reports when it found no memory to pack.
inline int typed_result(const char *call, const communicator &comm, device::typed_status status,
                        std::size_t bytes) {
  if (status == device::typed_status::done) return MPI_SUCCESS;
  return device::error_raise(&comm, call, MPI_ERR_NO_MEM, "cannot pack %zu bytes", bytes);
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

// Fills a status from a completed request (MPI_STATUS_IGNORE allowed). It
// leaves MPI_ERROR alone: a call with one status returns the error itself
// (MPI-4.1 3.2.5; MPICH and Open MPI leave the field as it was too), and the
// calls with an array of statuses write it when they return MPI_ERR_IN_STATUS
// (wait.cpp's `status_error_note`).
inline void status_fill(MPI_Status *status, const device::request &r) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = r.status_source;
  status->MPI_TAG = r.status_tag;
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

// A probe of MPI_PROC_NULL: as status_proc_null, MPI_ERROR left alone.
inline void status_probe_proc_null(MPI_Status *status) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = MPI_PROC_NULL;
  status->MPI_TAG = MPI_ANY_TAG;
  status->iris_cancelled = 0;
  status->iris_bytes = 0;
}

// What a communicator made from `parent` keeps of it besides the error
// handler: the session it derives from, and of an intercommunicator which
// group comes first (nothing for MPI_COMM_NULL).
inline void comm_inherit(MPI_Comm made, const communicator &parent) {
  if (made == MPI_COMM_NULL) return;
  communicator *c = device::comm_lookup(made);
  if (c == nullptr) return;
  c->session = parent.session;
  // Of an intercommunicator's groups (dup, split): the same group first.
  if (c->inter && parent.inter) c->merge_first = parent.merge_first;
}

// Recovery: a communicator constructor, collective over `parent` (both
// groups of an intercommunicator; only the new communicator's members when
// `whole_parent` is false, as MPI_Comm_create_group), that a member's death
// or a revocation cut short: what the members exchanged lacks that rank's
// part (and what passed through it), so the result could differ from
// member to member. The new communicator's own members are checked too.
// Releases `made` (MPI_COMM_NULL after) and raises MPIX_ERR_PROC_FAILED
// (MPIX_ERR_REVOKED when `parent` is revoked); MPI_SUCCESS when none of
// them is known dead. A member that learns of the death only later returns
// success: as ULFM has it, the program tells them apart with
// MPIX_Comm_agree (or shrinks first).
inline int made_despite_failure(const char *call, const communicator &parent, MPI_Comm &made,
                                bool whole_parent = true) {
  if (!device::rt->troubled) [[likely]] {
    return MPI_SUCCESS;
  }
  const communicator *m = made != MPI_COMM_NULL ? device::comm_lookup(made) : nullptr;
  const bool revoked = parent.revoked;  // its exchanges were refused
  if (!revoked && !(whole_parent && device::recovery_comm_failed(parent)) &&
      (m == nullptr || !device::recovery_comm_failed(*m))) {
    return MPI_SUCCESS;
  }
  if (m != nullptr) device::comm_release(made);
  made = MPI_COMM_NULL;
  if (revoked) {
    return device::error_raise(&parent, call, MPIX_ERR_REVOKED, "the communicator is revoked");
  }
  return device::error_raise(&parent, call, MPIX_ERR_PROC_FAILED,
                             "a rank of the communicator died (MPIX_Comm_shrink makes one "
                             "without it)");
}

// The runtime's users: the World model (MPI_Init .. MPI_Finalize) and each
// session (MPI_Session_init .. MPI_Session_finalize), init.cpp. The first
// makes the runtime at `required` thread level (a later one finds it made,
// at the level of the first); the last ends it, which is collective over
// the job as MPI_Finalize is.
int runtime_enter(int required);
int runtime_leave();
// MPI_Finalize ended the runtime: it cannot start again in this process.
bool runtime_ended_for_good();
void session_opened();
int session_closed();  // runtime_leave() unless the World model is in use

// Waits for every buffered send (MPI_Buffer_detach, MPI_Finalize).
void buffered_sends_drain();
// MPI_Comm_accept's work once its arguments are checked (dynamic.cpp).
// `gone`, when given, is asked at the root while no connect has come: true
// (with why) ends the wait with MPI_ERR_SPAWN (MPI_Comm_spawn's launcher
// ended first).
int accept_common(const char *call, const char *port, int root, communicator &comm,
                  MPI_Comm *newcomm, const std::function<bool(std::string &)> &gone);
// A spawned child's MPI_Init: connects its world to the parents' port
// (IRIS_PARENT_PORT), the intercommunicator MPI_Comm_get_parent answers
// (spawn.cpp). MPI_Comm_free and _disconnect of it forget it.
int parent_connect();
void parent_forget(MPI_Comm comm);
// At the end of MPI: removes the names this process published and left
// (dynamic.cpp).
void names_unpublish_all();
// MPI_Session_finalize: waits for the buffered sends from the session's
// buffer and forgets it (modes.cpp).
void session_buffer_end(int session);
// Checks that `session` names a live session (session.cpp); an invalid one
// is raised on MPI_COMM_WORLD's handler.
int check_session_handle(const char *call, int session);
// A buffered send of checked arguments, as MPI_Bsend makes it (also for
// persistent Bsend_init + Start): packed into the attached buffer. With
// `held`, *held is the copy's send, which the caller releases itself
// (MPI_Ibsend's request, to cancel it; see modes.cpp), or nullptr.
int bsend_checked(const char *call, const communicator &c, const device::typed_buffer &tb, int dest,
                  int tag, device::request **held = nullptr);
// Lets MPI_Cancel reach `sent`, the held send of a buffered copy, through
// `r` (MPI_Ibsend's request, or a started MPI_Bsend_init's), replacing what
// an earlier start of `r` attached.
void bsend_attach(device::request &r, device::request *sent);

// The status a probe reports for a message that has not been received. A
// probe completes nothing; like every call with a single status it leaves
// MPI_ERROR alone (MPI-4.1 3.2.5; MPICH and Open MPI do the same).
inline void status_of_message(MPI_Status *status, const device::unexpected_msg &m) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = m.key.source;
  status->MPI_TAG = m.key.tag;
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

// The arguments of a send of any committed datatype: communicator, buffer,
// destination and tag. On success `c` and `tb` describe it.
inline int check_typed_send(const char *call, const void *buf, int count, MPI_Datatype type,
                            int dest, int tag, MPI_Comm handle, communicator *&c,
                            device::typed_buffer &tb) {
  if (int err = check_comm(call, handle, c)) return err;
  if (int err = check_typed_buffer(call, *c, buf, count, type, tb)) return err;
  if (int err = check_dest(call, *c, dest)) return err;
  return check_send_tag(call, *c, tag);
}

// The small-message path of MPI_Send, MPI_Isend, MPI_Recv and MPI_Irecv,
// inline in those bindings: `count` elements of a predefined type that lie
// in one run (detail::builtin_slot), on an intracommunicator, with a peer
// rank of it and a valid tag. Each returns false, having done nothing, for
// anything else, bad arguments included: the binding then takes
// send_binding or recv_post, which check everything and report. So these
// test only what they use, and the type costs one load and a compare.
inline std::size_t dense_bytes(const void *buf, int count, MPI_Datatype type) {
  const device::detail::builtin_slot &slot =
      device::detail::builtin_types[static_cast<unsigned>(type) & 0xffU];
  if (slot.handle != type || count < 0 || (buf == nullptr && count != 0)) return SIZE_MAX;
  if (slot.dense_size == 0) return SIZE_MAX;
  return static_cast<std::size_t>(count) * slot.dense_size;
}
// An error class a failure or a revocation ended an operation with
// (protocols/recovery.hpp), through the communicator's error handler.
// `world`: the dead peer's rank in MPI_COMM_WORLD, when the operation had one.
inline int failure_raise(const char *call, const communicator &comm, int error_class,
                         int world = -1) {
  switch (error_class) {
    case MPI_ERR_REVOKED:
      return device::error_raise(&comm, call, error_class, "the communicator was revoked");
    case MPI_ERR_PROC_FAILED_PENDING:
      return device::error_raise(&comm, call, error_class,
                                 "a receive from any source waits while a failure in the "
                                 "communicator is not acknowledged (MPIX_Comm_ack_failed)");
    default:
      if (world >= 0) {
        return device::error_raise(&comm, call, error_class,
                                   "its peer, world rank %d, died (MPIX_ERR_PROC_FAILED)", world);
      }
      return device::error_raise(&comm, call, error_class,
                                 "a process of the communicator died (MPIX_ERR_PROC_FAILED; "
                                 "MPIX_Comm_get_failed names it)");
  }
}

// Waits for the send `r` (nullptr: none) and releases it; a send that a
// failure or revocation ended reports it.
inline int send_wait_release(const char *call, const communicator &comm, device::request *r) {
  if (r == nullptr) return MPI_SUCCESS;
  device::progress_until([r] { return device::request_done(*r); });
  const int err = r->status_error;
  const int peer = r->peer;
  device::rt->requests.release(r);
  if (err == MPI_SUCCESS) return MPI_SUCCESS;
  return failure_raise(call, comm, err, device::recovery_failed(peer) ? peer : -1);
}

inline bool send_fast(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                      MPI_Comm handle, bool need_request, device::request *&out) {
  const device::runtime *r = device::rt;
  if (r == nullptr) return false;
  const communicator *c = device::comm_lookup_published(*r, handle);
  if (c == nullptr || static_cast<unsigned>(dest) >= static_cast<unsigned>(c->size) || tag < 0) {
    return false;
  }
  const std::size_t bytes = dense_bytes(buf, count, type);
  if (bytes == SIZE_MAX) return false;
  out = device::send_start(*c, c->context, buf, bytes, dest, tag, device::send_mode::standard,
                           need_request);
  return true;
}
inline bool recv_fast(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm handle,
                      device::request *&out) {
  const device::runtime *r = device::rt;
  if (r == nullptr) return false;
  const communicator *c = device::comm_lookup_published(*r, handle);
  if (c == nullptr || (tag < 0 && tag != MPI_ANY_TAG)) return false;
  if (static_cast<unsigned>(source) >= static_cast<unsigned>(c->size) && source != MPI_ANY_SOURCE) {
    return false;
  }
  const std::size_t bytes = dense_bytes(buf, count, type);
  if (bytes == SIZE_MAX) return false;
  out = device::recv_start(*c, c->context, buf, bytes, source, tag);
  return true;
}

// Every send binding but the buffered ones: checks, then the device. With a
// null `request` the call blocks until the buffer may be reused.
inline int send_binding(const char *call, const void *buf, int count, MPI_Datatype type, int dest,
                        int tag, MPI_Comm handle, device::send_mode mode, MPI_Request *request) {
  communicator *c = nullptr;
  device::typed_buffer tb;
  if (int err = check_typed_send(call, buf, count, type, dest, tag, handle, c, tb)) return err;
  if (dest == MPI_PROC_NULL) {
    if (request != nullptr) {
      *request = device::request_handle(*proc_null_request(*c, device::request_kind::send));
    }
    return MPI_SUCCESS;
  }
  device::request *r = nullptr;
  const device::typed_status status =
      device::typed_send_start(*c, c->context, tb, dest, tag, mode, request != nullptr, r);
  if (int err = typed_result(call, *c, status, tb.packed_bytes())) return err;
  if (request == nullptr) {
    return send_wait_release(call, *c, r);
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
  device::typed_buffer tb;
  if (int err = check_comm(call, handle, c)) return err;
  if (int err = check_typed_buffer(call, *c, buf, count, type, tb)) return err;
  if (int err = check_source(call, *c, source)) return err;
  if (int err = check_recv_tag(call, *c, tag)) return err;
  if (source == MPI_PROC_NULL) {
    out = proc_null_request(*c, device::request_kind::recv);
    return MPI_SUCCESS;
  }
  return typed_result(call, *c, device::typed_recv_start(*c, c->context, tb, source, tag, out),
                      tb.packed_bytes());
}

}  // namespace iris::api
