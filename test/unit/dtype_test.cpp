// The datatype engine: flattening, extents, and packing any byte range, so
// that a later streaming engine can move a message in pieces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "device/base/stream_copy.hpp"
#include "device/datatypes/dtype.hpp"
#include "include/mpi.h"

namespace iris::device {
namespace {

dtype basic(std::size_t bytes) {
  return dtype_basic(bytes, bytes);
}

// A vector of `count` blocks of `blocklen` ints, `stride` ints apart.
dtype vector_of_ints(int count, int blocklen, int stride) {
  static const dtype i32 = basic(4);
  std::vector<std::int64_t> displs;
  for (int i = 0; i < count; ++i) displs.push_back(std::int64_t{i} * stride * 4);
  return dtype_from_blocks(displs, std::vector<int>(static_cast<std::size_t>(count), blocklen),
                           std::vector<const dtype *>(static_cast<std::size_t>(count), &i32),
                           false);
}

// The bindings' small-message path sends a predefined type by its slot's
// dense_size alone: it must be the packed size exactly when any count of
// elements is one run at the buffer's address, and 0 otherwise (padded
// pairs such as MPI_DOUBLE_INT then take the typed path).
TEST(Dtype, PredefinedSlotsSayWhichTypesAreDense) {
  int dense = 0;
  for (const detail::builtin_slot &slot : detail::builtin_types) {
    if (slot.type == nullptr) continue;
    const dtype &t = *slot.type;
    const bool run = t.packed_size != 0 && t.true_lb == 0 && dtype_contiguous(t, 3);
    EXPECT_EQ(slot.dense_size, run ? t.packed_size : 0u) << "handle 0x" << std::hex << slot.handle;
    dense += slot.dense_size != 0 ? 1 : 0;
  }
  EXPECT_GT(dense, 20);
  auto slot_of = [](MPI_Datatype type) {
    return detail::builtin_types[static_cast<unsigned>(type) & 0xffU];
  };
  EXPECT_EQ(slot_of(MPI_INT).handle, MPI_INT);
  EXPECT_EQ(slot_of(MPI_INT).dense_size, 4u);
  EXPECT_EQ(slot_of(MPI_BYTE).dense_size, 1u);
  EXPECT_EQ(slot_of(MPI_2INT).dense_size, 8u);
  EXPECT_EQ(slot_of(MPI_DOUBLE_INT).dense_size, 0u) << "12 bytes of data in an extent of 16";
  EXPECT_EQ(slot_of(MPI_SHORT_INT).dense_size, 0u);
}

TEST(Dtype, VectorExtentsAndMergedBlocks) {
  const dtype v = vector_of_ints(3, 2, 5);
  EXPECT_EQ(v.size, 24u);
  EXPECT_EQ(v.lb, 0);
  EXPECT_EQ(v.extent, 48);  // (2 * 5 + 2) ints
  ASSERT_EQ(v.tree->k, dtype_node::kind::vector) << "equal blocks at one stride: a loop";
  EXPECT_EQ(v.tree->count, 3u);
  EXPECT_EQ(v.tree->stride, 20);
  EXPECT_EQ(v.tree->child->k, dtype_node::kind::run);
  EXPECT_EQ(v.tree->child->packed, 8u) << "a block of 2 ints is one run";
  const dtype contiguous = vector_of_ints(4, 3, 3);  // stride == blocklen: one block
  EXPECT_EQ(contiguous.tree->k, dtype_node::kind::run);
  EXPECT_EQ(contiguous.tree->packed, 48u);
  EXPECT_TRUE(dtype_contiguous(contiguous, 5));
  EXPECT_FALSE(dtype_contiguous(v, 1));
}

TEST(Dtype, StructIsPaddedToItsAlignment) {
  const dtype d = basic(8);
  const dtype c = basic(1);
  const dtype s = dtype_from_blocks({0, 8}, {1, 1}, {&d, &c}, true);
  EXPECT_EQ(s.size, 9u);
  EXPECT_EQ(s.extent, 16);  // as C lays out struct { double; char; }
  EXPECT_EQ(s.true_extent, 9);
  EXPECT_EQ(s.basic_size, 0u) << "mixed basic sizes";
}

TEST(Dtype, ResizedKeepsTheDataAndChangesTheStride) {
  const dtype v = vector_of_ints(2, 1, 3);
  const dtype r = dtype_resized(v, 0, 4);
  EXPECT_EQ(r.extent, 4);
  EXPECT_EQ(r.true_extent, 16);
  EXPECT_EQ(r.size, 8u);
}

// Packing in random pieces equals packing whole, and unpacking the pieces
// restores exactly the covered bytes.
TEST(Dtype, PackAndUnpackAnyRangeInPieces) {
  for (const unsigned seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const dtype v = vector_of_ints(7, 3, 5);
    const int count = 9;
    std::vector<int> source(static_cast<std::size_t>(count * v.extent / 4 + 8));
    std::iota(source.begin(), source.end(), 1000);
    const std::size_t total = static_cast<std::size_t>(count) * v.packed_size;
    std::vector<std::byte> whole(total);
    dtype_pack_range(source.data(), count, v, 0, total, whole.data());
    std::vector<std::byte> pieces(total);
    std::mt19937 rng(seed);
    for (std::size_t at = 0; at < total;) {
      const std::size_t n = std::min<std::size_t>(total - at, 1 + rng() % 37);
      dtype_pack_range(source.data(), count, v, at, n, pieces.data() + at);
      at += n;
    }
    EXPECT_EQ(std::memcmp(whole.data(), pieces.data(), total), 0);
    std::vector<int> back(source.size(), -1);
    for (std::size_t at = 0; at < total;) {
      const std::size_t n = std::min<std::size_t>(total - at, 1 + rng() % 53);
      dtype_unpack_range(pieces.data() + at, at, n, back.data(), count, v);
      at += n;
    }
    for (int e = 0; e < count; ++e) {
      for (int b = 0; b < 7; ++b) {
        for (int k = 0; k < 3; ++k) {
          const std::size_t i = static_cast<std::size_t>(e * v.extent / 4 + b * 5 + k);
          ASSERT_EQ(back[i], source[i]) << "element " << e << " block " << b;
        }
      }
    }
    EXPECT_EQ(back[3], -1) << "a gap between blocks was written";
  }
}

const dtype &predef(int handle) {
  return *dtype_lookup(handle);
}

// A complex type aligns like its component: C pads struct { char; float
// _Complex; } to 12 bytes, and with double _Complex to 24.
TEST(Dtype, ComplexTypesAlignLikeTheirComponent) {
  const dtype &c = predef(MPI_CHAR);
  const dtype f = dtype_from_blocks({0, 4}, {1, 1}, {&c, &predef(MPI_C_FLOAT_COMPLEX)}, true);
  EXPECT_EQ(f.extent, 12);
  const dtype d = dtype_from_blocks({0, 8}, {1, 1}, {&c, &predef(MPI_C_DOUBLE_COMPLEX)}, true);
  EXPECT_EQ(d.extent, 24);
  const dtype l =
      dtype_from_blocks({0, 16}, {1, 1}, {&c, &predef(MPI_C_LONG_DOUBLE_COMPLEX)}, true);
  EXPECT_EQ(l.extent, 48);
  // The pair types align like their widest member too.
  const dtype fi = dtype_from_blocks({0, 4}, {1, 1}, {&c, &predef(MPI_FLOAT_INT)}, true);
  EXPECT_EQ(fi.extent, 12);
}

// Get_elements counts basic elements: a pair holds two, and a partial
// element of a nested type counts what arrived whole.
TEST(Dtype, ElementsCountBasicElementsOfPairsAndPartialNests) {
  const dtype &di = predef(MPI_DOUBLE_INT);
  EXPECT_EQ(di.packed_size, 12u) << "a pair travels without its padding, as its struct does";
  EXPECT_EQ(predef(MPI_SHORT_INT).packed_size, 6u);
  EXPECT_EQ(dtype_elements(di, di.packed_size), 2);
  EXPECT_EQ(dtype_elements(di, 3 * di.packed_size), 6);
  EXPECT_EQ(dtype_elements(di, 8), 1) << "the double of a pair";
  EXPECT_EQ(dtype_elements(di, 5), -1) << "a cut double";
  EXPECT_EQ(dtype_bytes_of_elements(di, 3), di.packed_size + 8);
  // struct { int; vector of 3 blocks of 2 doubles; char } and a partial one.
  const dtype &i = predef(MPI_INT);
  const dtype &d = predef(MPI_DOUBLE);
  const dtype &ch = predef(MPI_CHAR);
  const dtype v = dtype_vector(3, 2, 32, d);
  const dtype s = dtype_from_blocks({0, 8, 200}, {1, 1, 1}, {&i, &v, &ch}, true);
  EXPECT_EQ(s.basic_count, 8u);
  EXPECT_EQ(dtype_elements(s, s.packed_size), 8);
  EXPECT_EQ(dtype_elements(s, 4 + 3 * 8), 4) << "the int and three doubles";
  EXPECT_EQ(dtype_elements(s, s.packed_size + 4 + 6 * 8), 15);
  EXPECT_EQ(dtype_elements(s, 4 + 3 * 8 + 2), -1);
  EXPECT_EQ(dtype_bytes_of_elements(s, 4), 4u + 3 * 8);
  EXPECT_EQ(dtype_bytes_of_elements(s, 9), s.packed_size + 4);
}

// MPI-4.1 5.1.7-5.1.8: the bounds of types over resized ones with negative
// lower bounds and extents; the true bounds are where the data is.
TEST(Dtype, TrueBoundsOverNegativeExtents) {
  const dtype &i = predef(MPI_INT);
  const dtype back = dtype_resized(i, 0, -8);  // each next int 8 bytes lower
  const dtype three = dtype_from_blocks({0}, {3}, {&back}, false);
  EXPECT_EQ(three.true_lb, -16);
  EXPECT_EQ(three.true_extent, 20);
  EXPECT_EQ(three.lb, -16);    // the lowest lb marker
  EXPECT_EQ(three.extent, 8);  // the highest ub marker is at -8
  // A vector of it, and a struct holding the vector at 100 and an int at 0.
  const dtype v = dtype_vector(2, 3, -40, back);  // blocks at 0 and -40
  EXPECT_EQ(v.true_lb, -56);
  EXPECT_EQ(v.true_extent, 60);
  const dtype s = dtype_from_blocks({0, 100}, {1, 1}, {&i, &v}, true);
  EXPECT_EQ(s.true_lb, 0);
  EXPECT_EQ(s.true_extent, 104);
  // The markers are sticky: the struct's bounds come from the resized part.
  EXPECT_EQ(s.lb, 100 - 56);
  // A negative lower bound: resized(lb -6, extent 22) over two ints.
  const dtype two = dtype_from_blocks({-4, 10}, {1, 1}, {&i, &i}, false);
  EXPECT_EQ(two.true_lb, -4);
  EXPECT_EQ(two.true_extent, 18);
  const dtype r = dtype_resized(two, -6, 22);
  const dtype rr = dtype_from_blocks({0}, {2}, {&r}, false);
  EXPECT_EQ(rr.true_lb, -4);
  EXPECT_EQ(rr.true_extent, 22 + 18);
  EXPECT_EQ(rr.lb, -6);
  EXPECT_EQ(rr.extent, 44);
  // Moving the data follows the same layout: pack 2 of `three` (extent 8).
  int memory[16];
  for (int k = 0; k < 16; ++k) memory[k] = k;
  int out[6] = {};
  dtype_pack_range(&memory[8], 2, three, 0, 24, out);
  const int want[6] = {8, 6, 4, 10, 8, 6};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(out[k], want[k]) << k;
}

}  // namespace
}  // namespace iris::device

