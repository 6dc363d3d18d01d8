// Iris across real network hosts: network namespaces joined by veth pairs
// (addresses of the documentation and private ranges, which exist only
// inside these namespaces), started by MPICH's Hydra as a job of several hosts through a
// launcher command that enters each host's namespace. Skips, saying why,
// where namespaces cannot be made (not root, no iproute2) or Hydra is
// missing.
//
// - Two hosts joined by one link: the job's bytes really cross the veth,
//   and IRIS_TCP_IF chooses what is published.
// - Three hosts where one pair is joined only by a link that the ofi netmod
//   uses and tcp does not: a job mixing tcp and ofi (IRIS_NETMOD=tcp,ofi)
//   takes ofi for that pair alone, from what the ranks' cards say reaches.
// - Two hosts joined by a path for tcp and one for ofi, one of them slowed:
//   IRIS_NETMOD=auto measures both and takes the other.
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
const std::string netmods_built = "," + required_env("IRIS_TEST_NETMODS") + ",";

bool sh(const std::string &command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// Hosts (network namespaces, named by one letter in a job's host list),
// the links between them, and the launcher command that enters a host;
// all removed at the end.
class lab {
 public:
  lab() : tag_(std::to_string(getpid() % 100000)) {}
  ~lab() {
    for (const std::string &ns : made_) sh("ip netns del " + ns);  // takes their veths along
    if (!wrapper_.empty()) std::remove(wrapper_.c_str());
  }

  // Why this machine cannot hold the lab (with the ofi netmod when
  // `with_ofi`), or empty.
  std::string unable(bool with_ofi = false) {
    if (with_ofi && netmods_built.find(",ofi,") == std::string::npos) {
      return "this build has no ofi netmod (-Dnetmods)";
    }
    if (!sh("command -v mpiexec.hydra")) return "MPICH's mpiexec.hydra is not installed";
    if (!add("probe")) return "cannot create a network namespace here (needs root and iproute2)";
    return {};
  }

  // A namespace for `host`, with loopback up.
  bool add(const std::string &host) {
    const std::string ns = "iris-" + host + "-" + tag_;
    if (!sh("ip netns add " + ns)) return false;
    made_.push_back(ns);
    return sh(in(host) + "ip link set lo up");
  }

  // "ip netns exec <host's namespace> ".
  std::string in(const std::string &host) const {
    return "ip netns exec iris-" + host + "-" + tag_ + " ";
  }

  // A veth between two hosts: interface `name_a` with `ip_a` (a /24) in
  // `a`, `name_b` with `ip_b` in `b`. Empty addresses: none (a bridge
  // port).
  bool link(const std::string &a, const std::string &name_a, const std::string &ip_a,
            const std::string &b, const std::string &name_b, const std::string &ip_b) {
    const std::string end_a = "irisv" + std::to_string(links_) + "a" + tag_;
    const std::string end_b = "irisv" + std::to_string(links_++) + "b" + tag_;
    if (!sh("ip link add " + end_a + " type veth peer name " + end_b)) return false;
    return end(a, end_a, name_a, ip_a) && end(b, end_b, name_b, ip_b);
  }

  // A bridge `name` in `host`, with `ports` (interfaces of that host).
  bool bridge(const std::string &host, const std::string &name,
              const std::vector<std::string> &ports) {
    if (!sh(in(host) + "ip link add " + name + " type bridge")) return false;
    for (const std::string &port : ports) {
      if (!sh(in(host) + "ip link set " + port + " master " + name)) return false;
    }
    return sh(in(host) + "ip link set " + name + " up");
  }

  // Makes `iface` of `host` slow: its sending limited to 100 Mbit/s (tbf;
  // this kernel has no netem).
  bool slow(const std::string &host, const std::string &iface) {
    return sh(in(host) + "tc qdisc add dev " + iface +
              " root tbf rate 100mbit burst 32kb latency 100ms");
  }

  // The launcher command Hydra calls as it would ssh (options, host,
  // command): it runs the command in the host's namespace instead.
  std::string wrapper() {
    if (!wrapper_.empty()) return wrapper_;
    wrapper_ = ::testing::TempDir() + "/iris-netns-" + tag_ + ".sh";
    std::ofstream(wrapper_) << "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\n"
                            << "ns=iris-$1-" << tag_ << "\nshift\n"
                            << "exec ip netns exec \"$ns\" sh -c \"$*\"\n";
    if (::chmod(wrapper_.c_str(), 0755) != 0) wrapper_ = "/nonexistent/launcher";  // the job says
    return wrapper_;
  }

  // A job of one rank per host of `hosts` ("a,b"), started by Hydra from
  // inside the first host, whose proxies reach it over `iface`; Iris's
  // ranks speak PMI-1 to it.
  run_result job(const std::string &hosts, int ranks, const std::string &iface,
                 const std::vector<std::string> &program,
                 const std::vector<std::pair<std::string, std::string>> &env) {
    std::vector<std::string> argv = {"ip",
                                     "netns",
                                     "exec",
                                     "iris-" + hosts.substr(0, 1) + "-" + tag_,
                                     "mpiexec.hydra",
                                     "-launcher",
                                     "ssh",
                                     "-launcher-exec",
                                     wrapper(),
                                     "-iface",
                                     iface,
                                     "-hosts",
                                     hosts,
                                     "-n",
                                     std::to_string(ranks),
                                     "-ppn",
                                     "1"};
    argv.insert(argv.end(), program.begin(), program.end());
    return run(argv, 120, env);
  }

 private:
  bool end(const std::string &host, const std::string &veth, const std::string &name,
           const std::string &ip) {
    const std::string at = in(host);
    return sh("ip link set " + veth + " netns iris-" + host + "-" + tag_) &&
           sh(at + "ip link set " + veth + " name " + name) &&
           (ip.empty() || sh(at + "ip addr add " + ip + "/24 dev " + name)) &&
           sh(at + "ip link set " + name + " up");
  }

  std::string tag_;
  std::vector<std::string> made_;
  std::string wrapper_;
  int links_ = 0;
};

// Two hosts, a and b, joined by one veth: iris0 on both sides (so that one
// IRIS_TCP_IF names the interface of every host, as on a cluster),
// 198.51.100.1 and .2.
class Namespaces : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = lab_.unable();
    if (!why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(lab_.add("a") && lab_.add("b"));
    ASSERT_TRUE(lab_.link("a", "iris0", "198.51.100.1", "b", "iris0", "198.51.100.2"));
  }

  // Bytes the iris0 of host `host` has received.
  long long rx_bytes(const std::string &host) {
    const run_result r =
        run({"sh", "-c", lab_.in(host) + "cat /sys/class/net/iris0/statistics/rx_bytes"}, 10, {});
    return std::atoll(r.output.c_str());
  }

  run_result job(const std::vector<std::string> &args,
                 const std::vector<std::pair<std::string, std::string>> &env) {
    std::vector<std::string> program = {programs + "/net"};
    program.insert(program.end(), args.begin(), args.end());
    return lab_.job("a,b", 2, "iris0", program, env);
  }

  lab lab_;
};

