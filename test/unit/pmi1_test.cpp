// The PMI-1 backend against a launcher played by a thread on a socketpair,
// which keeps each request line whole as Slurm's `srun --mpi=pmi2` does only
// when it fits one 1024-byte read, and which keeps keys and values only as
// long as Hydra does.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "pmi/backends.hpp"
#include "pmi/pmi.hpp"

namespace iris::pmi {
namespace {

// The words of one request line, `key=value` separated by spaces.
std::map<std::string, std::string> words_of(const std::string &line) {
  std::map<std::string, std::string> words;
  std::size_t at = 0;
  while (at < line.size()) {
    const std::size_t end = std::min(line.find(' ', at), line.size());
    const std::string word = line.substr(at, end - at);
    const std::size_t eq = word.find('=');
    if (eq != std::string::npos) words[word.substr(0, eq)] = word.substr(eq + 1);
    at = end + 1;
  }
  return words;
}

class fake_launcher {
 public:
  explicit fake_launcher(std::string kvsname) : kvsname_(std::move(kvsname)) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
    client_fd_ = fds[0];
    server_fd_ = fds[1];
    thread_ = std::thread([this] { serve(); });
  }
  ~fake_launcher() {
    ::shutdown(client_fd_, SHUT_RDWR);
    thread_.join();
    ::close(client_fd_);
    ::close(server_fd_);
  }

  int client_fd() const { return client_fd_; }
  // Every request line the launcher read, newline not included.
  std::vector<std::string> lines() {
    const std::lock_guard<std::mutex> hold(lock_);
    return lines_;
  }
  // Request lines longer than one 1024-byte read: srun answers rc=0 and loses them.
  std::atomic<int> lost{0};

 private:
  static constexpr std::size_t read_size = 1024;  // Slurm's pmi2 plugin
  static constexpr std::size_t key_keep = 63;     // Hydra's key and value buffers
  static constexpr std::size_t value_keep = 1023;

  void serve() {
    std::string line;
    char c = 0;
    while (::read(server_fd_, &c, 1) == 1) {
      if (c != '\n') {
        line += c;
        continue;
      }
      {
        const std::lock_guard<std::mutex> hold(lock_);
        lines_.push_back(line);
      }
      answer(line);
      line.clear();
    }
  }

  void answer(const std::string &line) {
    auto w = words_of(line);
    const std::string &cmd = w["cmd"];
    if (cmd == "init") {
      reply("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
    } else if (cmd == "get_my_kvsname") {
      reply("cmd=my_kvsname kvsname=" + kvsname_);
    } else if (cmd == "put") {
      if (line.size() + 1 > read_size) {
        ++lost;
      } else {
        store_[w["key"].substr(0, key_keep)] = w["value"].substr(0, value_keep);
      }
      reply("cmd=put_result rc=0");
    } else if (cmd == "get") {
      if (w["key"] == "PMI_process_mapping") {
        reply("cmd=get_result rc=0 value=(vector,(0,1,1))");
      } else {
        const auto found = store_.find(w["key"].substr(0, key_keep));
        reply(found == store_.end() ? "cmd=get_result rc=1"
                                    : "cmd=get_result rc=0 value=" + found->second);
      }
    } else if (cmd == "barrier_in") {
      reply("cmd=barrier_out");
    } else if (cmd == "finalize") {
      reply("cmd=finalize_ack");
    }
  }

  void reply(const std::string &text) {
    const std::string out = text + "\n";
    if (::write(server_fd_, out.data(), out.size()) != static_cast<ssize_t>(out.size())) {
      std::abort();
    }
  }

  std::string kvsname_;
  int client_fd_ = -1;
  int server_fd_ = -1;
  std::map<std::string, std::string> store_;
  std::mutex lock_;
  std::vector<std::string> lines_;
  std::thread thread_;
};

class Pmi1Client : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char *name : {"PMI_FD", "PMI_RANK", "PMI_SIZE"}) ::unsetenv(name);
  }

  std::unique_ptr<client> open(const fake_launcher &launcher, int rank) {
    ::unsetenv("PMI_PORT");
    ::setenv("PMI_FD", std::to_string(launcher.client_fd()).c_str(), 1);
    ::setenv("PMI_RANK", std::to_string(rank).c_str(), 1);
    ::setenv("PMI_SIZE", std::to_string(rank + 1).c_str(), 1);
    return pmi1_client_open();
  }
};

TEST_F(Pmi1Client, TheLargestCardTravelsWholeThroughEveryLauncher) {
  fake_launcher launcher("kvs_123456_0");
  const auto c = open(launcher, 99999);
  ASSERT_NE(c, nullptr);
  const std::string key(max_key_length, 'k');
  std::string value;
  while (value.size() < max_value_length) value += static_cast<char>('a' + value.size() % 26);
  c->put(key, value);
  c->commit();
  c->fence();
  EXPECT_EQ(launcher.lost, 0) << "a put line longer than 1024 bytes";
  EXPECT_EQ(c->get(99999, key), value) << "the launcher kept less than the card";
  // Hydra keeps 63 characters of `key-<rank>`, whatever the rank.
  EXPECT_LE(max_key_length + 1 + std::to_string(INT_MAX).size(), 63u);
  for (const std::string &line : launcher.lines()) EXPECT_LE(line.size() + 1, 1024u) << line;
}

TEST_F(Pmi1Client, ACardTooLongForTheRequestLineIsAClearError) {
  // A kvsname as long as Hydra allows leaves no room for the largest card.
  fake_launcher launcher(std::string(250, 'n'));
  const auto c = open(launcher, 0);
  ASSERT_NE(c, nullptr);
  try {
    c->put("card", std::string(max_value_length, 'v'));
    FAIL() << "a put longer than a PMI-1 launcher reads was sent";
  } catch (const error &e) {
    EXPECT_NE(std::string(e.what()).find("more than the 1024 a PMI-1 launcher reads"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(launcher.lost, 0);
  c->put("card", "short");  // the client goes on working
  EXPECT_EQ(c->get(0, "card"), "short");
}

TEST_F(Pmi1Client, CardsOutsideTheLimitsAreRefused) {
  fake_launcher launcher("kvs_1_0");
  const auto c = open(launcher, 0);
  ASSERT_NE(c, nullptr);
  EXPECT_THROW(c->put(std::string(max_key_length + 1, 'k'), "v"), error);
  EXPECT_THROW(c->put("card", std::string(max_value_length + 1, 'v')), error);
  EXPECT_THROW(c->put("a=b", "v"), error);
  EXPECT_THROW(c->put("card", "two words"), error);
}

}  // namespace
}  // namespace iris::pmi
