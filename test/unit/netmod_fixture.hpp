// Netmods in one process: two or three of them (ranks) with a process
// manager faked by a shared map, a sink that records what arrives, and a
// test fixture that polls them all. Shared by the TCP and OFI tests.
#pragma once

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "netmods/netmod.hpp"
#include "pmi/pmi.hpp"

namespace iris::netmod::fixture {

using cards = std::map<std::pair<int, std::string>, std::string>;

inline constexpr std::string_view test_job = "netmod-unit-test";

// A process manager for ranks that live in this one process.
class fake_pmi final : public pmi::client {
 public:
  fake_pmi(int rank, int size, cards &board) : rank_(rank), size_(size), board_(board) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int node_of(int rank) const override { return rank; }
  std::string_view job_id() const override { return test_job; }
  std::string_view backend() const override { return "fake"; }
  bool singleton() const override { return false; }
  void put(std::string_view key, std::string_view value) override {
    board_[{rank_, std::string(key)}] = std::string(value);
  }
  void commit() override {}
  void fence() override {}
  std::string get(int rank, std::string_view key) override {
    auto it = board_.find({rank, std::string(key)});
    if (it == board_.end()) throw pmi::error("no card " + std::string(key));
    return it->second;
  }
  [[noreturn]] void abort(int, std::string_view) override { std::abort(); }
  void finalize() override {}

 private:
  int rank_;
  int size_;
  cards &board_;
};

// Sets an environment variable while it lives, and then puts back what was
// there: netmods read their own settings (IRIS_TCP_*, IRIS_OFI_*) from the
// environment when they start.
class scoped_env {
 public:
  scoped_env(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~scoped_env() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  scoped_env(const scoped_env &) = delete;
  scoped_env &operator=(const scoped_env &) = delete;

 private:
  const char *name_;
  std::optional<std::string> old_;
};

struct recorder final : record_sink {
  std::vector<std::pair<int, std::vector<std::byte>>> records;
  std::vector<std::pair<int, std::string>> lost;
  std::vector<std::pair<std::uint64_t, std::string>> reads;  // cookie, "" or why it failed
  std::size_t refuse_length = 0;                             // a record of this length is refused
  std::vector<std::byte> place;           // when not empty, long bodies are read into it
  std::vector<const std::byte *> bodies;  // where each record's body was
  const char *record_arrived(int peer, std::span<const std::byte> head,
                             std::span<const std::byte> body) override {
    if (refuse_length != 0 && head.size() + body.size() == refuse_length) {
      return "refused by the test";
    }
    std::vector<std::byte> whole(head.begin(), head.end());
    whole.insert(whole.end(), body.begin(), body.end());
    records.emplace_back(peer, std::move(whole));
    bodies.push_back(body.data());
    return nullptr;
  }
  std::byte *body_place(int, std::span<const std::byte>, std::size_t length) override {
    return length <= place.size() ? place.data() : nullptr;
  }
  void peer_lost(int peer, const char *why) override { lost.emplace_back(peer, why); }
  void read_done(std::uint64_t cookie, const char *why) override {
    reads.emplace_back(cookie, why != nullptr ? why : "");
  }
  std::vector<std::pair<std::uint64_t, std::string>> windows;  // window_done: cookie, why
  void window_done(std::uint64_t cookie, const char *why) override {
    windows.emplace_back(cookie, why != nullptr ? why : "");
  }
};

inline constexpr std::size_t max_record = 256 * 1024;
inline constexpr std::size_t record_head = 48;

struct rank_under_test {
  std::unique_ptr<fake_pmi> pmi;
  std::unique_ptr<netmod> net;
  recorder sink;
};

inline std::vector<std::byte> pattern(std::size_t length, unsigned seed) {
  std::vector<std::byte> v(length);
  for (std::size_t i = 0; i < length; ++i)
    v[i] = std::byte(static_cast<unsigned char>(seed + i * 7));
  return v;
}

// One rank of a job of `n` whose cards are on `on`.
inline std::unique_ptr<rank_under_test> start_rank(std::string_view name, int rank, int n,
                                                   cards &on, config conf = {}) {
  if (conf.max_record == 0) conf.max_record = max_record;
  if (conf.record_head == 0) conf.record_head = record_head;
  auto u = std::make_unique<rank_under_test>();
  u->pmi = std::make_unique<fake_pmi>(rank, n, on);
  u->net = netmod_create(name);
  u->net->init(*u->pmi, conf);
  return u;
}

class netmod_ranks : public ::testing::Test {
 protected:
  // Starts `n` ranks of netmod `name`, with `conf` (max_record and
  // record_head are filled in when zero).
  void start(std::string_view name, int n, config conf = {}) {
    for (int r = 0; r < n; ++r) ranks.push_back(start_rank(name, r, n, board, conf));
  }

  void poll_all() {
    for (auto &u : ranks) {
      if (u) (void)u->net->poll(u->sink);
    }
  }

  // Polls every rank until done() or 10 s have passed.
  template <typename Done>
  bool poll_until(Done done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      poll_all();
    }
    return true;
  }

  // Sends one record, polling while the netmod says retry.
  bool send_record(int from, int to, const std::vector<std::byte> &bytes) {
    const iovec part{const_cast<std::byte *>(bytes.data()), bytes.size()};
    return send_parts(from, to, {&part, 1});
  }
  bool send_parts(int from, int to, std::span<const iovec> parts) {
    return poll_until([&] {
      return ranks[static_cast<std::size_t>(from)]->net->send(to, parts) == send_status::done;
    });
  }

  netmod &net(int rank) { return *ranks[static_cast<std::size_t>(rank)]->net; }
  recorder &sink(int rank) { return ranks[static_cast<std::size_t>(rank)]->sink; }

  cards board;
  std::vector<std::unique_ptr<rank_under_test>> ranks;
};

}  // namespace iris::netmod::fixture
