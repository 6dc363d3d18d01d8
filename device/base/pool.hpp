// A pool of T objects that never moves them: chunks are allocated when the
// free list runs dry (setup and growth, not the steady state) and objects are
// recycled through a free list threaded through T::next. Each object keeps
// its index, so a small integer handle can name it.
//
// The chunks sit in a fixed table of atomic pointers, chunk k holding
// ChunkSize << k objects (indices from ChunkSize * (2^k - 1) on), so 32 of
// them name every 32-bit index and a lookup (`at`) never reads storage that
// a grow moves. Under MPI_THREAD_MULTIPLE a thread may look a request up
// without the call lock while the lock's holder grows the pool: the grow
// publishes a chunk (release) after filling it, the lookup reads it
// (acquire; a plain load on x86). Everything else is its owner's, as before.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>

namespace iris::device {

template <typename T, std::size_t ChunkSize = 256>
class pool {
  static_assert(std::has_single_bit(ChunkSize));
  static constexpr int chunk_shift = std::countr_zero(ChunkSize);
  static constexpr int max_chunks = 32;

 public:
  pool() = default;
  pool(const pool &) = delete;
  pool &operator=(const pool &) = delete;
  ~pool() {
    for (auto &chunk : chunks_) delete[] chunk.load(std::memory_order_relaxed);
  }

  // Requires T to have `T *next` and `std::uint32_t index`; a T with a
  // `generation` keeps it (request_pool counts it per object).
  T *allocate() {
    if (free_ == nullptr) [[unlikely]] {
      grow();
    }
    T *item = free_;
    free_ = item->next;
    const std::uint32_t index = item->index;
    if constexpr (requires { item->generation; }) {
      const auto generation = item->generation;
      item->~T();
      new (item) T;  // members have initializers; inline buffers stay uninitialised
      item->generation = generation;
    } else {
      item->~T();
      new (item) T;
    }
    item->index = index;
    ++live_;
    return item;
  }

  void release(T *item) {
    item->next = free_;
    free_ = item;
    --live_;
  }

  // The object with `index`, or nullptr when there is none. Safe from any
  // thread while another grows the pool (see above).
  T *at(std::uint32_t index) const {
    // Chunk k holds the indices from ChunkSize * (2^k - 1) on: with
    // u = index + ChunkSize, k is u's top bit less log2(ChunkSize), and the
    // place in the chunk is u without its top bit.
    const std::uint64_t u = std::uint64_t{index} + ChunkSize;
    const unsigned top = 63U ^ static_cast<unsigned>(std::countl_zero(u));  // u > 0: one bsr
    T *chunk = chunks_[top - chunk_shift].load(std::memory_order_acquire);
    if (chunk == nullptr) return nullptr;
    return chunk + (u ^ (std::uint64_t{1} << top));
  }

  std::size_t live() const { return live_; }
  // Indices made so far: at() of every index below it is an object.
  std::uint32_t made() const {
    return static_cast<std::uint32_t>(((std::size_t{1} << grown_) - 1) * ChunkSize);
  }

 private:
  // Out of line: allocate() stays small enough to inline on the hot path.
  [[gnu::noinline, gnu::cold]] void grow() {
    if (((std::size_t{1} << (grown_ + 1)) - 1) * ChunkSize > (std::size_t{1} << 32)) {
      throw std::bad_alloc();  // past 32-bit indices
    }
    const std::size_t size = ChunkSize << grown_;
    T *chunk = new T[size];
    const auto base = static_cast<std::uint32_t>(((std::size_t{1} << grown_) - 1) * ChunkSize);
    for (std::size_t i = size; i-- > 0;) {
      chunk[i].index = base + static_cast<std::uint32_t>(i);
      chunk[i].next = free_;
      free_ = &chunk[i];
    }
    chunks_[grown_++].store(chunk, std::memory_order_release);  // pairs with at()'s acquire
  }

  std::atomic<T *> chunks_[max_chunks] = {};
  int grown_ = 0;
  T *free_ = nullptr;
  std::size_t live_ = 0;
};

}  // namespace iris::device
