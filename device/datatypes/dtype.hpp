// Datatypes, compiled. Every type (predefined or derived) is a small tree of
// loops over contiguous runs (dtype_node): a run of bytes, a vector (count
// instances of a child, `stride` bytes apart) or a list (children at their
// own displacements, for indexed and struct types). Constructors build the
// tree from their old types' trees in time and memory proportional to
// their arguments (never to the data: a vector of a billion ints is two
// nodes), merging contiguous runs as they go; the bounds, sizes and element
// counts are computed once, there. Pack and unpack walk the tree with memcpy
// of whole runs and a specialized loop for a vector of equal runs, and can
// start and stop at any byte of the packed stream (dtype_cursor), so a
// message moves in pieces with staging bounded by the piece.
//
// Lifecycle: a constructor (contiguous, vector, indexed, struct, resized,
// dup) makes a type from others; MPI_Type_commit makes it usable for
// communication; MPI_Type_free releases the handle (types built from it
// share its tree, which lives as long as any of them).
// device/typed.hpp builds on this: it turns (buffer, count, type) into the
// bytes a message carries and back.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace iris::device {

struct dtype_node;
using dtype_tree = std::shared_ptr<const dtype_node>;

// One instance of a node lies at an origin address; offsets are from there.
struct dtype_node {
  enum class kind : std::uint8_t {
    run,     // `packed` bytes at offset 0
    vector,  // `count` instances of `child`, instance i at i * stride
    list,    // entries[i].child at entries[i].displ, in order
  };
  struct entry {
    std::int64_t displ = 0;
    dtype_tree child;
    std::size_t before = 0;  // packed bytes of the entries ahead of this one
  };
  kind k = kind::run;
  std::size_t packed = 0;    // bytes one instance takes in the packed stream
  std::size_t elements = 0;  // basic elements in one instance
  // run: the size of the basic element it repeats (0: mixed elements,
  // counted through `child`).
  std::size_t unit = 0;
  // vector
  std::size_t count = 0;
  std::int64_t stride = 0;
  dtype_tree child;
  // list
  std::vector<entry> entries;
};

struct dtype {
  dtype_tree tree;              // one element's data, compiled
  std::size_t size = 0;         // bytes of data in one element (MPI_Type_size)
  std::size_t packed_size = 0;  // bytes one element takes in a message: its data
  std::int64_t lb = 0;          // lower bound
  std::int64_t extent = 0;      // ub - lb (negative after a resize may be)
  std::int64_t true_lb = 0;     // of the data itself (MPI-4.1 5.1.8)
  std::int64_t true_extent = 0;
  std::size_t alignment = 1;    // largest basic alignment inside
  std::size_t basic_size = 0;   // size of its basic elements if all equal, else 0
  std::size_t basic_count = 0;  // basic elements in one element
  bool lb_marked = false;       // the bounds were set by a resize (MPI-4.1 5.1.7:
  bool ub_marked = false;       // such bounds are kept by the types built over it)
  bool committed = false;
  bool predefined = false;
  // A large-count temporary (device/api/bigcount.hpp): one element that is
  // `wide_count` elements of the type `wide_of`, which reductions apply their
  // op to (0: not such a type).
  int wide_of = 0;
  std::size_t wide_count = 0;
  std::string name;
};

