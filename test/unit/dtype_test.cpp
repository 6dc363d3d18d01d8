// The datatype engine: flattening, extents, and packing any byte range, so
// that a later streaming engine can move a message in pieces.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "device/dtype.hpp"

namespace iris::device {
namespace {

dtype basic(std::size_t bytes) {
  dtype t;
  t.blocks.push_back({0, bytes});
  t.size = t.packed_size = bytes;
  t.extent = t.true_extent = static_cast<std::int64_t>(bytes);
  t.alignment = bytes;
  t.basic_size = bytes;
  t.basic_count = 1;
  t.committed = true;
  return t;
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

TEST(Dtype, VectorExtentsAndMergedBlocks) {
  const dtype v = vector_of_ints(3, 2, 5);
  EXPECT_EQ(v.size, 24u);
  EXPECT_EQ(v.lb, 0);
  EXPECT_EQ(v.extent, 48);  // (2 * 5 + 2) ints
  EXPECT_EQ(v.blocks.size(), 3u);
  const dtype contiguous = vector_of_ints(4, 3, 3);  // stride == blocklen: one block
  EXPECT_EQ(contiguous.blocks.size(), 1u);
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

}  // namespace
}  // namespace iris::device
