// Every tunable of the build, in one table: the device's, the transports',
// then each built netmod's. iris_info prints it.
#pragma once

#include <span>
#include <string>

#include "device/base/tunables.hpp"

namespace iris::device {

std::span<const tunable> tunables();

// The whole table as text, one tunable per entry with its current value.
inline std::string tunables_describe() {
  return tunables_describe(tunables());
}

}  // namespace iris::device
