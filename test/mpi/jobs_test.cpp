// Runs the MPI test programs through Iris's own mpiexec at 1, 2, 4 and 8
// ranks in every job configuration (configs.hpp), large counts and the
// nonblocking collectives (the API surface's programs, sessions and dynamic
// processes: surface_test.cpp). After every job nothing of
// Iris's may remain in /dev/shm. The failure cases, the transports' edges,
// large nodes and other launchers are in platform_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "test/mpi/configs.hpp"
#include "test/mpi/jobs.hpp"

namespace iris::test {
namespace {

class JobTest : public ::testing::TestWithParam<std::tuple<int, int>> {
 protected:
  int ranks() const { return std::get<0>(GetParam()); }
  const env_list &env() const { return configs[std::get<1>(GetParam())].env; }
  int nodes() const { return configs[std::get<1>(GetParam())].nodes; }
  void SetUp() override {
    const std::string netmod = configs[std::get<1>(GetParam())].netmod;
    if (!netmod.empty() && netmods_built.find("," + netmod + ",") == std::string::npos) {
      GTEST_SKIP() << "this build has no " << netmod << " netmod (-Dnetmods)";
    }
    // One rank alone starts no netmod: the shm configurations cover it.
    if (!netmod.empty() && ranks() == 1) GTEST_SKIP() << "one rank uses no netmod";
    if (ranks() > configs[std::get<1>(GetParam())].max_ranks) {
      GTEST_SKIP() << "at most " << configs[std::get<1>(GetParam())].max_ranks
                   << " ranks in this configuration (see configs[])";
    }
  }
  void TearDown() override {
    EXPECT_EQ(shm_leftovers(), std::vector<std::string>{}) << "left in /dev/shm";
  }
  // Programs that test calls above the transports (communicators,
  // attributes, topologies, errors, collectives, threads) run in six
  // configurations only: shm, starved shm, the large-node queues, tcp, two
  // nodes over tcp, and two nodes over OFI. The others would repeat the
  // same paths; the point-to-point programs run everywhere.
  bool above_transports() const {
    static const std::set<std::string> kept = {"defaults", "starved", "queues",
                                               "tcp",      "mixed",   "ofi_mixed"};
    return kept.count(configs[std::get<1>(GetParam())].name) != 0;
  }
};

#define SKIP_UNLESS_ABOVE_TRANSPORTS() \
  if (!above_transports()) GTEST_SKIP() << "runs in the six configurations of above_transports()"

TEST_P(JobTest, Ring) {
  const run_result r = job(ranks(), "ring", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ring of " + std::to_string(ranks()) + " ranks"), std::string::npos)
      << r.output;
}

TEST_P(JobTest, PointToPointSemantics) {
  const run_result r = job(ranks(), "p2p", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("p2p: all checks passed"), std::string::npos) << r.output;
}

TEST_P(JobTest, Collectives) {
  SKIP_UNLESS_ABOVE_TRANSPORTS();
  const run_result r = job(ranks(), "coll", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("coll: all checks passed on " + std::to_string(ranks()) + " ranks"),
            std::string::npos)
      << r.output;
}

// The collectives through each communicator's shared segment on one node
// (device/collectives/node.hpp): a seeded sequence over several
// communicators at once against serial references, with the segment, through
// messages only (IRIS_COLL_SHM=0), and with slots so small that most calls
// go through messages and the rest through the segment (IRIS_COLL_SHM_SLOT).
TEST(NodeCollectives, SeededSequenceAgainstReferences) {
  const std::pair<const char *, env_list> modes[] = {
      {"segment", {}},
      {"messages", {{"IRIS_COLL_SHM", "0"}}},
      {"tiny_slots", {{"IRIS_COLL_SHM_SLOT", "64"}}},
      {"no_cma", {{"IRIS_COLL_CMA", "0"}}},
  };
  for (int ranks : {2, 3, 4, 5, 8}) {
    for (const auto &[mode, env] : modes) {
      if (std::string(mode) != "segment" && ranks != 3 && ranks != 4) continue;
      for (const char *seed : {"1", "7"}) {
        const run_result r = job(ranks, "coll_node", {seed, "600"}, env, 120);
        ASSERT_EQ(r.exit_code, 0) << mode << " seed " << seed << "\n" << r.output;
        EXPECT_NE(r.output.find("coll_node: all checks passed on " + std::to_string(ranks)),
                  std::string::npos)
            << r.output;
      }
    }
  }
  EXPECT_EQ(shm_leftovers(), std::vector<std::string>{}) << "left in /dev/shm";
}

// coll.c's every call with 64-byte slots: nearly every call a large step,
// read in place, its elements split among the ranks (a user op sees runs of
// whole elements of a derived type only).
TEST(NodeCollectives, EveryCallInTinySlots) {
  for (int ranks : {2, 3, 4, 8}) {
    if (ranks == 8 && sanitized) continue;
    const run_result r = job(ranks, "coll", {}, {{"IRIS_COLL_SHM_SLOT", "64"}}, 120);
    ASSERT_EQ(r.exit_code, 0) << ranks << " ranks\n" << r.output;
    EXPECT_NE(r.output.find("coll: all checks passed on " + std::to_string(ranks) + " ranks"),
              std::string::npos)
        << r.output;
  }
}

// The same sequence across 2 and 4 simulated nodes (tcp between them): each
// node's ranks through their segment, the leaders by messages
// (collectives/hierarchy.hpp); the halves of the split and the made
// communicator span nodes in other shapes than the world.
TEST(NodeCollectives, AcrossNodesInTwoLevels) {
  for (int nodes : {2, 4}) {
    for (int ranks : {4, 5, 8}) {
      for (const char *seed : {"1", "7"}) {
        const run_result r =
            job(ranks, "coll_node", {seed, "400"}, {{"IRIS_NETMOD", "tcp"}}, 120, nodes);
        ASSERT_EQ(r.exit_code, 0) << nodes << " nodes, seed " << seed << "\n" << r.output;
        EXPECT_NE(r.output.find("coll_node: all checks passed on " + std::to_string(ranks)),
                  std::string::npos)
            << r.output;
      }
    }
  }
  EXPECT_EQ(shm_leftovers(), std::vector<std::string>{}) << "left in /dev/shm";
}

// Allreduce through messages with each algorithm forced (IRIS_COLL_ALLREDUCE,
// device/api/coll/nbc_allreduce.cpp), blocking, nonblocking and persistent,
// against serial references: over shm at 2, 3, 4, 5 and 8 ranks (not 8
// under a sanitizer), over tcp and across 2 simulated nodes at 5 and 4. auto runs too: the segment
// for every form (with 64-byte slots too, so that nearly every call is a large step read in place),
// doubling or halving by size through messages.
TEST(CollectiveAlgorithms, AllreduceEachAlgorithmForced) {
  const env_list tcp = {{"IRIS_SHM", "0"}, {"IRIS_NETMOD", "tcp"}};
  for (const char *algorithm : {"auto", "doubling", "halving", "ring"}) {
    struct run {
      int ranks, nodes;
      env_list env;
    };
    std::vector<run> runs;
    for (int ranks : {2, 3, 4, 5, 8}) {
      if (ranks < 8 || !sanitized) runs.push_back({ranks, 1, {}});
    }
    // 64-byte slots: nearly every nonblocking call is a large step.
    if (std::string(algorithm) == "auto") {
      for (int ranks : {3, 4, 8}) {
        if (ranks < 8 || !sanitized) runs.push_back({ranks, 1, {{"IRIS_COLL_SHM_SLOT", "64"}}});
      }
    }
    runs.push_back({5, 1, tcp});
    runs.push_back({4, 2, {{"IRIS_NETMOD", "tcp"}}});
    for (run &r : runs) {
      r.env.push_back({"IRIS_COLL_ALLREDUCE", algorithm});
      // Under a sanitizer a third of the sequence: 40 s for the 26 jobs
      // with all of it.
      const run_result out =
          job(r.ranks, "coll_allreduce", {"5", sanitized ? "100" : "300"}, r.env, 120, r.nodes);
      ASSERT_EQ(out.exit_code, 0) << algorithm << " at " << r.ranks << " ranks on " << r.nodes
                                  << " nodes\n"
                                  << out.output;
      EXPECT_NE(out.output.find("coll_allreduce: all checks passed on " + std::to_string(r.ranks)),
                std::string::npos)
          << out.output;
    }
  }
}

// The blocking Allgather and Alltoall through messages with each algorithm
// forced (IRIS_COLL_ALLGATHER, IRIS_COLL_ALLTOALL,
// device/api/coll/coll_gather.cpp and coll_alltoall.cpp): coll.c (every count, in place, split
// communicators) and derived.c (derived layouts, their gaps untouched) over
// shm at 2, 3, 5 and 8 ranks (not 8 under a sanitizer), over tcp at 5, and
// with auto across 2 simulated nodes at 4, where auto takes Bruck's or the
// other by size.
TEST(CollectiveAlgorithms, AllgatherAndAlltoallEachAlgorithmForced) {
  struct run {
    int ranks, nodes;
    env_list env;
  };
  std::vector<run> runs;
  const std::pair<const char *, std::vector<const char *>> forced[] = {
      {"IRIS_COLL_ALLGATHER", {"ring", "bruck"}},
      {"IRIS_COLL_ALLTOALL", {"pairwise", "bruck", "linear"}}};
  for (const auto &[setting, algorithms] : forced) {
    for (const char *algorithm : algorithms) {
      for (int ranks : {2, 3, 5, 8}) {
        if (ranks < 8 || !sanitized) runs.push_back({ranks, 1, {{setting, algorithm}}});
      }
      runs.push_back({5, 1, {{setting, algorithm}, {"IRIS_SHM", "0"}, {"IRIS_NETMOD", "tcp"}}});
    }
  }
  runs.push_back({4, 2, {{"IRIS_NETMOD", "tcp"}}});
  for (const run &r : runs) {
    for (const char *program : {"coll", "derived"}) {
      const run_result out = job(r.ranks, program, {}, r.env, 120, r.nodes);
      ASSERT_EQ(out.exit_code, 0) << program << " at " << r.ranks << " ranks on " << r.nodes
                                  << " nodes, " << r.env.front().first << "="
                                  << r.env.front().second << "\n"
                                  << out.output;
      EXPECT_NE(out.output.find(std::string(program) + ": all checks passed on " +
                                std::to_string(r.ranks)),
                std::string::npos)
          << out.output;
    }
  }
}

TEST_P(JobTest, StormChecksEveryByteAndTheOrder) {
  for (const char *seed : {"1", "2"}) {
    const run_result r = job(ranks(), "storm", {seed, "150"}, env(), 120, nodes());
    ASSERT_EQ(r.exit_code, 0) << "seed " << seed << "\n" << r.output;
    EXPECT_NE(r.output.find("all bytes and orders checked"), std::string::npos) << r.output;
  }
}

TEST_P(JobTest, SendModesProbesCancelAndCompletion) {
  const run_result r = job(ranks(), "modes", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("modes: all checks passed"), std::string::npos) << r.output;
}

TEST_P(JobTest, NoFetchDeadlockAndBoundedUnexpectedMemory) {
  const run_result r = job(ranks(), "deadlock", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("deadlock: all checks passed"), std::string::npos) << r.output;
}

TEST_P(JobTest, CommunicatorsAndGroups) {
  SKIP_UNLESS_ABOVE_TRANSPORTS();
  const run_result r = job(ranks(), "comms", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("comms: all checks passed"), std::string::npos) << r.output;
}

TEST_P(JobTest, DerivedDatatypes) {
  const run_result r = job(ranks(), "types", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("types: all checks passed"), std::string::npos) << r.output;
}

// Derived datatypes through every call that takes one: buffered sends,
// matched receives, Sendrecv_replace, persistent requests and collectives.
TEST_P(JobTest, DerivedDatatypesInEveryCall) {
  const run_result r = job(ranks(), "derived", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("derived: all checks passed on " + std::to_string(ranks()) + " ranks"),
            std::string::npos)
      << r.output;
}

// MPI_BOTTOM with absolute displacements (separate variables) in every call.
TEST_P(JobTest, AbsoluteAddressesAtBottom) {
  const run_result r = job(ranks(), "bottom", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("bottom: all checks passed on " + std::to_string(ranks()) + " ranks"),
            std::string::npos)
      << r.output;
}

TEST_P(JobTest, ArgumentErrorsReturnTheirClasses) {
  SKIP_UNLESS_ABOVE_TRANSPORTS();
  const run_result r = job(ranks(), "errors", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("errors: all classes as expected"), std::string::npos) << r.output;
}

TEST_P(JobTest, InfoDimsAndCartesianTopologies) {
  SKIP_UNLESS_ABOVE_TRANSPORTS();
  const run_result r = job(ranks(), "env", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("env: all checks passed"), std::string::npos) << r.output;
}

// Keyvals and attributes: copy and delete callbacks across dup and free,
// the MPI-1 names, the predefined attributes, the error classes; at
// MPI_Finalize, MPI_COMM_SELF's delete callbacks run the last set first.
TEST_P(JobTest, AttributesAndTheirCallbacks) {
  SKIP_UNLESS_ABOVE_TRANSPORTS();
  const run_result r = job(ranks(), "attrs", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("attrs: all checks passed on " + std::to_string(ranks()) + " ranks"),
            std::string::npos)
      << r.output;
  const std::size_t third = r.output.find("attrs: self delete 3\n");
  const std::size_t second = r.output.find("attrs: self delete 2\n");
  const std::size_t first = r.output.find("attrs: self delete 1\n");
  ASSERT_NE(third, std::string::npos) << r.output;
  EXPECT_TRUE(third < second && second < first && first != std::string::npos) << r.output;
  EXPECT_EQ(occurrences(r.output, "attrs: self delete "), 3U) << r.output;
}

// Split_type (by the node of each rank: a configuration with two nodes
// splits in two), create_group, idup, dup_with_info and info hints, range
// groups, test_inter, and the error classes.
TEST_P(JobTest, CommunicatorConstructorsAndSplitType) {
  SKIP_UNLESS_ABOVE_TRANSPORTS();
  const run_result r = job(ranks(), "commsplit", {std::to_string(nodes())}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("commsplit: all checks passed on " + std::to_string(ranks()) +
                          " ranks, " + std::to_string(std::min(nodes(), ranks())) + " nodes"),
            std::string::npos)
      << r.output;
}

// MPI_Comm_idup(_with_info) without blocking: rank 0 receives from every
// other rank (who started their idup) before starting its own; four idups
// at once on world and on the halves, started in opposite orders; one
// overlapped by an Iallreduce and a ring on its parent; an
// intercommunicator's idup (idup.c). Before the agreement ran in the
// progress engine this hung.
TEST_P(JobTest, NonblockingCommDup) {
  SKIP_UNLESS_ABOVE_TRANSPORTS();
  const run_result r = job(ranks(), "idup", {}, env(), 60, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("idup: all checks passed on " + std::to_string(ranks()) + " ranks"),
            std::string::npos)
      << r.output;
}

// An intercommunicator of the even and odd halves: point-to-point across
// it and its dup, merges in both orders, MPI_ERR_COMM for collectives.
TEST_P(JobTest, Intercommunicators) {
  SKIP_UNLESS_ABOVE_TRANSPORTS();
  const run_result r = job(ranks(), "intercomm", {}, env(), 120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("intercomm: all checks passed on " + std::to_string(ranks()) + " ranks"),
            std::string::npos)
      << r.output;
}

// MPI_THREAD_MULTIPLE: four threads per rank on their own communicators, on
// one with wildcards and Mprobe, completing one request array, creating
// communicators and sending while one blocks in Recv (threads.c). At 2 and
// 4 ranks, as the issue asks: one rank exchanges only with itself, and 8
// add time on 2 cores and no path. Over the default pair rings a large
// message must also be delivered while another thread holds the call lock
// (threads.c's `aside`, phase J).
TEST_P(JobTest, ThreadMultiple) {
  SKIP_UNLESS_ABOVE_TRANSPORTS();
  if (ranks() != 2 && ranks() != 4) GTEST_SKIP() << "run at 2 and 4 ranks";
  const bool pair_rings = std::string(configs[std::get<1>(GetParam())].name) == "defaults";
  const run_result r =
      job(ranks(), "threads",
          pair_rings ? std::vector<std::string>{"60", "aside"} : std::vector<std::string>{}, env(),
          120, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("threads: all checks passed on " + std::to_string(ranks()) + " ranks"),
            std::string::npos)
      << r.output;
}

// Active messages (test/mpi/am.c): handlers, counters, put and get,
// replies from handlers, a storm, refusals, and a target that computes
// while the others' operations complete, in the six configurations of
// above_transports() (shm puts by CMA, tcp and ofi by packets and the
// progress thread) and ofi alone.
TEST_P(JobTest, ActiveMessages) {
  const std::string name = configs[std::get<1>(GetParam())].name;
  if (!above_transports() && name != "ofi_rxm") {
    GTEST_SKIP() << "runs in the six configurations of above_transports() and ofi_rxm";
  }
  const run_result r = job(ranks(), "am", {}, env(), 180, nodes());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("am: all checks passed on " + std::to_string(ranks()) + " ranks"),
            std::string::npos)
      << r.output;
}

// MPI one-sided communication (test/mpi/rma.c): windows of every flavor,
// fence, passive target, every op and the errors, in the configurations
// of ActiveMessages, which it runs over; at 4 ranks a job of 3 too (an odd
// count: lock and accumulate messages that pass a rank by).
TEST_P(JobTest, OneSided) {
  const std::string name = configs[std::get<1>(GetParam())].name;
  if (!above_transports() && name != "ofi_rxm") {
    GTEST_SKIP() << "runs in the six configurations of above_transports() and ofi_rxm";
  }
  std::vector<int> counts{ranks()};
  if (ranks() == 4) counts.push_back(3);
  // Over ofi (tcp;ofi_rxm has FI_RMA) large puts and gets to ranks on
  // other nodes go by its RMA writes and reads; over tcp none do.
  env_list with = env();
  with.emplace_back("RMA_EXPECT_WINDOW_RMA", name.rfind("ofi", 0) == 0 ? "1" : "0");
  for (const int n : counts) {
    const run_result r = job(n, "rma", {}, with, 180, nodes());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("rma: all checks passed on " + std::to_string(n) + " ranks"),
              std::string::npos)
        << r.output;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, JobTest,
                         ::testing::Combine(::testing::Values(1, 2, 4, 8),
                                            ::testing::Range(0, int(std::size(configs)))),
                         [](const auto &info) {
                           return std::string(configs[std::get<1>(info.param)].name) + "_np" +
                                  std::to_string(std::get<0>(info.param));
                         });

// 2^31 + 4099 MPI_BYTE elements in one MPI_Send_c, then past 2^31 bytes of
// a 16-byte type, over shm at 2 ranks, every byte checked, each rank's
// buffer used for both. About 4.3 GB of memory and 16-30 s on 2 busy cores
// (31-45 s with a buffer per message: the first touch of a page is dear on
// this VM): not under ASan (test/suite.sh).
TEST(LargeCount, MessagesPastTwoToThe31OverShm) {
  const run_result r = job(2, "bigcount", {"huge"}, {}, 600);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("bigcount: all checks passed on 2 ranks"), std::string::npos) << r.output;
}

// MPI_Bcast_c of 2^31 + 4099 MPI_BYTEs at 2 ranks over shm, then
// MPI_Reduce_local_c of as many with MPI_BOR and with a user op from
// MPI_Op_create_c, every byte checked. About 4.3 GB of memory and 30-80 s on
// 2 busy cores: not under ASan (test/suite.sh).
TEST(LargeCount, CollectivesPastTwoToThe31OverShm) {
  const run_result r = job(2, "collc", {"huge"}, {}, 600);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("collc: all checks passed on 2 ranks"), std::string::npos) << r.output;
}

