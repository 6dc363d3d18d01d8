// iris_info: what this build of Iris is, the netmod a job started now would
// use and what it would choose (interfaces, libfabric provider), and every
// tunable with its current value (from the environment) and default. Needs
// no job; mpiexec --info runs it.
#include <hwloc.h>
#include <pmix.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "device/runtime/runtime.hpp"
#include "device/setup/tunables.hpp"
#include "include/mpi.h"

namespace {

// The transports a job started now would use: the netmod IRIS_NETMOD picks
// and what it would choose, and whether ranks of a node share memory.
// Returns false when the environment asks for something that cannot start.
bool print_transports() {
  try {
    std::printf("%s\n", iris::device::transports_preview().c_str());
    return true;
  } catch (const std::exception &e) {
    std::printf("netmod: cannot start: %s\n", e.what());
    return false;
  }
}

}  // namespace

int main() {
  std::printf("Iris %s (MPI %d.%d point-to-point runtime)\n", IRIS_VERSION_STRING, MPI_VERSION,
              MPI_SUBVERSION);
  std::printf("netmods built: %s\n", IRIS_NETMODS);
  const bool netmod_ok = print_transports();
  std::printf("pmi backends: pmix (%s), pmi-1 wire protocol, singleton\n", PMIx_Get_version());
  std::printf("hwloc: %s\n", HWLOC_VERSION);
  std::printf("\ntunables (environment variables read at MPI_Init):\n%s",
              iris::device::tunables_describe().c_str());
  return netmod_ok ? 0 : 1;
}
