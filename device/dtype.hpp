// Derived datatypes: each is flattened, once, into the byte blocks one
// element covers, so packing and unpacking walk a plain list. Predefined
// types are handled here too (as one block), so callers see one interface.
//
// Lifecycle: a constructor (contiguous, vector, indexed, struct, resized,
// dup) makes a type from others; MPI_Type_commit makes it usable for
// communication; MPI_Type_free releases the handle (types built from it keep
// their own flattened copy).
// device/typed.hpp builds on this: it turns (buffer, count, type) into the
// bytes a message carries and back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace iris::device {

struct dtype_block {
  std::int64_t offset;  // from the element's start (may be negative)
  std::size_t length;   // bytes
};

struct dtype {
  std::vector<dtype_block> blocks;  // one element's data, in typemap order, adjacent ones merged
  std::size_t size = 0;             // bytes of data in one element (MPI_Type_size)
  std::size_t packed_size = 0;      // bytes one element takes in a message: the data,
                                    // and the padding of the pair types (MINLOC/MAXLOC),
                                    // which travel whole as they always have
  std::int64_t lb = 0;              // lower bound
  std::int64_t extent = 0;          // ub - lb
  std::int64_t true_lb = 0;         // of the data itself
  std::int64_t true_extent = 0;
  std::size_t alignment = 1;    // largest basic alignment inside
  std::size_t basic_size = 0;   // size of its basic elements if all equal, else 0
  std::size_t basic_count = 0;  // basic elements in one element
  bool committed = false;
  bool predefined = false;
  std::string name;
};

namespace detail {
// The predefined types by the low byte of their handle, made at load time:
// every typed call looks one up, so the lookup is one load and a compare.
struct builtin_slot {
  int handle;
  dtype *type;
};
extern builtin_slot builtin_types[256];
}  // namespace detail

// A derived type by handle, or nullptr.
dtype *dtype_lookup_derived(int handle);

// The type named by `handle` (predefined or derived), or nullptr.
inline dtype *dtype_lookup_mutable(int handle) {
  const detail::builtin_slot &s = detail::builtin_types[static_cast<unsigned>(handle) & 0xffU];
  if (s.handle == handle && s.type != nullptr) return s.type;
  return dtype_lookup_derived(handle);
}
inline const dtype *dtype_lookup(int handle) {
  return dtype_lookup_mutable(handle);
}

// Registers a new derived type (not committed); returns its handle.
int dtype_register(dtype t);
void dtype_release(int handle);

// Builders: the typemap of `count` copies of `old` at the given byte
// displacements, `blocklen` elements each (struct: one type per block).
dtype dtype_from_blocks(const std::vector<std::int64_t> &byte_displs,
                        const std::vector<int> &blocklens, const std::vector<const dtype *> &olds,
                        bool is_struct);
dtype dtype_resized(const dtype &old, std::int64_t lb, std::int64_t extent);

// True when `count` elements are one contiguous run of count * size bytes.
inline bool dtype_contiguous(const dtype &t, int count) {
  if (count == 0 || t.packed_size == 0) return true;
  return t.blocks.size() == 1 && t.blocks[0].offset == 0 &&
         (count == 1 || static_cast<std::int64_t>(t.packed_size) == t.extent);
}

// Packs the bytes [first, first + n) of the packed form of `count` elements
// at `buffer` into `out`; unpack does the reverse. Ranges may start and end
// anywhere, so a message can move in pieces.
void dtype_pack_range(const void *buffer, int count, const dtype &t, std::size_t first,
                      std::size_t n, void *out);
void dtype_unpack_range(const void *in, std::size_t first, std::size_t n, void *buffer, int count,
                        const dtype &t);

}  // namespace iris::device
