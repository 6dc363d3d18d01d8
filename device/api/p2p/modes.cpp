// Buffered sends (Bsend, Ibsend, Buffer_attach, Buffer_detach; the buffers
// of communicators and of sessions) and Sendrecv_replace.
//
// A buffered send copies the message into the attached buffer and sends the
// copy with a standard send; its piece of the buffer is freed once that send
// completes. Pieces are placed first-fit; each costs its bytes plus
// MPI_BSEND_OVERHEAD, as the standard tells users to budget.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include "device/api/check.hpp"
#include "device/protocols/cancel.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

struct piece {
  std::size_t offset;
  std::size_t length;
  device::request *send;
  std::byte *own = nullptr;  // MPI_BUFFER_AUTOMATIC: the piece's own memory
  // An Ibsend request may still cancel `send`: it releases the request
  // itself (ibsend_ext); the piece goes when the send completes.
  bool held = false;
};

struct attached_buffer {
  std::byte *base = nullptr;
  std::size_t size = 0;
  bool attached = false;
  bool automatic = false;     // MPI_BUFFER_AUTOMATIC: each piece is allocated
  std::vector<piece> pieces;  // by offset
};

// The process's buffer (MPI_Buffer_attach) and the communicators' own
// (MPI_Comm_attach_buffer, MPI-4.1), keyed by handle. A buffered send uses
// its communicator's buffer when one is attached, else the process's.
attached_buffer buffer;
std::map<int, attached_buffer> comm_buffers;
// The sessions' own (MPI_Session_attach_buffer, MPI-4.1), keyed by handle:
// a communicator derived from a session (communicator::session) without a
// buffer of its own uses its session's before the process's.
std::map<int, attached_buffer> session_buffers;

// The buffer attached under `key` in `table`, or nullptr.
attached_buffer *attached_in(std::map<int, attached_buffer> &table, int key) {
  const auto found = table.find(key);
  return found != table.end() && found->second.attached ? &found->second : nullptr;
}

attached_buffer &buffer_for(const communicator &c) {
  if (attached_buffer *own = attached_in(comm_buffers, c.handle)) return *own;
  if (c.session != 0) {
    if (attached_buffer *of_session = attached_in(session_buffers, c.session)) return *of_session;
  }
  return buffer;
}

// Frees the pieces whose sends have completed.
void reap(attached_buffer &b) {
  std::erase_if(b.pieces, [](const piece &p) {
    if (!p.send->complete) return false;
    if (!p.held) device::rt->requests.release(p.send);
    std::free(p.own);
    return true;
  });
}

// First fit; returns the offset or SIZE_MAX when no gap is large enough.
std::size_t place(const attached_buffer &b, std::size_t length) {
  std::size_t start = 0;
  for (const piece &p : b.pieces) {
    if (p.offset - start >= length) return start;
    start = p.offset + p.length;
  }
  return b.size - start >= length ? start : SIZE_MAX;
}

// Waits until every buffered send from `b` has left (the flushes, detach).
void drain(attached_buffer &b) {
  device::progress_until([&b] {
    reap(b);
    return b.pieces.empty();
  });
}

// MPI_Buffer_iflush, MPI_Comm_iflush_buffer, MPI_Session_iflush_buffer:
// complete once the buffer's sends have all left.
struct flush_ext final : device::request_ext {
  std::map<int, attached_buffer> *table = nullptr;  // nullptr: the process's buffer
  int key = 0;
  void poll(device::request &r) override {
    attached_buffer *found = table != nullptr ? attached_in(*table, key) : nullptr;
    attached_buffer &b = found != nullptr ? *found : buffer;
    reap(b);
    r.complete = b.pieces.empty();
  }
  int finish(device::request &r, void *status) override {
    (void)r;
    api::status_empty(static_cast<MPI_Status *>(status));
    return MPI_SUCCESS;
  }
  int peek(device::request &r, void *status) override { return finish(r, status); }
  void cancel(device::request &r) override { (void)r; }
  bool free(device::request &r) override {
    (void)r;
    return true;
  }
};