namespace iris::device {
namespace {

// ---- seeded random nested types against a reference packer -----------------
//
// Each random type is made twice: by the engine's builders, and as a plain
// list of (offset, length) of its data, in typemap order, by the simple
// expansion of the MPI definitions below. Packing is the concatenation of
// the list's bytes, element after element, `extent` apart.

struct piece {
  std::int64_t at;
  std::size_t length;
};

struct made {
  dtype type;
  std::vector<piece> map;  // one element's data, typemap order
};

void shifted(std::vector<piece> &out, const std::vector<piece> &in, std::int64_t by) {
  for (const piece &p : in) out.push_back({p.at + by, p.length});
}

// Keeps maps small: a type of at most this many pieces is made.
constexpr std::size_t max_pieces = 3000;

made random_type(std::mt19937 &rng, int depth) {
  auto pick = [&rng](int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); };
  made m;
  const int kind = depth == 0 ? 0 : pick(0, 6);
  if (kind == 0) {
    const std::size_t bytes = std::size_t{1} << pick(0, 3);
    m.type = dtype_basic(bytes, bytes);
    m.map.push_back({0, bytes});
    return m;
  }
  made child = random_type(rng, depth - 1);
  const std::int64_t ext = child.type.extent;
  switch (kind) {
    case 1: {  // contiguous
      const int n = pick(1, 4);
      m.type = dtype_from_blocks({0}, {n}, {&child.type}, false);
      for (int i = 0; i < n; ++i) shifted(m.map, child.map, i * ext);
      break;
    }
    case 2: {  // vector / hvector, any stride sign
      const int count = pick(1, 5);
      const int bl = pick(1, 3);
      const std::int64_t stride = (pick(0, 1) != 0 ? ext * pick(-4, 6) : pick(-40, 60));
      m.type = dtype_vector(static_cast<std::size_t>(count), static_cast<std::size_t>(bl), stride,
                            child.type);
      for (int i = 0; i < count; ++i) {
        for (int j = 0; j < bl; ++j) shifted(m.map, child.map, i * stride + j * ext);
      }
      break;
    }
    case 3:
    case 4: {  // indexed (one child) or struct (a second child)
      made other = random_type(rng, depth - 1);
      const int n = pick(1, 4);
      std::vector<std::int64_t> displs;
      std::vector<int> lens;
      std::vector<const dtype *> olds;
      for (int b = 0; b < n; ++b) {
        const made &use = kind == 4 && b % 2 == 1 ? other : child;
        displs.push_back(pick(-50, 80));
        lens.push_back(pick(0, 3));
        olds.push_back(&use.type);
        for (int j = 0; j < lens.back(); ++j) {
          shifted(m.map, use.map, displs.back() + j * use.type.extent);
        }
      }
      m.type = dtype_from_blocks(displs, lens, olds, kind == 4);
      break;
    }
    default: {  // resized: negative lower bounds and extents too
      m.type = dtype_resized(child.type, pick(-24, 16), pick(-24, 40));
      m.map = child.map;
      break;
    }
  }
  if (m.map.size() > max_pieces) return child;
  return m;
}

bool overlaps(std::vector<piece> all) {
  std::sort(all.begin(), all.end(), [](const piece &a, const piece &b) { return a.at < b.at; });
  for (std::size_t i = 1; i < all.size(); ++i) {
    if (all[i - 1].at + static_cast<std::int64_t>(all[i - 1].length) > all[i].at) return true;
  }
  return false;
}

TEST(Dtype, RandomNestedTypesMatchAReferencePackerAtAnyPieceBoundary) {
  int unpack_checked = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const made m = random_type(rng, 1 + static_cast<int>(seed % 4));
    const dtype &t = m.type;
    const int count = 1 + static_cast<int>(rng() % 4);
    // Every element's pieces, in packed order.
    std::vector<piece> all;
    for (int e = 0; e < count; ++e) shifted(all, m.map, e * t.extent);
    std::size_t packed = 0;
    std::int64_t lo = 0;
    std::int64_t hi = 0;
    std::int64_t true_lo = std::numeric_limits<std::int64_t>::max();
    std::int64_t true_hi = std::numeric_limits<std::int64_t>::min();
    for (const piece &p : all) {
      packed += p.length;
      lo = std::min(lo, p.at);
      hi = std::max(hi, p.at + static_cast<std::int64_t>(p.length));
    }
    for (const piece &p : m.map) {
      true_lo = std::min(true_lo, p.at);
      true_hi = std::max(true_hi, p.at + static_cast<std::int64_t>(p.length));
    }
    ASSERT_EQ(packed, count * t.packed_size);
    if (!m.map.empty()) {
      EXPECT_EQ(t.true_lb, true_lo);
      EXPECT_EQ(t.true_extent, true_hi - true_lo);
    }
    EXPECT_EQ(dtype_elements(t, packed),
              static_cast<std::int64_t>(count * m.map.size()) - static_cast<std::int64_t>(0))
        << "basic elements (every piece of the reference is one)";
    // Memory from lo to hi, with margins that must stay untouched.
    const std::int64_t margin = 16;
    const auto span = static_cast<std::size_t>(hi - lo + 2 * margin);
    std::vector<std::byte> source(span);
    for (std::byte &b : source) b = static_cast<std::byte>(rng());
    std::byte *origin = source.data() + (margin - lo);
    std::vector<std::byte> want;
    for (const piece &p : all) {
      want.insert(want.end(), origin + p.at, origin + p.at + p.length);
    }
    // Pack at random piece boundaries, with the cursor.
    std::vector<std::byte> got(packed + 1, std::byte{0x5a});
    dtype_cursor out(origin, count, t);
    while (out.done() < packed) {
      const std::size_t n = 1 + rng() % (1 + packed / 3);
      const std::size_t at = out.done();
      ASSERT_EQ(out.pack(got.data() + at, n), std::min(n, packed - at));
    }
    EXPECT_EQ(got[packed], std::byte{0x5a}) << "packed past the end";
    ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin()));
    // Unpack in other pieces into a filled buffer: the data lands, every
    // gap keeps its byte (only for types whose pieces do not overlap).
    if (overlaps(all)) continue;
    ++unpack_checked;
    std::vector<std::byte> back(span, std::byte{0xee});
    std::byte *back_origin = back.data() + (margin - lo);
    dtype_cursor in(back_origin, count, t);
    while (in.done() < packed) {
      const std::size_t n = 1 + rng() % (1 + packed / 2);
      in.unpack(want.data() + in.done(), n);
    }
    std::vector<bool> covered(span, false);
    for (const piece &p : all) {
      for (std::size_t k = 0; k < p.length; ++k) {
        covered[static_cast<std::size_t>(margin - lo + p.at) + k] = true;
      }
    }
    for (std::size_t k = 0; k < span; ++k) {
      ASSERT_EQ(back[k], covered[k] ? source[k] : std::byte{0xee})
          << "byte " << static_cast<std::int64_t>(k) - (margin - lo)
          << (covered[k] ? " of the data" : " of a gap");
    }
  }
  EXPECT_GT(unpack_checked, 100) << "too few types without overlaps to check unpacking";
}

