// The PMI-1 backend: the simple line protocol MPICH's Hydra (and srun
// --mpi=pmi2's PMI-1 compatibility) speaks on the descriptor in PMI_FD, or
// on the TCP address in PMI_PORT with PMI_ID.
//
// Every request is one line of `key=value` words; the launcher answers each
// (but abort) with one line. The key-value space is global, so a rank's card
// `key` is stored as `key-<rank>`. Node layout comes from the launcher's
// PMI_process_mapping, e.g. "(vector,(0,2,4))": blocks of (first node, node
// count, ranks per node), dealt out cyclically.
#include <netdb.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "pmi/backends.hpp"

namespace iris::pmi {
namespace {

std::string env_or_empty(const char *name) {
  const char *v = std::getenv(name);
  return v != nullptr ? v : "";
}

int env_int(const char *name) {
  const std::string text = env_or_empty(name);
  char *end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0) {
    throw error(std::string("PMI-1 launcher: ") + name + "='" + text + "' is not a number");
  }
  return static_cast<int>(v);
}

int connect_port(const std::string &address) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos) throw error("PMI_PORT='" + address + "' is not host:port");
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  const std::string host = address.substr(0, colon);
  if (getaddrinfo(host.c_str(), address.substr(colon + 1).c_str(), &hints, &found) != 0) {
    throw error("cannot resolve the PMI-1 launcher at " + address);
  }
  int fd = -1;
  for (addrinfo *a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) throw error("cannot connect to the PMI-1 launcher at " + address);
  return fd;
}

