// Typed buffers (device/typed.hpp): packing, unpacking and copying between
// layouts leave the bytes between blocks alone; images cover exactly the
// span the data touches, lower bounds included; overlap looks at spans.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "device/protocols/typed.hpp"
#include "include/mpi.h"

namespace iris::device {
namespace {

constexpr int gap = -7;

const dtype &int32() {
  return *dtype_lookup(MPI_INT);
}

// A vector of `count` blocks of `blocklen` ints, `stride` ints apart.
dtype vector_of_ints(int count, int blocklen, int stride) {
  std::vector<std::int64_t> displs;
  for (int i = 0; i < count; ++i) displs.push_back(std::int64_t{i} * stride * 4);
  return dtype_from_blocks(displs, std::vector<int>(static_cast<std::size_t>(count), blocklen),
                           std::vector<const dtype *>(static_cast<std::size_t>(count), &int32()),
                           false);
}

// Where the data ints of `count` elements of vector_of_ints(3, 2, 5) lie.
std::vector<int> vector_positions(int count) {
  std::vector<int> at;
  for (int e = 0; e < count; ++e) {
    for (int b = 0; b < 3; ++b) {
      for (int j = 0; j < 2; ++j) at.push_back(e * 12 + b * 5 + j);
    }
  }
  return at;
}

TEST(Typed, PackThenUnpackRestoresTheDataAndLeavesTheGaps) {
  const dtype v = vector_of_ints(3, 2, 5);
  const int count = 4;
  const std::vector<int> at = vector_positions(count);
  std::vector<int> from(static_cast<std::size_t>(count * v.extent / 4), gap);
  for (std::size_t k = 0; k < at.size(); ++k) from[static_cast<std::size_t>(at[k])] = int(k);
  const typed_buffer src{from.data(), count, &v};
  ASSERT_EQ(src.packed_bytes(), at.size() * 4);
  ASSERT_FALSE(src.contiguous());
  std::vector<int> packed(at.size(), -1);
  typed_pack(src, packed.data());
  for (std::size_t k = 0; k < packed.size(); ++k) EXPECT_EQ(packed[k], int(k));

  std::vector<int> to(from.size(), gap);
  typed_unpack(packed.data(), src.packed_bytes(), {to.data(), count, &v});
  EXPECT_EQ(to, from);

  // A short message fills only the first data ints.
  std::vector<int> part(from.size(), gap);
  typed_unpack(packed.data(), 5 * 4, {part.data(), count, &v});
  for (std::size_t i = 0; i < part.size(); ++i) {
    const auto k = std::find(at.begin(), at.end(), int(i)) - at.begin();
    EXPECT_EQ(part[i], k < 5 ? int(k) : gap) << "int " << i;
  }
}

TEST(Typed, CopyBetweenLayoutsOfOneSignature) {
  const dtype v = vector_of_ints(3, 2, 5);
  std::vector<int> flat(12);
  for (int i = 0; i < 12; ++i) flat[static_cast<std::size_t>(i)] = 100 + i;
  std::vector<int> strided(24, gap);
  typed_copy({flat.data(), 12, &int32()}, {strided.data(), 2, &v});
  const std::vector<int> at = vector_positions(2);
  std::vector<int> want(24, gap);
  for (std::size_t k = 0; k < at.size(); ++k) want[static_cast<std::size_t>(at[k])] = 100 + int(k);
  EXPECT_EQ(strided, want);
  std::vector<int> back(12, -1);
  typed_copy({strided.data(), 2, &v}, {back.data(), 12, &int32()});
  EXPECT_EQ(back, flat);
}

TEST(Typed, ImageSpansTheDataBeforeTheAddressToo) {
  // One int at -8 bytes and one at +8, resized to lb -8, extent 24.
  const dtype raw = dtype_from_blocks({-8, 8}, {1, 1}, {&int32(), &int32()}, true);
  const dtype t = dtype_resized(raw, -8, 24);
  std::vector<int> mem(2 + 3 * 6, gap);
  int *base = mem.data() + 2;
  for (int e = 0; e < 3; ++e) {
    base[e * 6 - 2] = 10 * e;
    base[e * 6 + 2] = 10 * e + 1;
  }
  const typed_image copy(typed_buffer{base, 3, &t});
  const auto *origin = static_cast<const int *>(copy.origin());
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(origin[e * 6 - 2], 10 * e);
    EXPECT_EQ(origin[e * 6 + 2], 10 * e + 1);
  }
  std::vector<int> out(mem.size(), gap);
  typed_copy(copy.view(), {out.data() + 2, 3, &t});
  EXPECT_EQ(out, mem);
}

// Large images' blocks are kept for the thread's next images (fresh memory
// each collective cost a fault a page), the smallest that fits first;
// small and huge ones are not kept, and a kept block's data is the new
// image's to overwrite.
TEST(Typed, LargeImagesReuseTheBlocksOfEarlierOnes) {
  // On a thread of its own: its kept blocks start empty.
  std::thread([] {
    constexpr int mib_ints = 256 * 1024;
    EXPECT_EQ(typed_image::kept_here(), 0);
    const void *first = nullptr;
    const void *second = nullptr;
    {
      const typed_image a(mib_ints, int32());
      const typed_image b(2 * mib_ints, int32());
      first = a.origin();
      second = b.origin();
    }
    EXPECT_EQ(typed_image::kept_here(), 2);
    {
      const typed_image c(mib_ints, int32());      // the 1 MiB block fits best
      const typed_image d(mib_ints / 2, int32());  // then the 2 MiB one
      EXPECT_EQ(c.origin(), first);
      EXPECT_EQ(d.origin(), second);
      EXPECT_EQ(typed_image::kept_here(), 0);
    }
    {
      // A copy takes a kept block too, and carries the data.
      std::vector<int> data(static_cast<std::size_t>(mib_ints));
      for (int i = 0; i < mib_ints; ++i) data[static_cast<std::size_t>(i)] = i;
      const typed_image from(typed_buffer{data.data(), mib_ints, &int32()});
      const typed_image copy(from);
      EXPECT_EQ(typed_image::kept_here(), 0);
      const auto *got = static_cast<const int *>(copy.origin());
      EXPECT_TRUE(std::equal(data.begin(), data.end(), got));
    }
    // Small images are not kept, and at most kept_count large ones are:
    // the largest.
    { const typed_image small(16, int32()); }
    EXPECT_EQ(typed_image::kept_here(), 2);
    {
      const typed_image e(4 * mib_ints, int32());
      const typed_image f(8 * mib_ints, int32());
    }
    EXPECT_EQ(typed_image::kept_here(), typed_image::kept_count);
    const typed_image g(8 * mib_ints, int32());
    const typed_image h(4 * mib_ints, int32());
    const typed_image i(2 * mib_ints, int32());
    EXPECT_EQ(typed_image::kept_here(), 0);
    EXPECT_EQ(i.origin(), second);
  }).join();
}

TEST(Typed, OverlapLooksAtTheSpans) {
  const dtype v = vector_of_ints(3, 2, 5);
  std::vector<int> mem(64);
  EXPECT_TRUE(typed_overlap({mem.data(), 1, &v}, {mem.data() + 11, 1, &int32()}));
  EXPECT_FALSE(typed_overlap({mem.data(), 1, &v}, {mem.data() + 12, 1, &int32()}));
  EXPECT_FALSE(typed_overlap({mem.data(), 0, &v}, {mem.data(), 4, &int32()}));
}

// A copy between two non-contiguous layouts larger than the copy's 64 KiB
// pieces: every data int lands, in order, and no gap is written.
TEST(Typed, CopyBetweenLargeLayoutsGoesPieceByPiece) {
  const dtype &i = int32();
  const dtype a = dtype_vector(50000, 3, 5 * 4, i);  // 150000 ints, blocks of 3
  const dtype b = dtype_vector(75000, 2, 3 * 4, i);  // 150000 ints, blocks of 2
  std::vector<int> from(250000, gap);
  std::vector<int> to(225000, gap);
  int k = 0;
  for (int blk = 0; blk < 50000; ++blk) {
    for (int j = 0; j < 3; ++j) from[static_cast<std::size_t>(blk * 5 + j)] = k++;
  }
  typed_copy({from.data(), 1, &a}, {to.data(), 1, &b});
  k = 0;
  for (int blk = 0; blk < 75000; ++blk) {
    for (int j = 0; j < 2; ++j) ASSERT_EQ(to[static_cast<std::size_t>(blk * 3 + j)], k++);
    ASSERT_EQ(to[static_cast<std::size_t>(blk * 3 + 2)], gap) << "block " << blk;
  }
}

}  // namespace
}  // namespace iris::device
