// The job tests of what a user meets around the programs: the failure
// cases (argument errors, MPI_Abort, a call before MPI_Init, a /dev/shm
// too small, a dead rank), the netmods' limits (netmods_test.cpp has
// their choices), how shared memory sizes its rings and sleeps, large
// nodes, other launchers, the compiler wrappers, PMPI wrappers, a DESTDIR
// install and singletons.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "test/mpi/jobs.hpp"

namespace iris::test {
namespace {

TEST_F(FailureTest, DefaultHandlerPrintsOneLineAndEndsTheJob) {
  const run_result r = job(3, "errors", {"fatal"}, {}, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(
      r.output.find("iris: rank 0: MPI_Send: invalid destination rank 93 (communicator size 3)"),
      std::string::npos)
      << r.output;
}

// MPI_ERRORS_ABORT acts as MPI_Abort(comm, code): the job ends with the code.
TEST_F(FailureTest, ErrorsAbortEndsTheJobWithTheErrorClass) {
  const run_result r = job(3, "errors", {"abort-handler"}, {}, 30);
  EXPECT_EQ(r.exit_code, 6) << "MPI_ERR_RANK\n" << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("iris: rank 0: MPI_Send: invalid destination rank -7"), std::string::npos)
      << r.output;
}

TEST_F(FailureTest, UnsupportedCallNamesItselfAndItsFamily) {
  const run_result r = job(2, "errors", {"unsupported"}, {}, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("iris: rank 0: MPI_File_open: MPI_File_open is not supported by Iris "
                          "(MPI-IO)"),
            std::string::npos)
      << r.output;
}

TEST_F(FailureTest, CallBeforeInitIsAClearError) {
  const run_result r = job(2, "errors", {"before-init"}, {}, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("MPI_Send: called outside MPI_Init .. MPI_Finalize"), std::string::npos)
      << r.output;
}

TEST_F(FailureTest, AbortEndsTheJobWithItsCode) {
  const run_result r = job(4, "errors", {"abort", "7"}, {}, 30);
  EXPECT_EQ(r.exit_code, 7) << r.output;
  EXPECT_NE(r.output.find("rank 1: MPI_Abort called with error code 7"), std::string::npos)
      << r.output;
}

// A rank that exits with code 0 without MPI_Finalize: the others waited in
// MPI_Finalize's barrier for ever, and mpiexec saw a rank that finished
// (the launcher's connection was closed at exit). Now the job ends with one
// line, as Open MPI's does; under the other launchers too
// (OtherLaunchers.*).
TEST_F(FailureTest, ExitWithoutFinalizeEndsTheJob) {
  const run_result r = job(3, "errors", {"no-finalize"}, {}, 60);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("iris: rank 1: exit: the process exited with code 0 without calling "
                          "MPI_Finalize"),
            std::string::npos)
      << r.output;
}

// A child forked by a rank runs the process's exit handlers: it must leave
// the parent's launcher connection alone (PMIx_Finalize in the child waited
// for ever for a thread fork did not copy) and the job go on.
TEST_F(FailureTest, ForkedChildThatExitsLeavesTheJobAlone) {
  for (const env_list &env : {env_list{}, env_list{{"IRIS_SHM", "0"}, {"IRIS_NETMOD", "tcp"}}}) {
    const run_result r = job(3, "errors", {"forked-child"}, env, 60);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("errors: forked children left the job alone"), std::string::npos)
        << r.output;
  }
}

