#include "device/setup/tunables.hpp"

#include <vector>

#include "device/core/transport.hpp"

namespace iris::device {

std::span<const tunable> tunables() {
  static const std::vector<tunable> all = [] {
    const std::span<const tunable> own = device_tunables();
    std::vector<tunable> v(own.begin(), own.end());
    for (const tunable &t : transport_tunables()) v.push_back(t);
    return v;
  }();
  return all;
}

}  // namespace iris::device
