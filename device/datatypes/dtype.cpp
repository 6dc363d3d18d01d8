#include "device/datatypes/dtype.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "device/base/handle.hpp"
#include "device/base/stream_copy.hpp"
#include "device/datatypes/datatype.hpp"
#include "include/mpi.h"

namespace iris::device {
namespace {

using node = dtype_node;
using kind = dtype_node::kind;

dtype_tree make_run(std::size_t bytes, std::size_t unit, std::size_t elements,
                    dtype_tree counting = nullptr) {
  auto n = std::make_shared<node>();
  n->k = kind::run;
  n->packed = bytes;
  n->unit = unit;
  n->elements = elements;
  n->child = std::move(counting);  // unit 0 (mixed): the parts, for counting only
  return n;
}

dtype_tree make_vector(std::size_t count, std::int64_t stride, dtype_tree child) {
  auto n = std::make_shared<node>();
  n->k = kind::vector;
  n->count = count;
  n->stride = stride;
  n->packed = count * child->packed;
  n->elements = count * child->elements;
  n->child = std::move(child);
  return n;
}

// `count` instances of run `r` back to back: one longer run.
dtype_tree run_repeated(const dtype_tree &r, std::size_t count) {
  if (count == 1) return r;
  if (r->unit != 0) {
    return make_run(count * r->packed, r->unit, count * r->elements);
  }
  return make_run(count * r->packed, 0, count * r->elements,
                  make_vector(count, static_cast<std::int64_t>(r->packed), r));
}

bool same_shape(const node &a, const node &b) {
  if (&a == &b) return true;
  return a.k == kind::run && b.k == kind::run && a.packed == b.packed && a.unit == b.unit &&
         a.unit != 0;
}

// Appends `child` at `displ`, merging it into the previous run when both are
// runs and adjacent.
void list_append(std::vector<node::entry> &out, std::int64_t displ, dtype_tree child) {
  if (child->packed == 0) return;
  if (!out.empty()) {
    node::entry &last = out.back();
    const node &a = *last.child;
    if (a.k == kind::run && child->k == kind::run &&
        last.displ + static_cast<std::int64_t>(a.packed) == displ) {
      const std::size_t bytes = a.packed + child->packed;
      const std::size_t elements = a.elements + child->elements;
      if (a.unit != 0 && a.unit == child->unit && a.packed % a.unit == 0) {
        last.child = make_run(bytes, a.unit, elements);
      } else {
        // Different basic elements: one run to copy, and the two parts
        // (relative to the merged run) to count elements by.
        auto parts = std::make_shared<node>();
        parts->k = kind::list;
        parts->entries.push_back({0, last.child, 0});
        parts->entries.push_back({static_cast<std::int64_t>(a.packed), child, a.packed});
        parts->packed = bytes;
        parts->elements = elements;
        last.child = make_run(bytes, 0, elements, std::move(parts));
      }
      return;
    }
  }
  out.push_back({displ, std::move(child), 0});
}

// The tree of a list of entries: a single entry at 0 is its child; equal
// children at a constant stride are a vector.
dtype_tree make_list(std::vector<node::entry> entries) {
  if (entries.empty()) return make_run(0, 1, 0);
  if (entries.size() == 1 && entries[0].displ == 0) return entries[0].child;
  auto n = std::make_shared<node>();
  n->k = kind::list;
  bool regular = entries.size() >= 3;
  const std::int64_t step = entries.size() >= 2 ? entries[1].displ - entries[0].displ : 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i].before = n->packed;
    n->packed += entries[i].child->packed;
    n->elements += entries[i].child->elements;
    if (i > 0 && (entries[i].displ - entries[i - 1].displ != step ||
                  !same_shape(*entries[i].child, *entries[0].child))) {
      regular = false;
    }
  }
  if (regular) {
    dtype_tree v = make_vector(entries.size(), step, entries[0].child);
    if (entries[0].displ == 0) return v;
    n->entries.assign(1, {entries[0].displ, std::move(v), 0});
    return n;
  }
  n->entries = std::move(entries);
  return n;
}

// The tree of `blocklen` consecutive elements of `old`.
dtype_tree block_of(const dtype &old, std::size_t blocklen) {
  if (blocklen == 1) return old.tree;
  if (old.tree->k == kind::run && old.extent == static_cast<std::int64_t>(old.packed_size)) {
    return run_repeated(old.tree, blocklen);
  }
  return make_vector(blocklen, old.extent, old.tree);
}

