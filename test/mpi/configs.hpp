// The transport and protocol configurations of the job tests
// (jobs_test.cpp, surface_test.cpp).
#pragma once

#include <iterator>

#include "test/mpi/jobs.hpp"

namespace iris::test {

// The transport and protocol configurations every job runs in: shared
// memory only, each netmod only (IRIS_SHM=0), and mixed (two simulated
// nodes: shm within each, the netmod between them). Those of a netmod this
// build lacks are skipped.
struct protocol_config {
  const char *name;
  env_list env;
  int nodes = 1;
  const char *netmod = "";
  int max_ranks = 8;  // larger jobs are skipped
};

inline const protocol_config configs[] = {
    {"defaults", {}},
    {"cma", {{"IRIS_RNDV_ENGINE", "cma"}}},
    // Every rendezvous message is written into place around the cache.
    {"pipeline", {{"IRIS_RNDV_ENGINE", "pipeline"}, {"IRIS_NONTEMPORAL_MIN", "1"}}},
    // One credit and tiny rings: nearly everything goes by rendezvous in
    // 64-byte fragments, and rings fill constantly.
    {"starved",
     {{"IRIS_EAGER_WINDOW", "128"},
      {"IRIS_SHM_RING_SIZE", "1024"},
      {"IRIS_SHM_FRAGMENT_SIZE", "64"}}},
    {"all_rendezvous", {{"IRIS_EAGER_LIMIT", "0"}}},
    // Eager messages that queue behind full rings (sends complete from the
    // queue, not at once).
    {"crowded",
     {{"IRIS_EAGER_WINDOW", "4096"},
      {"IRIS_SHM_RING_SIZE", "1024"},
      {"IRIS_SHM_FRAGMENT_SIZE", "64"}}},
    // The receive queues of large nodes, at small rank counts: a pair
    // switches to a pool ring after four packets, and the pool (7 rings)
    // runs out at 4 and 8 ranks, so that some pairs stay on the queues.
    {"queues",
     {{"IRIS_SHM_DENSE_RANKS", "0"}, {"IRIS_SHM_BUSY_PACKETS", "4"}, {"IRIS_SHM_POOL_SIZE", "2M"}}},
    // No pool at all, queues of 16 cells (records of at most 8 cells) and
    // one credit: everything through queues that fill constantly.
    {"queues_starved",
     {{"IRIS_SHM_DENSE_RANKS", "0"},
      {"IRIS_SHM_POOL_SIZE", "0"},
      {"IRIS_SHM_QUEUE_CELLS", "16"},
      {"IRIS_EAGER_WINDOW", "128"}},
     1,
     "",
     4},
    {"tcp", {{"IRIS_SHM", "0"}, {"IRIS_NETMOD", "tcp"}}, 1, "tcp"},
    // Through the netmod with one credit and 64-byte rendezvous fragments.
    {"tcp_starved",
     {{"IRIS_SHM", "0"},
      {"IRIS_NETMOD", "tcp"},
      {"IRIS_NET_EAGER_WINDOW", "128"},
      {"IRIS_NET_FRAGMENT_SIZE", "64"},
      {"IRIS_NONTEMPORAL_MIN", "1"}},
     1,
     "tcp"},
    {"mixed", {{"IRIS_NETMOD", "tcp"}}, 2, "tcp"},
    // libfabric: tcp;ofi_rxm alone and mixed with shm (rendezvous by RMA
    // reads), and the shm provider with one credit, 64-byte fragments and
    // no RMA (rendezvous data as packets). The sockets provider passes too,
    // but takes minutes with 64-byte fragments on 2 cores: unit tests only.
    // OFI jobs stop at 4 ranks: each rank of an OFI job spends ~0.3 s of
    // CPU starting libfabric and rxm, so on 2 cores an 8-rank OFI job takes
    // seconds (ofi_mixed's 8-rank jobs were 87 s of the suite on
    // 2026-12-02), and these paths differ from 4 ranks' only in how many
    // peers there are. Eight ranks on two nodes run as mixed, over tcp.
    {"ofi_rxm", {{"IRIS_SHM", "0"}, ofi_rxm[0], ofi_rxm[1]}, 1, "ofi", 4},
    {"ofi_mixed", ofi_rxm, 2, "ofi", 4},
    {"ofi_shm_starved",
     {{"IRIS_SHM", "0"},
      {"IRIS_NETMOD", "ofi"},
      {"IRIS_OFI_PROVIDER", "shm"},
      {"IRIS_NET_RMA", "0"},
      {"IRIS_NET_EAGER_WINDOW", "128"},
      {"IRIS_NET_FRAGMENT_SIZE", "64"}},
     1,
     "ofi",
     4},
};

// The index in configs[] of the configuration named `name` (0 if none).
inline int config_index(const char *name) {
  for (std::size_t i = 0; i < std::size(configs); ++i) {
    if (std::string(configs[i].name) == name) return static_cast<int>(i);
  }
  return 0;
}

}  // namespace iris::test
