// MPI_Alloc_mem's memory: on a node with other ranks, a block that they map
// (transport::block_alloc), so that their puts and gets into it, once it is
// exposed, are plain copies; else, or when /dev/shm is full, plain memory.
#include <sys/mman.h>

#include <cstdlib>
#include <vector>

#include "device/am/am.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

namespace {

struct block {
  std::byte *base;
  std::size_t bytes;
  std::uint64_t key;
  bool named;  // its name is in /dev/shm (until MPI_Free_mem or MPI_Finalize)
};
// Process-wide: MPI_Free_mem may come after MPI_Finalize. Under the call lock.
std::vector<block> &blocks() {
  static std::vector<block> all;
  return all;
}
std::uint64_t next_key = 1;

// The transport whose peers may map this rank's blocks, or nullptr.
transport *block_transport() {
  if (rt == nullptr) return nullptr;
  for (const auto &t : rt->transports) {
    if (t->published_word() != nullptr) return t.get();
  }
  return nullptr;
}

}  // namespace

void *am_alloc_mem(std::size_t bytes) {
  transport *t = block_transport();
  if (t == nullptr || bytes < am_block_min) return nullptr;
  const std::uint64_t key = next_key++;
  void *base = t->block_alloc(bytes, key);
  if (base == nullptr) return nullptr;
  blocks().push_back({static_cast<std::byte *>(base), bytes, key, true});
  return base;
}

bool am_free_mem(void *base) {
  auto &all = blocks();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].base != base) continue;
    if (all[i].named) {
      if (transport *t = block_transport()) t->block_unlink(all[i].key);
    }
    munmap(all[i].base, all[i].bytes);
    all[i] = all.back();
    all.pop_back();
    return true;
  }
  return false;
}

bool am_block_of(const void *base, std::size_t bytes, std::uint64_t &key, std::uint64_t &offset,
                 std::uint64_t &block_bytes) {
  const auto *at = static_cast<const std::byte *>(base);
  for (const block &b : blocks()) {
    if (b.named && at >= b.base && at - b.base <= static_cast<std::ptrdiff_t>(b.bytes) &&
        bytes <= b.bytes - static_cast<std::size_t>(at - b.base)) {
      key = b.key;
      offset = static_cast<std::uint64_t>(at - b.base);
      block_bytes = b.bytes;
      return true;
    }
  }
  return false;
}

void am_blocks_close() {
  transport *t = block_transport();
  for (block &b : blocks()) {
    if (b.named && t != nullptr) t->block_unlink(b.key);
    b.named = false;  // the memory stays the program's until MPI_Free_mem
  }
}

}  // namespace iris::device
