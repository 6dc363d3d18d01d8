// Buffered sends (Bsend, Ibsend, Buffer_attach, Buffer_detach) and
// Sendrecv_replace.
//
// A buffered send copies the message into the attached buffer and sends the
// copy with a standard send; its piece of the buffer is freed once that send
// completes. Pieces are placed first-fit; each costs its bytes plus
// MPI_BSEND_OVERHEAD, as the standard tells users to budget.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "device/api/check.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

struct piece {
  std::size_t offset;
  std::size_t length;
  device::request *send;
};

struct attached_buffer {
  std::byte *base = nullptr;
  std::size_t size = 0;
  bool attached = false;
  std::vector<piece> pieces;  // by offset
};

attached_buffer buffer;

// Frees the pieces whose sends have completed.
void reap() {
  std::erase_if(buffer.pieces, [](const piece &p) {
    if (!p.send->complete) return false;
    device::rt->requests.release(p.send);
    return true;
  });
}

// First fit; returns the offset or SIZE_MAX when no gap is large enough.
std::size_t place(std::size_t length) {
  std::size_t start = 0;
  for (const piece &p : buffer.pieces) {
    if (p.offset - start >= length) return start;
    start = p.offset + p.length;
  }
  return buffer.size - start >= length ? start : SIZE_MAX;
}

int bsend(const char *call, const void *buf, int count, MPI_Datatype type, int dest, int tag,
          MPI_Comm handle, MPI_Request *request) {
  communicator *c = nullptr;
  device::typed_buffer tb;
  if (int err = api::check_typed_send(call, buf, count, type, dest, tag, handle, c, tb)) {
    return err;
  }
  if (int err = api::bsend_checked(call, *c, tb, dest, tag)) return err;
  if (request != nullptr) {
    // The data is copied: the user's request is complete at once.
    device::request *r = api::proc_null_request(*c, device::request_kind::send);
    *request = device::request_handle(*r);
  }
  return MPI_SUCCESS;
}

}  // namespace

namespace iris::api {

int bsend_checked(const char *call, const communicator &c, const device::typed_buffer &tb, int dest,
                  int tag) {
  if (dest != MPI_PROC_NULL) {
    // Exactly what the standard tells users to budget (MPI_Pack_size plus
    // MPI_BSEND_OVERHEAD): pieces hold the packed message, no header, and
    // need no alignment (data moves by memcpy or CMA).
    const std::size_t bytes = tb.packed_bytes();
    const std::size_t need = bytes + MPI_BSEND_OVERHEAD;
    reap();
    std::size_t at = buffer.attached ? place(need) : SIZE_MAX;
    if (at == SIZE_MAX && buffer.attached) {
      device::progress_poll();  // a piece may free up with one more poll
      reap();
      at = place(need);
    }
    if (at == SIZE_MAX) {
      return device::error_raise(
          &c, call, MPI_ERR_BUFFER,
          buffer.attached ? "the attached buffer (%zu bytes) has no room for %zu more bytes"
                          : "no buffer attached (%zu bytes) for a message needing %zu bytes",
          buffer.size, need);
    }
    device::typed_pack(tb, buffer.base + at);
    device::request *send = device::send_start(c, c.context, buffer.base + at, bytes, dest, tag,
                                               device::send_mode::standard, true);
    const auto spot = std::find_if(buffer.pieces.begin(), buffer.pieces.end(),
                                   [at](const piece &p) { return p.offset > at; });
    buffer.pieces.insert(spot, piece{at, need, send});
  }
  return MPI_SUCCESS;
}

void buffered_sends_drain() {
  if (device::rt == nullptr) return;
  device::progress_until([] {
    reap();
    return buffer.pieces.empty();
  });
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
  if (buffer.attached) {
    return device::error_raise(nullptr, call, MPI_ERR_BUFFER,
                               "a buffer is already attached; detach it first");
  }
  if (size < 0 || (base == nullptr && size > 0)) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "invalid buffer %p of %d bytes", base,
                               size);
  }
  buffer.base = static_cast<std::byte *>(base);
  buffer.size = static_cast<std::size_t>(size);
  buffer.attached = true;
  return MPI_SUCCESS;
}

int MPI_Buffer_detach(void *buffer_addr, int *size) {
  const device::api_guard guard;
  const char *call = "MPI_Buffer_detach";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, buffer_addr, "buffer_addr")) return err;
  if (int err = api::check_not_null(call, nullptr, size, "size")) return err;
  api::buffered_sends_drain();  // the standard: detach waits for them
  std::memcpy(buffer_addr, &buffer.base, sizeof(void *));
  *size = static_cast<int>(buffer.size);
  buffer = attached_buffer{};
  return MPI_SUCCESS;
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
