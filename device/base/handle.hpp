// MPI handles as include/iris/types.h makes them (IRIS_HANDLE): kind << 27
// | index, kind 1-15 and index below 2^27, so that every handle is a
// positive int. Each object table decodes its own kind's handles with these.
#pragma once

#include <cstddef>
#include <cstdint>

namespace iris::device {

inline constexpr unsigned handle_kind_shift = 27;
inline constexpr std::uint32_t handle_index_mask = (std::uint32_t{1} << handle_kind_shift) - 1;

// The kinds, as include/iris/types.h numbers them.
enum class handle_kind : std::uint32_t {
  comm = 1,
  group = 2,
  datatype = 3,
  op = 4,
  errhandler = 5,
  message = 6,
  request = 7,
  keyval = 8,
  info = 9,
  win = 10,
  session = 12,
};

constexpr bool handle_is(int handle, handle_kind kind) {
  return static_cast<std::uint32_t>(handle) >> handle_kind_shift ==
         static_cast<std::uint32_t>(kind);
}
constexpr std::size_t handle_index(int handle) {
  return static_cast<std::uint32_t>(handle) & handle_index_mask;
}
constexpr int handle_make(handle_kind kind, std::size_t index) {
  return static_cast<int>(static_cast<std::uint32_t>(kind) << handle_kind_shift |
                          static_cast<std::uint32_t>(index));
}

}  // namespace iris::device
