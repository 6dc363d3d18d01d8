// The backend for a program started without a launcher: rank 0 of a job of
// size 1. Cards go to a local map, so the device's bootstrap code runs the
// same put/commit/fence/get sequence as in a real job.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

#include "pmi/backends.hpp"

namespace iris::pmi {
namespace {

class singleton_client final : public client {
 public:
  singleton_client() : job_id_("singleton-" + std::to_string(::getpid())) {}

  int rank() const override { return 0; }
  int size() const override { return 1; }
  int node_of(int rank) const override {
    check_rank(rank);
    return 0;
  }
  std::string_view job_id() const override { return job_id_; }
  std::string_view backend() const override { return "singleton"; }
  bool singleton() const override { return true; }

  void put(std::string_view key, std::string_view value) override {
    check_card(key, value);
    pending_.insert_or_assign(std::string(key), std::string(value));
  }

  // As with PMIx, a put becomes visible to get() only once committed.
  void commit() override {
    for (auto &[key, value] : pending_) committed_.insert_or_assign(key, std::move(value));
    pending_.clear();
  }

  void fence() override {}

  std::string get(int rank, std::string_view key) override {
    check_rank(rank);
    const auto found = committed_.find(key);
    if (found == committed_.end()) {
      throw error("business card '" + std::string(key) + "' was never committed by rank 0");
    }
    return found->second;
  }

  [[noreturn]] void abort(int code, std::string_view message) override {
    // No launcher prints the reason for us, so say it here.
    std::fflush(nullptr);
    std::fprintf(stderr, "iris: rank 0 aborted the job with code %d: %.*s\n", code,
                 static_cast<int>(message.size()), message.data());
    ::_exit(code);
  }

  void finalize() override {}

 private:
  static void check_rank(int rank) {
    if (rank != 0) {
      throw error("rank " + std::to_string(rank) + " does not exist in a singleton job of size 1");
    }
  }

  std::string job_id_;
  std::map<std::string, std::string, std::less<>> pending_;
  std::map<std::string, std::string, std::less<>> committed_;
};

}  // namespace

std::unique_ptr<client> singleton_client_open() {
  return std::make_unique<singleton_client>();
}

}  // namespace iris::pmi