class pmi1_client final : public client {
 public:
  pmi1_client() {
    const std::string port = env_or_empty("PMI_PORT");
    fd_ = port.empty() ? env_int("PMI_FD") : connect_port(port);
    if (!port.empty()) handshake_port();
    rank_ = env_or_empty("PMI_RANK").empty() ? rank_ : env_int("PMI_RANK");
    size_ = env_or_empty("PMI_SIZE").empty() ? size_ : env_int("PMI_SIZE");
    ask("cmd=init pmi_version=1 pmi_subversion=1", "response_to_init");
    kvsname_ = ask("cmd=get_my_kvsname", "my_kvsname").at("kvsname");
    load_layout();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int node_of(int rank) const override {
    if (rank < 0 || rank >= size_)
      throw error("rank " + std::to_string(rank) + " is not in the job");
    return node_of_[static_cast<std::size_t>(rank)];
  }
  std::string_view job_id() const override { return kvsname_; }
  std::string_view backend() const override { return "pmi1"; }
  bool singleton() const override { return false; }

  // PMI-1 has no word for a death. Hydra under -disable-auto-cleanup sends
  // SIGUSR1 to the ranks left when one ends badly (MPICH's notice of a
  // failure), whose default action would end them too: under recovery it
  // is caught and ignored, unless the program chose its own action (the
  // transports tell who died). Returns false: no reports.
  bool watch_failures(void (*fn)(int rank, void *arg), void *arg) override {
    (void)arg;
    struct sigaction now = {};
    if (fn != nullptr && sigaction(SIGUSR1, nullptr, &now) == 0 && now.sa_handler == SIG_DFL) {
      struct sigaction take = {};
      take.sa_handler = [](int) {};
      take.sa_flags = SA_RESTART;
      sigemptyset(&take.sa_mask);
      sigaction(SIGUSR1, &take, nullptr);
    }
    return false;
  }

  void put(std::string_view key, std::string_view value) override {
    check_card(key, value);
    const std::string request = "cmd=put kvsname=" + kvsname_ + " key=" + std::string(key) + "-" +
                                std::to_string(rank_) + " value=" + std::string(value);
    if (request.size() + 1 > max_request_length) {
      throw error("PMI-1: storing card '" + std::string(key) + "' takes a request of " +
                  std::to_string(request.size() + 1) + " bytes, more than the " +
                  std::to_string(max_request_length) + " a PMI-1 launcher reads (kvsname of " +
                  std::to_string(kvsname_.size()) + " characters)");
    }
    ask(request, "put_result");
  }
  void commit() override {}  // puts are visible to all after the next barrier
  void fence() override { ask("cmd=barrier_in", "barrier_out"); }

  std::string get(int rank, std::string_view key) override {
    return get_global(std::string(key) + "-" + std::to_string(rank));
  }

  [[noreturn]] void abort(int code, std::string_view message) override {
    std::fflush(nullptr);
    // Hydra kills the job as soon as it hears the abort, and what its proxy
    // has not yet read of this rank's output is lost: the line saying why.
    // Wait (briefly) until the pipes are drained.
    for (int waited_ms = 0; waited_ms < 1000 && output_unread(); ++waited_ms) ::usleep(1000);
    send_line("cmd=abort exitcode=" + std::to_string(code));
    (void)message;  // the device printed it already
    ::_exit(code);
  }

  void finalize() override { ask("cmd=finalize", "finalize_ack"); }

 private:
  // Bytes written to stdout or stderr that the reader has not taken yet
  // (FIONREAD works on either end of a pipe; 0 for terminals and files).
  static bool output_unread() {
    for (const int fd : {STDOUT_FILENO, STDERR_FILENO}) {
      int unread = 0;
      if (::ioctl(fd, FIONREAD, &unread) == 0 && unread > 0) return true;
    }
    return false;
  }

  void handshake_port() {
    send_line("cmd=initack pmiid=" + env_or_empty("PMI_ID"));
    // The launcher answers with initack, then "set size=", "set rank=" and
    // "set debug=" lines.
    for (int expected = 0; expected < 4; ++expected) {
      const auto words = read_words();
      if (words.count("size") != 0) size_ = std::stoi(words.at("size"));
      if (words.count("rank") != 0) rank_ = std::stoi(words.at("rank"));
    }
  }

  std::string get_global(const std::string &key) {
    const auto words = ask("cmd=get kvsname=" + kvsname_ + " key=" + key, "get_result", false);
    if (words.count("rc") == 0 || words.at("rc") != "0" || words.count("value") == 0) {
      throw error("PMI-1 launcher has no key '" + key + "'");
    }
    return words.at("value");
  }

  // Nodes from PMI_process_mapping; without it, from every rank's hostname.
  void load_layout() {
    node_of_.assign(static_cast<std::size_t>(size_), -1);
    std::string mapping;
    try {
      mapping = get_global("PMI_process_mapping");
    } catch (const error &) {
    }
    if (!parse_mapping(mapping)) layout_from_hostnames();
  }

  bool parse_mapping(const std::string &text) {
    std::vector<int> nums;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] >= '0' && text[i] <= '9') {
        std::size_t used = 0;
        nums.push_back(std::stoi(text.substr(i), &used));
        i += used - 1;
      }
    }
    if (text.find("vector") == std::string::npos || nums.empty() || nums.size() % 3 != 0)
      return false;
    int assigned = 0;
    for (int guard = 0; assigned < size_ && guard < size_; ++guard) {
      for (std::size_t b = 0; b + 2 < nums.size() && assigned < size_; b += 3) {
        for (int n = 0; n < nums[b + 1]; ++n) {
          for (int k = 0; k < nums[b + 2] && assigned < size_; ++k) {
            node_of_[static_cast<std::size_t>(assigned++)] = nums[b] + n;
          }
        }
      }
    }
    renumber();
    return assigned == size_;
  }

  void layout_from_hostnames() {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    put("iris.host", host);
    fence();
    std::map<std::string, int> ids;
    for (int r = 0; r < size_; ++r) {
      const auto inserted = ids.emplace(get(r, "iris.host"), static_cast<int>(ids.size()));
      node_of_[static_cast<std::size_t>(r)] = inserted.first->second;
    }
  }

  // Nodes numbered 0.. in order of their lowest rank, as the contract says.
  void renumber() {
    std::map<int, int> ids;
    for (int &n : node_of_) n = ids.emplace(n, static_cast<int>(ids.size())).first->second;
  }

  void send_line(const std::string &line) {
    const std::string out = line + "\n";
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::write(fd_, out.data() + done, out.size() - done);
      if (n <= 0) throw error("the PMI-1 launcher closed its connection");
      done += static_cast<std::size_t>(n);
    }
  }

  std::map<std::string, std::string> read_words() {
    std::string line;
    char c = 0;
    while (::read(fd_, &c, 1) == 1 && c != '\n') line += c;
    if (c != '\n') throw error("the PMI-1 launcher closed its connection");
    std::map<std::string, std::string> words;
    std::size_t at = 0;
    while (at < line.size()) {
      const std::size_t end = line.find(' ', at);
      const std::string word = line.substr(at, end == std::string::npos ? end : end - at);
      const std::size_t eq = word.find('=');
      if (eq != std::string::npos) words[word.substr(0, eq)] = word.substr(eq + 1);
      at = end == std::string::npos ? line.size() : end + 1;
    }
    return words;
  }

  // Sends a request and reads its answer, which must be `cmd=<reply>` (and,
  // if `check_rc`, carry rc=0).
  std::map<std::string, std::string> ask(const std::string &request, const char *reply,
                                         bool check_rc = true) {
    send_line(request);
    auto words = read_words();
    if (words["cmd"] != reply || (check_rc && words.count("rc") != 0 && words["rc"] != "0")) {
      throw error("PMI-1 launcher answered '" + words["cmd"] + "' (rc " + words["rc"] + ") to '" +
                  request.substr(0, request.find(' ')) + "'");
    }
    return words;
  }

  // The longest request line, newline included, that srun --mpi=pmi2 reads
  // whole (one read of 1024 bytes per request).
  static constexpr std::size_t max_request_length = 1024;

  int fd_ = -1;
  int rank_ = 0;
  int size_ = 1;
  std::string kvsname_;
  std::vector<int> node_of_;
};

}  // namespace

std::unique_ptr<client> pmi1_client_open() {
  if (env_or_empty("PMI_FD").empty() && env_or_empty("PMI_PORT").empty()) return nullptr;
  return std::make_unique<pmi1_client>();
}

}  // namespace iris::pmi
