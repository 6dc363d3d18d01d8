#include "device/communicators/topology.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <utility>

#include "device/core/comm.hpp"

namespace iris::device {
namespace {

// Finds the best non-increasing factorisation of `n` into `slots` factors,
// each at most `cap`: the one whose largest and smallest factors are
// closest and, among those, whose smaller factors are the largest. Factors are taken from
// `divisors` (every divisor of the number being split, largest first); `chosen` holds the factors
// picked so far.
struct factor_search {
  std::vector<int> divisors;
  std::vector<int> chosen;
  std::vector<int> best;
  int best_spread = -1;

  explicit factor_search(int n) {
    std::vector<int> small;
    for (int d = 1; static_cast<long long>(d) * d <= n; ++d) {
      if (n % d != 0) continue;
      small.push_back(d);
      if (d != n / d) divisors.push_back(n / d);
    }
    divisors.insert(divisors.end(), small.rbegin(), small.rend());
  }

  // Whether x^r >= m.
  static bool power_reaches(long long x, std::size_t r, long long m) {
    long long p = 1;
    for (std::size_t i = 0; i < r && p < m; ++i) p *= x;
    return p >= m;
  }

  void run(int n, std::size_t slots, int cap) {
    if (slots == 0) {
      if (n != 1) return;
      const int spread = chosen.empty() ? 0 : chosen.front() - chosen.back();
      // Of equal spreads, the larger smallest factor, then the larger next
      // one up (13x9x8x6, not 13x12x6x6), as MPICH chooses.
      const bool evener =
          spread == best_spread &&
          std::lexicographical_compare(best.rbegin(), best.rend(), chosen.rbegin(), chosen.rend());
      if (best_spread < 0 || spread < best_spread || evener) {
        best_spread = spread;
        best = chosen;
      }
      return;
    }
    // Smallest first, from the first whose power reaches n (balanced
    // choices come first, so the bounds below cut early), up to min(n, cap).
    // The result does not depend on the order: the best is the least spread,
    // then the evenest, a total order.
    const int top = std::min(n, cap);
    const auto last = std::lower_bound(divisors.begin(), divisors.end(), top, std::greater<>());
    for (auto it = divisors.rbegin(); it != std::make_reverse_iterator(last); ++it) {
      const int d = *it;
      if (n % d != 0) continue;
      // The remaining slots hold factors of at most d: d^slots must reach n.
      if (!power_reaches(d, slots, n)) continue;
      if (best_spread >= 0) {
        // The smallest factor will be at most d and at most the
        // (slots-1)th root of n / d: a spread past the best is lost (equal
        // spreads still compete on evenness). The root only shrinks as d
        // grows.
        const int first = chosen.empty() ? d : chosen.front();
        const int under = first - best_spread;  // the smallest must reach this
        if (d < under) continue;
        if (slots > 1 && under > 1 && power_reaches(under, slots - 1, n / d + 1)) break;
      }
      chosen.push_back(d);
      run(n / d, slots - 1, d);
      chosen.pop_back();
    }
  }
};

std::map<int, std::pair<std::uint32_t, cart_topology>> &attached() {
  static std::map<int, std::pair<std::uint32_t, cart_topology>> table;
  return table;
}

}  // namespace

int cart_topology::size() const {
  int n = 1;
  for (int d : dims) n *= d;
  return n;
}

void cart_topology::coords_of(int rank, std::span<int> coords) const {
  // Row-major: the last dimension varies fastest.
  for (int i = ndims() - 1; i >= 0; --i) {
    const auto at = static_cast<std::size_t>(i);
    coords[at] = rank % dims[at];
    rank /= dims[at];
  }
}

int cart_topology::rank_of(std::span<const int> coords) const {
  int rank = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    int c = coords[i];
    if (c < 0 || c >= dims[i]) {
      if (!periods[i]) return -1;
      c = ((c % dims[i]) + dims[i]) % dims[i];
    }
    rank = rank * dims[i] + c;
  }
  return rank;
}

void cart_topology::shift(int rank, int direction, int disp, int &source, int &dest) const {
  std::vector<int> coords(dims.size());
  coords_of(rank, coords);
  const auto at = static_cast<std::size_t>(direction);
  const int here = coords[at];
  coords[at] = here + disp;
  dest = rank_of(coords);
  coords[at] = here - disp;
  source = rank_of(coords);
}

bool dims_create(int nnodes, std::span<int> dims) {
  if (nnodes < 1) return false;
  int fixed = 1;
  std::size_t free_slots = 0;
  for (int d : dims) {
    if (d < 0) return false;
    if (d == 0) {
      ++free_slots;
    } else {
      fixed *= d;
      if (fixed > nnodes) return false;
    }
  }
  if (nnodes % fixed != 0) return false;
  const int rest = nnodes / fixed;
  if (free_slots == 0) return rest == 1;
  factor_search search(rest);
  search.run(rest, free_slots, rest);
  if (search.best_spread < 0) return false;
  std::size_t next = 0;
  for (int &d : dims) {
    if (d == 0) d = search.best[next++];
  }
  return true;
}

const cart_topology *cart_of(const communicator &comm) {
  const auto it = attached().find(comm.handle);
  if (it == attached().end() || it->second.first != comm.context) return nullptr;
  return &it->second.second;
}

void cart_attach(const communicator &comm, cart_topology topology) {
  attached()[comm.handle] = {comm.context, std::move(topology)};
}

namespace {

std::map<int, std::pair<std::uint32_t, graph_topology>> &graphs() {
  static std::map<int, std::pair<std::uint32_t, graph_topology>> map;
  return map;
}

}  // namespace

const graph_topology *graph_of(const communicator &comm) {
  const auto it = graphs().find(comm.handle);
  if (it == graphs().end() || it->second.first != comm.context) return nullptr;
  return &it->second.second;
}

void graph_attach(const communicator &comm, graph_topology topology) {
  graphs()[comm.handle] = {comm.context, std::move(topology)};
}

}  // namespace iris::device