// copy_streaming keeps memcpy's contract at every length and alignment:
// the bytes land, and not one byte before or after them changes.
TEST(StreamCopy, EveryLengthAndAlignmentCopiesExactly) {
  std::mt19937 rng(7);
  std::vector<std::byte> from(5000);
  for (std::byte &b : from) b = static_cast<std::byte>(rng());
  for (std::size_t n :
       {0, 1, 15, 16, 63, 64, 65, 79, 80, 127, 128, 129, 255, 256, 257, 1000, 4096, 4099}) {
    for (std::size_t to_at = 0; to_at < 17; ++to_at) {
      const std::size_t from_at = (to_at * 7) % 19;
      std::vector<std::byte> to(n + 64, std::byte{0xee});
      copy_streaming(to.data() + to_at, from.data() + from_at, n);
      ASSERT_EQ(std::memcmp(to.data() + to_at, from.data() + from_at, n), 0)
          << n << " bytes to offset " << to_at;
      for (std::size_t k = 0; k < to.size(); ++k) {
        if (k < to_at || k >= to_at + n) {
          ASSERT_EQ(to[k], std::byte{0xee}) << "byte " << k << " outside " << n << " at " << to_at;
        }
      }
    }
  }
}

// A streaming unpack (IRIS_NONTEMPORAL_MIN) writes what an ordinary one
// writes, gaps untouched, for blocks on both sides of streaming_block, at
// random piece boundaries and misaligned origins.
TEST(Dtype, StreamingUnpackWritesWhatUnpackWrites) {
  std::mt19937 rng(11);
  for (const int block : {1, 63, 64, 65, 200, 1024 + 3}) {  // ints: 4 to 4108 bytes
    for (const std::size_t misalign : {0, 4, 12}) {
      SCOPED_TRACE("block of " + std::to_string(block) + " ints, origin +" +
                   std::to_string(misalign));
      const dtype v = vector_of_ints(5, block, 2 * block + 1);
      const int count = 3;
      const std::size_t total = static_cast<std::size_t>(count) * v.packed_size;
      std::vector<std::byte> packed(total);
      for (std::byte &b : packed) b = static_cast<std::byte>(rng());
      const std::size_t span = static_cast<std::size_t>(count * v.extent) + misalign + 64;
      std::vector<std::byte> plain(span, std::byte{0xee});
      std::vector<std::byte> streamed(span, std::byte{0xee});
      dtype_unpack_range(packed.data(), 0, total, plain.data() + misalign, count, v);
      for (std::size_t at = 0; at < total;) {
        const std::size_t n = std::min<std::size_t>(total - at, 1 + rng() % 5000);
        dtype_unpack_range(packed.data() + at, at, n, streamed.data() + misalign, count, v, true);
        at += n;
      }
      ASSERT_EQ(std::memcmp(plain.data(), streamed.data(), span), 0);
      EXPECT_EQ(streamed[misalign + static_cast<std::size_t>(block) * 4], std::byte{0xee})
          << "a gap was written";
    }
  }
}

