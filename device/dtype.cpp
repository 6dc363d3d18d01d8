#include "device/dtype.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>

#include "device/datatype.hpp"
#include "device/runtime.hpp"
#include "include/mpi.h"

namespace iris::device {
namespace {

// Appends `b` to `out`, merging it with the previous block when adjacent.
void append(std::vector<dtype_block> &out, dtype_block b) {
  if (b.length == 0) return;
  if (!out.empty() &&
      out.back().offset + static_cast<std::int64_t>(out.back().length) == b.offset) {
    out.back().length += b.length;
    return;
  }
  out.push_back(b);
}

// Predefined types, made on first use from the handle table.
dtype predefined(int handle) {
  dtype t;
  const auto extent = static_cast<std::int64_t>(datatype_extent(handle));
  const auto size = static_cast<std::size_t>(datatype_size(handle));
  // One block of the whole extent: the pair types (MINLOC/MAXLOC) travel
  // with their padding, so their messages look the same however they are
  // described.
  t.blocks.push_back({0, static_cast<std::size_t>(extent)});
  t.packed_size = static_cast<std::size_t>(extent);
  t.size = size;
  t.extent = extent;
  t.true_extent = extent;
  t.alignment = std::min<std::size_t>(static_cast<std::size_t>(extent), 16);
  t.basic_size = size;
  t.basic_count = 1;
  t.committed = true;
  t.predefined = true;
  t.name = datatype_name(handle);
  return t;
}

std::vector<std::unique_ptr<dtype>> &derived() {
  static std::vector<std::unique_ptr<dtype>> table;
  return table;
}

constexpr int derived_kind = 0x30000000;

}  // namespace

namespace detail {
builtin_slot builtin_types[256];
}  // namespace detail

namespace {

// Fills detail::builtin_types from the handle table, at load time.
bool make_builtins() {
  static dtype storage[256];
  for (unsigned index = 1; index < 256; ++index) {
    const int handle = datatype_handle(index);
    if (handle == 0) continue;
    storage[index] = predefined(handle);
    detail::builtin_types[index] = {handle, &storage[index]};
  }
  return true;
}

[[maybe_unused]] const bool builtins_made = make_builtins();

}  // namespace

dtype *dtype_lookup_derived(int handle) {
  const auto bits = static_cast<std::uint32_t>(handle);
  if ((bits & 0xfc000000U) != static_cast<std::uint32_t>(derived_kind)) return nullptr;
  const std::size_t index = bits & 0x03ffffffU;
  auto &table = derived();
  return index < table.size() ? table[index].get() : nullptr;
}

int dtype_register(dtype t) {
  auto &table = derived();
  if (table.empty()) table.emplace_back();  // index 0 is MPI_DATATYPE_NULL
  std::size_t slot = 1;
  while (slot < table.size() && table[slot]) ++slot;
  if (slot == table.size()) table.emplace_back();
  table[slot] = std::make_unique<dtype>(std::move(t));
  return derived_kind | static_cast<int>(slot);
}

void dtype_release(int handle) {
  // Operations still pending may use it (MPI allows freeing a type then):
  // the object lives on; only the handle is freed.
  static std::vector<std::unique_ptr<dtype>> retired;
  retired.push_back(std::move(derived()[static_cast<std::uint32_t>(handle) & 0x03ffffffU]));
}

dtype dtype_from_blocks(const std::vector<std::int64_t> &byte_displs,
                        const std::vector<int> &blocklens, const std::vector<const dtype *> &olds,
                        bool is_struct) {
  dtype t;
  std::int64_t lb = std::numeric_limits<std::int64_t>::max();
  std::int64_t ub = std::numeric_limits<std::int64_t>::min();
  std::int64_t true_lb = lb;
  std::int64_t true_ub = ub;
  std::size_t basic = 0;
  bool mixed = false;
  for (std::size_t b = 0; b < byte_displs.size(); ++b) {
    const dtype &old = *olds[b];
    if (blocklens[b] == 0) continue;
    for (int e = 0; e < blocklens[b]; ++e) {
      const std::int64_t at = byte_displs[b] + e * old.extent;
      for (const dtype_block &blk : old.blocks) append(t.blocks, {at + blk.offset, blk.length});
    }
    const std::int64_t first = byte_displs[b] + old.lb;
    const std::int64_t last = byte_displs[b] + old.lb + blocklens[b] * old.extent;
    lb = std::min({lb, first, last - old.extent});
    ub = std::max({ub, last, first + old.extent});
    true_lb = std::min(true_lb, byte_displs[b] + old.true_lb);
    true_ub = std::max(
        true_ub, byte_displs[b] + (blocklens[b] - 1) * old.extent + old.true_lb + old.true_extent);
    t.size += static_cast<std::size_t>(blocklens[b]) * old.size;
    t.packed_size += static_cast<std::size_t>(blocklens[b]) * old.packed_size;
    t.basic_count += static_cast<std::size_t>(blocklens[b]) * old.basic_count;
    t.alignment = std::max(t.alignment, old.alignment);
    if (old.basic_size == 0 || (basic != 0 && basic != old.basic_size)) mixed = true;
    basic = old.basic_size;
  }
  if (lb > ub) lb = ub = true_lb = true_ub = 0;  // no data at all
  // A struct's extent is padded to its strictest alignment, as C pads.
  std::int64_t extent = ub - lb;
  if (is_struct && t.alignment > 1) {
    const auto a = static_cast<std::int64_t>(t.alignment);
    extent = (extent + a - 1) / a * a;
  }
  t.lb = lb;
  t.extent = extent;
  t.true_lb = true_lb;
  t.true_extent = true_ub - true_lb;
  t.basic_size = mixed ? 0 : basic;
  return t;
}

dtype dtype_resized(const dtype &old, std::int64_t lb, std::int64_t extent) {
  dtype t = old;
  t.lb = lb;
  t.extent = extent;
  t.committed = false;
  t.predefined = false;
  t.name.clear();
  return t;
}

namespace {

// Calls f(element_base_offset + block.offset, byte range within the block)
// for every part of [first, first + n) of the packed stream.
template <typename F>
void walk(int count, const dtype &t, std::size_t first, std::size_t n, F f) {
  if (t.packed_size == 0 || n == 0) return;
  std::size_t element = first / t.packed_size;
  std::size_t skip = first % t.packed_size;
  std::size_t done = 0;
  for (; done < n && element < static_cast<std::size_t>(count); ++element) {
    const std::int64_t base = static_cast<std::int64_t>(element) * t.extent;
    for (const dtype_block &b : t.blocks) {
      if (skip >= b.length) {
        skip -= b.length;
        continue;
      }
      const std::size_t take = std::min(b.length - skip, n - done);
      f(base + b.offset + static_cast<std::int64_t>(skip), take, done);
      done += take;
      skip = 0;
      if (done == n) return;
    }
  }
}

}  // namespace

void dtype_pack_range(const void *buffer, int count, const dtype &t, std::size_t first,
                      std::size_t n, void *out) {
  const auto base = reinterpret_cast<std::uintptr_t>(buffer);
  auto *to = static_cast<std::byte *>(out);
  walk(count, t, first, n, [&](std::int64_t at, std::size_t len, std::size_t done) {
    std::memcpy(to + done, reinterpret_cast<const void *>(base + static_cast<std::uintptr_t>(at)),
                len);
  });
}

void dtype_unpack_range(const void *in, std::size_t first, std::size_t n, void *buffer, int count,
                        const dtype &t) {
  const auto base = reinterpret_cast<std::uintptr_t>(buffer);
  const auto *from = static_cast<const std::byte *>(in);
  walk(count, t, first, n, [&](std::int64_t at, std::size_t len, std::size_t done) {
    std::memcpy(reinterpret_cast<void *>(base + static_cast<std::uintptr_t>(at)), from + done, len);
  });
}

}  // namespace iris::device
