// What every netmod needs alike, written once: what it keeps of init's
// arguments, the one-line log, the hex that business cards carry, and the
// book of lost peers that poll() reports to the device.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device/base/threading.hpp"
#include "netmods/netmod.hpp"

namespace iris::netmod {

// Writes "iris: rank R: NETMOD: what" and a newline to stderr in one write,
// so that the lines of ranks sharing a terminal do not mix.
void log_line(int rank, std::string_view netmod, std::string_view what);

// `bytes` in lower-case hex, two digits a byte.
std::string hex_encode(std::span<const std::byte> bytes);
// The bytes `hex` spells, two digits (either case) a byte. False when it is
// empty, of odd length or not hex; `out` is written only on success.
[[nodiscard]] bool hex_decode(std::string_view hex, std::vector<std::byte> &out);

// Netmod locks (tcp's per connection, ofi's domain lock) are taken with
// device::lock_if, only when the device may call send_concurrent
// (config.concurrent_sends): below MPI_THREAD_MULTIPLE a netmod takes none.
using device::lock_if;

// The base of every netmod: what it keeps of init's arguments, and its log.
class netmod_base : public netmod {
 protected:
  // Keeps the process manager, the device's config, this rank and the size
  // of the job: the first thing init does.
  void join(pmi::client &pmi, const config &conf);
  // One line "iris: rank R: NAME: what" on stderr (log_line).
  void log(std::string_view what) const { log_line(rank_, name(), what); }

  pmi::client *pmi_ = nullptr;
  config conf_;
  int rank_ = 0;
  int size_ = 1;
};

// Peers lost, and which of them the device has been told of. A loss is
// noted where it is seen (a send, a read, an unusable card) and reported
// by a later poll(), which has the sink.
class peer_losses {
 public:
  void resize(std::size_t peers) { peers_.assign(peers, entry{}); }
  // Room for `peers` at least, keeping what is known (dynamic peers).
  void grow(std::size_t peers) {
    if (peers > peers_.size()) peers_.resize(peers);
  }
  // `peer` is lost: the first reason is kept, later ones are not news.
  void note(int peer, std::string why);
  bool lost(int peer) const { return peers_[static_cast<std::size_t>(peer)].lost; }
  bool unreported() const { return unreported_ > 0; }
  // Tells `sink` of each loss not told yet; returns how many it told.
  int report(record_sink &sink);

 private:
  struct entry {
    bool lost = false;
    bool reported = false;
    std::string why;
  };
  std::vector<entry> peers_;  // indexed by rank
  int unreported_ = 0;
};

}  // namespace iris::netmod
