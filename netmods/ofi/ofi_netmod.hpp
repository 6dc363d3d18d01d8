// The OFI netmod's one class, private to netmods/ofi/: Iris records over a
// libfabric reliable-datagram endpoint (FI_EP_RDM). Every record is one
// FI_MSG message with a 16-byte prefix: the receiver's token (a random
// number it publishes only through the process manager, so that a stranger
// cannot know it), the source rank and a sequence number. The device keeps
// its own matching. Receives land in pre-posted buffers; sends are injected
// when the provider's inject size allows, else copied into a send buffer, so
// that the caller may reuse its own at once. One completion queue, polled by
// the progress engine, reports all of it. Rendezvous data is read by the
// receiver (fi_read) from the sender's registered buffer when the provider
// has FI_RMA. Under MULTIPLE threads send through it at once, each call
// under domain_lock_ (below).
//
// The class is defined by object, one file each:
//   ofi.cpp         the netmod's entry points: init, finalize, describe
//   settings.cpp    its tunables (IRIS_OFI_*)
//   provider.cpp    whether to start under auto; which provider: the hints, and
//                   why none fits
//   endpoint.cpp    fabric, domain, endpoint, and the record buffers
//   address.cpp     business cards and the address vector
//   send.cpp        records out (and the goodbye)
//   completion.cpp  the completion queue: records in, in order, and errors
//   rma.cpp         registrations, RMA reads, and one-sided windows' writes and reads
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "netmods/common.hpp"
#include "netmods/netmod.hpp"
#include "netmods/ofi/library.hpp"
#include "netmods/ofi/sequence.hpp"

namespace iris::netmod::ofi {

inline constexpr const char *card_key = "iris.ofi";
inline constexpr std::uint32_t api_version = FI_VERSION(1, 11);
inline constexpr std::size_t buffer_bytes = 16 << 20;  // per direction, split into record buffers
inline constexpr std::size_t max_buffers = 32;
inline constexpr std::size_t min_buffers = 2;
inline constexpr std::size_t max_reads = 64;           // RMA reads in flight
inline constexpr std::size_t queue_depth = 128;        // asked of the provider, each way
inline constexpr std::size_t registration_cache = 64;  // memory registrations kept for reuse
inline constexpr std::size_t cq_batch = 16;
inline constexpr auto flush_wait = std::chrono::seconds(10);

// What precedes every record on the wire.
struct wire_prefix {
  std::uint64_t token;  // the receiver's
  std::int32_t source;
  std::uint32_t seq;  // per (source, destination) pair, from 0
};
static_assert(sizeof(wire_prefix) == 16);

// One operation libfabric holds. Its fi_context2 comes first, so the
// completion's op_context is the operation itself.
struct operation {
  // read: a rendezvous read; window_read, window_write: a one-sided
  // window's (reported by window_done)
  enum class kind : std::uint8_t { recv, send, read, window_read, window_write };
  fi_context2 context{};
  kind what = kind::recv;
  int peer = -1;
  std::uint64_t cookie = 0;     // reads and writes: the device's
  std::byte *buffer = nullptr;  // recv, send: the record buffer; reads: the destination;
                                // window_write: the source
  std::size_t length = 0;       // read
  fi_addr_t from = FI_ADDR_NOTAVAIL;
  remote_region region{};
  operation *next_free = nullptr;
};

struct registration {
  const std::byte *base = nullptr;
  std::size_t length = 0;
  fid_mr *mr = nullptr;
  std::uint64_t key = 0;
  rma_access access = rma_access::read;
  int uses = 0;
  std::uint64_t last_use = 0;
};

// What this rank knows of one peer.
struct peer_state {
  fi_addr_t address = FI_ADDR_NOTAVAIL;
  std::uint64_t token = 0;  // the peer's, which every record to it carries
  std::uint32_t out_seq = 0;
  sequencer<operation *> in{0};
  bool sent_any = false;  // this rank sent it a record
  bool heard = false;     // it sent this rank a record
  bool goodbye = false;   // it said goodbye: it sends nothing more
  bool said_goodbye = false;
};

// What IRIS_OFI_* say (settings.cpp).
struct settings {
  std::string provider;           // IRIS_OFI_PROVIDER: empty lets libfabric choose
  std::string library;            // IRIS_OFI_LIBRARY: empty loads libfabric.so.1
  bool concurrent_sends = false;  // IRIS_OFI_CONCURRENT_SENDS
};
settings settings_load();

// libfabric's text for error code `rc` (either sign).
std::string fi_text(const library &lib, int rc);

// A business card: "token:address", both hex (address.cpp).
std::string card_format(std::uint64_t token, const std::string &address);
[[nodiscard]] bool card_parse(std::string_view card, std::uint64_t &token,
                              std::vector<std::byte> &address);

class ofi_netmod final : public netmod_base {
 public:
  ~ofi_netmod() override { close_all(); }