// ---- iovecs for single-copy reads, and the sender's layout description -----

// The iovecs of the bytes [first, first + n) gathered from memory, in order.
std::vector<std::byte> gathered(const iovec *v, std::size_t used) {
  std::vector<std::byte> out;
  for (std::size_t i = 0; i < used; ++i) {
    const auto *b = static_cast<const std::byte *>(v[i].iov_base);
    out.insert(out.end(), b, b + v[i].iov_len);
  }
  return out;
}

// dtype_segments at random chunk boundaries and random iovec limits names
// exactly the reference packer's bytes (gathering them is packing), stops
// only when its iovecs are full, and scattering into them is unpacking:
// every byte of the data lands, every gap keeps its byte. The same holds
// for the type rebuilt from its description (what a receiver reads).
TEST(Dtype, SegmentsAndDescriptionsMatchAReferencePackerAtAnyChunkBoundary) {
  int scatter_checked = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed * 7919U);
    const made m = random_type(rng, 1 + static_cast<int>(seed % 4));
    const int count = 1 + static_cast<int>(rng() % 4);
    // The sender's description, read back: both must name the same bytes.
    std::vector<std::byte> text(64 * 1024);
    const std::size_t described = dtype_describe(m.type, count, text.data(), text.size());
    if (m.type.packed_size == 0) {
      EXPECT_EQ(described, 0U);
      continue;
    }
    ASSERT_NE(described, 0U);
    dtype rebuilt;
    int rebuilt_count = 0;
    ASSERT_TRUE(dtype_read_description(text.data(), described, rebuilt, rebuilt_count));
    ASSERT_EQ(rebuilt_count, count);
    ASSERT_EQ(rebuilt.packed_size, m.type.packed_size);
    ASSERT_EQ(rebuilt.extent, m.type.extent);
    EXPECT_EQ(dtype_runs(rebuilt), dtype_runs(m.type));
    EXPECT_EQ(dtype_describe(m.type, count, text.data(), described - 8), 0U)
        << "a description that does not fit is refused";
    for (const dtype *t :
         {static_cast<const dtype *>(&m.type), static_cast<const dtype *>(&rebuilt)}) {
      std::vector<piece> all;
      for (int e = 0; e < count; ++e) shifted(all, m.map, e * t->extent);
      std::size_t packed = 0;
      std::int64_t lo = 0;
      std::int64_t hi = 0;
      for (const piece &p : all) {
        packed += p.length;
        lo = std::min(lo, p.at);
        hi = std::max(hi, p.at + static_cast<std::int64_t>(p.length));
      }
      const std::int64_t margin = 16;
      const auto span = static_cast<std::size_t>(hi - lo + 2 * margin);
      std::vector<std::byte> source(span);
      for (std::byte &b : source) b = static_cast<std::byte>(rng());
      std::byte *origin = source.data() + (margin - lo);
      std::vector<std::byte> want;
      for (const piece &p : all) want.insert(want.end(), origin + p.at, origin + p.at + p.length);
      // Gather: chunks of random length, random iovec limits (1 to IOV_MAX).
      std::vector<iovec> v(1024);
      std::vector<std::byte> got;
      std::vector<std::vector<iovec>> chunks;  // kept for the scatter below
      while (got.size() < packed) {
        const std::size_t first = got.size();
        const std::size_t n = 1 + rng() % (1 + packed / 3);
        const std::size_t max = rng() % 4 == 0 ? 1024 : 1 + rng() % 5;
        std::size_t used = 0;
        const std::size_t covered = dtype_segments(reinterpret_cast<std::uintptr_t>(origin), count,
                                                   *t, first, n, v.data(), max, used);
        const std::size_t asked = std::min(n, packed - first);
        ASSERT_LE(used, max);
        ASSERT_GT(covered, 0U);
        ASSERT_TRUE(covered == asked || (covered < asked && used == max))
            << "stopped short with room left: " << covered << " of " << asked;
        std::size_t sum = 0;
        for (std::size_t i = 0; i < used; ++i) sum += v[i].iov_len;
        ASSERT_EQ(sum, covered);
        const std::vector<std::byte> part = gathered(v.data(), used);
        got.insert(got.end(), part.begin(), part.end());
        chunks.emplace_back(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(used));
      }
      ASSERT_EQ(got.size(), packed);
      ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << "gathered bytes differ";
      // Past the end: nothing.
      std::size_t used = 9;
      EXPECT_EQ(dtype_segments(reinterpret_cast<std::uintptr_t>(origin), count, *t, packed, 5,
                               v.data(), 4, used),
                0U);
      EXPECT_EQ(used, 0U);
      if (overlaps(all)) continue;
      // Scatter the packed bytes through the same iovecs, moved to another
      // buffer: the data lands, the gaps keep their byte.
      ++scatter_checked;
      std::vector<std::byte> back(span, std::byte{0xee});
      const std::ptrdiff_t move = back.data() - source.data();
      std::size_t at = 0;
      for (const std::vector<iovec> &chunk : chunks) {
        for (const iovec &io : chunk) {
          std::memcpy(static_cast<std::byte *>(io.iov_base) + move, want.data() + at, io.iov_len);
          at += io.iov_len;
        }
      }
      std::vector<bool> covered(span, false);
      for (const piece &p : all) {
        for (std::size_t k = 0; k < p.length; ++k) {
          covered[static_cast<std::size_t>(margin - lo + p.at) + k] = true;
        }
      }
      for (std::size_t k = 0; k < span; ++k) {
        ASSERT_EQ(back[k], covered[k] ? source[k] : std::byte{0xee})
            << "byte " << static_cast<std::int64_t>(k) - (margin - lo)
            << (covered[k] ? " of the data" : " of a gap");
      }
    }
  }
  EXPECT_GT(scatter_checked, 200) << "too few types without overlaps to check scattering";
}

