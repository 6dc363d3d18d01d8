// Iris across real network hosts: two network namespaces joined by a veth
// pair (198.51.100.1 and .2, a documentation range that exists only inside
// these namespaces), started by MPICH's Hydra as a two-host job through a
// launcher command that enters each host's namespace. Checks that the job's
// bytes really cross the veth. Skips, saying why, where namespaces cannot be
// made (not root, no iproute2) or Hydra is missing.
//
// Iris's own mpiexec cannot start ranks inside other namespaces: its PMIx
// server listens on this namespace's loopback, which they cannot reach.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/common/subprocess.hpp"

namespace iris::test {
namespace {

const std::string programs = required_env("IRIS_TEST_PROGRAMS");

bool sh(const std::string &command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

class Namespaces : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string tag = std::to_string(getpid() % 100000);
    ns_ = {"iris-a-" + tag, "iris-b-" + tag};
    veth_ = {"irisa" + tag, "irisb" + tag};  // renamed iris0 inside the namespaces
    if (!sh("command -v mpiexec.hydra")) {
      GTEST_SKIP() << "MPICH's mpiexec.hydra is not installed (.ci/deps installs mpich)";
    }
    if (!sh("ip netns add " + ns_[0])) {
      GTEST_SKIP() << "cannot create a network namespace here (needs root and iproute2)";
    }
    made_ = true;
    ASSERT_TRUE(sh("ip netns add " + ns_[1]));
    ASSERT_TRUE(sh("ip link add " + veth_[0] + " type veth peer name " + veth_[1]));
    for (int i = 0; i < 2; ++i) {
      const std::string in = "ip netns exec " + ns_[i] + " ";
      // Inside its namespace each end is called iris0, so that one
      // IRIS_TCP_IF names the interface of every host, as on a cluster.
      ASSERT_TRUE(sh("ip link set " + veth_[i] + " netns " + ns_[i]));
      ASSERT_TRUE(sh(in + "ip link set " + veth_[i] + " name iris0"));
      ASSERT_TRUE(sh(in + "ip addr add 198.51.100." + std::to_string(i + 1) + "/24 dev iris0"));
      ASSERT_TRUE(sh(in + "ip link set iris0 up"));
      ASSERT_TRUE(sh(in + "ip link set lo up"));
    }
    // MPICH's Hydra launches "hosts" a and b through a launcher command
    // called as ssh would be (options, host, command), which enters the
    // host's namespace instead. Its proxies reach the launcher over iris0.
    wrapper_ = ::testing::TempDir() + "/iris-netns-" + tag + ".sh";
    std::ofstream(wrapper_) << "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\n"
                            << "case \"$1\" in a) ns=" << ns_[0] << ";; *) ns=" << ns_[1]
                            << ";; esac\nshift\nexec ip netns exec \"$ns\" sh -c \"$*\"\n";
    ASSERT_EQ(::chmod(wrapper_.c_str(), 0755), 0);
  }

  void TearDown() override {
    if (!made_) return;
    sh("ip netns del " + ns_[0]);
    sh("ip netns del " + ns_[1]);  // takes the veth pair with it
    std::remove(wrapper_.c_str());
  }

  // Bytes the veth of namespace `i` has received.
  long long rx_bytes(int i) {
    const run_result r = run(
        {"ip", "netns", "exec", ns_[i], "cat", "/sys/class/net/iris0/statistics/rx_bytes"}, 10, {});
    return std::atoll(r.output.c_str());
  }

  // A 2-rank job, one rank per namespace, started by Hydra from inside the
  // first namespace; Iris's ranks speak PMI-1 to it.
  run_result job(const std::vector<std::string> &args,
                 const std::vector<std::pair<std::string, std::string>> &env) {
    std::vector<std::string> argv = {"ip",
                                     "netns",
                                     "exec",
                                     ns_[0],
                                     "mpiexec.hydra",
                                     "-launcher",
                                     "ssh",
                                     "-launcher-exec",
                                     wrapper_,
                                     "-iface",
                                     "iris0",
                                     "-hosts",
                                     "a,b",
                                     "-n",
                                     "2",
                                     "-ppn",
                                     "1",
                                     programs + "/net"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, 120, env);
  }

  std::vector<std::string> ns_;
  std::vector<std::string> veth_;
  std::string wrapper_;
  bool made_ = false;
};

TEST_F(Namespaces, MessagesCrossTheVethBetweenHosts) {
  const long long before_a = rx_bytes(0);
  const long long before_b = rx_bytes(1);
  const run_result r = job({"volume", "16"}, {{"IRIS_DEBUG", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("net volume: all checks passed"), std::string::npos) << r.output;
  // Each side sent 16 MiB to the other.
  EXPECT_GE(rx_bytes(0) - before_a, 16LL << 20);
  EXPECT_GE(rx_bytes(1) - before_b, 16LL << 20);
  EXPECT_NE(r.output.find("card addresses 198.51.100.1,127.0.0.1"), std::string::npos) << r.output;
}

TEST_F(Namespaces, ANamedInterfaceIsTheOnlyOnePublished) {
  const run_result r = job({"volume", "2"}, {{"IRIS_TCP_IF", "iris0"}, {"IRIS_DEBUG", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0: netmod tcp listening on port"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("card addresses 198.51.100.1\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("card addresses 198.51.100.2\n"), std::string::npos) << r.output;
}

TEST_F(Namespaces, AnInterfaceThatIsNotThereIsAClearError) {
  const run_result r = job({"volume", "1"}, {{"IRIS_TCP_IF", "eth99"}});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("MPI_Init: tcp: IRIS_TCP_IF=eth99 is not an interface with an IPv4 "
                          "address that is up (there are: lo 127.0.0.1, iris0 198.51.100."),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace iris::test