// The alignment and pair layout of each predefined type that is not a
// single basic element of its own size. A pair is a struct of its value
// (`first` bytes at 0) and an int at `second` - 4.
struct builtin_shape {
  int handle;
  std::size_t alignment;
  std::size_t first;   // pairs: where the first component ends
  std::size_t second;  // pairs: where the second component (an int) ends
};

constexpr builtin_shape shapes[] = {
    {MPI_C_FLOAT_COMPLEX, 4, 0, 0},
    {MPI_C_DOUBLE_COMPLEX, 8, 0, 0},
    {MPI_C_LONG_DOUBLE_COMPLEX, 16, 0, 0},
    {MPI_FLOAT_INT, 4, 4, 8},
    {MPI_DOUBLE_INT, 8, 8, 12},
    {MPI_LONG_INT, 8, 8, 12},
    {MPI_2INT, 4, 4, 8},
    {MPI_SHORT_INT, 4, 2, 8},
    {MPI_LONG_DOUBLE_INT, 16, 16, 20},
};

// Predefined types, made on first use from the handle table.
dtype predefined(int handle) {
  if (handle == MPI_LB || handle == MPI_UB) {
    // No data and no extent; bounds::add takes them as markers only.
    dtype t;
    t.tree = make_run(0, 1, 0);
    t.committed = true;
    t.predefined = true;
    t.lb_marked = handle == MPI_LB;
    t.ub_marked = handle == MPI_UB;
    t.name = datatype_name(handle);
    return t;
  }
  const auto extent = datatype_extent(handle);
  dtype t = dtype_basic(extent, std::min<std::size_t>(extent, 16));
  for (const builtin_shape &s : shapes) {
    if (s.handle != handle) continue;
    t.alignment = s.alignment;
    if (s.second != 0) {
      // The pair types are the structs they stand for: their data travels
      // without the padding (signature {value, int}, as a struct of the two
      // sends and receives it), two basic elements.
      std::vector<node::entry> parts;
      list_append(parts, 0, make_run(s.first, s.first, 1));
      list_append(parts, static_cast<std::int64_t>(s.second - 4), make_run(4, 4, 1));
      t.tree = make_list(std::move(parts));
      t.packed_size = t.tree->packed;
      t.true_extent = static_cast<std::int64_t>(s.second);
      t.basic_count = 2;
    }
  }
  t.size = static_cast<std::size_t>(datatype_size(handle));
  t.basic_size = t.basic_count == 2 ? (t.size == 8 ? 4 : 0) : t.size;
  t.predefined = true;
  t.name = datatype_name(handle);
  return t;
}

std::vector<std::unique_ptr<dtype>> &derived() {
  static std::vector<std::unique_ptr<dtype>> table;
  return table;
}

// Derived types are datatype handles with bit 26 clear (the predefined ones
// set it: IRIS_BUILTIN_TYPE), so their slots lie below 2^26.
constexpr std::uint32_t builtin_bit = std::uint32_t{1} << 26;
constexpr std::uint32_t derived_slot_mask = builtin_bit - 1;

// Bounds of `n` copies of something spanning [lo, hi) from its origin, the
// copies `step` bytes apart (step may be negative).
void repeat_bounds(std::int64_t lo, std::int64_t hi, std::size_t n, std::int64_t step,
                   std::int64_t &out_lo, std::int64_t &out_hi) {
  const std::int64_t last = static_cast<std::int64_t>(n - 1) * step;
  out_lo = lo + std::min<std::int64_t>(0, last);
  out_hi = hi + std::max<std::int64_t>(0, last);
}

// Accumulates the bounds of the blocks of a new type (MPI-4.1 5.1.7-5.1.8):
// the markers of resized types are kept; true bounds are where the data is.
struct bounds {
  std::int64_t lb_all = std::numeric_limits<std::int64_t>::max();
  std::int64_t ub_all = std::numeric_limits<std::int64_t>::min();
  std::int64_t lb_marked = std::numeric_limits<std::int64_t>::max();
  std::int64_t ub_marked = std::numeric_limits<std::int64_t>::min();
  std::int64_t true_lb = std::numeric_limits<std::int64_t>::max();
  std::int64_t true_ub = std::numeric_limits<std::int64_t>::min();
  bool any = false;
  bool any_bounds = false;  // lb_all and ub_all hold something
  bool any_lb_marked = false;
  bool any_ub_marked = false;