TEST_F(Namespaces, MessagesCrossTheVethBetweenHosts) {
  const long long before_a = rx_bytes("a");
  const long long before_b = rx_bytes("b");
  const run_result r = job({"volume", "16"}, {{"IRIS_DEBUG", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("net volume: all checks passed"), std::string::npos) << r.output;
  // Each side sent 16 MiB to the other.
  EXPECT_GE(rx_bytes("a") - before_a, 16LL << 20);
  EXPECT_GE(rx_bytes("b") - before_b, 16LL << 20);
  EXPECT_NE(r.output.find("card addresses 198.51.100.1,127.0.0.1"), std::string::npos) << r.output;
}

TEST_F(Namespaces, ANamedInterfaceIsTheOnlyOnePublished) {
  const run_result r = job({"volume", "2"}, {{"IRIS_TCP_IF", "iris0"}, {"IRIS_DEBUG", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0: netmod tcp listening on port"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("card addresses 198.51.100.1\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("card addresses 198.51.100.2\n"), std::string::npos) << r.output;
}

// Under IRIS_NETMOD=tcp the line is tcp's own; under auto (the default of a
// build of several netmods) it says that no netmod starts and why each
// did not (ofi: no fabric device here, or what it found wrong).
TEST_F(Namespaces, AnInterfaceThatIsNotThereIsAClearError) {
  const std::string line =
      "tcp: IRIS_TCP_IF=eth99 is not an interface with an IPv4 address that is up (there are: lo "
      "127.0.0.1, iris0 198.51.100.";
  const run_result r = job({"volume", "1"}, {{"IRIS_TCP_IF", "eth99"}, {"IRIS_NETMOD", "tcp"}});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("MPI_Init: " + line), std::string::npos) << r.output;
  const run_result by_default = job({"volume", "1"}, {{"IRIS_TCP_IF", "eth99"}});
  EXPECT_NE(by_default.exit_code, 0) << by_default.output;
  EXPECT_FALSE(by_default.timed_out);
  const std::string tried = netmods_built == ",tcp,"
                                ? "MPI_Init: "
                                : "MPI_Init: no netmod starts here (IRIS_NETMOD=auto tried ";
  EXPECT_NE(by_default.output.find(tried), std::string::npos) << by_default.output;
  EXPECT_NE(by_default.output.find(line), std::string::npos) << by_default.output;
}

// Three hosts. A bridge in a fourth namespace (s) joins them all over
// `mgmt` (10.200.0.0/24), which only the launcher uses. Point-to-point
// links: a-b on iris0 (192.0.2.0/24), b-c on iris2 (198.51.100.0/24), and
// a-c on iris1 (203.0.113.0/24). a and c publish one tcp interface each
// (IRIS_TCP_IF: a's iris0, c's iris2), so tcp reaches a-b and b-c but not
// a-c; ofi's tcp provider runs on iris1 (FI_TCP_IFACE), which joins a and
// c. b offers tcp alone, on all its interfaces.
class ThreeHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = lab_.unable(true);
    if (!why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(lab_.add("a") && lab_.add("b") && lab_.add("c") && lab_.add("s"));
    ASSERT_TRUE(lab_.link("a", "mgmt", "10.200.0.1", "s", "pa", ""));
    ASSERT_TRUE(lab_.link("b", "mgmt", "10.200.0.2", "s", "pb", ""));
    ASSERT_TRUE(lab_.link("c", "mgmt", "10.200.0.3", "s", "pc", ""));
    ASSERT_TRUE(lab_.bridge("s", "br0", {"pa", "pb", "pc"}));
    ASSERT_TRUE(lab_.link("a", "iris0", "192.0.2.1", "b", "iris0", "192.0.2.2"));
    ASSERT_TRUE(lab_.link("b", "iris2", "198.51.100.2", "c", "iris2", "198.51.100.3"));
    ASSERT_TRUE(lab_.link("a", "iris1", "203.0.113.1", "c", "iris1", "203.0.113.3"));
  }

  run_result job(const std::string &lists, const std::string &unreached) {
    return lab_.job(
        "a,b,c", 3, "mgmt", {programs + "/netmods", lists, unreached},
        {{"IRIS_OFI_PROVIDER", "tcp;ofi_rxm"}, {"IRIS_DEBUG", "1"}, {"IRIS_STATS", "1"}});
  }

  lab lab_;
};

TEST_F(ThreeHosts, APairThatTcpDoesNotReachGoesByOfiAndTheRestByTcp) {
  const run_result r =
      job("tcp,ofi|IRIS_TCP_IF=iris0|FI_TCP_IFACE=iris1;tcp;tcp,ofi|IRIS_TCP_IF=iris2|FI_TCP_IFACE="
          "iris1",
          "0-2:tcp");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("netmods: all checks passed on 3 ranks"), std::string::npos) << r.output;
  // Both ranks of the pair say why, and come to the same verdict.
  EXPECT_NE(r.output.find("rank 0: peer 2: tcp does not reach it: rank 0's routes "
                          "(10.200.0.0/24,192.0.2.0/24,203.0.113.0/24) lead to none of rank 2's "
                          "tcp addresses (198.51.100.3); ofi does"),
            std::string::npos)
      << r.output;
  // IRIS_STATS: each netmod's peers, and why they went by it.
  EXPECT_NE(r.output.find("rank 0 net tcp: peers 1 (the first of the lower rank's offer that both "
                          "offer)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("rank 0 net ofi: peers 2 (the first of the lower rank's offer that both "
                          "offer and that reaches)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("rank 2: peer 0: tcp does not reach it: rank 0's routes "
                          "(10.200.0.0/24,192.0.2.0/24,203.0.113.0/24) lead to none of rank 2's "
                          "tcp addresses (198.51.100.3); ofi does"),
            std::string::npos)
      << r.output;
}

TEST_F(ThreeHosts, APairThatNoSharedNetmodReachesStopsWithOneLine) {
  // a's ofi cannot start (no such provider), so a and c share only tcp,
  // which does not reach them.
  const run_result r = job(
      "tcp,ofi|IRIS_TCP_IF=iris0|IRIS_OFI_PROVIDER=carrier-pigeon;tcp;tcp,ofi|IRIS_TCP_IF=iris2",
      "0-2:tcp");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("ranks 0 and 2 share no netmod that reaches: tcp does not reach it: "
                          "rank 0's routes (10.200.0.0/24,192.0.2.0/24,203.0.113.0/24) lead to "
                          "none of rank 2's tcp addresses (198.51.100.3) (IRIS_NETMOD)"),
            std::string::npos)
      << r.output;
}

// Two hosts joined by two paths: iris0, which tcp publishes (IRIS_TCP_IF),
// and iris1, which ofi's tcp provider uses (FI_TCP_IFACE); the launcher
// has a third link, mgmt. With IRIS_NETMOD=auto the first ranks of the two
// hosts measure both netmods, and the job takes the faster: the one whose
// path is not slowed.
class TwoPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = lab_.unable(true);
    if (!why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(lab_.add("a") && lab_.add("b"));
    ASSERT_TRUE(lab_.link("a", "mgmt", "10.200.0.1", "b", "mgmt", "10.200.0.2"));
    ASSERT_TRUE(lab_.link("a", "iris0", "192.0.2.1", "b", "iris0", "192.0.2.2"));
    ASSERT_TRUE(lab_.link("a", "iris1", "203.0.113.1", "b", "iris1", "203.0.113.2"));
  }

  // Slows `iface` both ways, then runs a 2-rank job with IRIS_NETMOD=auto.
  run_result job_with_slow(const std::string &iface) {
    if (!lab_.slow("a", iface) || !lab_.slow("b", iface)) {
      return run_result{.exit_code = 77, .output = "tc cannot add a tbf qdisc here"};
    }
    return lab_.job("a,b", 2, "mgmt",
                    {programs + "/netmods", "auto|IRIS_TCP_IF=iris0|FI_TCP_IFACE=iris1"},
                    {{"IRIS_OFI_PROVIDER", "tcp;ofi_rxm"}, {"IRIS_DEBUG", "1"}});
  }

  lab lab_;
};

TEST_F(TwoPaths, AutoTakesOfiWhenTcpsPathIsSlow) {
  const run_result r = job_with_slow("iris0");
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("netmods: all checks passed on 2 ranks"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("netmods: auto chose ofi"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 0: probe with rank 1: "), std::string::npos) << r.output;
}

TEST_F(TwoPaths, AutoTakesTcpWhenOfisPathIsSlow) {
  const run_result r = job_with_slow("iris1");
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("netmods: all checks passed on 2 ranks"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("netmods: auto chose tcp"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace iris::test
