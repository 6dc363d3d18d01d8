// Messages of any committed datatype. The device moves bytes; this file is
// where a (buffer, count, datatype) becomes those bytes and back: a buffer
// whose elements are one contiguous run travels as it is (no packing at
// all); any other streams (request.hpp, `typed_stream`): a receive unpacks
// each piece where it arrives (the eager packet, or each rendezvous data
// fragment), and a send longer than the peer's eager limit packs one
// fragment at a time as the pipeline sends it, into a scratch fragment the
// request owns. A shorter send is packed whole (at most the eager limit,
// or a message to oneself, which is buffered anyway). So no message is ever
// packed whole above the eager limit, whatever its size. The bindings check
// the arguments and call these; they never pack themselves.
//
// Lifecycle of a typed receive: typed_recv_start (or typed_recv_claimed)
// posts it; the progress engine completes it, the data already in place
// (each piece was unpacked, or read by a scattered single-copy read, where
// it arrived: nothing is left to do at completion); releasing the request
// frees any scratch buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "device/core/comm.hpp"
#include "device/core/request.hpp"
#include "device/datatypes/dtype.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/send.hpp"

namespace iris::device {

// `count` elements of `type` at `base` (the address the user gave). As an
// array of blocks (the gathers), block i starts at base + i * count * extent.
struct typed_buffer {
  void *base = nullptr;
  int count = 0;
  const dtype *type = nullptr;

  // Bytes of the packed form: what travels.
  std::size_t packed_bytes() const { return static_cast<std::size_t>(count) * type->packed_size; }
  bool contiguous() const { return dtype_contiguous(*type, count); }
  // Block i of an array of blocks of this shape.
  typed_buffer block(int i) const;
  // Where element i starts (i may be negative: a displacement).
  void *element(std::int64_t i) const;
  // The `n` elements from element `first` on (blocks at displacements).
  typed_buffer slice(std::int64_t first, int n) const { return {element(first), n, type}; }
};

// True when the memory the data of `a` spans (its first to its last byte)
// meets that of `b`.
bool typed_overlap(const typed_buffer &a, const typed_buffer &b);

// Raw bytes as a typed buffer (MPI_BYTE).
typed_buffer typed_bytes(const void *data, std::size_t bytes);

enum class [[nodiscard]] typed_status : std::uint8_t{
    done,
    no_memory,  // no scratch buffer could be had for packing
};

// Packs the whole of `from` into `out` (from.packed_bytes() bytes).
void typed_pack(const typed_buffer &from, void *out);
// Unpacks the first `bytes` of a packed message (at most to.packed_bytes())
// into `to`; the bytes between its blocks are left alone.
void typed_unpack(const void *in, std::size_t bytes, const typed_buffer &to);
// Copies the data of `from` into `to` (same type signature, any layouts; the
// shorter decides). The bytes between blocks of `to` are left alone; the two
// may be the same buffer. Not on the small-message path: a non-contiguous
// side goes through a bounded temporary (the whole packed form only when
// the two overlap).
void typed_copy(const typed_buffer &from, const typed_buffer &to);

// A send of `what` (see send_start). `out` is nullptr when the message is on
// its way and the buffer may be reused. A `use` request that already owns a
// scratch buffer (a restarted persistent request keeps it) packs into it.
// A contiguous buffer goes straight to send_start, inline: it is every
// small message's path.
typed_status typed_send_packed(const communicator &comm, std::uint32_t context,
                               const typed_buffer &what, int dest, int tag, send_mode mode,
                               bool need_request, request *&out, request *use);
inline typed_status typed_send_start(const communicator &comm, std::uint32_t context,
                                     const typed_buffer &what, int dest, int tag, send_mode mode,
                                     bool need_request, request *&out, request *use = nullptr) {
  if (!what.contiguous()) {
    return typed_send_packed(comm, context, what, dest, tag, mode, need_request, out, use);
  }
  out =
      send_start(comm, context, what.base, what.packed_bytes(), dest, tag, mode, need_request, use);
  return typed_status::done;
}
// A receive into `where` (see recv_start); `use` as for typed_send_start.
typed_status typed_recv_packed(const communicator &comm, std::uint32_t context,
                               const typed_buffer &where, int source, int tag, request *&out,
                               request *use);
inline typed_status typed_recv_start(const communicator &comm, std::uint32_t context,
                                     const typed_buffer &where, int source, int tag, request *&out,
                                     request *use = nullptr) {
  if (!where.contiguous()) return typed_recv_packed(comm, context, where, source, tag, out, use);
  out = recv_start(comm, context, where.base, where.packed_bytes(), source, tag, use);
  return typed_status::done;
}
// MPI_Mrecv: a receive of the claimed message `m` into `where`.
typed_status typed_recv_claimed(const communicator &comm, unexpected_msg *m,
                                const typed_buffer &where, request *&out);
// Waits for `r` (nullptr: nothing), releases it and returns its
// error class (MPI_ERR_TRUNCATE when the message was longer).
int typed_wait_release(request *r);

// An image's block, given back to the thread's kept blocks if large
// (typed.cpp).
struct image_release {
  std::size_t capacity = 0;
  void operator()(std::byte *memory) const;
};

// Memory laid out as `count` elements of `type` would be, for partial
// results of reductions (a user op reads and writes its operands in the
// type's layout). Only the span the data covers is allocated.
class typed_image {
 public:
  typed_image() = default;
  typed_image(int count, const dtype &type);
  // A copy of the span of `from`, gaps included.
  explicit typed_image(const typed_buffer &from);
  typed_image(const typed_image &other);
  typed_image &operator=(const typed_image &other);
  typed_image(typed_image &&) noexcept = default;
  typed_image &operator=(typed_image &&) noexcept = default;
  ~typed_image() = default;
  typed_buffer view() const { return {origin(), count_, type_}; }
  // Where element 0 starts (memory_ holds the bytes from `lo_` on).
  void *origin() const;
  void swap(typed_image &other) noexcept;
  // Blocks of at least kept_least bytes (and at most kept_most) are kept
  // for this thread's next images, kept_count of them.
  static constexpr std::size_t kept_least = 64 * 1024;
  static constexpr std::size_t kept_most = std::size_t{64} << 20;
  static constexpr int kept_count = 3;
  // How many blocks this thread keeps now.
  static int kept_here();

 private:
  // Left unset: an image is written (received, copied) before it is read,
  // and zeroing megabytes on every collective cost more than the work.
  std::unique_ptr<std::byte[], image_release> memory_;
  std::size_t bytes_ = 0;
  std::int64_t lo_ = 0;  // the first byte the data touches, from element 0's start
  int count_ = 0;
  const dtype *type_ = nullptr;
};

}  // namespace iris::device