  // `n` elements of `old` from `displ`, each `step` bytes after the last.
  void add(const dtype &old, std::int64_t displ, std::size_t n, std::int64_t step) {
    if (n == 0) return;
    any = true;
    if (old.predefined && (old.lb_marked || old.ub_marked)) {
      // MPI_LB or MPI_UB (MPI-1): a marker at each copy, and nothing else.
      std::int64_t lo = 0;
      std::int64_t hi = 0;
      repeat_bounds(displ, displ, n, step, lo, hi);
      if (old.lb_marked) {
        any_lb_marked = true;
        lb_marked = std::min(lb_marked, lo);
      } else {
        any_ub_marked = true;
        ub_marked = std::max(ub_marked, hi);
      }
      return;
    }
    any_bounds = true;
    // A negative extent puts the upper bound below the lower one, element
    // by element: the lowest lb and the highest ub are at opposite ends.
    std::int64_t lb_lo = 0;
    std::int64_t lb_hi = 0;
    repeat_bounds(displ + old.lb, displ + old.lb, n, step, lb_lo, lb_hi);
    std::int64_t ub_lo = 0;
    std::int64_t ub_hi = 0;
    repeat_bounds(displ + old.lb + old.extent, displ + old.lb + old.extent, n, step, ub_lo, ub_hi);
    lb_all = std::min(lb_all, lb_lo);
    ub_all = std::max(ub_all, ub_hi);
    if (old.lb_marked) {
      any_lb_marked = true;
      lb_marked = std::min(lb_marked, lb_lo);
    }
    if (old.ub_marked) {
      any_ub_marked = true;
      ub_marked = std::max(ub_marked, ub_hi);
    }
    if (old.size == 0) return;
    std::int64_t t_lo = 0;
    std::int64_t t_hi = 0;
    repeat_bounds(displ + old.true_lb, displ + old.true_lb + old.true_extent, n, step, t_lo, t_hi);
    true_lb = std::min(true_lb, t_lo);
    true_ub = std::max(true_ub, t_hi);
  }

  void finish(dtype &t, bool pad) const {
    if (!any) return;  // no data at all: everything stays 0
    // With markers only (MPI-1's MPI_LB and MPI_UB), the other bound is 0.
    t.lb = any_lb_marked ? lb_marked : any_bounds ? lb_all : 0;
    const std::int64_t ub = any_ub_marked ? ub_marked : any_bounds ? ub_all : 0;
    std::int64_t extent = ub - t.lb;
    // A struct's extent is padded to its strictest alignment, as C pads,
    // unless a resize set its upper bound.
    if (pad && !any_ub_marked && t.alignment > 1 && extent > 0) {
      const auto a = static_cast<std::int64_t>(t.alignment);
      extent = (extent + a - 1) / a * a;
    }
    t.extent = extent;
    t.lb_marked = any_lb_marked;
    t.ub_marked = any_ub_marked;
    if (true_lb <= true_ub) {
      t.true_lb = true_lb;
      t.true_extent = true_ub - true_lb;
    }
  }
};

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
    const dtype &t = storage[index];
    const bool dense = t.packed_size != 0 && t.true_lb == 0 && dtype_contiguous(t, 2);
    detail::builtin_types[index] = {handle, dense ? static_cast<std::uint32_t>(t.packed_size) : 0U,
                                    &storage[index]};
  }
  return true;
}

[[maybe_unused]] const bool builtins_made = make_builtins();

}  // namespace

dtype *dtype_lookup_derived(int handle) {
  const auto bits = static_cast<std::uint32_t>(handle);
  if (!handle_is(handle, handle_kind::datatype) || (bits & builtin_bit) != 0) return nullptr;
  const std::size_t index = bits & derived_slot_mask;
  auto &table = derived();
  return index < table.size() ? table[index].get() : nullptr;
}

// Slots of freed handles, reused last freed first: registering stays O(1)
// however many types a program made and freed.
std::vector<std::size_t> &free_slots() {
  static std::vector<std::size_t> slots;
  return slots;
}

