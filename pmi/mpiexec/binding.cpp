#include "pmi/mpiexec/binding.hpp"

#include <hwloc.h>
#include <hwloc/glibc-sched.h>

#include <cstdlib>
#include <memory>

#include "pmi/mpiexec/job.hpp"

namespace iris::mpiexec {
namespace {

struct topology_deleter {
  void operator()(hwloc_topology *topology) const { hwloc_topology_destroy(topology); }
};
using topology_ptr = std::unique_ptr<hwloc_topology, topology_deleter>;

topology_ptr load_topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw launch_error("hwloc_topology_init failed");
  topology_ptr topology(raw);
  // Cores and hardware threads are all we look at; skipping caches, NUMA
  // details and I/O devices makes the load several times faster.
  hwloc_topology_set_all_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_type_filter(raw, HWLOC_OBJ_CORE, HWLOC_TYPE_FILTER_KEEP_ALL);
  hwloc_topology_set_type_filter(raw, HWLOC_OBJ_PU, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_load(raw) != 0) throw launch_error("hwloc cannot read this host's topology");
  return topology;
}

std::string cpu_list(hwloc_const_bitmap_t set) {
  char *text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || text == nullptr) return "?";
  std::string list(text);
  std::free(text);
  return list;
}

}  // namespace

std::vector<rank_binding> plan_bindings(bind_policy policy, int nranks) {
  std::vector<rank_binding> bindings(static_cast<std::size_t>(nranks));
  if (policy == bind_policy::none) {
    for (rank_binding &b : bindings) b.description = "not bound (--bind-to none)";
    return bindings;
  }
  const topology_ptr topology = load_topology();
  // A machine hwloc shows without cores (some VMs) still has hardware threads.
  hwloc_obj_type_t unit = HWLOC_OBJ_CORE;
  int units = hwloc_get_nbobjs_by_type(topology.get(), unit);
  if (units <= 0) {
    unit = HWLOC_OBJ_PU;
    units = hwloc_get_nbobjs_by_type(topology.get(), unit);
  }
  if (units <= 0) throw launch_error("hwloc finds no cores on this host");
  if (policy == bind_policy::automatic && nranks > units) {
    // Oversubscribed: bound ranks could not leave a core to a rank that
    // waits; unbound, the scheduler moves them.
    const std::string why = "not bound (" + count_ranks(static_cast<std::size_t>(nranks)) + " on " +
                            std::to_string(units) + " cores)";
    for (rank_binding &b : bindings) b.description = why;
    return bindings;
  }
  for (int rank = 0; rank < nranks; ++rank) {
    const int index = rank % units;
    hwloc_obj_t core = hwloc_get_obj_by_type(topology.get(), unit, static_cast<unsigned>(index));
    rank_binding &b = bindings[static_cast<std::size_t>(rank)];
    CPU_ZERO(&b.cpus);
    if (core == nullptr || core->cpuset == nullptr ||
        hwloc_cpuset_to_glibc_sched_affinity(topology.get(), core->cpuset, &b.cpus,
                                             sizeof b.cpus) != 0) {
      throw launch_error("hwloc cannot describe core " + std::to_string(index));
    }
    b.bound = true;
    b.description =
        "bound to core " + std::to_string(index) + " (cpus " + cpu_list(core->cpuset) + ")";
  }
  return bindings;
}

}  // namespace iris::mpiexec
