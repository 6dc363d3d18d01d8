// MPI_Dims_create's factor choice (device::dims_create), which searches
// with bounds, against a plain enumeration of every non-increasing
// factorisation: the least spread (largest - smallest factor), then the
// evenest (compared from the smallest factor up), as MPICH chooses.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "device/communicators/topology.hpp"

namespace {

void enumerate(int n, int slots, int cap, std::vector<int> &chosen, std::vector<int> &best,
               int &best_spread) {
  if (slots == 0) {
    if (n != 1) return;
    const int spread = chosen.empty() ? 0 : chosen.front() - chosen.back();
    const bool better =
        best_spread < 0 || spread < best_spread ||
        (spread == best_spread &&
         std::lexicographical_compare(best.rbegin(), best.rend(), chosen.rbegin(), chosen.rend()));
    if (better) {
      best_spread = spread;
      best = chosen;
    }
    return;
  }
  for (int d = std::min(n, cap); d >= 1; --d) {
    if (n % d != 0) continue;
    chosen.push_back(d);
    enumerate(n / d, slots - 1, d, chosen, best, best_spread);
    chosen.pop_back();
  }
}

std::vector<int> reference(int n, int slots) {
  std::vector<int> chosen;
  std::vector<int> best;
  int spread = -1;
  enumerate(n, slots, n, chosen, best, spread);
  return best;
}

TEST(DimsCreate, MatchesEveryFactorisationsBest) {
  for (int slots = 1; slots <= 4; ++slots) {
    for (int n = 1; n <= (slots <= 2 ? 5000 : 1500); ++n) {
      std::vector<int> dims(static_cast<std::size_t>(slots), 0);
      ASSERT_TRUE(iris::device::dims_create(n, dims)) << n << " in " << slots;
      ASSERT_EQ(dims, reference(n, slots)) << n << " in " << slots;
    }
  }
  for (int n : {5040, 6240, 10800, 19152, 40320, 65536, 720720}) {
    for (int slots : {3, 5, 7}) {
      std::vector<int> dims(static_cast<std::size_t>(slots), 0);
      ASSERT_TRUE(iris::device::dims_create(n, dims));
      EXPECT_EQ(dims, reference(n, slots)) << n << " in " << slots;
    }
  }
}

// Fixed entries stay; the free ones share what they leave.
TEST(DimsCreate, KeepsFixedEntries) {
  std::vector<int> dims = {0, 3, 0};
  ASSERT_TRUE(iris::device::dims_create(72, dims));
  EXPECT_EQ(dims, (std::vector<int>{6, 3, 4}));
  std::vector<int> bad = {0, 5};
  EXPECT_FALSE(iris::device::dims_create(12, bad));
}

}  // namespace
