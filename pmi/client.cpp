// Backend selection and the naming rule for shared-memory objects.
#include <cstdlib>
#include <memory>
#include <string>

#include "pmi/backends.hpp"
#include "pmi/pmi.hpp"

namespace iris::pmi {

std::unique_ptr<client> client_open() {
  if (auto pmi1 = pmi1_client_open()) return pmi1;
  if (auto pmix = pmix_client_open()) return pmix;
  return singleton_client_open();
}

std::string shm_name_prefix(std::string_view job_id) {
  std::string prefix = "iris-";
  prefix.reserve(prefix.size() + job_id.size() + 1);
  for (char c : job_id) {
    // Spelled out instead of std::isalnum: the result must not depend on the
    // locale, since mpiexec and every rank must compute the same prefix.
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    prefix += keep ? c : '_';
  }
  prefix += '-';
  return prefix;
}

std::string shm_name_prefix(const client &c) {
  std::string prefix = shm_name_prefix(c.job_id());
  if (c.epoch() > 0) prefix += "e" + std::to_string(c.epoch()) + "-";
  return prefix;
}

namespace {

// A start of MPI over the first start's client (the first start too, with
// the keys as they are).
class restarted_client final : public client {
 public:
  restarted_client(client &base, int epoch)
      : base_(base), epoch_(epoch), prefix_(epoch > 0 ? "e" + std::to_string(epoch) + "." : "") {}

  int rank() const override { return base_.rank(); }
  int size() const override { return base_.size(); }
  int node_of(int rank) const override { return base_.node_of(rank); }
  int host_ranks() const override { return base_.host_ranks(); }
  std::string_view job_id() const override { return base_.job_id(); }
  int epoch() const override { return epoch_; }
  std::string_view backend() const override { return base_.backend(); }
  bool singleton() const override { return base_.singleton(); }
  void put(std::string_view key, std::string_view value) override {
    base_.put(prefix_ + std::string(key), value);
  }
  void commit() override { base_.commit(); }
  void fence() override { base_.fence(); }
  std::string get(int rank, std::string_view key) override {
    return base_.get(rank, prefix_ + std::string(key));
  }
  [[noreturn]] void abort(int code, std::string_view message) override {
    base_.abort(code, message);
    std::abort();  // not reached: abort() ends the process
  }
  void finalize() override {}
  bool watch_failures(void (*fn)(int rank, void *arg), void *arg) override {
    return base_.watch_failures(fn, arg);
  }

 private:
  client &base_;
  int epoch_;
  std::string prefix_;
};

// PMI-1 sends `key=value` words separated by spaces and lines: a card that
// holds any of these characters could not travel over it.
bool fits_pmi1_wire(std::string_view text, bool is_key) {
  for (char c : text) {
    if (c == '\0' || c == ' ' || c == '\n' || c == '\r' || c == '\t') return false;
    if (is_key && c == '=') return false;
  }
  return true;
}

}  // namespace

void check_card(std::string_view key, std::string_view value) {
  if (key.empty() || key.size() > max_key_length || !fits_pmi1_wire(key, true)) {
    throw error("business-card key '" + std::string(key) + "' must have 1 to " +
                std::to_string(max_key_length) + " characters and no spaces, '=' or NUL");
  }
  if (value.size() > max_value_length || !fits_pmi1_wire(value, false)) {
    throw error("business card '" + std::string(key) + "' has " + std::to_string(value.size()) +
                " characters; it must have at most " + std::to_string(max_value_length) +
                " and no spaces or NUL");
  }
}

std::unique_ptr<client> client_restarted(client &base, int epoch) {
  return std::make_unique<restarted_client>(base, epoch);
}

}  // namespace iris::pmi
