// Survivors go on after ranks die (ULFM; device/protocols/recovery.hpp),
// through test/mpi/ulfm.c under mpiexec --enable-recovery: ranks killed
// with SIGKILL idle, inside a receive, in the middle of a 64 MiB
// rendezvous, inside a collective, during the shrink itself, and holding
// an exclusive lock on a window (the survivors' lock, lock_all and PSCW
// start end with MPIX_ERR_PROC_FAILED; before, they waited for ever), over
// shared memory, tcp, ofi and two simulated nodes, at 3, 4 and 8 ranks.
// Each survivor revokes, shrinks, agrees and checks every byte of its
// traffic afterwards (ulfm.c); /dev/shm is clean after each job.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <tuple>
#include <vector>

#include "test/mpi/jobs.hpp"

namespace iris::test {
namespace {

const std::vector<std::string> places = {"idle",   "recv",   "rendezvous", "collective",
                                         "shrink", "window", "am",         "constructors"};

run_result recovery_job(int ranks, int nodes, const std::vector<std::string> &args,
                        const env_list &env = {}, bool recovery = true, double limit = 120) {
  std::vector<std::string> argv = {mpiexec};
  if (recovery) argv.push_back("--enable-recovery");
  argv.insert(argv.end(), {"-n", std::to_string(ranks)});
  if (nodes > 1) argv.insert(argv.end(), {"--nodes", std::to_string(nodes)});
  argv.push_back(programs + "/ulfm");
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, limit, env);
}

// Every place a rank may die, in one configuration: the job ends 0, each
// death is one line of mpiexec's, and rank 0 says how many went on.
void survivors_go_on(int ranks, int nodes, const std::string &victims, int deaths,
                     const env_list &env = {}) {
  for (const std::string &where : places) {
    const run_result r = recovery_job(ranks, nodes, {where, victims}, env);
    EXPECT_FALSE(r.timed_out) << where << "\n" << r.output;
    EXPECT_EQ(r.exit_code, 0) << where << "\n" << r.output;
    EXPECT_EQ(occurrences(r.output, "killed by signal 9 (Killed)"),
              static_cast<std::size_t>(deaths))
        << where << "\n"
        << r.output;
    EXPECT_NE(r.output.find("ulfm: " + std::to_string(ranks - deaths) +
                            " survivors went on after " + where),
              std::string::npos)
        << where << "\n"
        << r.output;
  }
}

class Recovery : public FailureTest {};

TEST_F(Recovery, EightRanksOverSharedMemoryGoOnAfterTwoDie) {
  survivors_go_on(8, 1, "3,5", 2);
}

TEST_F(Recovery, FourRanksOverTcpGoOn) {
  survivors_go_on(4, 1, "1", 1, {{"IRIS_SHM", "0"}});
}

TEST_F(Recovery, TwoNodesGoOnAfterARankOfEachDies) {
  survivors_go_on(4, 2, "1,2", 2);
}

TEST_F(Recovery, OverOfiTheSurvivorsGoOnAndFinalizeWithoutWaitingForTheDead) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  survivors_go_on(4, 2, "1,2", 2, ofi_rxm);
}

// Under a launcher that tells of no death (IRIS_TEST_DEAF_TO_LAUNCHER
// stands for Hydra or srun), the ranks of the node see a peer's process end
// (device/transports/liveness.hpp) and go on as with mpiexec's reports.
// Before, they waited for the dead rank until the job's time ran out.
TEST_F(Recovery, OverSharedMemoryTheNodeSeesADeathNoLauncherReports) {
  survivors_go_on(4, 1, "2", 1, {{"IRIS_TEST_DEAF_TO_LAUNCHER", "1"}});
}

// Under MPICH's Hydra with -disable-auto-cleanup: a rank that exits
// without MPI_Finalize. Hydra tells nobody, but sends the others SIGUSR1,
// which under recovery the PMI-1 client catches (before, it ended them:
// "signal 10"), and the node's liveness watch tells the survivors. (Hydra
// 4.0.2 still ends the whole job when a rank is killed by a signal.)
TEST_F(Recovery, UnderHydraARankThatExitsDiesAndTheOthersGoOn) {
  const std::string hydra = "/usr/bin/mpiexec.hydra";
  if (access(hydra.c_str(), X_OK) != 0) GTEST_SKIP() << "MPICH's mpiexec.hydra is not installed";
  const run_result r = run({hydra, "-disable-auto-cleanup", "-genv", "IRIS_RECOVERY", "1", "-n",
                            "4", programs + "/ulfm", "exit3", "2"},
                           60);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 3) << r.output;  // Hydra's: the worst of the ranks'
  EXPECT_NE(r.output.find("ulfm: 3 survivors went on after exit3"), std::string::npos) << r.output;
  EXPECT_EQ(shm_leftovers(), std::vector<std::string>{}) << "left in /dev/shm";
}

