// iris_info: what this build of Iris is and every tunable with its current
// value (from the environment) and default. Needs no job.
#include <hwloc.h>
#include <pmix.h>

#include <cstdio>

#include "device/tunables.hpp"
#include "include/mpi.h"

int main() {
  std::printf("Iris %s (MPI %d.%d point-to-point runtime)\n", IRIS_VERSION_STRING, MPI_VERSION,
              MPI_SUBVERSION);
  std::printf("transports: self, shm (per-pair rings, CMA or pipelined rendezvous)\n");
  std::printf("netmods: %s\n", IRIS_NETMODS);
  std::printf("pmi backends: pmix (%s), singleton\n", PMIx_Get_version());
  std::printf("hwloc: %s\n", HWLOC_VERSION);
  std::printf("\ntunables (environment variables read at MPI_Init):\n%s",
              iris::device::tunables_describe().c_str());
  return 0;
}
