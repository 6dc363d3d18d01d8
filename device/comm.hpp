// Communicators: a group of ranks and a context id that keeps their traffic
// apart from every other communicator's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace iris::device {

struct communicator {
  int handle = 0;
  // Point-to-point traffic uses `context`; collectives use `context + 1`, so
  // that they never match user messages whatever the tags.
  std::uint32_t context = 0;
  int rank = 0;
  int size = 0;
  std::vector<int> world_rank;  // rank in this communicator -> rank in the world
  int errhandler = 0;
  std::string name;

  std::uint32_t collective_context() const { return context + 1; }
};

inline constexpr std::uint32_t world_context = 0;
inline constexpr std::uint32_t self_context = 2;

}  // namespace iris::device