// A vector of a million 4 KiB blocks is a few words, and its iovecs come
// out one per block, at most the limit per call.
TEST(Dtype, VectorOfLargeBlocksIsOneIovecPerBlock) {
  const dtype block = dtype_basic(4096, 8);
  const dtype v = dtype_vector(1 << 20, 1, 8192, block);
  std::byte text[256];
  const std::size_t described = dtype_describe(v, 1, text, sizeof(text));
  ASSERT_NE(described, 0U);
  EXPECT_EQ(described, 9U * 8U);  // a header, the vector and its run
  EXPECT_EQ(v.packed_size / dtype_runs(v), 4096U);
  std::vector<iovec> io(1024);
  std::size_t used = 0;
  const std::uintptr_t origin = 0x100000;
  EXPECT_EQ(dtype_segments(origin, 1, v, 2048, v.packed_size, io.data(), io.size(), used),
            2048U + 1023U * 4096U);
  ASSERT_EQ(used, 1024U);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(io[0].iov_base), origin + 2048);
  EXPECT_EQ(io[0].iov_len, 2048U);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(io[1].iov_base), origin + 8192);
  EXPECT_EQ(io[1023].iov_len, 4096U);
  // A contiguous-equivalent type is one iovec, however many elements.
  EXPECT_EQ(dtype_segments(origin, 1000, block, 0, 1000 * 4096, io.data(), 1, used), 1000U * 4096U);
  EXPECT_EQ(used, 1U);
}