// Agreements and shrinks over an intercommunicator (ulfm.c `intercomm`):
// a victim in each group, one in a group of two, the first rank (the
// agreement's coordinator), a whole remote group, and nobody; over shm,
// tcp and two nodes. Before, every MPIX_ call on an intercommunicator but
// revoke was refused as unsupported.
TEST_F(Recovery, IntercommunicatorsAgreeAndShrink) {
  const std::vector<std::tuple<int, int, std::string, env_list>> cases = {
      {4, 1, "1,2", {}}, {3, 1, "2", {}}, {4, 1, "0", {{"IRIS_SHM", "0"}}},
      {4, 2, "2,3", {}}, {4, 1, "-", {}},
  };
  for (const auto &[ranks, nodes, victims, env] : cases) {
    const run_result r = recovery_job(ranks, nodes, {"intercomm", victims}, env);
    const int deaths = victims == "-" ? 0 : static_cast<int>(occurrences(victims, ",")) + 1;
    EXPECT_FALSE(r.timed_out) << victims << "\n" << r.output;
    EXPECT_EQ(r.exit_code, 0) << victims << "\n" << r.output;
    EXPECT_NE(r.output.find("ulfm: " + std::to_string(ranks - deaths) +
                            " survivors went on after intercomm"),
              std::string::npos)
        << victims << "\n"
        << r.output;
  }
}

// At MPI_THREAD_MULTIPLE, with a second thread per rank in a loop of
// MPI_Allreduce over its own duplicate of the world (ulfm.c,
// TEST_THREAD_LEVEL): every place, over shm and tcp (over shm alone under a
// sanitizer: the ThreadSanitizer pass runs `recv` at this level over both,
// test/suite.sh). Before, the paths
// that run without the call lock did not step aside for recovery: a send
// on a revoked communicator succeeded, and a wildcard receive waited for
// ever instead of returning MPIX_ERR_PROC_FAILED_PENDING.
TEST_F(Recovery, AtThreadMultipleWithASecondThread) {
  survivors_go_on(4, 1, "1", 1, {{"TEST_THREAD_LEVEL", "multiple"}});
  if (sanitized) return;
  survivors_go_on(4, 1, "2", 1, {{"TEST_THREAD_LEVEL", "multiple"}, {"IRIS_SHM", "0"}});
}

// A spawned job loses a child (spawn.c `die`): the parents and the other
// child agree over the spawn's intercommunicator and shrink it, and go on
// with the child left. The children's launcher inherits recovery. Before,
// the parents' agreement waited for ever for the dead child, whose death
// only its own job's launcher tells of.
TEST_F(Recovery, ASpawnedJobLosesAChildAndBothGoOn) {
  for (const auto &[parents, env] : {std::pair{1, env_list{}}, std::pair{2, env_list{}},
                                     std::pair{4, env_list{{"IRIS_SHM", "0"}}}}) {
    const run_result r = run(
        {mpiexec, "--enable-recovery", "-n", std::to_string(parents), programs + "/spawn", "die"},
        60, env);
    EXPECT_FALSE(r.timed_out) << parents << " parents\n" << r.output;
    EXPECT_EQ(r.exit_code, 0) << parents << " parents\n" << r.output;
    EXPECT_NE(r.output.find("spawn die: all checks passed"), std::string::npos)
        << parents << " parents\n"
        << r.output;
  }
}

TEST_F(Recovery, ThreeRanksGoOnAsTwo) {
  survivors_go_on(3, 1, "2", 1);
}

// The agreement's coordinator (rank 0) dies once it has told one rank its
// decision (IRIS_RECOVERY_DIE_DECIDING): the rank that has it gives it to
// the others, so every survivor returns the same flag (ulfm.c compares).
// Over shm, tcp and two nodes.
TEST_F(Recovery, ACoordinatorThatDiesDecidingLeavesOneAnswer) {
  for (const env_list &env : {env_list{}, env_list{{"IRIS_SHM", "0"}}}) {
    for (const int nodes : {1, 2}) {
      const run_result r = recovery_job(4, nodes, {"deciding", "0"}, env);
      EXPECT_EQ(r.exit_code, 0) << r.output;
      EXPECT_NE(r.output.find("ulfm: 3 survivors went on after deciding"), std::string::npos)
          << r.output;
    }
  }
}

