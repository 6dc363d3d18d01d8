// An example of a netmod built outside Iris against its installed contract
// (<includedir>/iris/netmod.h) and loaded at run time:
//
//   mpicxx -std=c++20 -shared -fPIC -I<includedir>/iris relay.cpp
//          -o libiris-netmod-relay.so
//   IRIS_NETMOD_PATH=$PWD IRIS_NETMOD=relay mpiexec -n 4 ./program
//
// "relay" carries every record through Iris's own tcp netmod, which it
// builds with netmod_create (libiris exports it), and counts what it
// relayed: the shape of a netmod that watches or shapes another's traffic.
// IRIS_STATS prints its count. Its tcp puts tcp's own card, so a rank
// cannot list relay beside tcp (IRIS_NETMOD=relay,tcp).
//
// Built twice by the tests (netmods/example/meson.build): as
// libiris-netmod-relay.so, and as libiris-netmod-stale.so of another
// contract version, which Iris must refuse.
#include <iris/netmod.h>

#include <atomic>
#include <string>

#ifndef RELAY_NAME
#define RELAY_NAME "relay"
#endif
#ifndef RELAY_CONTRACT
#define RELAY_CONTRACT iris::netmod::contract_version
#endif

namespace {

using namespace iris::netmod;

class relay final : public netmod {
 public:
  relay() : inner_(netmod_create("tcp")) {}

  std::string_view name() const override { return RELAY_NAME; }
  void init(iris::pmi::client &pmi, const config &conf) override { inner_->init(pmi, conf); }
  send_status send(int peer, std::span<const iovec> parts) override {
    const send_status s = inner_->send(peer, parts);
    if (s == send_status::done) relayed_.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  bool concurrent_sends() const override { return inner_->concurrent_sends(); }
  send_status send_concurrent(int peer, std::span<const iovec> parts) override {
    const send_status s = inner_->send_concurrent(peer, parts);
    if (s == send_status::done) relayed_.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  bool reaches(int peer, std::string &why) override { return inner_->reaches(peer, why); }
  int poll(record_sink &sink) override { return inner_->poll(sink); }
  int poll_aside(aside_sink &sink) override { return inner_->poll_aside(sink); }
  bool wait(int timeout_ms) override { return inner_->wait(timeout_ms); }
  bool wait_arm() override { return inner_->wait_arm(); }
  void finalize() override { inner_->finalize(); }
  std::string describe() const override { return "relay over " + inner_->describe(); }
  std::string preview(const config &conf) override {
    return std::string(RELAY_NAME) + ": relays through " + inner_->preview(conf);
  }
  std::string statistics() const override {
    return "relay: records relayed " + std::to_string(relayed_.load(std::memory_order_relaxed)) +
           "; " + inner_->statistics();
  }

 private:
  std::unique_ptr<netmod> inner_;
  std::atomic<unsigned long long> relayed_{0};
};

std::unique_ptr<netmod> create() {
  return std::make_unique<relay>();
}

std::span<const iris::device::tunable> tunables() {
  return {};
}

}  // namespace

extern "C" const iris::netmod::module_entry iris_netmod_module = {
    .contract = RELAY_CONTRACT,
    .name = RELAY_NAME,
    .create = &create,
    .tunables = &tunables,
};