// A description that is cut, corrupted or nested too deep is refused, never
// trusted (the receiver then asks for data packets).
TEST(Dtype, BadDescriptionsAreRefused) {
  const dtype i32 = basic(4);
  const dtype inner = dtype_vector(3, 2, 20, i32);
  const dtype outer = dtype_from_blocks({0, 100, 260}, {1, 2, 1}, {&inner, &i32, &inner}, true);
  std::vector<std::byte> text(4096);
  const std::size_t n = dtype_describe(outer, 5, text.data(), text.size());
  ASSERT_NE(n, 0U);
  dtype t;
  int count = 0;
  ASSERT_TRUE(dtype_read_description(text.data(), n, t, count));
  EXPECT_EQ(count, 5);
  for (std::size_t cut = 0; cut < n; cut += 8) {
    EXPECT_FALSE(dtype_read_description(text.data(), cut, t, count)) << "cut at " << cut;
  }
  EXPECT_FALSE(dtype_read_description(text.data(), n + 8, t, count)) << "trailing words";
  EXPECT_FALSE(dtype_read_description(text.data(), n - 3, t, count)) << "not whole words";
  std::vector<std::byte> bad(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(n));
  bad[0] ^= std::byte{1};
  EXPECT_FALSE(dtype_read_description(bad.data(), n, t, count)) << "magic";
  // Random words anywhere: refused or sound, never a crash (ASan checks).
  std::mt19937 rng(19);
  for (int trial = 0; trial < 2000; ++trial) {
    bad.assign(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(n));
    const std::size_t word = 1 + rng() % (n / 8 - 1);
    const std::uint64_t value = rng() % 3 == 0 ? rng() % 4 : (std::uint64_t{rng()} << 32) | rng();
    std::memcpy(bad.data() + word * 8, &value, 8);
    if (dtype_read_description(bad.data(), n, t, count)) {
      EXPECT_GT(count, 0);
      EXPECT_GT(t.packed_size, 0U);
    }
  }
  // Nesting deeper than a description holds is not described.
  dtype deep = i32;
  for (int level = 0; level < 40; ++level) deep = dtype_vector(2, 1, 64 << (level % 8), deep);
  EXPECT_EQ(dtype_describe(deep, 1, text.data(), text.size()), 0U);
}

}  // namespace
}  // namespace iris::device
