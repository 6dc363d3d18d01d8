// The netmods through jobs: the names IRIS_NETMOD takes, a netmod per
// peer (lists, reaching, IRIS_NETMOD=auto's probe), netmods loaded at run
// time, the ofi netmod's refusals, and what mpiexec --info says of them.
// Part of the mpi-jobs binary (jobs.hpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "test/mpi/jobs.hpp"

namespace iris::test {
namespace {

// ---- Through the netmod -------------------------------------------------

TEST_F(FailureTest, AnUnknownNetmodIsAClearErrorListingTheBuiltOnes) {
  const run_result r = job(2, "ring", {}, {{"IRIS_SHM", "0"}, {"IRIS_NETMOD", "carrier"}}, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("MPI_Init: IRIS_NETMOD lists carrier, which is not a netmod of this "
                          "build (built: " +
                          required_env("IRIS_TEST_NETMODS")),
            std::string::npos)
      << r.output;
}

TEST_F(FailureTest, ANetmodListedTwiceOrAnEmptyNameIsAClearError) {
  for (const auto &[list, why] :
       {std::pair{"tcp,tcp", "lists tcp twice"}, std::pair{"tcp,,tcp", "lists an empty name"}}) {
    const run_result r = job(2, "ring", {}, {{"IRIS_SHM", "0"}, {"IRIS_NETMOD", list}}, 30);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_FALSE(r.timed_out);
    EXPECT_NE(r.output.find(std::string("MPI_Init: IRIS_NETMOD ") + why), std::string::npos)
        << r.output;
  }
}

// ---- A netmod per peer (IRIS_NETMOD lists) -------------------------------

// Each rank sets its own IRIS_NETMOD (netmods.c), so that a job mixes
// netmods: alone, 0-1 go by ofi and every other pair by tcp; on two nodes
// (0-1 and 2-3, shm within), only 0-3 goes by ofi, as rank 1 prefers tcp.
// The program checks each rank's peer counts per netmod against the rule,
// every byte and the order of eager and rendezvous messages, and a
// window's puts and gets (by RMA over ofi only).
TEST(Netmods, OneJobReachesItsPeersThroughTwoNetmods) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  struct mix {
    int nodes;
    const char *lists;
  };
  for (const mix &m : {mix{1, "ofi,tcp;ofi,tcp;tcp;tcp"}, mix{2, "ofi,tcp;tcp,ofi;tcp;ofi,tcp"}}) {
    env_list env = {{"IRIS_OFI_PROVIDER", "tcp;ofi_rxm"}};
    if (m.nodes == 1) env.emplace_back("IRIS_SHM", "0");
    const run_result r = job(4, "netmods", {m.lists}, env, 120, m.nodes);
    ASSERT_EQ(r.exit_code, 0) << m.lists << "\n" << r.output;
    EXPECT_NE(r.output.find("netmods: all checks passed on 4 ranks"), std::string::npos)
        << r.output;
  }
}

// A netmod of a list that cannot start is left out of the rank's offer;
// a pair left with no netmod in common stops the job at MPI_Init with one
// line naming both offers, instead of waiting at the first send.
TEST_F(FailureTest, RanksThatShareNoNetmodStopWithOneLine) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  const run_result r = job(
      2, "netmods", {"ofi,tcp|IRIS_OFI_PROVIDER=carrier-pigeon;ofi,tcp|IRIS_TCP_IF=no-such-if0"},
      {{"IRIS_SHM", "0"}, {"IRIS_OFI_PROVIDER", "tcp;ofi_rxm"}}, 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("MPI_Init: ranks 0 and 1 share no netmod: rank 0 offers tcp, rank 1 "
                          "offers ofi (IRIS_NETMOD)"),
            std::string::npos)
      << r.output;
  // A rank none of whose list starts names every reason.
  const run_result none = job(
      2, "netmods", {"ofi,tcp"},
      {{"IRIS_SHM", "0"}, {"IRIS_OFI_PROVIDER", "carrier-pigeon"}, {"IRIS_TCP_IF", "no-such-if0"}},
      60);
  EXPECT_NE(none.exit_code, 0) << none.output;
  EXPECT_FALSE(none.timed_out);
  EXPECT_NE(none.output.find("MPI_Init: none of IRIS_NETMOD=ofi,tcp starts here: ofi: "
                             "IRIS_OFI_PROVIDER=carrier-pigeon is not a provider"),
            std::string::npos)
      << none.output;
  EXPECT_NE(none.output.find("; tcp: IRIS_TCP_IF=no-such-if0 is not an interface"),
            std::string::npos)
      << none.output;
}

