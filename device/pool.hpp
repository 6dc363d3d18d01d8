// A pool of T objects that never moves them: chunks are allocated when the
// free list runs dry (setup and growth, not the steady state) and objects are
// recycled through a free list threaded through T::next. Each object keeps
// its index, so a small integer handle can name it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace iris::device {

template <typename T, std::size_t ChunkSize = 256>
class pool {
 public:
  // Requires T to have `T *next` and `std::uint32_t index`.
  T *allocate() {
    if (free_ == nullptr) [[unlikely]] {
      grow();
    }
    T *item = free_;
    free_ = item->next;
    const std::uint32_t index = item->index;
    item->~T();
    new (item) T;  // members have initializers; inline buffers stay uninitialised
    item->index = index;
    ++live_;
    return item;
  }

  void release(T *item) {
    item->next = free_;
    free_ = item;
    --live_;
  }

  // The object with `index`, or nullptr when there is none.
  T *at(std::uint32_t index) const {
    const std::size_t chunk = index / ChunkSize;
    if (chunk >= chunks_.size()) return nullptr;
    return &chunks_[chunk][index % ChunkSize];
  }

  std::size_t live() const { return live_; }

 private:
  // Out of line: allocate() stays small enough to inline on the hot path.
  [[gnu::noinline, gnu::cold]] void grow() {
    auto chunk = std::make_unique<T[]>(ChunkSize);
    const auto base = static_cast<std::uint32_t>(chunks_.size() * ChunkSize);
    for (std::size_t i = ChunkSize; i-- > 0;) {
      chunk[i].index = base + static_cast<std::uint32_t>(i);
      chunk[i].next = free_;
      free_ = &chunk[i];
    }
    chunks_.push_back(std::move(chunk));
  }

  std::vector<std::unique_ptr<T[]>> chunks_;
  T *free_ = nullptr;
  std::size_t live_ = 0;
};

}  // namespace iris::device