namespace detail {
// The predefined types by the low byte of their handle, made at load time:
// every typed call looks one up, so the lookup is one load and a compare.
struct builtin_slot {
  int handle;
  // The size of one element when any count of them is one run of bytes at
  // the buffer's address (dtype_contiguous for every count); 0 otherwise.
  // The bindings' small-message path needs nothing else of the type.
  std::uint32_t dense_size;
  dtype *type;
};
extern builtin_slot builtin_types[256];

// Address arithmetic in integers: MPI_BOTTOM is address 0 plus absolute
// displacements, which pointer arithmetic on nullptr may not express.
using address = std::uintptr_t;
inline address offset(address a, std::int64_t by) {
  return a + static_cast<address>(by);
}
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
// The extent of the type named by `handle`; 0 when it names none.
inline std::int64_t dtype_extent(int handle) {
  const dtype *t = dtype_lookup(handle);
  return t != nullptr ? t->extent : 0;
}

// Registers a new derived type (not committed); returns its handle.
int dtype_register(dtype t);
// Frees `handle` for reuse. Operations still pending may use the type (MPI
// allows freeing it then), so the object lives on until a release finds
// `idle`: no operation pending in the process (no live request: the caller
// knows, this layer does not). Then every object retired so far goes.
void dtype_release(int handle, bool idle);

// A basic type of `bytes` bytes (what the predefined types are made of).
dtype dtype_basic(std::size_t bytes, std::size_t alignment);
// Builders: the typemap of copies of `old` at the given byte
// displacements, `blocklen` elements each (struct: one type per block).
dtype dtype_from_blocks(const std::vector<std::int64_t> &byte_displs,
                        const std::vector<int> &blocklens, const std::vector<const dtype *> &olds,
                        bool is_struct);
// The same with block lengths past 2^31-1 (the `_c` constructors): a block
// is one run or vector node whatever its length, so this takes no more space.
dtype dtype_from_wide_blocks(const std::vector<std::int64_t> &byte_displs,
                             const std::vector<std::int64_t> &blocklens,
                             const std::vector<const dtype *> &olds, bool is_struct);
// `count` blocks of `blocklen` elements of `old`, block i at i * stride
// bytes (MPI_Type_vector and _hvector): constant space whatever the count.
dtype dtype_vector(std::size_t count, std::size_t blocklen, std::int64_t stride, const dtype &old);
dtype dtype_resized(const dtype &old, std::int64_t lb, std::int64_t extent);

// True when `count` elements are one contiguous run of count * size bytes
// starting at the buffer's address (inline: every small message asks).
inline bool dtype_contiguous(const dtype &t, int count) {
  if (count == 0 || t.packed_size == 0) return true;
  return t.tree->k == dtype_node::kind::run &&
         (count == 1 || static_cast<std::int64_t>(t.packed_size) == t.extent);
}

// Packs the bytes [first, first + n) of the packed form of `count` elements
// at `buffer` into `out`; unpack does the reverse. Ranges may start and end
// anywhere, so a message can move in pieces. A `streaming` unpack writes
// blocks of `streaming_block` bytes or more around the cache
// (device/stream_copy.hpp): for messages far larger than it.
void dtype_pack_range(const void *buffer, int count, const dtype &t, std::size_t first,
                      std::size_t n, void *out);
void dtype_unpack_range(const void *in, std::size_t first, std::size_t n, void *buffer, int count,
                        const dtype &t, bool streaming = false);
inline constexpr std::size_t streaming_block = 256;

// Where the packed stream of `count` elements of `t` at `buffer` is: each
// call moves the next `n` bytes, so a message moves in fragments of any
// size without ever being packed whole.
class dtype_cursor {
 public:
  dtype_cursor(const void *buffer, int count, const dtype &t)
      : buffer_(buffer), count_(count), type_(&t) {}
  std::size_t total() const { return static_cast<std::size_t>(count_) * type_->packed_size; }
  std::size_t done() const { return done_; }
  // The next min(n, total() - done()) bytes; returns how many moved.
  std::size_t pack(void *out, std::size_t n);
  std::size_t unpack(const void *in, std::size_t n);

 private:
  const void *buffer_;
  int count_;
  const dtype *type_;
  std::size_t done_ = 0;
};

// Where the bytes [first, first + n) of the packed form of `count` elements
// of `t` at address `origin` lie in memory: appends them to `out` as at most
// `max` iovecs, one per contiguous piece (pieces that meet are joined), in
// packed order, and stops when `out` is full. Returns how many bytes the
// iovecs cover (n, or fewer when `out` filled first); `used` gets their
// number. `origin` is only computed with, never read: it may be another
// process's address (a single-copy read of a non-contiguous type).
std::size_t dtype_segments(std::uintptr_t origin, int count, const dtype &t, std::size_t first,
                           std::size_t n, iovec *out, std::size_t max, std::size_t &used);
// Contiguous runs in one element of `t` (saturating): the packed size over
// this is the mean block a single-copy read would move per iovec.
std::size_t dtype_runs(const dtype &t);

// A type's layout as a sender describes it to a single-copy reader: `count`
// elements of a tree (runs, vectors and lists; nothing else is needed to
// find the bytes), in 64-bit words, with no pointer in it.
// dtype_describe writes it into `out` (at most `room` bytes) and returns its
// size, or 0 when it does not fit (then the message is not read that way).
// dtype_read_description rebuilds it, checking everything (a description
// that is malformed, nested too deep or too large fails: false).
std::size_t dtype_describe(const dtype &t, int count, std::byte *out, std::size_t room);
bool dtype_read_description(const std::byte *in, std::size_t bytes, dtype &t, int &count);

// Basic elements in the first `bytes` of the packed form of `t`, or -1 when
// those bytes end inside a basic element (MPI_Get_elements).
std::int64_t dtype_elements(const dtype &t, std::size_t bytes);
// Packed bytes of the first `elements` basic elements (MPI_Status_set_elements).
std::size_t dtype_bytes_of_elements(const dtype &t, std::size_t elements);

}  // namespace iris::device