// The flush of the buffer attached under `key` in `table` (nullptr: the
// process's buffer).
int iflush(const char *call, const communicator &c, std::map<int, attached_buffer> *table, int key,
           MPI_Request *request) {
  if (int err = api::check_not_null(call, &c, request, "request")) return err;
  device::request *r = device::rt->requests.allocate(device::request_kind::send, &c);
  auto *ext = new flush_ext;
  ext->table = table;
  ext->key = key;
  r->ext = ext;
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

// The piece whose send is `send`, in any buffer, or nullptr (gone).
piece *piece_of(const device::request *send) {
  for (piece &p : buffer.pieces) {
    if (p.send == send) return &p;
  }
  for (auto *table : {&comm_buffers, &session_buffers}) {
    for (auto &[handle, b] : *table) {
      for (piece &p : b.pieces) {
        if (p.send == send) return &p;
      }
    }
  }
  return nullptr;
}

// MPI_Ibsend's request: complete at once (the data is copied), but
// MPI_Cancel reaches the copy's send: the receiver withdraws it if nothing
// matched it yet, and the request completes once that is settled, cancelled
// or not (MPI_Test_cancelled). The copy's send is held (piece::held) until
// this request is finished or freed.
struct ibsend_ext final : device::request_ext {
  device::request *send = nullptr;
  bool cancelling = false;

  void poll(device::request &r) override {
    if (send != nullptr) r.complete = send->complete && !send->cancel_pending;
  }
  int peek(device::request &r, void *status) override {
    (void)r;
    auto *s = static_cast<MPI_Status *>(status);
    api::status_empty(s);
    if (s != nullptr) s->iris_cancelled = cancelling && send != nullptr && send->cancelled ? 1 : 0;
    return MPI_SUCCESS;
  }
  int finish(device::request &r, void *status) override {
    const int err = peek(r, status);
    let_go();
    return err;
  }
  void cancel(device::request &r) override {
    if (cancelling || send == nullptr) return;  // an inactive MPI_Bsend_init's: nothing sent
    // Even a send complete here (an eager message) may still be unmatched
    // there: request_cancel asks the receiver whenever that can be.
    cancelling = true;
    device::request_cancel(*send);
    poll(r);
  }
  bool free(device::request &r) override {
    (void)r;
    let_go();
    return true;
  }
  // The send goes back to its piece (reap releases it), or is released here
  // when its piece is already gone.
  void let_go() {
    if (send == nullptr) return;
    if (piece *p = piece_of(send)) {
      p->held = false;
    } else {
      device::rt->requests.release(send);
    }
    send = nullptr;
  }
};

int attach(const char *call, const communicator *c, attached_buffer &b, void *base,
           MPI_Count size) {
  if (b.attached) {
    return device::error_raise(c, call, MPI_ERR_BUFFER,
                               "a buffer is already attached; detach it first");
  }
  if (base == MPI_BUFFER_AUTOMATIC) {
    b = attached_buffer{};
    b.attached = true;
    b.automatic = true;
    b.size = SIZE_MAX;
    return MPI_SUCCESS;
  }
  if (size < 0 || (base == nullptr && size > 0)) {
    return device::error_raise(c, call, MPI_ERR_ARG, "invalid buffer %p of %lld bytes", base,
                               static_cast<long long>(size));
  }
  b.base = static_cast<std::byte *>(base);
  b.size = static_cast<std::size_t>(size);
  b.attached = true;
  return MPI_SUCCESS;
}

template <typename Size>
int detach(const char *call, const communicator *c, attached_buffer &b, void *buffer_addr,
           Size *size) {
  if (int err = api::check_not_null(call, c, buffer_addr, "buffer_addr")) return err;
  if (int err = api::check_not_null(call, c, size, "size")) return err;
  drain(b);  // the standard: detach waits for them
  void *base = b.automatic ? MPI_BUFFER_AUTOMATIC : b.base;
  std::memcpy(buffer_addr, &base, sizeof(void *));
  if (!b.automatic && b.size > static_cast<std::size_t>(std::numeric_limits<Size>::max())) {
    return device::error_raise(c, call, MPI_ERR_VALUE_TOO_LARGE,
                               "the buffer's %zu bytes do not fit the int size (use %s_c)", b.size,
                               call);
  }
  *size = b.automatic ? 0 : static_cast<Size>(b.size);
  b = attached_buffer{};
  return MPI_SUCCESS;
}

// MPI_Comm_detach_buffer(_c): detaches the buffer attached to `comm`.
template <typename Size>
int comm_detach(const char *call, MPI_Comm comm, void *buffer_addr, Size *size) {
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  const auto found = comm_buffers.find(comm);
  if (found == comm_buffers.end() || !found->second.attached) {
    return device::error_raise(c, call, MPI_ERR_BUFFER, "no buffer is attached to communicator");
  }
  const int err = detach(call, c, found->second, buffer_addr, size);
  if (err == MPI_SUCCESS) comm_buffers.erase(found);
  return err;
}

int bsend(const char *call, const void *buf, int count, MPI_Datatype type, int dest, int tag,
          MPI_Comm handle, MPI_Request *request) {
  communicator *c = nullptr;
  device::typed_buffer tb;
  if (int err = api::check_typed_send(call, buf, count, type, dest, tag, handle, c, tb)) {
    return err;
  }
  device::request *sent = nullptr;
  if (int err = api::bsend_checked(call, *c, tb, dest, tag, request != nullptr ? &sent : nullptr)) {
    return err;
  }
  if (request != nullptr) {
    // The data is copied: the user's request is complete at once.
    device::request *r = api::proc_null_request(*c, device::request_kind::send);
    api::bsend_attach(*r, sent);
    *request = device::request_handle(*r);
  }
  return MPI_SUCCESS;
}

}  // namespace

