// Accumulates are atomic per element (MPI 4.0, 12.7.1): an element of 1,
// 2, 4 or 8 bytes at an address aligned to its size is updated by the
// CPU's atomic instructions (add, and, or, xor and exchange where they
// exist, else a compare-and-swap loop); any other element under a striped
// lock of the target's control block chosen by its address in the
// target's process. MPI requires the same basic type for every accumulate
// to a location, so a location always takes the same way, whoever updates
// it: an origin on the target's node, through its mapping, or the target's
// handler for the others. Never a window-wide lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "device/api/rma/rma.hpp"
#include "device/datatypes/op.hpp"

namespace iris::api::rma {

// Element `at` (`key`: its address in the target's process): target =
// target o in, the old value to `old` unless nullptr; one element of
// `elem` bytes of the predefined type `basic`.
void apply_one(std::byte *at, std::uint64_t key, const std::byte *in, std::byte *old, int op,
               int basic, std::size_t elem, std::int64_t extent, control *ctl);
// MPI_Compare_and_swap on one element: `result` gets the old value.
void compare_swap_one(std::byte *at, std::uint64_t key, const std::byte *origin,
                      const std::byte *compare, std::byte *result, std::size_t elem, control *ctl);
// One element of a basic type with holes (MPI_SHORT_INT), whose operand and
// old value travel packed.
void apply_holed(std::byte *at, std::uint64_t key, const std::byte *in, std::byte *old, int op,
                 int basic, const device::dtype &b, control *ctl);

// Whether the element of `elem` bytes at `at` is one the CPU's atomic
// instructions update: 1, 2, 4 or 8 bytes at an address aligned to them.
inline bool cpu_atomic(const std::byte *at, std::size_t elem) {
  return (elem == 1 || elem == 2 || elem == 4 || elem == 8) &&
         reinterpret_cast<std::uintptr_t>(at) % elem == 0;
}

// One element of `elem` bytes (1, 2, 4 or 8) at an address aligned to its
// size, by the CPU's atomic instructions, as accumulate() updates such an
// element: target = target o in (`op` a predefined op that combines the
// predefined type `basic`, MPI_REPLACE or MPI_NO_OP), its old value to
// `old` unless nullptr. element_compare_swap: MPI_Compare_and_swap's, the
// old value to `result`.
void element_apply(std::byte *at, const void *in, void *old, int op, int basic, std::size_t elem);
void element_compare_swap(std::byte *at, const void *origin, const void *compare, void *result,
                          std::size_t elem);

// A run of `n` elements of `elem` bytes (1, 2, 4 or 8) at an address
// aligned to their size, by the CPU's atomic instructions, one loop for
// the whole run: for the ops that are one instruction (MPI_SUM, MPI_BAND,
// MPI_BOR and MPI_BXOR of an integer type, MPI_REPLACE, MPI_NO_OP). Old
// values to `old` unless nullptr. false: another op, nothing done.
bool run_apply(std::byte *at, const std::byte *in, std::byte *old, std::size_t n, int op, int basic,
               std::size_t elem);

// Whether `basic` is a C integer type (two's complement: MPI_SUM is the
// CPU's atomic add whatever the signedness).
bool integer_type(int basic);

// A passive-target lock step (try_shared ... release_exclusive) on a
// control block: whether it was granted.
bool lock_apply(control &c, std::int64_t step);

using segment_list = std::vector<std::pair<std::uint64_t, std::size_t>>;

// An accumulate (or compare-and-swap, `compare` not null) over the packed
// stream laid in `segs` (target addresses, bytes): element j of `elem`
// bytes of `basic` (`b`) takes operand + j*elem, its old value goes to
// old + j*elem when `old` is not null. `local(address)` is where a target
// address lies here. An element of a type with holes spans segments: it is
// found by its first byte and applied whole.
template <typename Local>
void apply_stream(const segment_list &segs, Local local, const std::byte *operand,
                  const std::byte *compare, std::byte *old, int op, int basic,
                  const device::dtype &b, control *ctl) {
  const std::size_t elem = b.size;
  std::size_t packed = 0;
  for (const auto &[address, bytes] : segs) {
    if (static_cast<std::int64_t>(elem) != b.extent) {
      for (std::size_t m = (packed + elem - 1) / elem * elem; m < packed + bytes; m += elem) {
        const std::uint64_t start = address + (m - packed);
        apply_holed(local(start, static_cast<std::size_t>(b.extent)), start, operand + m,
                    old != nullptr ? old + m : nullptr, op, basic, b, ctl);
      }
    } else {
      std::byte *at = local(address, bytes);
      if (compare == nullptr && cpu_atomic(at, elem) &&
          run_apply(at, operand + packed, old != nullptr ? old + packed : nullptr, bytes / elem, op,
                    basic, elem)) {
        packed += bytes;
        continue;
      }
      for (std::size_t k = 0; k < bytes; k += elem) {
        if (compare != nullptr) {
          compare_swap_one(at + k, address + k, operand, compare, old + packed + k, elem, ctl);
        } else {
          apply_one(at + k, address + k, operand + packed + k,
                    old != nullptr ? old + packed + k : nullptr, op, basic, elem, b.extent, ctl);
        }
      }
    }
    packed += bytes;
  }
}

// The same over a type without holes, with no compare, at once by plain
// loads and stores (the reductions' element loop): for when nothing else
// updates the target's memory meanwhile (this rank holds an exclusive
// lock, or the memory is its own and no other process maps it).
template <typename Local>
void apply_whole(const segment_list &segs, Local local, const std::byte *operand, std::byte *old,
                 int op, int basic, const device::dtype &b) {
  std::size_t packed = 0;
  for (const auto &[address, bytes] : segs) {
    std::byte *there = local(address, bytes);
    if (old != nullptr) std::memcpy(old + packed, there, bytes);
    if (op == MPI_REPLACE) {
      std::memcpy(there, operand + packed, bytes);
    } else if (op != MPI_NO_OP) {
      device::op_apply(op, operand + packed, there, bytes / b.size, basic, b.extent);
    }
    packed += bytes;
  }
}

}  // namespace iris::api::rma
