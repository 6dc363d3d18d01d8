#include "device/am/exposure.hpp"

#include "include/mpi.h"

namespace iris::device {

exposure_table &exposures() {
  static exposure_table table{};
  return table;
}

int exposure_add(const void *base, std::size_t bytes) {
  exposure_table &t = exposures();
  const auto at = reinterpret_cast<std::uintptr_t>(base);
  const std::uint64_t used = t.used.load(std::memory_order_relaxed);
  std::size_t free_slot = exposure_slots;
  for (std::size_t i = 0; i < used; ++i) {
    const std::uint64_t b = t.slots[i].base.load(std::memory_order_relaxed);
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
  s.bytes.store(bytes, std::memory_order_relaxed);
  s.base.store(at, std::memory_order_release);  // pairs with a reader's acquire of base
  if (free_slot == used) t.used.store(used + 1, std::memory_order_release);
  return MPI_SUCCESS;
}

int exposure_remove(const void *base) {
  exposure_table &t = exposures();
  const auto at = reinterpret_cast<std::uintptr_t>(base);
  const std::uint64_t used = t.used.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < used; ++i) {
    exposure_slot &s = t.slots[i];
    if (s.base.load(std::memory_order_relaxed) == at) {
      s.base.store(0, std::memory_order_release);
      s.bytes.store(0, std::memory_order_relaxed);
      return MPI_SUCCESS;
    }
  }
  return MPI_ERR_ARG;
}

bool exposure_covers(const std::uint64_t (*slots)[2], std::size_t used, std::uint64_t address,
                     std::uint64_t bytes) {
  for (std::size_t i = 0; i < used; ++i) {
    const std::uint64_t base = slots[i][0];
    const std::uint64_t n = slots[i][1];
    if (base != 0 && address >= base && address - base <= n && bytes <= n - (address - base)) {
      return true;
    }
  }
  return false;
}

bool exposed_here(std::uint64_t address, std::uint64_t bytes) {
  exposure_table &t = exposures();
  const std::uint64_t used = t.used.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < used; ++i) {
    const std::uint64_t base = t.slots[i].base.load(std::memory_order_acquire);
    const std::uint64_t n = t.slots[i].bytes.load(std::memory_order_relaxed);
    if (base != 0 && address >= base && address - base <= n && bytes <= n - (address - base)) {
      return true;
    }
  }
  return false;
}

}  // namespace iris::device