namespace iris::api {

void bsend_attach(device::request &r, device::request *sent) {
  delete r.ext;  // an earlier start's, which its finish let go of
  r.ext = nullptr;
  if (sent == nullptr) return;
  auto *ext = new ibsend_ext;
  ext->send = sent;
  r.ext = ext;
}

int bsend_checked(const char *call, const communicator &c, const device::typed_buffer &tb, int dest,
                  int tag, device::request **held) {
  if (dest != MPI_PROC_NULL) {
    // Exactly what the standard tells users to budget (MPI_Pack_size plus
    // MPI_BSEND_OVERHEAD): pieces hold the packed message, no header, and
    // need no alignment (data moves by memcpy or CMA).
    const std::size_t bytes = tb.packed_bytes();
    const std::size_t need = bytes + MPI_BSEND_OVERHEAD;
    attached_buffer &b = buffer_for(c);
    reap(b);
    if (b.automatic) {
      auto *own = static_cast<std::byte *>(std::malloc(bytes != 0 ? bytes : 1));
      if (own == nullptr) {
        return device::error_raise(&c, call, MPI_ERR_BUFFER,
                                   "MPI_BUFFER_AUTOMATIC: cannot allocate %zu bytes", bytes);
      }
      device::typed_pack(tb, own);
      device::request *send = device::send_start(c, c.context, own, bytes, dest, tag,
                                                 device::send_mode::standard, true);
      b.pieces.push_back(piece{0, 0, send, own, held != nullptr});
      if (held != nullptr) *held = send;
      return MPI_SUCCESS;
    }
    std::size_t at = b.attached ? place(b, need) : SIZE_MAX;
    if (at == SIZE_MAX && b.attached) {
      device::progress_poll();  // a piece may free up with one more poll
      reap(b);
      at = place(b, need);
    }
    if (at == SIZE_MAX) {
      return device::error_raise(
          &c, call, MPI_ERR_BUFFER,
          b.attached ? "the attached buffer (%zu bytes) has no room for %zu more bytes"
                     : "no buffer attached (%zu bytes) for a message needing %zu bytes",
          b.size, need);
    }
    device::typed_pack(tb, b.base + at);
    device::request *send = device::send_start(c, c.context, b.base + at, bytes, dest, tag,
                                               device::send_mode::standard, true);
    const auto spot = std::find_if(b.pieces.begin(), b.pieces.end(),
                                   [at](const piece &p) { return p.offset > at; });
    b.pieces.insert(spot, piece{at, need, send, nullptr, held != nullptr});
    if (held != nullptr) *held = send;
  }
  return MPI_SUCCESS;
}

void buffered_sends_drain() {
  if (device::rt == nullptr) return;
  drain(buffer);
  for (auto &[handle, b] : comm_buffers) drain(b);
  for (auto &[handle, b] : session_buffers) drain(b);
}

void session_buffer_end(int session) {
  const auto found = session_buffers.find(session);
  if (found == session_buffers.end()) return;
  drain(found->second);
  session_buffers.erase(found);
}

}  // namespace iris::api