  // ofi.cpp
  std::string_view name() const override { return "ofi"; }
  void init(pmi::client &pmi, const config &conf) override;
  void peer_gone(int peer) override { losses_.note(peer, "it died (the launcher said so)"); }
  void finalize() override;
  std::string describe() const override;
  std::string preview(const config &conf) override;
  // send.cpp
  send_status send(int peer, std::span<const iovec> parts) override;
  bool concurrent_sends() const override { return settings_.concurrent_sends; }
  send_status send_concurrent(int peer, std::span<const iovec> parts) override;
  // completion.cpp
  int poll(record_sink &sink) override;
  // endpoint.cpp: the completion queue's wait object, where the provider
  // gives one (FI_WAIT_FD)
  bool wait(int timeout_ms) override;
  bool wait_arm() override;
  // rma.cpp
  bool rma_expose(const void *buffer, std::size_t length, remote_region &region,
                  rma_access access) override;
  void rma_conceal(const remote_region &region) override;
  send_status rma_read(int peer, const remote_region &region, void *to, std::size_t length,
                       std::uint64_t cookie) override;
  send_status rma_write(int peer, const remote_region &region, const void *from, std::size_t length,
                        std::uint64_t cookie) override;
  send_status rma_window_read(int peer, const remote_region &region, void *to, std::size_t length,
                              std::uint64_t cookie) override;

 private:
  // What records arriving during finalize go to: nothing needs them now.
  struct quiet_sink final : record_sink {
    const char *record_arrived(int, std::span<const std::byte>,
                               std::span<const std::byte>) override {
      return nullptr;
    }
    std::byte *body_place(int, std::span<const std::byte>, std::size_t) override { return nullptr; }
    void peer_lost(int, const char *) override {}
    void read_done(std::uint64_t, const char *) override {}
    void window_done(std::uint64_t, const char *) override {}
  };

  // ofi.cpp
  void close_all();
  int report_lost(record_sink &sink) { return finalizing_ ? 0 : losses_.report(sink); }

  // provider.cpp
  void decline_without_fabric(const config &conf) const;
  void choose_provider();
  std::string choice() const;

  // endpoint.cpp
  void check(int rc, const char *call);
  void open_endpoint();
  void make_buffers();
  bool post_recv(operation &o);
  void repost(operation &o);
  void release_tx(operation &o);
  void release_tx_held(operation &o);

  // address.cpp
  bool address_of(int peer, fi_addr_t &out);

  // send.cpp
  int post_send(int peer, fi_addr_t to, std::span<const iovec> parts);
  bool progress_held();
  bool say_goodbye(int peer);

  // completion.cpp
  void record_in(operation &o, std::size_t length, record_sink &sink);
  int completion_error(record_sink &sink);

  // rma.cpp
  send_status start_rma(operation::kind what, int peer, const remote_region &region,
                        std::byte *buffer, std::size_t length, std::uint64_t cookie);
  ssize_t start_operation(operation &o);
  int retry_reads(record_sink &sink);
  void release_read(operation &o);
  void rma_finished(operation &o, record_sink &sink, const char *why);
  registration *register_region(const std::byte *base, std::size_t length, rma_access access);

  // MPI_THREAD_MULTIPLE (config.concurrent_sends): every libfabric call on
  // this domain's objects (the provider serializes nothing: FI_THREAD_DOMAIN)
  // and the state sends share (the inject buffer, the free send buffers,
  // peers' addresses, tokens and sequence numbers) are under it, so that
  // send_concurrent (IRIS_OFI_CONCURRENT_SENDS=1) may run from any thread
  // while one thread polls. Held for one call, never while the sink runs.
  // Untouched below MULTIPLE.
  device::spin_lock domain_lock_;
  fi_cq_msg_entry stash_[cq_batch];  // completions a sender read (progress_held)
  std::size_t stashed_ = 0;
  const library *lib_ = nullptr;
  settings settings_;
  std::uint64_t token_ = 0;
  fi_info *info_ = nullptr;
  fid_fabric *fabric_ = nullptr;
  fid_domain *domain_ = nullptr;
  fid_cq *cq_ = nullptr;
  int wait_fd_ = -1;  // the completion queue's (FI_GETWAIT); -1: none, wait() cannot
  fid_av *av_ = nullptr;
  fid_ep *ep_ = nullptr;
  std::string provider_;
  std::string domain_name_;
  std::string address_;
  bool rma_ = false;
  bool rma_writes_ = false;  // the provider writes peers' memory too (FI_WRITE)
  bool virtual_addresses_ = true;
  bool provider_keys_ = true;
  std::size_t max_message_ = 0;
  std::size_t slot_bytes_ = 0;
  std::vector<std::byte> inject_buffer_;
  std::unique_ptr<std::byte[]> arena_;
  std::vector<operation> rx_ops_;
  std::vector<operation> tx_ops_;
  std::vector<operation> read_ops_;
  std::vector<operation *> unposted_;         // receive buffers to post again
  std::vector<operation *> unstarted_reads_;  // reads the provider said -FI_EAGAIN to
  operation *free_tx_ = nullptr;
  operation *free_reads_ = nullptr;
  int tx_busy_ = 0;
  int reads_busy_ = 0;
  std::vector<peer_state> peers_;  // indexed by rank
  peer_losses losses_;             // indexed by rank
  std::vector<registration> cache_;
  std::uint64_t clock_ = 0;
  std::uint64_t next_key_ = 0;
  std::string read_error_;
  bool finalizing_ = false;
};

}  // namespace iris::netmod::ofi
