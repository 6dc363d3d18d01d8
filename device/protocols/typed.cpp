#include "device/protocols/typed.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <utility>

#include "device/protocols/recv.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"
#include "include/mpi.h"

namespace iris::device {
namespace {

std::byte *at(void *base, std::int64_t offset) {
  return reinterpret_cast<std::byte *>(reinterpret_cast<std::uintptr_t>(base) +
                                       static_cast<std::uintptr_t>(offset));
}

// The scratch buffer of a message that travels packed: the one `use`
// already owns (a restarted persistent request: same arguments, same size),
// or a new one. nullptr when malloc fails.
void *scratch_for(request *use, std::size_t bytes) {
  if (use != nullptr && use->scratch != nullptr) return use->scratch;
  return std::malloc(bytes != 0 ? bytes : 1);
}

// Large images' blocks, kept for this thread's next images. A collective
// through messages makes images of its message every call (MPI_Reduce's
// accumulator and receive buffer), and a large block that malloc takes from
// the kernel and gives back each time is fresh memory each time: a 1 MiB
// Reduce at 4 ranks took 12 ms through messages on a VM whose host backs a
// guest page at its first write (7 us a page), 0.26-0.5 ms with the blocks
// reused (bench/results/2026-12-02-kept-image-blocks.md).
class kept_blocks {
 public:
  kept_blocks() { state = alive; }
  ~kept_blocks() {
    state = gone;
    for (block &b : kept_) delete[] b.memory;
  }
  kept_blocks(const kept_blocks &) = delete;
  kept_blocks &operator=(const kept_blocks &) = delete;

  // This thread's, or nullptr once it has been destroyed (a thread's
  // exit, or the images of static objects destroyed after it).
  static kept_blocks *here() {
    if (state == gone) return nullptr;
    thread_local kept_blocks blocks;
    return &blocks;
  }

  // The smallest kept block of at least `bytes` (its capacity in
  // `capacity`), or nullptr.
  std::byte *take(std::size_t bytes, std::size_t &capacity) {
    block *best = nullptr;
    for (block &b : kept_) {
      if (b.memory != nullptr && b.capacity >= bytes &&
          (best == nullptr || b.capacity < best->capacity)) {
        best = &b;
      }
    }
    if (best == nullptr) return nullptr;
    capacity = best->capacity;
    return std::exchange(best->memory, nullptr);
  }

  int count() const {
    return static_cast<int>(
        std::count_if(std::begin(kept_), std::end(kept_), [](const block &b) { return b.memory; }));
  }

  // Keeps `memory` in a free place, or in place of a smaller kept block.
  void give(std::byte *memory, std::size_t capacity) {
    block *smallest = &kept_[0];
    for (block &b : kept_) {
      if (b.memory == nullptr) {
        b = {memory, capacity};
        return;
      }
      if (b.capacity < smallest->capacity) smallest = &b;
    }
    if (smallest->capacity < capacity) std::swap(smallest->memory, memory);
    smallest->capacity = std::max(smallest->capacity, capacity);
    delete[] memory;
  }

