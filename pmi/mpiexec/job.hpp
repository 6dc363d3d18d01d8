// What every phase of mpiexec shares: the job's shape, its processes, and
// how mpiexec speaks to the user.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace iris::mpiexec {

// mpiexec itself failed (PMIx, fork, hwloc): not the user's arguments and not
// a rank. Printed as one line; mpiexec then exits with launch_failure_code.
class launch_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Exit codes of mpiexec that do not come from a rank.
inline constexpr int launch_failure_code = 1;
inline constexpr int usage_error_code = 2;
inline constexpr int timeout_code = 124;  // as coreutils timeout(1)

// Where each rank runs: every rank is on this host, on one node or, with
// --nodes K, on simulated nodes with names of their own, which the PMIx
// registration and the clients' node_of() follow.
struct job_layout {
  std::string nspace;
  int nranks = 0;
  std::vector<std::string> node_names;  // indexed by node id
  std::vector<int> node_of_rank;        // indexed by rank
};

// `nranks` ranks on this host, spread in blocks over `nodes` simulated nodes
// (node k gets ranks k*nranks/nodes up to (k+1)*nranks/nodes - 1). One node
// is named after the host; several are "<host>-node<k>".
[[nodiscard]] job_layout host_layout(std::string nspace, int nranks, int nodes);

struct rank_process {
  int rank = 0;
  pid_t pid = -1;
  bool reaped = false;
};

// Prints "mpiexec: <line>" to stderr with one write(), so lines from
// mpiexec and the ranks do not interleave inside a line.
void report(std::string_view line);

// "1 rank", "3 ranks".
std::string count_ranks(std::size_t n);

}  // namespace iris::mpiexec
