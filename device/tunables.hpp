// Every tunable of the runtime, declared once with its default and help text.
// Each is read from the environment variable of the same name at MPI_Init;
// iris_info prints the table. The device declares its own here; each netmod
// declares its own beside it (netmods/<name>/settings.cpp) and reads them
// with tunable_value / tunable_text when it starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace iris::device {

struct tunable {
  const char *name;  // also the environment variable
  std::int64_t default_value;
  std::int64_t min_value;
  std::int64_t max_value;
  const char *choices;  // "a,b,c": the value is a name, read as its index; "": any text;
                        // nullptr: an integer
  const char *help;
};

// The device's tunables, then each built netmod's.
std::span<const tunable> tunables();

// The value of `t` from its environment variable, or its default when that
// is unset or empty. Throws std::runtime_error naming the variable and the
// accepted values when it is malformed or out of range.
std::int64_t tunable_value(const tunable &t);
// The text of a tunable whose value is any text ("" when unset).
std::string tunable_text(const tunable &t);

enum class rndv_engine : std::uint8_t { automatic = 0, cma = 1, pipeline = 2 };

struct settings {
  std::size_t shm_ring_size;
  std::size_t shm_fragment_size;
  int shm_dense_ranks;             // at most this many local ranks: a ring per pair
  std::size_t shm_queue_cells;     // cells of each rank's receive queue
  std::size_t shm_pool_size;       // most bytes of pooled pair rings per node
  std::uint64_t shm_busy_packets;  // queued packets to one peer before a pair ring
  std::size_t eager_limit;
  int eager_window;  // credit units (IRIS_EAGER_WINDOW / credit_unit)
  rndv_engine engine;
  std::size_t cma_threshold;
  std::size_t pipeline_large;
  std::size_t scattered_min_block;  // smallest mean block of a scattered single-copy read
  std::size_t net_fragment_size;
  std::size_t net_eager_limit;
  int net_eager_window;  // credit units
  std::string netmod;    // one of the built netmods
  bool use_shm;          // false: every peer through the netmod
  bool net_rma = true;
  int spin_count;   // -1: chosen at start-up
  int sleep;        // -1: when oversubscribed; 0 never; 1 whenever every transport can wake
  int sleep_after;  // idle yields before sleeping
  int sleep_timeout_ms;
  int poll_batch;
  bool debug;
  bool stats;
};

// Reads the environment. Throws std::runtime_error naming the variable and
// the accepted values when one is malformed or out of range.
settings settings_load();

// The table as text, one tunable per entry with its current value.
std::string tunables_describe();

}  // namespace iris::device
