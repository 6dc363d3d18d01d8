// Phase 1 of mpiexec: the command line.
#pragma once

#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace iris::mpiexec {

// The user's arguments are wrong: one line, exit code 2, no rank started.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class bind_policy {
  automatic,  // core when the ranks fit on the cores, none when oversubscribed
  core,
  none,
};

// One -x: NAME alone passes mpiexec's value (if any), NAME=value sets it.
struct env_setting {
  std::string name;
  std::optional<std::string> value;
};

struct options {
  bool help = false;
  bool info = false;  // --info: run iris_info instead of a job
  int nranks = 0;
  int nodes = 1;  // simulated nodes the ranks are spread over
  bind_policy bind = bind_policy::automatic;
  bool report_bindings = false;
  std::optional<double> timeout_s;  // none: no time limit
  // --enable-recovery: a rank that dies does not end the job; the others are
  // told through PMIx and go on, and each rank gets IRIS_RECOVERY=1.
  bool recovery = false;
  std::string wdir;  // -wdir before the first program: every program's default
  std::vector<env_setting> env;
  // The programs, in rank order: `mpiexec -n 2 a : -n 3 b` starts ranks 0-1
  // of a and 2-4 of b (MPI_APPNUM 0 and 1). nranks is their sum.
  struct app {
    int nranks = 0;
    std::string program_path;       // resolved like execvp(3) does, in wdir
    std::vector<std::string> argv;  // argv[0] as the user wrote it, then the args
    std::string wdir;               // where its ranks run; empty: mpiexec's own
  };
  std::vector<app> apps;
};

// Throws usage_error. Reads MPIEXEC_TIMEOUT when --timeout is not given.
[[nodiscard]] options parse_options(int argc, char **argv);

void print_help(std::FILE *out);

}  // namespace iris::mpiexec
