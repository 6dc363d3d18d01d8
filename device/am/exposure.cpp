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

}  // namespace

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
  return false;
}

}  // namespace iris::device