// The same inside MPI_Finalize's agreement: the rank it told leaves, and
// the others still finish. Before, they waited for it: for ever over shm
// (it had exited), 10 s over tcp (it waited for their goodbyes). The limit
// is a hang's, 40 times what the job takes.
TEST_F(Recovery, ACoordinatorThatDiesInFinalizeLeavesTheOthersToFinish) {
  for (const env_list &env : {env_list{}, env_list{{"IRIS_SHM", "0"}}}) {
    const run_result r = recovery_job(4, 1, {"finalize", "0"}, env, true, 8);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("ulfm: 4 survivors went on after finalize"), std::string::npos)
        << r.output;
    EXPECT_EQ(occurrences(r.output, "killed by signal 9 (Killed)"), 1U) << r.output;
  }
}

// Revoke, shrink and agree need no failure, nor recovery on; a second
// agreement on a communicator while an MPIX_Comm_iagree runs is refused.
TEST_F(Recovery, RevokeShrinkAndAgreeWorkWithoutAFailure) {
  for (const bool recovery : {false, true}) {
    const run_result r = recovery_job(4, 1, {"none", "-"}, {}, recovery);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("ulfm: 4 survivors went on after none"), std::string::npos) << r.output;
  }
}

// The same over ofi alone, where the receiver reads a rendezvous send's
// buffer by RMA: a send revoked while its receiver reads it returns only
// once the read ended (revoke_during_read unmaps the buffer then). Before,
// it returned at once, the read met unmapped memory and the receiver
// waited for ever (every run of the test; one in five of the collectives).
// And a send whose message was claimed by MPI_Mprobe, then revoked, returns
// before the MPI_Mrecv (revoke_after_mprobe; before, it waited for it).
TEST_F(Recovery, OverOfiARevokedSendReturnsOnceItsReceiverStoppedReading) {
  if (!ofi_built()) GTEST_SKIP() << "this build has no ofi netmod (-Dnetmods)";
  env_list env = ofi_rxm;
  env.emplace_back("IRIS_SHM", "0");
  const run_result r = recovery_job(4, 1, {"none", "-"}, env, false, 60);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ulfm: 4 survivors went on after none"), std::string::npos) << r.output;
}

// A survivor that keeps MPI_ERRORS_ARE_FATAL ends the job with one line
// naming its dead peer.
TEST_F(Recovery, ErrorsAreFatalEndTheJobWithOneLineNamingTheDeadRank) {
  const run_result r = recovery_job(4, 1, {"fatal", "2"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.output.find("MPI_Recv: its peer, world rank 2, died (MPIX_ERR_PROC_FAILED)"),
            std::string::npos)
      << r.output;
}

// A rank that exits without MPI_Finalize has failed, whatever its code: one
// line of mpiexec's says so and the others go on; the job ends 0. Before,
// it finalized the launcher on its way out, and exit(3) was taken for a
// rank that had finished: "exited with code 3 after finalizing", the job's
// exit code 3. Over shm and tcp.
TEST_F(Recovery, ARankThatExitsWithoutFinalizeDiesAndTheOthersGoOn) {
  for (const env_list &env : {env_list{}, env_list{{"IRIS_SHM", "0"}}}) {
    for (const std::string code : {"3", "0"}) {
      const run_result r = recovery_job(4, 1, {"exit" + code, "2"}, env);
      EXPECT_FALSE(r.timed_out) << r.output;
      EXPECT_EQ(r.exit_code, 0) << r.output;
      EXPECT_EQ(occurrences(r.output, "exited with code " + code +
                                          " without finalizing PMIx; 3 other ranks go on"),
                1U)
          << r.output;
      EXPECT_NE(r.output.find("ulfm: 3 survivors went on after exit" + code), std::string::npos)
          << r.output;
    }
  }
}

// Without --enable-recovery a death still ends the whole job at once.
TEST_F(Recovery, WithoutTheOptionADeathEndsTheJob) {
  const run_result r = recovery_job(4, 1, {"idle", "2"}, {}, false);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.output.find("rank 2"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("survivors went on"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace iris::test