TEST_F(FailureTest, MalformedTunableIsAClearError) {
  const run_result r = job(2, "ring", {}, {{"IRIS_SHM_RING_SIZE", "1000"}}, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ring size 1000 is not a power of two"), std::string::npos) << r.output;
}

// The rings a small node chooses, as IRIS_DEBUG describes them, and the
// size asked for instead when IRIS_SHM_RING_SIZE is set.
TEST(Shm, SmallNodesChooseTheirRingSize) {
  const struct {
    int ranks;
    env_list env;
    const char *said;
  } cases[] = {
      {2, {}, "rings of 4194304 B"},
      {4, {}, "rings of 2097152 B"},
      {2, {{"IRIS_SHM_RING_SIZE", "262144"}}, "rings of 262144 B"},
  };
  for (const auto &c : cases) {
    env_list env = c.env;
    env.emplace_back("IRIS_DEBUG", "1");
    const run_result r = job(c.ranks, "ring", {}, env, 60);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(occurrences(r.output, c.said), static_cast<std::size_t>(c.ranks)) << r.output;
  }
}

// Nodes simulated on one host share its cores: a rank counts every rank of
// the host (PMIX_LOCAL_SIZE), not only its node's, to know it is
// oversubscribed (then it spins briefly before it yields). Counting its
// node's alone, 4 ranks on 2 simulated nodes took 0.7-1.8 ms a barrier.
TEST(Launcher, SimulatedNodesCountTheHostsRanks) {
  const run_result r = job(4, "ring", {}, {{"IRIS_DEBUG", "1"}}, 60, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(occurrences(r.output, ", 4 ranks on this host"), 4U) << r.output;
}

// libiris opens libfabric only when the ofi netmod starts: linked, its
// providers' constructors would cost every rank of every job ~0.2 s.
TEST(Netmod, LibirisDoesNotLinkLibfabric) {
  const run_result r = run({"readelf", "-d", build_root + "/device/libiris.so"}, 10);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(NEEDED)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("libfabric"), std::string::npos) << r.output;
}

TEST_F(FailureTest, ARankKilledMidTransferEndsTheJobInsteadOfHanging) {
  std::vector<env_list> envs = {{{"IRIS_SHM", "0"}, {"IRIS_NETMOD", "tcp"}},
                                {{"IRIS_NETMOD", "tcp"}}};
  if (ofi_built()) envs.push_back({{"IRIS_SHM", "0"}, ofi_rxm[0], ofi_rxm[1]});
  for (const env_list &env : envs) {
    const run_result r = job(4, "net", {"die"}, env, 60, 2);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_FALSE(r.timed_out) << r.output;
    // Whoever notices first says so: mpiexec, which saw rank 1 die, or a
    // rank whose connection to it broke.
    const bool launcher_said = r.output.find("rank 1 (pid") != std::string::npos &&
                               r.output.find("killed by signal 9") != std::string::npos;
    const bool rank_said = r.output.find(": lost rank 1 (") != std::string::npos &&
                           r.output.find(" netmod): ") != std::string::npos;
    EXPECT_TRUE(launcher_said || rank_said) << r.output;
  }
}

TEST(Netmod, AMessageOver2GiBCrossesIt) {
  std::vector<env_list> envs = {{{"IRIS_SHM", "0"}, {"IRIS_NETMOD", "tcp"}}};
  // Over OFI: one RMA read of 2049 MiB.
  if (ofi_built()) envs.push_back({{"IRIS_SHM", "0"}, ofi_rxm[0], ofi_rxm[1], {"IRIS_STATS", "1"}});
  for (const env_list &env : envs) {
    const run_result r = job(2, "net", {"huge", "2049"}, env, 300);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("net huge: all checks passed"), std::string::npos) << r.output;
    if (env.size() == 4) {
      EXPECT_NE(r.output.find("messages read by rma 1,"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("single-copy reads 1 "), std::string::npos) << r.output;
    }
  }
}

// `count` consecutive TCP ports that are free now, below the kernel's
// ephemeral range: a port inside it can be any connection's local end (or
// its TIME_WAIT) at the moment the job binds it.
int free_port_base(int count) {
  int low = 32768;
  if (FILE *f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &low) != 1) low = 32768;
    std::fclose(f);
  }
  for (int base = low - 1000; base > 1024; base -= count) {
    bool all_free = true;
    for (int port = base; port < base + count && all_free; ++port) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<std::uint16_t>(port));
      all_free = ::bind(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0;
      ::close(fd);
    }
    if (all_free) return base;
  }
  return -1;
}

TEST(Netmod, ThePortBaseGivesEachRankItsPort) {
  const int base = free_port_base(3);
  ASSERT_GT(base, 0) << "no 3 free ports below the ephemeral range";
  const run_result r = job(3, "ring", {},
                           {{"IRIS_SHM", "0"},
                            {"IRIS_NETMOD", "tcp"},
                            {"IRIS_TCP_PORT", std::to_string(base)},
                            {"IRIS_DEBUG", "1"}},
                           60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_NE(r.output.find("iris: rank " + std::to_string(rank) +
                            ": netmod tcp listening on port " + std::to_string(base + rank)),
              std::string::npos)
        << r.output;
  }
}

