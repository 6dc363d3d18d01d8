// Phase 2 of mpiexec: where each rank may run, from the hwloc topology.
#pragma once

#include <sched.h>

#include <string>
#include <vector>

#include "pmi/mpiexec/options.hpp"

namespace iris::mpiexec {

struct rank_binding {
  bool bound = false;
  cpu_set_t cpus;           // valid when bound; applied in the child before exec
  std::string description;  // for --report-bindings
};

// One entry per rank. With `core` (or `automatic` when nranks <= cores),
// rank r gets core r % cores: every hardware thread of that core. Only the
// cores mpiexec may run on count (hwloc drops the others). Throws
// launch_error when hwloc cannot read the topology.
[[nodiscard]] std::vector<rank_binding> plan_bindings(bind_policy policy, int nranks);

}  // namespace iris::mpiexec
