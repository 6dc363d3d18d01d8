#include "pmi/mpiexec/job.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>

namespace iris::mpiexec {

job_layout host_layout(std::string nspace, int nranks, int nodes) {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "localhost");
  }
  job_layout layout;
  layout.nspace = std::move(nspace);
  layout.nranks = nranks;
  for (int k = 0; k < nodes; ++k) {
    layout.node_names.push_back(nodes == 1 ? std::string(host)
                                           : std::string(host) + "-node" + std::to_string(k));
  }
  for (int rank = 0; rank < nranks; ++rank) {
    layout.node_of_rank.push_back(static_cast<int>(static_cast<long long>(rank) * nodes / nranks));
  }
  return layout;
}

void report(std::string_view line) {
  std::string text = "mpiexec: ";
  text += line;
  text += '\n';
  std::string_view rest = text;
  while (!rest.empty()) {
    const ssize_t written = ::write(STDERR_FILENO, rest.data(), rest.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;  // stderr is gone: nobody left to tell
    rest.remove_prefix(static_cast<std::size_t>(written));
  }
}

std::string count_ranks(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " rank" : " ranks");
}

}  // namespace iris::mpiexec
