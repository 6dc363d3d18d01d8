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

#include "device/runtime.hpp"
#include "device/tunables.hpp"
#include "include/mpi.h"
#include "netmods/netmod.hpp"

namespace {

// The netmod section: which one IRIS_NETMOD picks and what it would choose.
// Returns false when the environment asks for something that cannot start.
bool print_netmod() {
  using namespace iris;
  const char *asked = std::getenv("IRIS_NETMOD");
  const bool by_default = asked == nullptr || *asked == '\0';
  try {
    const device::settings s = device::settings_load();
    std::printf(
        "netmod: %s (%s)\n", s.netmod.c_str(),
        by_default ? "the build's default; IRIS_NETMOD chooses another" : "chosen by IRIS_NETMOD");
    std::printf("shm between ranks of a node: %s\n",
                s.use_shm ? "yes" : "no (IRIS_SHM=0: every peer through the netmod)");
    const auto net = netmod::netmod_create(s.netmod);
    std::printf("%s\n", net->preview(device::netmod_config(s)).c_str());
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
  std::printf("transports: self, shm (per-pair rings, CMA or pipelined rendezvous)\n");
  std::printf("netmods built: %s\n", IRIS_NETMODS);
  const bool netmod_ok = print_netmod();
  std::printf("pmi backends: pmix (%s), pmi-1 wire protocol, singleton\n", PMIx_Get_version());
  std::printf("hwloc: %s\n", HWLOC_VERSION);
  std::printf("\ntunables (environment variables read at MPI_Init):\n%s",
              iris::device::tunables_describe().c_str());
  return netmod_ok ? 0 : 1;
}