int dtype_register(dtype t) {
  auto &table = derived();
  if (table.empty()) table.emplace_back();  // index 0 is MPI_DATATYPE_NULL
  std::size_t slot = table.size();
  if (!free_slots().empty()) {
    slot = free_slots().back();
    free_slots().pop_back();
  } else {
    table.emplace_back();
  }
  table[slot] = std::make_unique<dtype>(std::move(t));
  return handle_make(handle_kind::datatype, slot);
}

void dtype_release(int handle, bool idle) {
  static std::vector<std::unique_ptr<dtype>> retired;
  const std::size_t slot = static_cast<std::uint32_t>(handle) & derived_slot_mask;
  if (idle) {
    retired.clear();
    derived()[slot].reset();
  } else {
    retired.push_back(std::move(derived()[slot]));
  }
  free_slots().push_back(slot);
}

dtype dtype_basic(std::size_t bytes, std::size_t alignment) {
  dtype t;
  t.tree = make_run(bytes, bytes, 1);
  t.size = t.packed_size = bytes;
  t.extent = t.true_extent = static_cast<std::int64_t>(bytes);
  t.alignment = alignment;
  t.basic_size = bytes;
  t.basic_count = 1;
  t.committed = true;
  return t;
}

dtype dtype_from_blocks(const std::vector<std::int64_t> &byte_displs,
                        const std::vector<int> &blocklens, const std::vector<const dtype *> &olds,
                        bool is_struct) {
  return dtype_from_wide_blocks(
      byte_displs, std::vector<std::int64_t>(blocklens.begin(), blocklens.end()), olds, is_struct);
}

dtype dtype_from_wide_blocks(const std::vector<std::int64_t> &byte_displs,
                             const std::vector<std::int64_t> &blocklens,
                             const std::vector<const dtype *> &olds, bool is_struct) {
  dtype t;
  bounds b;
  std::vector<node::entry> entries;
  std::size_t basic = 0;
  bool mixed = false;
  for (std::size_t i = 0; i < byte_displs.size(); ++i) {
    const dtype &old = *olds[i];
    if (blocklens[i] <= 0) continue;
    const auto n = static_cast<std::size_t>(blocklens[i]);
    b.add(old, byte_displs[i], n, old.extent);
    if (old.predefined && old.size == 0) continue;  // MPI_LB, MPI_UB: bounds only
    list_append(entries, byte_displs[i], block_of(old, n));
    t.size += n * old.size;
    t.packed_size += n * old.packed_size;
    t.basic_count += n * old.basic_count;
    t.alignment = std::max(t.alignment, old.alignment);
    if (old.basic_size == 0 || (basic != 0 && basic != old.basic_size)) mixed = true;
    basic = old.basic_size;
  }
  b.finish(t, is_struct);
  t.tree = make_list(std::move(entries));
  t.basic_size = mixed ? 0 : basic;
  return t;
}

dtype dtype_vector(std::size_t count, std::size_t blocklen, std::int64_t stride, const dtype &old) {
  dtype t;
  if (count == 0 || blocklen == 0) {
    t.tree = make_run(0, 1, 0);
    t.alignment = old.alignment;
    return t;
  }
  // Bounds of one block, then of `count` blocks `stride` apart.
  const dtype block =
      dtype_from_wide_blocks({0}, {static_cast<std::int64_t>(blocklen)}, {&old}, false);
  bounds b;
  b.add(block, 0, count, stride);
  t.size = count * block.size;
  t.packed_size = count * block.packed_size;
  t.basic_count = count * block.basic_count;
  t.alignment = block.alignment;
  t.basic_size = block.basic_size;
  b.finish(t, false);
  const dtype_tree &one = block.tree;
  if (count == 1) {
    t.tree = one;
  } else if (one->k == kind::run && stride == static_cast<std::int64_t>(one->packed)) {
    t.tree = run_repeated(one, count);
  } else {
    t.tree = make_vector(count, stride, one);
  }
  return t;
}

dtype dtype_resized(const dtype &old, std::int64_t lb, std::int64_t extent) {
  dtype t = old;
  t.lb = lb;
  t.extent = extent;
  t.lb_marked = t.ub_marked = true;
  t.committed = false;
  t.predefined = false;
  t.name.clear();
  return t;
}