extern "C" {

int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  const device::api_guard guard;
  return bsend("MPI_Bsend", buf, count, datatype, dest, tag, comm, nullptr);
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Ibsend", nullptr, request, "request")) return err;
  return bsend("MPI_Ibsend", buf, count, datatype, dest, tag, comm, request);
}

int MPI_Buffer_attach(void *base, int size) {
  const device::api_guard guard;
  const char *call = "MPI_Buffer_attach";
  if (int err = api::check_initialized(call)) return err;
  return attach(call, nullptr, buffer, base, size);
}

int MPI_Buffer_detach(void *buffer_addr, int *size) {
  const device::api_guard guard;
  const char *call = "MPI_Buffer_detach";
  if (int err = api::check_initialized(call)) return err;
  return detach(call, nullptr, buffer, buffer_addr, size);
}

int MPI_Buffer_flush(void) {
  const device::api_guard guard;
  if (int err = api::check_initialized("MPI_Buffer_flush")) return err;
  drain(buffer);
  return MPI_SUCCESS;
}

int MPI_Buffer_iflush(MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Buffer_iflush";
  if (int err = api::check_initialized(call)) return err;
  return iflush(call, *device::comm_lookup(MPI_COMM_SELF), nullptr, 0, request);
}

int MPI_Comm_attach_buffer(MPI_Comm comm, void *base, int size) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_attach_buffer";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  return attach(call, c, comm_buffers[comm], base, size);
}

int MPI_Comm_detach_buffer(MPI_Comm comm, void *buffer_addr, int *size) {
  const device::api_guard guard;
  return comm_detach("MPI_Comm_detach_buffer", comm, buffer_addr, size);
}

int MPI_Comm_flush_buffer(MPI_Comm comm) {
  const device::api_guard guard;
  communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Comm_flush_buffer", comm, c)) return err;
  drain(buffer_for(*c));
  return MPI_SUCCESS;
}

int MPI_Comm_iflush_buffer(MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_iflush_buffer";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (attached_in(comm_buffers, comm) != nullptr) {
    return iflush(call, *c, &comm_buffers, comm, request);
  }
  if (c->session != 0 && attached_in(session_buffers, c->session) != nullptr) {
    return iflush(call, *c, &session_buffers, c->session, request);
  }
  return iflush(call, *c, nullptr, 0, request);
}

int MPI_Buffer_attach_c(void *base, MPI_Count size) {
  const device::api_guard guard;
  const char *call = "MPI_Buffer_attach_c";
  if (int err = api::check_initialized(call)) return err;
  return attach(call, nullptr, buffer, base, size);
}

int MPI_Buffer_detach_c(void *buffer_addr, MPI_Count *size) {
  const device::api_guard guard;
  const char *call = "MPI_Buffer_detach_c";
  if (int err = api::check_initialized(call)) return err;
  return detach(call, nullptr, buffer, buffer_addr, size);
}

int MPI_Comm_attach_buffer_c(MPI_Comm comm, void *base, MPI_Count size) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_attach_buffer_c";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  return attach(call, c, comm_buffers[comm], base, size);
}