// IRIS_NETMOD=auto: the first rank of each node measures tcp and ofi with
// the other's, and every rank's peers on the other node go by the netmod
// kept, the same at all four ranks (netmods.c checks it, with every byte
// and a window); IRIS_STATS gives each rank's figures. Which one wins is
// the machine's to say: no test asserts a time.
TEST(Netmods, AutoKeepsTheNetmodItMeasuresFasterForEachPairOfNodes) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  const run_result r = job(4, "netmods", {"auto"},
                           {{"IRIS_OFI_PROVIDER", "tcp;ofi_rxm"}, {"IRIS_STATS", "1"}}, 120, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("netmods: all checks passed on 4 ranks"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("netmods: auto chose "), std::string::npos) << r.output;
  EXPECT_EQ(occurrences(r.output, " (probe: "), 4U) << r.output;
  for (const char *netmod : {"tcp ", "ofi "}) {
    EXPECT_GE(occurrences(r.output, netmod), 4U) << netmod << "\n" << r.output;
  }
}

// Four nodes: six pairs of leaders probe in one order. Ranks past the
// second fence may send to a leader still polling at it; what it reads
// then is handed to the device afterwards (IRIS_DEBUG: "handed on").
// Before, such a record was refused and the connection dropped. Three
// runs, since the timing decides whether any record comes then.
TEST(Netmods, AutoOnFourNodesLosesNothingThatCameDuringTheFence) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  for (int run = 0; run < 3; ++run) {
    const run_result r =
        job(8, "netmods", {"auto"}, {{"IRIS_OFI_PROVIDER", "tcp;ofi_rxm"}}, 120, 4);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("netmods: all checks passed on 8 ranks"), std::string::npos)
        << r.output;
  }
}

// auto at some ranks only would leave them alone at the probe's fence:
// each rank compares its setting with rank 0's, and the one that differs
// stops MPI_Init with one line, also when its IRIS_NETMOD is one name.
TEST_F(FailureTest, AutoAtSomeRanksOnlyIsOneLine) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  struct mismatch {
    const char *lists;
    const char *line;
  };
  for (const mismatch &m :
       {mismatch{"auto;tcp,ofi", "MPI_Init: rank 0 takes IRIS_NETMOD=auto and rank 1 does not"},
        mismatch{"tcp;auto", "MPI_Init: rank 1 takes IRIS_NETMOD=auto and rank 0 does not"},
        mismatch{"auto;auto;tcp", "MPI_Init: rank 0 takes IRIS_NETMOD=auto and rank 2 does not"}}) {
    const run_result r = job(std::string(m.lists) == "auto;auto;tcp" ? 4 : 2, "netmods", {m.lists},
                             {{"IRIS_OFI_PROVIDER", "tcp;ofi_rxm"}}, 60, 2);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_FALSE(r.timed_out) << m.lists;
    EXPECT_NE(r.output.find(std::string(m.line) + ": auto must be every rank's setting or none's"),
              std::string::npos)
        << m.lists << "\n"
        << r.output;
  }
}

// ---- Netmods loaded at run time (netmods/modules.cpp) --------------------

// netmods/example/relay.cpp, a netmod built outside Iris against its
// contract header, loaded from IRIS_NETMOD_PATH: it carries every record
// through Iris's tcp and counts them.
bool tcp_built() {
  return netmods_built.find(",tcp,") != std::string::npos;
}