namespace {

using detail::address;
using detail::offset;

// Which way a move copies: into the packed buffer, or out of it into the
// layout, through the cache or (`unpack_streaming`, for a message far larger
// than the cache) around it for blocks of a few lines or more.
enum class direction { pack, unpack, unpack_streaming };

template <direction Mode>
inline void copy(address memory, std::byte *buf, std::size_t n) {
  if constexpr (Mode == direction::pack) {
    std::memcpy(buf, reinterpret_cast<const void *>(memory), n);
  } else if constexpr (Mode == direction::unpack_streaming) {
    if (n >= streaming_block) {
      copy_streaming_unfenced(reinterpret_cast<void *>(memory), buf, n);
    } else {
      std::memcpy(reinterpret_cast<void *>(memory), buf, n);
    }
  } else {
    std::memcpy(reinterpret_cast<void *>(memory), buf, n);
  }
}

template <direction Mode>
void move_node(const node &n, address origin, std::size_t skip, std::size_t len, std::byte *buf);

// `full` whole runs of `bytes` bytes (a constant when the caller knows it),
// `stride` apart.
template <direction Mode, std::size_t Bytes>
inline address move_runs(address at, std::int64_t stride, std::size_t full, std::size_t bytes,
                         std::byte *&buf) {
  for (std::size_t i = 0; i < full; ++i) {
    copy<Mode>(at, buf, Bytes != 0 ? Bytes : bytes);
    buf += Bytes != 0 ? Bytes : bytes;
    at = offset(at, stride);
  }
  return at;
}

// The bytes [skip, skip + len) of `count` instances of `child`, `stride`
// apart from `origin` (the caller keeps within count * child.packed).
template <direction Mode>
void move_vector(const node &child, std::int64_t stride, address origin, std::size_t skip,
                 std::size_t len, std::byte *buf) {
  const std::size_t cp = child.packed;
  if (cp == 0 || len == 0) return;
  std::size_t i = skip / cp;
  std::size_t s = skip % cp;
  address at = offset(origin, static_cast<std::int64_t>(i) * stride);
  if (child.k == kind::run) {
    if (stride == static_cast<std::int64_t>(cp)) {
      // Runs that touch (a count of a basic type): one copy, not one a run.
      copy<Mode>(at + s, buf, len);
      return;
    }
    // The fast path: equal runs at a constant stride.
    if (s != 0) {
      const std::size_t take = std::min(cp - s, len);
      copy<Mode>(at + s, buf, take);
      buf += take;
      len -= take;
      at = offset(at, stride);
    }
    const std::size_t full = len / cp;
    switch (cp) {
      case 4:
        at = move_runs<Mode, 4>(at, stride, full, cp, buf);
        break;
      case 8:
        at = move_runs<Mode, 8>(at, stride, full, cp, buf);
        break;
      case 16:
        at = move_runs<Mode, 16>(at, stride, full, cp, buf);
        break;
      default:
        at = move_runs<Mode, 0>(at, stride, full, cp, buf);
        break;
    }
    if (len % cp != 0) copy<Mode>(at, buf, len % cp);
    return;
  }
  while (len != 0) {
    const std::size_t take = std::min(cp - s, len);
    move_node<Mode>(child, at, s, take, buf);
    buf += take;
    len -= take;
    s = 0;
    at = offset(at, stride);
  }
}

template <direction Mode>
void move_node(const node &n, address origin, std::size_t skip, std::size_t len, std::byte *buf) {
  switch (n.k) {
    case kind::run:
      copy<Mode>(origin + skip, buf, len);
      return;
    case kind::vector:
      move_vector<Mode>(*n.child, n.stride, origin, skip, len, buf);
      return;
    case kind::list: {
      // The entry holding byte `skip`: the last one starting at or before it
      // (the first, when a whole instance moves: no search).
      auto e = n.entries.begin();
      if (skip != 0) {
        e = std::upper_bound(n.entries.begin(), n.entries.end(), skip,
                             [](std::size_t v, const node::entry &x) { return v < x.before; });
        --e;
      }
      std::size_t s = skip - e->before;
      for (; len != 0; ++e) {
        const node &c = *e->child;
        const std::size_t take = std::min(c.packed - s, len);
        if (c.k == kind::run) {
          copy<Mode>(offset(origin, e->displ) + s, buf, take);
        } else if (take != 0) {
          move_node<Mode>(c, offset(origin, e->displ), s, take, buf);
        }
        buf += take;
        len -= take;
        s = 0;
      }
      return;
    }
  }
}

template <direction Mode>
void move_range(const void *buffer, int count, const dtype &t, std::size_t first, std::size_t n,
                std::byte *buf) {
  const std::size_t total = static_cast<std::size_t>(count) * t.packed_size;
  if (first >= total) return;
  n = std::min(n, total - first);
  move_vector<Mode>(*t.tree, t.extent, reinterpret_cast<address>(buffer), first, n, buf);
}

// Basic elements in the first `bytes` of one instance of `n`; `rest` gets
// the bytes of a basic element cut short.
std::size_t node_elements(const node &n, std::size_t bytes, std::size_t &rest) {
  switch (n.k) {
    case kind::run: {
      if (n.unit == 0) return n.child ? node_elements(*n.child, bytes, rest) : 0;
      rest += bytes % n.unit;
      return bytes / n.unit;
    }
    case kind::vector: {
      if (n.child->packed == 0) return 0;
      const std::size_t whole = bytes / n.child->packed;
      return whole * n.child->elements + node_elements(*n.child, bytes % n.child->packed, rest);
    }
    case kind::list: {
      std::size_t count = 0;
      for (const node::entry &e : n.entries) {
        if (bytes == 0) break;
        const std::size_t take = std::min(bytes, e.child->packed);
        count += node_elements(*e.child, take, rest);
        bytes -= take;
      }
      return count;
    }
  }
  return 0;
}

std::size_t node_bytes(const node &n, std::size_t elements) {
  switch (n.k) {
    case kind::run: {
      if (n.unit == 0) return n.child ? node_bytes(*n.child, elements) : 0;
      return elements * n.unit;
    }
    case kind::vector: {
      if (n.child->elements == 0) return 0;
      return elements / n.child->elements * n.child->packed +
             node_bytes(*n.child, elements % n.child->elements);
    }
    case kind::list: {
      std::size_t bytes = 0;
      for (const node::entry &e : n.entries) {
        if (elements == 0) break;
        const std::size_t take = std::min(elements, e.child->elements);
        bytes += take == e.child->elements ? e.child->packed : node_bytes(*e.child, take);
        elements -= take;
      }
      return bytes;
    }
  }
  return 0;
}

}  // namespace

