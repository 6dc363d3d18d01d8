// Every tunable of the runtime, declared once with its default and help text.
// Each is read from the environment variable of the same name at MPI_Init.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace iris::device {

struct tunable {
  const char *name;  // also the environment variable
  std::int64_t default_value;
  std::int64_t min_value;
  std::int64_t max_value;
  const char *help;
};

std::span<const tunable> tunables();

struct settings {
  std::size_t shm_ring_size;
  std::size_t shm_fragment_size;
  int spin_count;  // -1: chosen at start-up
  int poll_batch;
  bool debug;
};

// Reads the environment. Throws std::runtime_error naming the variable and
// the accepted range when a value is malformed or out of range.
settings settings_load();

// The table as text, one tunable per line, for iris_info.
std::string tunables_describe();

}  // namespace iris::device