 private:
  struct block {
    std::byte *memory = nullptr;
    std::size_t capacity = 0;
  };
  enum : int { unmade = 0, alive = 1, gone = 2 };
  static thread_local int state;  // trivially destroyed: readable after `blocks` is gone
  block kept_[typed_image::kept_count];
};

thread_local int kept_blocks::state = kept_blocks::unmade;

// Whether a block of `bytes` is kept (or taken from the kept ones).
bool kept_size(std::size_t bytes) {
  return bytes >= typed_image::kept_least && bytes <= typed_image::kept_most;
}

// A block for an image of `bytes`: a kept one, or new.
std::unique_ptr<std::byte[], image_release> image_block(std::size_t bytes) {
  std::size_t capacity = bytes;
  std::byte *memory = nullptr;
  if (kept_blocks *kept = kept_size(bytes) ? kept_blocks::here() : nullptr) {
    memory = kept->take(bytes, capacity);
  }
  if (memory == nullptr) memory = new std::byte[bytes];
  return {memory, image_release{capacity}};
}

// [lo, hi): the bytes `count` elements of `t` touch, from element 0's start.
void span_of(int count, const dtype &t, std::int64_t &lo, std::int64_t &hi) {
  lo = hi = 0;
  if (count == 0 || t.packed_size == 0) return;
  const std::int64_t last = static_cast<std::int64_t>(count - 1) * t.extent;
  lo = t.true_lb + std::min<std::int64_t>(0, last);
  hi = t.true_lb + t.true_extent + std::max<std::int64_t>(0, last);
}

}  // namespace

typed_buffer typed_buffer::block(int i) const {
  return slice(std::int64_t{i} * count, count);
}

void *typed_buffer::element(std::int64_t i) const {
  return at(base, i * type->extent);
}

bool typed_overlap(const typed_buffer &a, const typed_buffer &b) {
  std::int64_t a_lo = 0;
  std::int64_t a_hi = 0;
  std::int64_t b_lo = 0;
  std::int64_t b_hi = 0;
  span_of(a.count, *a.type, a_lo, a_hi);
  span_of(b.count, *b.type, b_lo, b_hi);
  if (a_lo == a_hi || b_lo == b_hi) return false;
  const auto a_first = reinterpret_cast<std::uintptr_t>(at(a.base, a_lo));
  const auto b_first = reinterpret_cast<std::uintptr_t>(at(b.base, b_lo));
  return a_first < b_first + static_cast<std::uintptr_t>(b_hi - b_lo) &&
         b_first < a_first + static_cast<std::uintptr_t>(a_hi - a_lo);
}

typed_buffer typed_bytes(const void *data, std::size_t bytes) {
  return {const_cast<void *>(data), static_cast<int>(bytes), dtype_lookup(MPI_BYTE)};
}

void typed_pack(const typed_buffer &from, void *out) {
  if (from.contiguous()) {
    if (out != from.base && from.packed_bytes() != 0) {
      std::memmove(out, from.base, from.packed_bytes());
    }
    return;
  }
  dtype_pack_range(from.base, from.count, *from.type, 0, from.packed_bytes(), out);
}

void typed_unpack(const void *in, std::size_t bytes, const typed_buffer &to) {
  bytes = std::min(bytes, to.packed_bytes());
  if (to.contiguous()) {
    if (in != to.base && bytes != 0) std::memmove(to.base, in, bytes);
    return;
  }
  dtype_unpack_range(in, 0, bytes, to.base, to.count, *to.type);
}

void typed_copy(const typed_buffer &from, const typed_buffer &to) {
  const std::size_t bytes = std::min(from.packed_bytes(), to.packed_bytes());
  if (bytes == 0 || (from.base == to.base && from.type == to.type)) return;
  if (from.contiguous()) {
    typed_unpack(from.base, bytes, to);
    return;
  }
  if (typed_overlap(from, to)) {
    // In place under two layouts: the whole packed form first.
    std::vector<std::byte> packed(from.packed_bytes());
    typed_pack(from, packed.data());
    typed_unpack(packed.data(), bytes, to);
    return;
  }
  // Piece by piece through a bounded buffer, never the whole message.
  constexpr std::size_t piece = 64 * 1024;
  std::vector<std::byte> staging(std::min(bytes, piece));
  dtype_cursor out(from.base, from.count, *from.type);
  dtype_cursor in(to.base, to.count, *to.type);
  while (in.done() < bytes) {
    const std::size_t n = out.pack(staging.data(), std::min(piece, bytes - in.done()));
    in.unpack(staging.data(), n);
  }
}

namespace {

// A message longer than the eager limit of the peer it goes to streams: it
// is never packed whole.
bool streams_to(const communicator &comm, int dest, std::size_t bytes) {
  const vc &to = rt->vcs[static_cast<std::size_t>(comm.world_rank[static_cast<std::size_t>(dest)])];
  return to.flow_controlled && bytes > to.eager_limit;
}

void stream_from(request &r, const typed_buffer &b) {
  r.typed_stream = true;
  r.unpack_to = b.base;
  r.unpack_count = b.count;
  r.unpack_type = b.type;
}

}  // namespace

typed_status typed_send_packed(const communicator &comm, std::uint32_t context,
                               const typed_buffer &what, int dest, int tag, send_mode mode,
                               bool need_request, request *&out, request *use) {
  const std::size_t bytes = what.packed_bytes();
  if (streams_to(comm, dest, bytes)) {
    // Rendezvous, packed one fragment at a time into a fragment of scratch.
    const vc &to =
        rt->vcs[static_cast<std::size_t>(comm.world_rank[static_cast<std::size_t>(dest)])];
    void *scratch = scratch_for(use, to.fragment);
    if (scratch == nullptr) return typed_status::no_memory;
    request *r = use != nullptr ? use : rt->requests.allocate(request_kind::send, &comm);
    r->scratch = scratch;
    stream_from(*r, what);
    out = send_start(comm, context, nullptr, bytes, dest, tag, mode, true, r);
    return typed_status::done;
  }
  void *scratch = scratch_for(use, bytes);
  if (scratch == nullptr) return typed_status::no_memory;
  typed_pack(what, scratch);
  out = send_start(comm, context, scratch, bytes, dest, tag, mode, need_request, use);
  if (out == nullptr) {
    std::free(scratch);  // the message is in the transport already
  } else {
    out->scratch = scratch;
  }
  return typed_status::done;
}

typed_status typed_recv_packed(const communicator &comm, std::uint32_t context,
                               const typed_buffer &where, int source, int tag, request *&out,
                               request *use) {
  const std::size_t bytes = where.packed_bytes();
  // Unpacked where the data arrives: from the eager packet, or fragment by
  // fragment; never through a buffer of the whole message.
  request *r = use != nullptr ? use : rt->requests.allocate(request_kind::recv, &comm);
  stream_from(*r, where);
  out = recv_start(comm, context, nullptr, bytes, source, tag, r);
  return typed_status::done;
}

typed_status typed_recv_claimed(const communicator &comm, unexpected_msg *m,
                                const typed_buffer &where, request *&out) {
  const std::size_t bytes = where.packed_bytes();
  if (where.contiguous()) {
    out = recv_claimed(comm, m, where.base, bytes);
    return typed_status::done;
  }
  request *r = rt->requests.allocate(request_kind::recv, &comm);
  stream_from(*r, where);
  out = recv_claimed(comm, m, nullptr, bytes, r);
  return typed_status::done;
}

int typed_wait_release(request *r) {
  if (r == nullptr) return MPI_SUCCESS;
  progress_until([r] { return r->complete; });
  const int err = r->status_error;
  rt->requests.release(r);
  return err;
}

typed_image::typed_image(int count, const dtype &type) : count_(count), type_(&type) {
  std::int64_t hi = 0;
  span_of(count, type, lo_, hi);
  bytes_ = static_cast<std::size_t>(hi - lo_);
  if (bytes_ > 0) memory_ = image_block(bytes_);
}

int typed_image::kept_here() {
  const kept_blocks *kept = kept_blocks::here();
  return kept != nullptr ? kept->count() : 0;
}

void image_release::operator()(std::byte *memory) const {
  if (kept_blocks *kept = kept_size(capacity) ? kept_blocks::here() : nullptr) {
    kept->give(memory, capacity);
    return;
  }
  delete[] memory;
}

typed_image::typed_image(const typed_buffer &from) : typed_image(from.count, *from.type) {
  if (bytes_ > 0) std::memcpy(memory_.get(), at(from.base, lo_), bytes_);
}

typed_image::typed_image(const typed_image &other)
    : bytes_(other.bytes_), lo_(other.lo_), count_(other.count_), type_(other.type_) {
  if (bytes_ > 0) {
    memory_ = image_block(bytes_);
    std::memcpy(memory_.get(), other.memory_.get(), bytes_);
  }
}

typed_image &typed_image::operator=(const typed_image &other) {
  typed_image copy(other);
  swap(copy);
  return *this;
}

void *typed_image::origin() const {
  return at(memory_.get(), -lo_);
}

void typed_image::swap(typed_image &other) noexcept {
  memory_.swap(other.memory_);
  std::swap(bytes_, other.bytes_);
  std::swap(lo_, other.lo_);
  std::swap(count_, other.count_);
  std::swap(type_, other.type_);
}

}  // namespace iris::device