TEST_F(FailureTest, SegmentLargerThanDevShmIsRefusedAtStartUp) {
  // 8 ranks x 8 rings x 1 GiB: more than /dev/shm holds on any CI machine.
  const run_result r = job(8, "ring", {}, {{"IRIS_SHM_RING_SIZE", "1073741824"}}, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("/dev/shm has"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("IRIS_SHM_RING_SIZE"), std::string::npos) << r.output;
}

TEST_F(FailureTest, FullDevShmIsAClearErrorNotASigbus) {
  // A private 1 MiB /dev/shm in a mount namespace: the reservation itself fails.
  const run_result probe = run({"/usr/bin/unshare", "-m", "/bin/true"}, 10);
  if (probe.exit_code != 0) GTEST_SKIP() << "unshare -m is not permitted here: " << probe.output;
  const std::string script = "mount -t tmpfs -o size=1m iris-test /dev/shm && exec " + mpiexec +
                             " -n 4 " + programs + "/ring";
  const run_result r = run({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script}, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, 0);
  EXPECT_NE(r.output.find("/dev/shm"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Bus error"), std::string::npos) << r.output;
}

TEST_F(FailureTest, NoRoomForTheCollectiveSegmentKeepsToMessages) {
  // A private 64 MiB /dev/shm: the rings fit, each communicator's collective
  // segment (4 ranks x two 16 MiB slots) does not. Every communicator's
  // collectives then go through messages, with the same results.
  const run_result probe = run({"/usr/bin/unshare", "-m", "/bin/true"}, 10);
  if (probe.exit_code != 0) GTEST_SKIP() << "unshare -m is not permitted here: " << probe.output;
  const std::string script =
      "mount -t tmpfs -o size=64m iris-test /dev/shm && IRIS_COLL_SHM_SLOT=16777216 "
      "IRIS_DEBUG=1 exec " +
      mpiexec + " -n 4 " + programs + "/coll_node 3 200";
  const run_result r = run({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("coll_node: all checks passed on 4 ranks"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("go through messages: cannot reserve"), std::string::npos) << r.output;
}

// The node segment's large calls read other ranks' memory with CMA. A kernel
// that refuses it: the setup probe sees it, and large calls go through
// messages with the same results. A kernel that refuses only after the
// probe (reads above 64 bytes): the first large call fails with one clear
// line on every rank that read, and the job ends instead of hanging.
TEST_F(FailureTest, NodeCollectivesWithCmaRefused) {
  const run_result refused = job(4, "coll_node", {"7", "300"},
                                 {{"LD_PRELOAD", required_env("IRIS_NO_CMA_LIBRARY")},
                                  {"ASAN_OPTIONS", "verify_asan_link_order=0"}},
                                 60);
  ASSERT_EQ(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("coll_node: all checks passed on 4 ranks"), std::string::npos)
      << refused.output;
  const run_result turned = job(4, "coll_node", {"7", "300"},
                                {{"LD_PRELOAD", required_env("IRIS_NO_CMA_LIBRARY")},
                                 {"ASAN_OPTIONS", "verify_asan_link_order=0"},
                                 {"IRIS_TEST_CMA_REFUSE_ABOVE", "64"},
                                 {"IRIS_RNDV_ENGINE", "pipeline"}},
                                60);
  EXPECT_NE(turned.exit_code, 0) << turned.output;
  EXPECT_FALSE(turned.timed_out) << turned.output;
  EXPECT_NE(turned.output.find("the kernel refused a read or write of another rank's memory (CMA)"),
            std::string::npos)
      << turned.output;
}

// A large Reduce's ranks write their shares into the root's buffer: with
// writes refused (and reads not), every rank returns MPI_ERR_OTHER, the
// root too, whose own reads passed (coll_node.c's refused_writes).
TEST_F(FailureTest, LargeReduceWithCmaWritesRefused) {
  for (int ranks : {2, 4}) {
    const run_result r = job(ranks, "coll_node", {"refused_writes"},
                             {{"LD_PRELOAD", required_env("IRIS_NO_CMA_LIBRARY")},
                              {"ASAN_OPTIONS", "verify_asan_link_order=0"},
                              {"IRIS_TEST_CMA_REFUSE_WRITES", "1"}},
                             60);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("coll_node: refused writes reported on " + std::to_string(ranks)),
              std::string::npos)
        << r.output;
  }
}

// ---- Large nodes: receive queues and pooled pair rings ----------------------

// The sum over every rank's IRIS_STATS line of the number after `what`.
long long stats_sum(const std::string &output, const std::string &what) {
  long long sum = 0;
  for (std::size_t at = output.find(what); at != std::string::npos;
       at = output.find(what, at + 1)) {
    sum += std::atoll(output.c_str() + at + what.size());
  }
  return sum;
}

// ---- Sleeping waiters (shm/bell.hpp) ----------------------------------------

// Ranks that sleep as soon as they are idle, with a 10-minute safety timeout:
// a lost wake-up would hang the job past its 120 s limit. Over both shm
// transports (per-pair rings, receive queues), in the programs with the
// most waiting, and derived's typed rendezvous fragments (packed straight
// into a ring record: that send once rang no bell, and derived hung every
// time): every sleep must end by a wake.
TEST_F(FailureTest, IdleRanksSleepAndEveryWakeArrives) {
  const env_list sleepy = {{"IRIS_SLEEP", "1"},
                           {"IRIS_SLEEP_AFTER", "0"},
                           {"IRIS_SPIN_COUNT", "0"},
                           {"IRIS_SLEEP_TIMEOUT", "600000"},
                           {"IRIS_STATS", "1"}};
  for (const env_list &layout :
       {env_list{}, env_list{{"IRIS_SHM_DENSE_RANKS", "0"}, {"IRIS_SHM_BUSY_PACKETS", "4"}}}) {
    for (const char *program : {"storm", "p2p", "coll", "modes", "derived"}) {
      env_list env = sleepy;
      env.insert(env.end(), layout.begin(), layout.end());
      const run_result r = job(8, program, {}, env, 120);
      ASSERT_EQ(r.exit_code, 0) << program << "\n" << r.output;
      EXPECT_GT(stats_sum(r.output, "slept "), 0) << program << "\n" << r.output;
      EXPECT_EQ(stats_sum(r.output, "times ("), 0) << program << "\n" << r.output;
    }
  }
  // A PSCW notice to a rank that maps the window is a store to shared
  // memory, which rings no bell: a rank waiting for one must not sleep
  // (rma's late post and late complete; without the progress thread, which
  // would keep the program's thread from sleeping). It slept through them
  // before, and rma hung.
  env_list env = sleepy;
  env.push_back({"IRIS_ASYNC_PROGRESS", "off"});
  const run_result r = job(2, "rma", {}, env, 120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rma: all checks passed on 2 ranks"), std::string::npos) << r.output;
  EXPECT_EQ(stats_sum(r.output, "times ("), 0) << r.output;
}

// IRIS_SLEEP=0 keeps every rank awake; with a peer on another node (the
// netmod cannot ring a bell) nobody sleeps even when asked to.
TEST_F(FailureTest, NobodySleepsWhenToldNotToOrWhenANetmodPeerCouldNotWakeIt) {
  const run_result off = job(8, "storm", {}, {{"IRIS_SLEEP", "0"}, {"IRIS_STATS", "1"}}, 120);
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_EQ(occurrences(off.output, "slept 0 times"), 8U) << off.output;
  const run_result mixed = job(
      4, "storm", {},
      {{"IRIS_SLEEP", "1"}, {"IRIS_SLEEP_AFTER", "0"}, {"IRIS_NETMOD", "tcp"}, {"IRIS_STATS", "1"}},
      120, 2);
  ASSERT_EQ(mixed.exit_code, 0) << mixed.output;
  EXPECT_EQ(occurrences(mixed.output, "slept 0 times"), 4U) << mixed.output;
}

class LargeJobTest : public FailureTest {};

// 64 and 128 ranks on one node, oversubscribed: the default layout for
// large nodes (queues, rings for busy pairs), in one configuration only.
TEST_F(LargeJobTest, RingAndAllPairsAt64And128Ranks) {
  for (int ranks : {64, 128}) {
    const run_result ring = job(ranks, "ring", {}, {}, 300);
    ASSERT_EQ(ring.exit_code, 0) << ring.output;
    EXPECT_NE(ring.output.find("ring of " + std::to_string(ranks) + " ranks"), std::string::npos)
        << ring.output;
    // Small messages to everyone (queues only), then eager messages that
    // take rings and rendezvous ones read with CMA or pipelined.
    const std::string sizes = ranks == 64 ? "8,4000,20000" : "8,4000";
    const run_result all = job(ranks, "allpairs", {"2", sizes},
                               {{"IRIS_STATS", "1"}, {"IRIS_SHM_BUSY_PACKETS", "2"}}, 300);
    ASSERT_EQ(all.exit_code, 0) << all.output;
    EXPECT_NE(all.output.find("allpairs: " + std::to_string(ranks) + " ranks, 2 rounds of sizes " +
                              sizes + ", all bytes checked"),
              std::string::npos)
        << all.output;
    EXPECT_GT(stats_sum(all.output, "rings announced "), 0) << all.output;
    EXPECT_GT(stats_sum(all.output, "packets through queues "), 0) << all.output;
  }
}

// MPI_THREAD_MULTIPLE on a large node, the default layout past 8 ranks
// (shm_queue_shared_transport): threads.c at 10 ranks, four threads each,
// and their eager sends to other ranks go without the call lock.
TEST_F(LargeJobTest, ThreadMultipleAtTenRanksSendsWithoutTheCallLock) {
  const run_result r = job(10, "threads", {"5"}, {{"IRIS_STATS", "1"}}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("threads: all checks passed on 10 ranks"), std::string::npos) << r.output;
  EXPECT_GT(stats_sum(r.output, "packets through queues "), 0) << r.output;
  EXPECT_GT(stats_sum(r.output, "(unlocked "), 0) << r.output;
}

// A pool of three rings for 16 ranks exchanging with everyone: most pairs
// are refused a ring and keep the queue, long records and all; nothing is
// lost.
TEST_F(LargeJobTest, ASpentPoolLeavesPairsOnTheQueuesAndLosesNothing) {
  const run_result r = job(16, "allpairs", {"3", "8,20000,100000"},
                           {{"IRIS_SHM_DENSE_RANKS", "0"},
                            {"IRIS_SHM_POOL_SIZE", "800k"},
                            {"IRIS_SHM_BUSY_PACKETS", "0"},
                            {"IRIS_RNDV_ENGINE", "pipeline"},
                            {"IRIS_STATS", "1"}},
                           120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("allpairs: 16 ranks, 3 rounds of sizes 8,20000,100000, all bytes checked"),
      std::string::npos)
      << r.output;
  EXPECT_EQ(stats_sum(r.output, "rings announced "), 3) << r.output;
  EXPECT_EQ(stats_sum(r.output, "refused "), 16 * 15 - 3) << r.output;
}

// A private /dev/shm that holds the receive queues of 16 ranks (4 MiB with
// 1024 cells each) and
// at most seven rings more: growth stops at a full /dev/shm, never with a
// SIGBUS, and the job completes through the queues.
TEST_F(LargeJobTest, AFullDevShmAtGrowthLeavesPairsOnTheQueues) {
  const run_result probe = run({"/usr/bin/unshare", "-m", "/bin/true"}, 10);
  if (probe.exit_code != 0) GTEST_SKIP() << "unshare -m is not permitted here: " << probe.output;
  const std::string script =
      "mount -t tmpfs -o size=6m iris-test /dev/shm && IRIS_SHM_DENSE_RANKS=0 "
      "IRIS_SHM_QUEUE_CELLS=1024 "
      "IRIS_SHM_BUSY_PACKETS=0 IRIS_RNDV_ENGINE=pipeline IRIS_STATS=1 exec " +
      mpiexec + " -n 16 " + programs + "/allpairs 2 8,20000,100000";
  const run_result r = run({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.signal, 0);
  EXPECT_NE(
      r.output.find("allpairs: 16 ranks, 2 rounds of sizes 8,20000,100000, all bytes checked"),
      std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Bus error"), std::string::npos) << r.output;
  const long long rings = stats_sum(r.output, "rings announced ");
  EXPECT_GT(rings, 0) << r.output;
  EXPECT_LE(rings, 7) << "6 MiB cannot hold more rings\n" << r.output;
  EXPECT_NE(r.output.find("pool closed: /dev/shm full"), std::string::npos) << r.output;
}

// When /dev/shm cannot hold even the receive queues (16 ranks of 1024
// cells: 4 MiB), MPI_Init says so in one line: who, what, how much, which
// setting.
TEST_F(LargeJobTest, DevShmTooSmallForTheQueuesIsOneClearLine) {
  const run_result probe = run({"/usr/bin/unshare", "-m", "/bin/true"}, 10);
  if (probe.exit_code != 0) GTEST_SKIP() << "unshare -m is not permitted here: " << probe.output;
  const std::string script = "mount -t tmpfs -o size=1m iris-test /dev/shm && exec " + mpiexec +
                             " -n 16 " + programs + "/ring";
  const run_result r = run({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script}, 60,
                           {{"IRIS_SHM_DENSE_RANKS", "0"}, {"IRIS_SHM_QUEUE_CELLS", "1024"}});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, 0);
  EXPECT_NE(r.output.find("iris: rank 0: MPI_Init: /dev/shm has "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("free but the receive queues of 16 ranks in /iris-"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("need 4.0 MiB; enlarge /dev/shm or lower IRIS_SHM_QUEUE_CELLS"),
            std::string::npos)
      << r.output;
}

// Active messages on one node: put and get by CMA, and into MPI_Alloc_mem's
// memory by plain copies in the mapped block; large data pulled by the
// target. Where the kernel refuses CMA, the same program passes with
// everything as packets through the progress thread.
TEST_F(FailureTest, ActiveMessagesByCmaAndWithoutIt) {
  const run_result by_cma = job(4, "am");
  ASSERT_EQ(by_cma.exit_code, 0) << by_cma.output;
  EXPECT_EQ(by_cma.output.find("moved 0 puts"), std::string::npos) << by_cma.output;
  EXPECT_EQ(by_cma.output.find("(0 in mapped blocks)"), std::string::npos) << by_cma.output;
  EXPECT_EQ(by_cma.output.find(", 0 messages pulled"), std::string::npos) << by_cma.output;
  const run_result refused = job(4, "am", {},
                                 {{"LD_PRELOAD", required_env("IRIS_NO_CMA_LIBRARY")},
                                  {"ASAN_OPTIONS", "verify_asan_link_order=0"}});
  ASSERT_EQ(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find(
                "moved 0 puts and gets by shared memory (0 in mapped blocks), 0 messages pulled"),
            std::string::npos)
      << refused.output;
}

// A kernel that refuses CMA: the start-up probe sees it and rendezvous uses
// the pipeline, silently, even when CMA is asked for.
TEST_F(FailureTest, RefusedCmaFallsBackToThePipelineSilently) {
  for (const char *engine : {"auto", "cma"}) {
    const run_result r = job(4, "deadlock", {},
                             {{"LD_PRELOAD", required_env("IRIS_NO_CMA_LIBRARY")},
                              {"ASAN_OPTIONS", "verify_asan_link_order=0"},
                              {"IRIS_RNDV_ENGINE", engine},
                              {"IRIS_CMA_THRESHOLD", "0"},
                              {"IRIS_STATS", "1"}},
                             60);
    ASSERT_EQ(r.exit_code, 0) << engine << "\n" << r.output;
    EXPECT_NE(r.output.find("deadlock: all checks passed"), std::string::npos) << r.output;
    EXPECT_EQ(occurrences(r.output, "messages read by cma 0\n"), 4u) << "every rank: no cma\n"
                                                                     << r.output;
    EXPECT_EQ(occurrences(r.output, " stats: "), 4u) << r.output;
  }
  // Without the shim the same settings do use CMA: the check above can fail.
  const run_result r =
      job(2, "deadlock", {}, {{"IRIS_RNDV_ENGINE", "cma"}, {"IRIS_STATS", "1"}}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(occurrences(r.output, "messages read by cma "), 2u) << r.output;
  EXPECT_EQ(r.output.find("messages read by cma 0\n"), std::string::npos) << r.output;
}

// Non-contiguous messages of large blocks (vectors of 4 KiB blocks, a
// struct and an indexed type, into other layouts and contiguous buffers) are
// read with CMA, one iovec per block, under `cma` and `auto` and on both shm
// transports: IRIS_STATS counts the scattered reads of the receiving ranks.
// Small blocks, the pipeline engine, a mean block under IRIS_CMA_MIN_BLOCK,
// descriptions that do not fit a fragment and a kernel that refuses CMA take
// the pipeline. The program checks every byte and gap either way.
TEST(Scattered, LargeBlocksAreReadWithCmaEveryByteChecked) {
  struct variant {
    const char *name;
    env_list env;
    std::uint64_t scattered;  // by each receiving rank
    int ranks = 2;
  };
  // The program's large blocks are 3-6 KiB: under the default minimum. Its
  // messages are 6 MB: above IRIS_PIPELINE_LARGE, under which `auto` reads
  // with CMA a message matched while another streams (the last one).
  const env_list small_minimum = {{"IRIS_CMA_MIN_BLOCK", "2048"},
                                  {"IRIS_PIPELINE_LARGE", "1073741824"}};
  const auto with = [&small_minimum](env_list more) {
    more.insert(more.end(), small_minimum.begin(), small_minimum.end());
    return more;
  };
  const variant variants[] = {
      {"cma", with({{"IRIS_RNDV_ENGINE", "cma"}}), 13},
      // A message alone is pipelined under auto, as a contiguous one; so is a
      // stream over rings larger than the floor (4 ranks: 2 MiB rings).
      {"auto", with({{"IRIS_SHM_RING_SIZE", "262144"}}), 1, 4},
      {"auto, rings of 2 MiB", with({}), 0, 4},
      {"auto, receive queues", with({{"IRIS_SHM_DENSE_RANKS", "0"}}), 1},
      {"pipeline", with({{"IRIS_RNDV_ENGINE", "pipeline"}}), 0},
      {"cma, blocks under the default minimum", {{"IRIS_RNDV_ENGINE", "cma"}}, 0},
      // Only a contiguous sender needs no description: 2 of the 13.
      {"cma, descriptions larger than a fragment",
       with({{"IRIS_RNDV_ENGINE", "cma"}, {"IRIS_SHM_FRAGMENT_SIZE", "64"}}), 2},
      {"cma refused by the kernel",
       with({{"LD_PRELOAD", required_env("IRIS_NO_CMA_LIBRARY")},
             {"ASAN_OPTIONS", "verify_asan_link_order=0"},
             {"IRIS_RNDV_ENGINE", "cma"}}),
       0},
  };
  for (const variant &v : variants) {
    SCOPED_TRACE(v.name);
    env_list env = v.env;
    env.emplace_back("IRIS_STATS", "1");
    const run_result r = job(v.ranks, "scattered", {}, env, 120);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("scattered: all checks passed on " + std::to_string(v.ranks)),
              std::string::npos)
        << r.output;
    for (int rank = 0; rank < v.ranks; ++rank) {
      const std::string line = "iris: rank " + std::to_string(rank) + " stats: ";
      const std::size_t at = r.output.find(line);
      ASSERT_NE(at, std::string::npos) << r.output;
      const std::string said = "(of scattered blocks ";
      const std::size_t count = r.output.find(said, at);
      ASSERT_NE(count, std::string::npos) << r.output;
      const std::uint64_t reads = std::stoull(r.output.substr(count + said.size()));
      EXPECT_EQ(reads, rank % 2 == 1 ? v.scattered : 0) << "rank " << rank << "\n" << r.output;
    }
  }
}

// The same Iris programs under the launchers people already use: Open MPI's
// mpirun (PMIx) and MPICH's Hydra (PMI-1, over PMI_FD and over -pmi-port).
struct other_launcher {
  const char *name;
  std::vector<std::string> argv;  // the command before the program
};

TEST(OtherLaunchers, RunIrisProgramsUnchanged) {
  const other_launcher launchers[] = {
      {"mpirun.openmpi", {"/usr/bin/mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"}},
      {"mpiexec.hydra", {"/usr/bin/mpiexec.hydra"}},
      {"mpiexec.hydra -pmi-port", {"/usr/bin/mpiexec.hydra", "-pmi-port"}},
  };
  int ran = 0;
  for (const auto &l : launchers) {
    if (access(l.argv[0].c_str(), X_OK) != 0) continue;
    for (const char *program : {"ring", "p2p"}) {
      std::vector<std::string> argv = l.argv;
      argv.insert(argv.end(), {"-n", "4", programs + "/" + program});
      const run_result r = run(argv, 120);
      EXPECT_EQ(r.exit_code, 0) << l.name << " " << program << "\n" << r.output;
      // Four ranks of one job, not four singletons.
      const std::string expected =
          std::string(program) == "ring" ? "ring of 4 ranks" : "all checks passed on 4 ranks";
      EXPECT_NE(r.output.find(expected), std::string::npos) << l.name << "\n" << r.output;
      ++ran;
    }
    // A rank leaving without MPI_Finalize ends the job there too; a forked
    // child's exit does not.
    std::vector<std::string> argv = l.argv;
    argv.insert(argv.end(), {"-n", "3", programs + "/errors", "no-finalize"});
    run_result r = run(argv, 60);
    EXPECT_FALSE(r.timed_out) << l.name << "\n" << r.output;
    EXPECT_NE(r.exit_code, 0) << l.name << "\n" << r.output;
    EXPECT_NE(r.output.find("without calling MPI_Finalize"), std::string::npos) << l.name << "\n"
                                                                                << r.output;
    argv.back() = "forked-child";
    r = run(argv, 60);
    EXPECT_EQ(r.exit_code, 0) << l.name << "\n" << r.output;
  }
  EXPECT_EQ(shm_leftovers(), std::vector<std::string>{}) << "left in /dev/shm";
  if (ran == 0) GTEST_SKIP() << "neither mpirun.openmpi nor mpiexec.hydra is installed";
}

TEST(Wrappers, MpiccAndMpicxxBuildPlainProgramsThatRunUnchanged) {
  const std::string dir = testing::TempDir() + "/iris-wrappers-" + std::to_string(getpid());
  ASSERT_EQ(run({"/bin/mkdir", "-p", dir}, 10).exit_code, 0);
  const run_result cc = run({build_root + "/mpicc", "-O2", "-Wall", "-Werror", "-o", dir + "/ring",
                             source_root + "/test/programs/ring.c"},
                            60);
  ASSERT_EQ(cc.exit_code, 0) << cc.output;
  const run_result r = run({mpiexec, "-n", "4", dir + "/ring"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ring of 4 ranks"), std::string::npos) << r.output;
  const run_result cxx = run({build_root + "/mpicxx", "-O2", "-Wall", "-Werror", "-x", "c++", "-o",
                              dir + "/ring_cxx", source_root + "/test/programs/ring.c"},
                             60);
  ASSERT_EQ(cxx.exit_code, 0) << cxx.output;
  EXPECT_EQ(run({mpiexec, "-n", "2", dir + "/ring_cxx"}, 60).exit_code, 0);
  const run_result show = run({build_root + "/mpicc", "-show", "x.c"}, 10);
  EXPECT_NE(show.output.find("-liris"), std::string::npos) << show.output;
  run({"/bin/rm", "-rf", dir}, 10);
}

// A profiling tool: pmpi.c defines MPI_Init, MPI_Send, MPI_Recv and
// MPI_Type_create_resized, counting calls and passing them on through
// PMPI_; built by the build tree's mpicc as a tool user would, run at 2 and
// 3 ranks. Its counts and data are checked, and so is that Iris's own calls
// between bindings (collectives, Sendrecv, Type_create_subarray) never
// reach the wrappers (libiris binds them inside: -Bsymbolic-functions).
TEST(Pmpi, WrappersThatCallPmpiCountTheProgramsCallsOnly) {
  const std::string dir = testing::TempDir() + "/iris-pmpi-" + std::to_string(getpid());
  ASSERT_EQ(run({"/bin/mkdir", "-p", dir}, 10).exit_code, 0);
  const run_result cc = run({build_root + "/mpicc", "-O2", "-Wall", "-Werror", "-o", dir + "/pmpi",
                             source_root + "/test/mpi/pmpi.c"},
                            60);
  ASSERT_EQ(cc.exit_code, 0) << cc.output;
  for (const char *n : {"2", "3"}) {
    const run_result r = run({mpiexec, "-n", n, dir + "/pmpi"}, 60);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(std::string("pmpi: all checks passed on ") + n + " ranks"),
              std::string::npos)
        << r.output;
  }
  run({"/bin/rm", "-rf", dir}, 10);
}

// `meson install` into a DESTDIR, then the installed mpicc builds a plain
// program and the installed mpiexec runs it. The configured prefix does not
// hold this install, so this also checks that the installed wrapper finds
// Iris from its own path (see include/mpicc.in).
TEST(Install, DestdirInstallBuildsAndRunsPrograms) {
  std::string dir = testing::TempDir();  // ends with '/'; the wrapper prints canonical paths
  if (!dir.empty() && dir.back() == '/') dir.pop_back();
  dir += "/iris-install-" + std::to_string(getpid());
  const std::string root = dir + "/destdir" + required_env("IRIS_PREFIX");
  const run_result install = run({required_env("IRIS_MESON"), "install", "-C", build_root,
                                  "--no-rebuild", "--quiet", "--destdir", dir + "/destdir"},
                                 300);
  ASSERT_EQ(install.exit_code, 0) << install.output;
  const std::string bin = root + "/" + required_env("IRIS_BINDIR");
  const std::string include = root + "/" + required_env("IRIS_INCLUDEDIR");
  const std::string lib = root + "/" + required_env("IRIS_LIBDIR");
  for (const char *program : {"mpicc", "mpicxx", "mpiexec", "iris_info"}) {
    EXPECT_EQ(access((bin + "/" + program).c_str(), X_OK), 0) << program;
  }
  EXPECT_EQ(access((include + "/mpi.h").c_str(), R_OK), 0);
  EXPECT_EQ(access((include + "/iris/coll.h").c_str(), R_OK), 0) << "mpi.h's parts";
  EXPECT_EQ(access((lib + "/pkgconfig/iris.pc").c_str(), R_OK), 0);
  const run_result show = run({bin + "/mpicc", "-show", "x.c"}, 10);
  EXPECT_NE(show.output.find("-I" + include + " "), std::string::npos) << show.output;
  EXPECT_NE(show.output.find("-L" + lib + " "), std::string::npos) << show.output;
  const run_result cc = run({bin + "/mpicc", "-O2", "-Wall", "-Werror", "-o", dir + "/ring",
                             source_root + "/test/programs/ring.c"},
                            60);
  ASSERT_EQ(cc.exit_code, 0) << cc.output;
  const run_result r = run({bin + "/mpiexec", "-n", "4", dir + "/ring"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ring of 4 ranks"), std::string::npos) << r.output;
  // A netmod built outside Iris against the installed contract
  // (iris/netmod.h and the headers beside it), loaded by IRIS_NETMOD_PATH.
  EXPECT_EQ(access((include + "/iris/netmod.h").c_str(), R_OK), 0);
  const std::string module = dir + "/libiris-netmod-relay.so";
  const run_result cxx =
      run({bin + "/mpicxx", "-std=c++20", "-shared", "-fPIC", "-Wall", "-Werror",
           "-I" + include + "/iris", "-o", module, source_root + "/netmods/example/relay.cpp"},
          120);
  ASSERT_EQ(cxx.exit_code, 0) << cxx.output;
  const run_result relayed =
      run({bin + "/mpiexec", "-n", "2", "-x", "IRIS_SHM=0", "-x", "IRIS_NETMOD=relay", "-x",
           "IRIS_NETMOD_PATH=" + dir, "-x", "IRIS_STATS=1", dir + "/ring"},
          60);
  ASSERT_EQ(relayed.exit_code, 0) << relayed.output;
  EXPECT_NE(relayed.output.find("ring of 2 ranks"), std::string::npos) << relayed.output;
  EXPECT_EQ(occurrences(relayed.output, "relay: records relayed "), 2u) << relayed.output;
  if (access("/usr/bin/pkg-config", X_OK) == 0) {
    const run_result pc = run({"/usr/bin/pkg-config", "--libs", "iris"}, 10,
                              {{"PKG_CONFIG_PATH", lib + "/pkgconfig"}});
    EXPECT_NE(pc.output.find("-liris"), std::string::npos) << pc.output;
  }
  EXPECT_EQ(shm_leftovers(), std::vector<std::string>{}) << "left in /dev/shm";
  run({"/bin/rm", "-rf", dir}, 30);
}

TEST(Singleton, AProgramStartedWithoutMpiexecIsRankZeroOfOne) {
  const run_result r = run({programs + "/ring"}, 30);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ring of 1 ranks"), std::string::npos) << r.output;
}

// Run by hand without meson's variables, the job tests used to fail every
// job with exit 127 and no word of why.
TEST(Harness, AMissingVariableIsNamedAtOnce) {
  const run_result r =
      run({programs + "/jobs_test", "--gtest_filter=Singleton.*"}, 30, {{"IRIS_MPIEXEC", ""}});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("IRIS_MPIEXEC is not set"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace iris::test