// MPI_COMM_TYPE_SHARED over two and three simulated nodes, over shm
// within each node and tcp between them, and with everything over tcp.
TEST(SplitType, FollowsTheNodesMpiexecMade) {
  if (netmods_built.find(",tcp,") == std::string::npos) GTEST_SKIP() << "no tcp netmod";
  for (const env_list &env :
       {env_list{{"IRIS_NETMOD", "tcp"}}, env_list{{"IRIS_SHM", "0"}, {"IRIS_NETMOD", "tcp"}}}) {
    for (const auto &[ranks, nodes] : {std::pair{4, 2}, std::pair{5, 2}, std::pair{6, 3}}) {
      const run_result r = job(ranks, "commsplit", {std::to_string(nodes)}, env, 120, nodes);
      ASSERT_EQ(r.exit_code, 0) << ranks << " ranks on " << nodes << " nodes\n" << r.output;
      EXPECT_NE(r.output.find("commsplit: all checks passed on " + std::to_string(ranks) +
                              " ranks, " + std::to_string(nodes) + " nodes"),
                std::string::npos)
          << r.output;
    }
  }
}

// Nonblocking, persistent and neighbourhood collectives (nbc.c) at 2, 4 and 8
// ranks over shm, over tcp alone and mixed (two nodes), and at 4 ranks with
// one credit and 64-byte fragments (every schedule message by rendezvous):
// run here rather than in every configuration of JobTest, which would add
// about sixty jobs for paths these reach. The ASan pass skips EightRanks.
void run_nbc(bool eight) {
  const bool tcp = netmods_built.find(",tcp,") != std::string::npos;
  struct run_case {
    env_list env;
    int nodes;
    std::vector<int> ranks;
    bool needs_tcp;
  };
  const run_case cases[] = {
      {{}, 1, {2, 4, 8}, false},
      {{{"IRIS_SHM", "0"}, {"IRIS_NETMOD", "tcp"}}, 1, {2, 4, 8}, true},
      {{{"IRIS_NETMOD", "tcp"}}, 2, {4}, true},
      {{{"IRIS_EAGER_WINDOW", "128"},
        {"IRIS_SHM_RING_SIZE", "1024"},
        {"IRIS_SHM_FRAGMENT_SIZE", "64"}},
       1,
       {4},
       false},
  };
  for (const run_case &c : cases) {
    if (c.needs_tcp && !tcp) continue;
    for (int ranks : c.ranks) {
      if ((ranks == 8) != eight) continue;
      const run_result r = job(ranks, "nbc", {}, c.env, 120, c.nodes);
      ASSERT_EQ(r.exit_code, 0) << ranks << " ranks, " << c.nodes << " nodes\n" << r.output;
      EXPECT_NE(r.output.find("nbc: all checks passed on " + std::to_string(ranks) + " ranks"),
                std::string::npos)
          << r.output;
    }
  }
}

TEST(NonblockingCollectives, TwoAndFourRanks) {
  run_nbc(false);
}

TEST(NonblockingCollectives, EightRanks) {
  run_nbc(true);
}

}  // namespace
}  // namespace iris::test
