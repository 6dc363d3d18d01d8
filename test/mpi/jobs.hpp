// What the job tests share: Iris's mpiexec, build and test programs (paths
// meson passes in the environment), a job run through that mpiexec, the
// netmods this build has, and counting in a job's output.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "test/common/subprocess.hpp"

namespace iris::test {

inline const std::string mpiexec = required_env("IRIS_MPIEXEC");
inline const std::string programs = required_env("IRIS_TEST_PROGRAMS");  // build/test/mpi
inline const std::string build_root = required_env("IRIS_BUILD_ROOT");
inline const std::string source_root = required_env("IRIS_SOURCE_ROOT");

using env_list = std::vector<std::pair<std::string, std::string>>;

inline run_result job(int ranks, const std::string &program, std::vector<std::string> args = {},
                      const env_list &env = {}, double limit = 120, int nodes = 1) {
  std::vector<std::string> argv = {mpiexec, "-n", std::to_string(ranks)};
  if (nodes > 1) argv.insert(argv.end(), {"--nodes", std::to_string(std::min(nodes, ranks))});
  argv.push_back(programs + "/" + program);
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, limit, env);
}

inline const std::string netmods_built = "," + required_env("IRIS_TEST_NETMODS") + ",";

inline bool ofi_built() {
  return netmods_built.find(",ofi,") != std::string::npos;
}

// A sanitizer build runs the costliest crossings on a subset (test/README.md):
// the tests that loop over rank counts skip their 8-rank runs there. The
// drivers themselves are built without the sanitizer (test/meson.build):
// IRIS_TEST_SANITIZED says the build is.
inline constexpr bool sanitized =
#if defined(IRIS_TEST_SANITIZED) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    true;
#else
    false;
#endif

inline const env_list ofi_rxm = {{"IRIS_NETMOD", "ofi"}, {"IRIS_OFI_PROVIDER", "tcp;ofi_rxm"}};

// Jobs that fail on purpose: each must leave nothing in /dev/shm.
class FailureTest : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_EQ(shm_leftovers(), std::vector<std::string>{}) << "left in /dev/shm";
  }
};

inline std::size_t occurrences(const std::string &text, const std::string &what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace iris::test