TEST(NetmodModules, AnOutOfTreeNetmodFromIrisNetmodPathCarriesAJob) {
  if (!tcp_built()) GTEST_SKIP() << "the example relays through tcp, which this build lacks";
  const std::string examples = required_env("IRIS_TEST_NETMOD_EXAMPLES");
  const run_result r = job(4, "allpairs", {"2", "8,70000,2000000"},
                           {{"IRIS_SHM", "0"},
                            {"IRIS_NETMOD", "relay"},
                            {"IRIS_NETMOD_PATH", "/nonexistent:" + examples},
                            {"IRIS_STATS", "1"}},
                           60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("all bytes checked"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("net relay: peers 1-3 (the one netmod of IRIS_NETMOD)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(occurrences(r.output, "relay: records relayed "), 4u) << r.output;
  EXPECT_EQ(r.output.find("relay: records relayed 0;"), std::string::npos) << r.output;
  // mpiexec --info (iris_info, which holds Iris's static libraries) loads
  // it as MPI_Init does.
  const run_result info =
      run({mpiexec, "--info"}, 30, {{"IRIS_NETMOD", "relay"}, {"IRIS_NETMOD_PATH", examples}});
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("netmod: relay (chosen by IRIS_NETMOD)"), std::string::npos)
      << info.output;
  EXPECT_NE(info.output.find("\nrelay: relays through tcp: "), std::string::npos) << info.output;
}

TEST_F(FailureTest, AModuleOfAnotherContractIsRefusedWithOneLine) {
  const std::string examples = required_env("IRIS_TEST_NETMOD_EXAMPLES");
  const run_result r =
      job(2, "ring", {},
          {{"IRIS_SHM", "0"}, {"IRIS_NETMOD", "stale"}, {"IRIS_NETMOD_PATH", examples}}, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(
      r.output.find("MPI_Init: IRIS_NETMOD lists stale, which is not a netmod of this build "
                    "(built: " +
                    required_env("IRIS_TEST_NETMODS") + ") nor a loadable module: " + examples +
                    "/libiris-netmod-stale.so is a netmod of contract 999, and this Iris "
                    "speaks contract 4: rebuild it against this Iris's iris/netmod.h"),
      std::string::npos)
      << r.output;
}

// A missing module names where it looked; a file that is no module, and a
// module whose entry names another netmod, are named with the reason.
TEST_F(FailureTest, AMissingOrBrokenModuleIsNamedWithWhereItLooked) {
  const std::string dir = testing::TempDir() + "iris-modules-" + std::to_string(getpid());
  ASSERT_EQ(run({"/bin/mkdir", "-p", dir}, 10).exit_code, 0);
  std::ofstream(dir + "/libiris-netmod-junk.so") << "not a shared object\n";
  ASSERT_EQ(run({"/bin/cp", required_env("IRIS_TEST_NETMOD_EXAMPLES") + "/libiris-netmod-relay.so",
                 dir + "/libiris-netmod-renamed.so"},
                10)
                .exit_code,
            0);
  const std::pair<const char *, std::string> cases[] = {
      {"carrier", "nor a loadable module: no libiris-netmod-carrier.so in " + dir + ", "},
      {"junk", "nor a loadable module: " + dir + "/libiris-netmod-junk.so cannot be loaded ("},
      {"renamed", "nor a loadable module: " + dir +
                      "/libiris-netmod-renamed.so does not describe a netmod called renamed "
                      "(its iris_netmod_module names relay"},
      {"../etc", "nor a loadable module: a module name is 1 to 32 of a-z, 0-9, - and _"},
  };
  for (const auto &[name, why] : cases) {
    const run_result r = job(
        2, "ring", {}, {{"IRIS_SHM", "0"}, {"IRIS_NETMOD", name}, {"IRIS_NETMOD_PATH", dir}}, 30);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_FALSE(r.timed_out);
    EXPECT_NE(r.output.find("MPI_Init: IRIS_NETMOD lists " + std::string(name) + ", which "),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find(why), std::string::npos) << why << "\n" << r.output;
  }
  run({"/bin/rm", "-rf", dir}, 10);
}

// -Dnetmod_modules=true: ofi is a module that libiris loads, not libiris's
// own code; jobs over it run as before.
TEST(NetmodModules, ABuiltModuleIsLoadedAndLibirisHoldsNoneOfIt) {
  const char *built = std::getenv("IRIS_TEST_NETMOD_MODULES");  // empty: none
  const std::string modules = built != nullptr ? built : "";
  if (modules.find("ofi") == std::string::npos) {
    GTEST_SKIP() << "ofi is not built as a module (-Dnetmod_modules=true)";
  }
  const run_result nm = run({"nm", "-DC", build_root + "/device/libiris.so"}, 30);
  ASSERT_EQ(nm.exit_code, 0) << nm.output;
  EXPECT_NE(nm.output.find("iris::netmod::netmod_create"), std::string::npos) << "no symbols?";
  EXPECT_EQ(nm.output.find("iris::netmod::ofi::"), std::string::npos) << "ofi is in libiris";
  const run_result r =
      job(2, "allpairs", {"2", "8,70000,2000000"}, {{"IRIS_SHM", "0"}, ofi_rxm[0], ofi_rxm[1]}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("all bytes checked"), std::string::npos) << r.output;
}

TEST_F(FailureTest, AnOfiProviderThatIsNotThereIsNamedWithThoseThatAre) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  const run_result r =
      job(2, "ring", {},
          {{"IRIS_SHM", "0"}, {"IRIS_NETMOD", "ofi"}, {"IRIS_OFI_PROVIDER", "carrier-pigeon"}}, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("MPI_Init: ofi: IRIS_OFI_PROVIDER=carrier-pigeon is not a provider "
                          "libfabric has here (found: "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("tcp;ofi_rxm"), std::string::npos) << r.output;
}

// libfabric's own filter leaves only providers without reliable-datagram
// endpoints (tcp: connected; udp: datagrams): the error says so for each.
TEST_F(FailureTest, NoFittingOfiProviderSaysWhyEachWasRefused) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  const run_result r = job(2, "ring", {},
                           {{"IRIS_SHM", "0"},
                            {"IRIS_NETMOD", "ofi"},
                            {"FI_PROVIDER", "^ofi_rxm,ofi_rxd,net,sockets,shm"}},
                           30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("MPI_Init: ofi: no libfabric provider fits: tcp: no reliable-datagram "
                          "endpoint (FI_EP_RDM); udp: no reliable-datagram endpoint (FI_EP_RDM)"),
            std::string::npos)
      << r.output;
}

// A device that a libfabric provider drives, as netmods/ofi/provider.cpp
// looks for one, or empty.
std::string fabric_device_here() {
  std::error_code ec;
  for (const char *dir : {"/sys/class/infiniband", "/sys/class/cxi"}) {
    for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
      return entry.path().string();
    }
  }
  for (const auto &entry : std::filesystem::directory_iterator("/dev", ec)) {
    if (entry.path().filename().string().starts_with("hfi1_")) return entry.path().string();
  }
  return {};
}

// mpiexec --info shows the netmods a job would use and what each would
// choose: with several built, the default is auto, and without a fabric
// device ofi says why it is left out.
TEST(Info, ShowsTheDefaultNetmodAndWhatItWouldChoose) {
  const std::string first = netmods_built.substr(1, netmods_built.find(',', 1) - 1);
  const std::string all = netmods_built.substr(1, netmods_built.size() - 2);
  const run_result r =
      run({mpiexec, "--info"}, 30, {{"IRIS_NETMOD", ""}, {"IRIS_OFI_PROVIDER", ""}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\n" + first + ": "), std::string::npos) << r.output;
  if (all == first) {
    EXPECT_NE(r.output.find("netmod: " + first + " (the build's default"), std::string::npos)
        << r.output;
    return;
  }
  EXPECT_NE(r.output.find("netmods: " + all + " (the build's default"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("each pair of nodes: the faster of the netmods"), std::string::npos)
      << r.output;
  if (ofi_built() && fabric_device_here().empty() && std::getenv("FI_PROVIDER") == nullptr) {
    EXPECT_NE(r.output.find("\nofi: not offered, it cannot start here: ofi: no fabric device "
                            "here (nothing in /sys/class/infiniband or /sys/class/cxi, no "
                            "/dev/hfi1_*), so IRIS_NETMOD=auto leaves ofi out"),
              std::string::npos)
        << r.output;
  }
}

// With several netmods built an empty IRIS_NETMOD is auto. On a host with no
// fabric device ofi declines before libfabric starts (its start costs each
// rank about 0.5 s here, for what tcp carries as fast), every pair goes by
// tcp, chosen from the peer's offer alone, and no probe is run, as nothing
// is left to choose (at 64 ranks on one host auto then starts within the
// noise of IRIS_NETMOD=tcp); a named provider
// offers ofi again (the Auto* tests above).
TEST(Netmods, TheDefaultIsAutoAndLeavesOfiOutWithoutAFabricDevice) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  if (const std::string device = fabric_device_here(); !device.empty()) {
    GTEST_SKIP() << "this host has a fabric device (" << device << "): auto offers ofi here";
  }
  if (std::getenv("FI_PROVIDER") != nullptr) GTEST_SKIP() << "FI_PROVIDER is set";
  const run_result r = job(2, "ring", {},
                           {{"IRIS_SHM", "0"},
                            {"IRIS_NETMOD", ""},
                            {"IRIS_OFI_PROVIDER", ""},
                            {"IRIS_DEBUG", "1"},
                            {"IRIS_STATS", "1"}},
                           60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(occurrences(r.output, "is not offered: ofi: no fabric device here"), 2U) << r.output;
  // Offering tcp alone, a rank reads only its peer's offer to choose it.
  EXPECT_EQ(occurrences(r.output, "net tcp: peers 1 (the one netmod this rank offers)"), 1U)
      << r.output;
  EXPECT_EQ(occurrences(r.output, "net tcp: peers 0 (the one netmod this rank offers)"), 1U)
      << r.output;
  EXPECT_EQ(r.output.find("net ofi: peers"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("probe of "), std::string::npos) << r.output;
}

TEST(Info, ShowsEachNetmodOfAListAndWhyOneIsLeftOut) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  const run_result r = run({mpiexec, "--info"}, 30,
                           {{"IRIS_NETMOD", "ofi,tcp"}, {"IRIS_OFI_PROVIDER", "carrier-pigeon"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("netmods: ofi,tcp (chosen by IRIS_NETMOD)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\nofi: not offered, it cannot start here: ofi: "
                          "IRIS_OFI_PROVIDER=carrier-pigeon is not a provider"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\ntcp: "), std::string::npos) << r.output;
  // None of the list can start: --info fails as MPI_Init would.
  const run_result none = run({mpiexec, "--info"}, 30,
                              {{"IRIS_NETMOD", "ofi,tcp"},
                               {"IRIS_OFI_PROVIDER", "carrier-pigeon"},
                               {"IRIS_TCP_IF", "no-such-if0"}});
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_NE(none.output.find("netmod: cannot start: none of IRIS_NETMOD=ofi,tcp starts here: "),
            std::string::npos)
      << none.output;
}

TEST(Info, ShowsThatAutoMeasuresEveryBuiltNetmod) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  const run_result r =
      run({mpiexec, "--info"}, 30, {{"IRIS_NETMOD", "auto"}, {"IRIS_OFI_PROVIDER", "tcp;ofi_rxm"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("netmods: " + netmods_built.substr(1, netmods_built.size() - 2) +
                          " (chosen by IRIS_NETMOD)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("each pair of nodes: the faster of the netmods both offer and that "
                          "reach, measured at MPI_Init"),
            std::string::npos)
      << r.output;
}

TEST(Info, ShowsTheChosenNetmodAndItsProvider) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  // -x before --info applies, as it would to a job.
  const run_result r =
      run({mpiexec, "-x", "IRIS_NETMOD=ofi", "-x", "IRIS_OFI_PROVIDER=tcp;ofi_rxm", "--info"}, 30);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("netmod: ofi (chosen by IRIS_NETMOD)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ofi: provider tcp;ofi_rxm, domain "), std::string::npos) << r.output;
}

TEST(Info, SaysWhyTheNetmodCannotStart) {
  const run_result r = run({mpiexec, "--info"}, 30, {{"IRIS_NETMOD", "carrier"}});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("netmod: cannot start: IRIS_NETMOD lists carrier, which is not a "
                          "netmod of this build"),
            std::string::npos)
      << r.output;
  const run_result tcp =
      run({mpiexec, "--info"}, 30, {{"IRIS_NETMOD", "tcp"}, {"IRIS_TCP_IF", "no-such-if0"}});
  EXPECT_EQ(tcp.exit_code, 1) << tcp.output;
  EXPECT_NE(tcp.output.find("netmod: cannot start: tcp: IRIS_TCP_IF=no-such-if0 is not an "
                            "interface with an IPv4 address that is up"),
            std::string::npos)
      << tcp.output;
}

// A host without libfabric (or a wrong IRIS_OFI_LIBRARY) fails only the
// jobs that choose the ofi netmod, with one line naming the file.
TEST_F(FailureTest, AMissingLibfabricIsNamedAndTheOtherNetmodsStillRun) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  const env_list missing = {{"IRIS_SHM", "0"},
                            {"IRIS_NETMOD", "ofi"},
                            {"IRIS_OFI_LIBRARY", "/nonexistent/libfabric.so.1"}};
  const run_result r = job(2, "ring", {}, missing, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("MPI_Init: ofi: cannot load /nonexistent/libfabric.so.1 ("),
            std::string::npos)
      << r.output;
  const run_result tcp = job(2, "ring", {},
                             {{"IRIS_SHM", "0"},
                              {"IRIS_NETMOD", "tcp"},
                              {"IRIS_OFI_LIBRARY", "/nonexistent/libfabric.so.1"}},
                             30);
  EXPECT_EQ(tcp.exit_code, 0) << tcp.output;
}

}  // namespace
}  // namespace iris::test
