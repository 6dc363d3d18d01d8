// Tunables: each declared once with its default and help text, and read
// from the environment variable of the same name at MPI_Init. The device
// declares its own here, the transports theirs in transports/settings.cpp,
// and each netmod its own beside it (netmods/<name>/settings.cpp); all read
// them with tunable_value / tunable_text. device/setup/tunables.hpp joins the
// tables, and iris_info prints them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

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

// The device's own tunables (IRIS_EAGER_LIMIT, IRIS_SPIN_COUNT, ...).
std::span<const tunable> device_tunables();

// The value of `t` from its environment variable, or its default when that
// is unset or empty. Throws std::runtime_error naming the variable and the
// accepted values when it is malformed or out of range.
std::int64_t tunable_value(const tunable &t);
// The tunable called `name` in `in`; throws std::logic_error when there is
// none (a name misspelt in the code).
const tunable &tunable_named(std::span<const tunable> in, std::string_view name);
// The name chosen for a tunable whose value is one of its choices.
std::string tunable_choice(const tunable &t);
// The text of a tunable whose value is any text ("" when unset).
std::string tunable_text(const tunable &t);

// The device's settings (the transports read theirs: transport.hpp).
struct settings {
  std::size_t eager_limit;
  int eager_window;  // credit units (IRIS_EAGER_WINDOW / credit_unit)
  int spin_count;    // -1: chosen at start-up
  int sleep;         // -1: when oversubscribed; 0 never; 1 whenever every transport can wake
  int sleep_after;   // idle yields before sleeping
  int sleep_timeout_ms;
  int poll_batch;
  std::size_t nontemporal_min;  // SIZE_MAX: never (IRIS_NONTEMPORAL_MIN=0)
  int async_progress;           // 0 auto, 1 on, 2 off
  int progress_nice;            // the progress thread's nice value (IRIS_PROGRESS_NICE)
  std::uint64_t am_pull_min;
  std::uint64_t window_rma_min;  // IRIS_WINDOW_RMA_MIN
  bool coll_shm;                 // IRIS_COLL_SHM
  std::int64_t coll_shm_slot;    // -1: chosen by the communicator's size
  bool coll_cma;                 // IRIS_COLL_CMA
  int coll_allreduce;            // IRIS_COLL_ALLREDUCE: nbc::allreduce_algorithm
  int coll_allgather;            // IRIS_COLL_ALLGATHER: 0 auto, 1 ring, 2 bruck
  int coll_alltoall;             // IRIS_COLL_ALLTOALL: 0 auto, 1 pairwise, 2 bruck
  bool debug;
  bool stats;
  bool recovery;  // IRIS_RECOVERY
};

// Reads the environment. Throws std::runtime_error naming the variable and
// the accepted values when one is malformed or out of range.
settings settings_load();

// `all` as text, one tunable per entry with its current value.
std::string tunables_describe(std::span<const tunable> all);

}  // namespace iris::device