void dtype_pack_range(const void *buffer, int count, const dtype &t, std::size_t first,
                      std::size_t n, void *out) {
  move_range<direction::pack>(buffer, count, t, first, n, static_cast<std::byte *>(out));
}

void dtype_unpack_range(const void *in, std::size_t first, std::size_t n, void *buffer, int count,
                        const dtype &t, bool streaming) {
  auto *packed = const_cast<std::byte *>(static_cast<const std::byte *>(in));
  if (streaming) {
    move_range<direction::unpack_streaming>(buffer, count, t, first, n, packed);
    streaming_fence();  // once for the range's runs
  } else {
    move_range<direction::unpack>(buffer, count, t, first, n, packed);
  }
}

std::size_t dtype_cursor::pack(void *out, std::size_t n) {
  n = std::min(n, total() - done_);
  dtype_pack_range(buffer_, count_, *type_, done_, n, out);
  done_ += n;
  return n;
}

std::size_t dtype_cursor::unpack(const void *in, std::size_t n) {
  n = std::min(n, total() - done_);
  dtype_unpack_range(in, done_, n, const_cast<void *>(buffer_), count_, *type_);
  done_ += n;
  return n;
}

std::int64_t dtype_elements(const dtype &t, std::size_t bytes) {
  if (t.packed_size == 0) return 0;
  std::size_t rest = 0;
  const std::size_t whole = bytes / t.packed_size;
  const std::size_t count =
      whole * t.tree->elements + node_elements(*t.tree, bytes % t.packed_size, rest);
  return rest != 0 ? -1 : static_cast<std::int64_t>(count);
}

std::size_t dtype_bytes_of_elements(const dtype &t, std::size_t elements) {
  if (t.tree->elements == 0) return 0;
  return elements / t.tree->elements * t.packed_size +
         node_bytes(*t.tree, elements % t.tree->elements);
}

}  // namespace iris::device