int MPI_Comm_detach_buffer_c(MPI_Comm comm, void *buffer_addr, MPI_Count *size) {
  const device::api_guard guard;
  return comm_detach("MPI_Comm_detach_buffer_c", comm, buffer_addr, size);
}

// The sessions' buffers (MPI-4.1). Errors about the buffer itself go to
// MPI_COMM_WORLD's handler, as the process buffer's do.
int MPI_Session_attach_buffer(MPI_Session session, void *base, int size) {
  const device::api_guard guard;
  const char *call = "MPI_Session_attach_buffer";
  if (int err = api::check_session_handle(call, session)) return err;
  return attach(call, nullptr, session_buffers[session], base, size);
}

int MPI_Session_attach_buffer_c(MPI_Session session, void *base, MPI_Count size) {
  const device::api_guard guard;
  const char *call = "MPI_Session_attach_buffer_c";
  if (int err = api::check_session_handle(call, session)) return err;
  return attach(call, nullptr, session_buffers[session], base, size);
}

}  // extern "C"

namespace {

template <typename Size>
int session_detach(const char *call, MPI_Session session, void *buffer_addr, Size *size) {
  if (int err = api::check_session_handle(call, session)) return err;
  const auto found = session_buffers.find(session);
  if (found == session_buffers.end() || !found->second.attached) {
    return device::error_raise(nullptr, call, MPI_ERR_BUFFER, "no buffer is attached to session");
  }
  const int err = detach(call, nullptr, found->second, buffer_addr, size);
  if (err == MPI_SUCCESS) session_buffers.erase(found);
  return err;
}

}  // namespace

extern "C" {

int MPI_Session_detach_buffer(MPI_Session session, void *buffer_addr, int *size) {
  const device::api_guard guard;
  return session_detach("MPI_Session_detach_buffer", session, buffer_addr, size);
}

int MPI_Session_detach_buffer_c(MPI_Session session, void *buffer_addr, MPI_Count *size) {
  const device::api_guard guard;
  return session_detach("MPI_Session_detach_buffer_c", session, buffer_addr, size);
}

int MPI_Session_flush_buffer(MPI_Session session) {
  const device::api_guard guard;
  if (int err = api::check_session_handle("MPI_Session_flush_buffer", session)) return err;
  if (attached_buffer *b = attached_in(session_buffers, session)) drain(*b);
  return MPI_SUCCESS;
}

int MPI_Session_iflush_buffer(MPI_Session session, MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Session_iflush_buffer";
  if (int err = api::check_session_handle(call, session)) return err;
  return iflush(call, *device::comm_lookup(MPI_COMM_SELF), &session_buffers, session, request);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  const device::api_guard guard;
  const char *call = "MPI_Sendrecv_replace";
  communicator *c = nullptr;
  device::typed_buffer tb;
  if (int err = api::check_typed_send(call, buf, count, datatype, dest, sendtag, comm, c, tb)) {
    return err;
  }
  if (int err = api::check_source(call, *c, source)) return err;
  if (int err = api::check_recv_tag(call, *c, recvtag)) return err;
  // The incoming message lands packed in a copy until the outgoing one has
  // left; then what arrived replaces the buffer's data (a shorter message
  // leaves the rest, and the gaps between blocks are never touched).
  const std::size_t bytes = tb.packed_bytes();
  void *incoming = std::malloc(bytes != 0 ? bytes : 1);
  if (incoming == nullptr) {
    return device::error_raise(c, call, MPI_ERR_NO_MEM, "cannot allocate %zu bytes", bytes);
  }
  MPI_Status got{};
  const int err = MPI_Sendrecv(buf, count, datatype, dest, sendtag, incoming,
                               static_cast<int>(bytes), MPI_BYTE, source, recvtag, comm, &got);
  if (source != MPI_PROC_NULL && (err == MPI_SUCCESS || err == MPI_ERR_TRUNCATE)) {
    device::typed_unpack(incoming, static_cast<std::size_t>(got.iris_bytes), tb);
  }
  if (status != MPI_STATUS_IGNORE) *status = got;
  std::free(incoming);
  return err;
}

}  // extern "C"
