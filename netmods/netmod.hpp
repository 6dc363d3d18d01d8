// The network-module contract: how a rank reaches ranks on other nodes.
//
// Lifecycle, as the device drives it:
//   netmod_create(name)   the registry builds the netmod named at run time
//   init(pmi, config)     open endpoints, put this rank's business card
//                         (before the device's PMI fence)
//   -- the device fences: every card is readable from here on --
//   send(peer, records)   hand over one record; connects lazily on first use
//   poll(sink)            accept, read, and hand complete records to the sink
//   finalize()            after the device's last barrier: flush what is
//                         queued, say goodbye to every peer, close
//
// A netmod moves records (the device's packets) and knows nothing of MPI:
// it never reads a record's bytes. It keeps each sender's records in order,
// and bounds what a stranger can make it hold: a record longer than
// config.max_record is refused before it is read.
//
// Only the thread that initialised MPI calls these methods.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace iris::pmi {
class client;
}

namespace iris::netmod {

// Setup-time failure (no interface, no listener, no card): one line saying
// what and why. Raised only by init() and netmod_create().
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the device tells a netmod at init (from its tunables).
struct config {
  std::size_t max_record = 0;   // longest record the device sends or accepts
  std::size_t record_head = 0;  // a record's first bytes, which say where its body may go
  std::string interface;        // IRIS_TCP_IF: empty chooses
  int port_base = 0;            // IRIS_TCP_PORT: 0 any port, else rank r listens on base + r
  int connect_timeout_ms = 0;   // IRIS_TCP_CONNECT_TIMEOUT: per address tried
};

enum class send_status {
  done,   // the record is the netmod's now; the caller may reuse its buffers
  retry,  // no room (or no connection) yet: call again after poll()
};

// What poll() hands records to. Implemented by the device.
class record_sink {
 public:
  // One complete record from `peer`: its head (config.record_head bytes, or
  // all of a shorter record) and its body. Returns nullptr, or why the record
  // is refused: the netmod then logs it and drops the connection it came on.
  virtual const char *record_arrived(int peer, std::span<const std::byte> head,
                                     std::span<const std::byte> body) = 0;
  // Asked when a long record's head has arrived and its body has not: a
  // place of `body_length` bytes where the body may be read directly (the
  // user's buffer), or nullptr to read it into the netmod's buffer. The body
  // then reaches record_arrived in that place.
  virtual std::byte *body_place(int peer, std::span<const std::byte> head,
                                std::size_t body_length) = 0;
  // `peer`, which had spoken to this rank, went away without saying goodbye
  // (it died, or its host did): `why` says how.
  virtual void peer_lost(int peer, const char *why) = 0;

 protected:
  ~record_sink() = default;
};

class netmod {
 public:
  virtual ~netmod() = default;

  virtual std::string_view name() const = 0;
  // Opens endpoints and puts this rank's business card. Throws error.
  virtual void init(pmi::client &pmi, const config &conf) = 0;
  // Sends one record, gathered from at most three `parts` (their total at
  // most config.max_record). Records to one peer arrive in the order sent.
  [[nodiscard]] virtual send_status send(int peer, std::span<const iovec> parts) = 0;
  // One bounded pass: returns how many events it handled.
  virtual int poll(record_sink &sink) = 0;
  // Flushes, says goodbye and closes. Bounded in time.
  virtual void finalize() = 0;
  // One line for IRIS_DEBUG: what this rank listens on.
  virtual std::string describe() const = 0;
};

// The registry, generated from the configure-time list (-Dnetmods=...).
// The names of the built netmods, the default first, comma-separated.
std::string_view netmods_built();
// Builds the netmod called `name`, or the default when `name` is empty.
// Throws error naming the built ones when there is no such netmod.
std::unique_ptr<netmod> netmod_create(std::string_view name);

}  // namespace iris::netmod
