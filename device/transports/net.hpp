// The net transport: the adapter over one netmod of netmods/ (tcp, ofi) for
// ranks on other nodes (every rank, with IRIS_SHM=0); one for each netmod
// this rank offers (IRIS_NETMOD), each taking the peers choose.cpp gives
// it. Packets travel as
// netmod records (the header is the record's head); rendezvous data may be
// read straight into the receive buffer (body_place) or by the netmod's RMA
// read when it has one (IRIS_NET_RMA).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/core/transport.hpp"
#include "netmods/netmod.hpp"

namespace iris::device {

// What the netmod is told at init, from the transports' settings.
netmod::config netmod_config(const transport_settings &s);

class net_transport final : public transport,
                            private netmod::record_sink,
                            private netmod::aside_sink {
 public:
  // Builds the netmod called `netmod` and opens it: it puts its card
  // before the PMI fence. Throws netmod::error.
  net_transport(runtime &r, const std::string &netmod);
  // The netmod's name (tcp, ofi).
  std::string_view netmod_name() const { return net_->name(); }
  // Whether the netmod reaches rank `peer` of the world (after the fence);
  // false says why.
  bool reaches(int peer, std::string &why) { return net_->reaches(peer, why); }
  // The netmod itself, for IRIS_NETMOD=auto's probe (probe.cpp), which
  // sends and polls its own records before any packet moves.
  netmod::netmod &netmod_itself() { return *net_; }
  // What the probe read of the device's traffic before this transport had
  // its peers (a rank past MPI_Init's second fence sends to a leader still
  // at it): records and losses that poll() hands on first, in order.
  void hold(int peer, std::vector<std::byte> head, std::vector<std::byte> body);
  void hold_loss(int peer, std::string why);
  // Takes the VC of rank `v` of the world, which this netmod reaches
  // (called after the fence); `why` says why it was chosen, for IRIS_STATS.
  void take(vc &v, std::string why);
  // Processes of other jobs (dynamic.hpp): this rank's card for them (empty
  // when the netmod cannot reach other jobs), and VC `v`, new, as rank
  // `rank` of the job whose hash is `job`, reached at `card` (may be empty:
  // then only its own connection carries the pair). False: the netmod
  // cannot take it.
  std::string dynamic_card() const { return net_->dynamic_card(); }
  bool peer_add(vc &v, std::uint64_t job, int rank, std::string_view card);

  std::string_view name() const override { return "net"; }
  xfer send(vc &to, const packet_header &h, std::span<const iovec> payload) override;
  // MPI_THREAD_MULTIPLE over a netmod with send_concurrent (TCP): sends to
  // different peers run at once, each under its VC's lock (transport.hpp).
  bool concurrent_sends() const override { return shared_; }
  xfer send_held(vc &to, const packet_header &h, std::span<const iovec> payload) override;
  int poll(int budget) override;
  // MPI_THREAD_MULTIPLE over a netmod with poll_aside (TCP): eager messages
  // into receives posted without the call lock (transport.hpp).
  int poll_aside(int budget) override;
  bool wait_arrival(int timeout_ms) override { return net_->wait(timeout_ms); }
  bool wait_arm() override { return net_->wait_arm(); }
  void expose(vc &to, request &r, rts_payload &where) override;
  void conceal(request &r) override;
  xfer read(vc &from, const rts_payload &where, std::byte *to, std::size_t bytes,
            std::uint64_t cookie) override;
  // One-sided windows by the netmod's RMA writes and reads (IRIS_NET_RMA).
  bool window_expose(const void *base, std::size_t bytes, std::uint64_t region[2]) override;
  void window_conceal(const std::uint64_t region[2]) override;
  xfer window_write(vc &to, const std::uint64_t region[2], const void *local, std::size_t bytes,
                    window_ops &ops) override;
  xfer window_read(vc &from, const std::uint64_t region[2], void *local, std::size_t bytes,
                   window_ops &ops) override;
  std::string describe() const override;
  std::string statistics() const override;
  bool statistic(std::string_view name, std::uint64_t &value) const override;
  void peer_gone(vc &peer) override;
  void finalize() override;

 private:
  // record_sink: what the netmod hands up from poll().
  const char *record_arrived(int peer, std::span<const std::byte> head,
                             std::span<const std::byte> body) override;
  std::byte *body_place(int peer, std::span<const std::byte> head,
                        std::size_t body_length) override;
  void peer_lost(int peer, const char *why) override;
  void read_done(std::uint64_t cookie, const char *why) override;
  void window_done(std::uint64_t cookie, const char *why) override;
  int peer_joining(std::uint64_t job, int rank) override;
  // aside_sink: what the netmod hands up from poll_aside().
  bool record_taken(int peer, std::span<const std::byte> head,
                    std::span<const std::byte> body) override;

  // hold(): what poll() hands on first; `holding_` is set while there is
  // some (poll_aside leaves everything to poll() until then).
  struct held_record {
    int peer;
    std::vector<std::byte> head;
    std::vector<std::byte> body;
    std::string loss;  // not empty: the peer was lost, and why
  };
  int poll_held();

  std::unique_ptr<netmod::netmod> net_;
  std::vector<held_record> held_;
  std::atomic<bool> holding_{false};
  bool rma_ = false;                // IRIS_NET_RMA
  bool shared_ = false;             // concurrent_sends(), chosen at init
  std::uint64_t rma_messages_ = 0;  // rendezvous messages the peer read with RMA
  std::uint64_t window_ops_ = 0;    // one-sided windows' writes and reads done by RMA
  std::vector<int> peers_;          // the world's ranks this netmod reaches for this rank
  // The same, by why they were given to it (IRIS_STATS).
  std::vector<std::pair<std::string, std::vector<int>>> reasons_;
};

}  // namespace iris::device
