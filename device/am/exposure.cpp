#include "device/am/exposure.hpp"

#include "include/mpi.h"

namespace iris::device {

exposure_table &exposures() {
  static exposure_table table{};
  return table;
}

int exposure_add(const void *base, std::size_t bytes, std::uint64_t block,
                 std::uint64_t block_offset, std::uint64_t block_bytes) {
  exposure_table &t = exposures();
  const auto at = reinterpret_cast<std::uintptr_t>(base);
  const std::uint64_t used = t.used.load(std::memory_order_relaxed);
  std::size_t free_slot = exposure_slots;
  for (std::size_t i = 0; i < used; ++i) {
    const std::uint64_t b = t.slots[i].word[slot_base].load(std::memory_order_relaxed);
    if (b == at) return MPI_ERR_ARG;
    if (b == 0 && free_slot == exposure_slots) free_slot = i;
  }
  // A new slot while there are any: an emptied one is reused only when the
  // table is full, so a peer's read of a slot is torn only across a reuse.
  if (used < exposure_slots) {
    free_slot = used;
  } else if (free_slot == exposure_slots) {
    return MPI_ERR_NO_MEM;
  }
  exposure_slot &s = t.slots[free_slot];
  s.word[slot_bytes].store(bytes, std::memory_order_relaxed);
  s.word[slot_block].store(block, std::memory_order_relaxed);
  s.word[slot_block_offset].store(block_offset, std::memory_order_relaxed);
  s.word[slot_block_bytes].store(block_bytes, std::memory_order_relaxed);
  s.word[slot_base].store(at, std::memory_order_release);  // pairs with exposed_here's acquire
  if (free_slot == used) t.used.store(used + 1, std::memory_order_release);
  return MPI_SUCCESS;
}

int exposure_remove(const void *base) {
  exposure_table &t = exposures();
  const auto at = reinterpret_cast<std::uintptr_t>(base);
  const std::uint64_t used = t.used.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < used; ++i) {
    exposure_slot &s = t.slots[i];
    if (s.word[slot_base].load(std::memory_order_relaxed) == at) {
      s.word[slot_base].store(0, std::memory_order_release);
      for (std::size_t w = slot_bytes; w < slot_words; ++w) {
        s.word[w].store(0, std::memory_order_relaxed);
      }
      return MPI_SUCCESS;
    }
  }
  return MPI_ERR_ARG;
}

namespace {

bool holds(std::uint64_t base, std::uint64_t n, std::uint64_t address, std::uint64_t bytes) {
  return base != 0 && address >= base && address - base <= n && bytes <= n - (address - base);
}

// Whether [address, address + bytes) lies in regions that follow one
// another: `end_of(at)` is the end of the region holding byte `at` (0:
// none holds it). Each hop passes a region's end, so there are no more
// hops than regions.
template <typename EndOf>
bool chain_covers(std::uint64_t address, std::uint64_t bytes, EndOf end_of) {
  std::uint64_t last = 0;
  if (bytes == 0 || __builtin_add_overflow(address, bytes, &last)) return false;
  for (std::uint64_t at = address; at < last;) {
    const std::uint64_t next = end_of(at);
    if (next <= at) return false;
    at = next;
  }
  return true;
}

}  // namespace

bool exposure_chain(const std::uint64_t *slots, std::size_t used, std::uint64_t address,
                    std::uint64_t bytes) {
  return chain_covers(address, bytes, [&](std::uint64_t at) -> std::uint64_t {
    for (std::size_t i = 0; i < used; ++i) {
      const std::uint64_t *slot = slots + i * slot_words;
      if (holds(slot[slot_base], slot[slot_bytes], at, 1))
        return slot[slot_base] + slot[slot_bytes];
    }
    return 0;
  });
}

const std::uint64_t *exposure_covering(const std::uint64_t *slots, std::size_t used,
                                       std::uint64_t address, std::uint64_t bytes) {
  for (std::size_t i = 0; i < used; ++i) {
    const std::uint64_t *slot = slots + i * slot_words;
    if (holds(slot[slot_base], slot[slot_bytes], address, bytes)) return slot;
  }
  return nullptr;
}

bool exposed_here(std::uint64_t address, std::uint64_t bytes) {
  exposure_table &t = exposures();
  const std::uint64_t used = t.used.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < used; ++i) {
    const std::uint64_t base = t.slots[i].word[slot_base].load(std::memory_order_acquire);
    const std::uint64_t n = t.slots[i].word[slot_bytes].load(std::memory_order_relaxed);
    if (holds(base, n, address, bytes)) return true;
  }
  // Across adjacent regions (a dynamic window's attachments, one by one).
  return chain_covers(address, bytes, [&](std::uint64_t at) -> std::uint64_t {
    for (std::size_t i = 0; i < used; ++i) {
      const std::uint64_t base = t.slots[i].word[slot_base].load(std::memory_order_acquire);
      const std::uint64_t n = t.slots[i].word[slot_bytes].load(std::memory_order_relaxed);
      if (holds(base, n, at, 1)) return base + n;
    }
    return 0;
  });
}

}  // namespace iris::device
