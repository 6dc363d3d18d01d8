// The network-module contract: how a rank reaches ranks on other nodes.
//
// Lifecycle, as the device drives it:
//   netmod_create(name)   the registry builds the netmod named at run time
//   init(pmi, config)     open endpoints, put this rank's business card
//                         (before the device's PMI fence)
//   -- the device fences: every card is readable from here on --
//   reaches(peer)         with several netmods offered: whether it reaches
//                         a peer, from both ranks' cards
//   send(peer, records)   hand over one record; connects lazily on first use
//   send_concurrent(...)  the same, from any thread, on what is open (below)
//   poll(sink)            accept, read, and hand complete records to the sink
//   finalize()            after the device's last barrier: flush what is
//                         queued, say goodbye to every peer, close
//
// Large data (optional, for netmods with RMA such as OFI): the sender of a
// rendezvous exposes its buffer (rma_expose) and names the region in its
// RTS; the receiver reads it (rma_read), the netmod tells the sink when the
// read is done (read_done), and the receiver answers FIN; the sender then
// conceals the region (rma_conceal). A netmod without RMA exposes nothing,
// and the data is streamed in records after a CTS instead.
//
// A netmod moves records (the device's packets) and knows nothing of MPI:
// it never reads a record's bytes. It keeps each sender's records in order,
// and bounds what a stranger can make it hold: a record longer than
// config.max_record is refused before it is read.
//
// poll() never calls the process manager (pmi::client): under
// IRIS_NETMOD=auto a leader polls while another thread waits at a fence.
//
// One thread at a time calls these methods (the device's call lock), but
// for send_concurrent and poll_aside: under MPI_THREAD_MULTIPLE
// (config.concurrent_sends) a netmod that says concurrent_sends() takes
// them from any thread at any time between init and finalize, alongside
// poll, send and send_concurrent to other peers; the device never sends to
// one peer from two threads at once (its VC lock).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "device/base/tunables.hpp"

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

// What the device decides for every netmod and tells it at init. A
// netmod's own settings (IRIS_TCP_*, IRIS_OFI_*) are its tunables, which it
// declares (its tunables() in the registry) and reads itself at init and
// preview.
struct config {
  std::size_t max_record = 0;   // longest record the device sends or accepts
  std::size_t record_head = 0;  // a record's first bytes, which say where its body may go
  // MPI_THREAD_MULTIPLE: send_concurrent may be called (see the top).
  // False: one thread at a time calls every method, and the netmod takes
  // no lock of its own.
  bool concurrent_sends = false;
  // Processes of other jobs this process may come to know (MPI's dynamic
  // processes: peer_add, record_sink::peer_joining): peers size ..
  // size + dynamic_peers - 1. 0: none, and every stranger is refused.
  std::size_t dynamic_peers = 0;
  // IRIS_NETMOD=auto (the default when a build has several): this netmod is
  // one of several the device measures and chooses among, none of them
  // named by the user. A netmod that cannot be the better one on this host
  // and whose start is costly (ofi with no fabric device) may decline:
  // init() and preview() throw error saying why, and the job goes by the
  // others.
  bool among_others = false;
};

// A peer's memory that this rank may read: what an RTS carries.
struct remote_region {
  std::uint64_t address = 0;  // as the netmod's RMA reads name it
  std::uint64_t key = 0;
};

// What peers may do with memory this rank exposes.
enum class rma_access {
  read,        // read it (a rendezvous sender's buffer)
  read_write,  // read and write it (a one-sided window)
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
  // A process of another job (`job` its job_hash, `rank` its rank there)
  // opened a connection with this rank's token, which only this job and
  // those given its dynamic_card() know: the peer it is (made now when it
  // is new; the device then calls peer_add for it), or -1 to refuse it.
  virtual int peer_joining(std::uint64_t job, int rank) {
    (void)job, (void)rank;
    return -1;
  }
  // The rma_read started with `cookie` has finished: `why` is nullptr when
  // every byte arrived, else why the read failed (the device then asks for
  // the data as records).
  virtual void read_done(std::uint64_t cookie, const char *why) = 0;
  // The rma_write or rma_window_read started with `cookie` has finished: a
  // write's bytes are in the target's memory, a read's here. `why` is
  // nullptr, or why it failed.
  virtual void window_done(std::uint64_t cookie, const char *why) { (void)cookie, (void)why; }

 protected:
  ~record_sink() = default;
};

// What poll_aside hands records to (MPI_THREAD_MULTIPLE). Implemented by
// the device.
class aside_sink {
 public:
  // One complete record from `peer`, as record_arrived has it. True: the
  // device took it. False: it did not, and the record and every later one
  // from `peer` are left to poll(), in order.
  virtual bool record_taken(int peer, std::span<const std::byte> head,
                            std::span<const std::byte> body) = 0;

 protected:
  ~aside_sink() = default;
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
  // Whether this netmod has send_concurrent.
  virtual bool concurrent_sends() const { return false; }
  // As send, when config.concurrent_sends is set, from a thread that may
  // not be the one calling the other methods (see the top), and only on
  // what is already open to `peer`: it never connects, never notes a loss
  // and never calls the sink. Anything but a record taken at once (no
  // connection yet, a record still going out, an error) answers retry, and
  // the device then sends through send() as one thread.
  [[nodiscard]] virtual send_status send_concurrent(int peer, std::span<const iovec> parts) {
    (void)peer, (void)parts;
    return send_status::retry;
  }
  // One bounded pass: returns how many events it handled.
  virtual int poll(record_sink &sink) = 0;
  // Whether this netmod reaches `peer`, a rank of this job on another node,
  // judged after the fence from what both ranks put before it (their
  // cards), so that the two ranks of a pair always reach the same verdict.
  // The device asks it of a pair's candidates when a rank offers several
  // netmods (IRIS_NETMOD=ofi,tcp): the pair takes the first that reaches.
  // false sets `why` (one line). The default reaches every peer.
  virtual bool reaches(int peer, std::string &why) {
    (void)peer, (void)why;
    return true;
  }
  // Processes of other jobs (MPI's dynamic processes). This rank's card as
  // such a process needs it (what an MPI port name carries: it grants a
  // connection to this rank); empty when this netmod cannot reach other
  // jobs.
  virtual std::string dynamic_card() const { return {}; }
  // `peer` (size .. size + config.dynamic_peers - 1, new, or the one
  // peer_joining named) is rank `rank` of the job whose job_hash is `job`,
  // reached at `card` (its dynamic_card(); empty when not known yet: then
  // only the connection it opens carries the pair). False when this netmod
  // cannot take it.
  virtual bool peer_add(int peer, std::uint64_t job, int rank, std::string_view card) {
    (void)peer, (void)job, (void)rank, (void)card;
    return false;
  }
  // As poll, when config.concurrent_sends is set, from a thread that does
  // not hold the device's call lock while poll() may run on another: reads
  // what no other thread is reading (and skips the rest), and hands
  // complete records to `sink` until it refuses one. It never connects,
  // accepts, notes a loss or calls a record_sink: what it meets beyond
  // plain records (an end, a goodbye, a long body to place) is poll()'s.
  // Returns how many records the sink took. The default reads nothing.
  virtual int poll_aside(aside_sink &sink) {
    (void)sink;
    return 0;
  }
  // The device's progress thread's sleep (device/am/): waits until a
  // record may have arrived or `timeout_ms` passes, from a thread that does
  // not hold the call lock while poll() may run on another; it reads
  // nothing poll() writes without an atomic. false: this netmod cannot wait
  // so (the thread naps instead). The default cannot.
  virtual bool wait(int timeout_ms) {
    (void)timeout_ms;
    return false;
  }
  // Called by that thread just before wait(), while no other thread may
  // call poll() (it holds the call lock or the program flag), after a
  // poll() that found nothing: false when something arrived meanwhile or
  // the netmod's wait would miss what did (poll again instead of waiting).
  // The default's wait needs no arming.
  virtual bool wait_arm() { return true; }
  // The device learned, from the launcher, that `peer` died (recovery,
  // IRIS_RECOVERY=1): it is lost, no goodbye is owed to it or awaited from
  // it, and what is sent to it may be dropped. The default does nothing.
  virtual void peer_gone(int peer) { (void)peer; }
  // Flushes, says goodbye and closes. Bounded in time.
  virtual void finalize() = 0;
  // One line for IRIS_DEBUG: what this rank listens on.
  virtual std::string describe() const = 0;
  // What init(conf) would choose on this host (interfaces, provider), found
  // without opening anything a peer could reach and without a job: one line
  // for iris_info and mpiexec --info. Throws error where init would. Called
  // on a fresh netmod instead of init, never before it.
  virtual std::string preview(const config &conf) = 0;
  // One line for IRIS_STATS at MPI_Finalize: what this netmod counted
  // (empty: nothing).
  virtual std::string statistics() const { return {}; }

  // Large data (see the top). Makes [buffer, buffer + length) readable by
  // peers until rma_conceal(region); false when this netmod cannot.
  // rma_access::read_write: peers may write it too (a one-sided window).
  virtual bool rma_expose(const void *buffer, std::size_t length, remote_region &region,
                          rma_access access) {
    (void)buffer, (void)length, (void)region, (void)access;
    return false;
  }
  virtual void rma_conceal(const remote_region &region) { (void)region; }
  // Starts reading `length` bytes of `peer`'s `region` into `to`; read_done
  // reports the end from a later poll(). retry: it cannot start now.
  [[nodiscard]] virtual send_status rma_read(int peer, const remote_region &region, void *to,
                                             std::size_t length, std::uint64_t cookie) {
    (void)peer, (void)region, (void)to, (void)length, (void)cookie;
    return send_status::retry;
  }
  // One-sided windows (see the top): starts writing `length` bytes at
  // `from` to `peer`'s `region` (exposed read_write), or reading them into
  // `to`; window_done reports the end from a later poll(). `from` and `to`
  // stay the netmod's until then. retry: it cannot start now (the caller
  // sends the op as records instead).
  [[nodiscard]] virtual send_status rma_write(int peer, const remote_region &region,
                                              const void *from, std::size_t length,
                                              std::uint64_t cookie) {
    (void)peer, (void)region, (void)from, (void)length, (void)cookie;
    return send_status::retry;
  }
  [[nodiscard]] virtual send_status rma_window_read(int peer, const remote_region &region, void *to,
                                                    std::size_t length, std::uint64_t cookie) {
    (void)peer, (void)region, (void)to, (void)length, (void)cookie;
    return send_status::retry;
  }
};

// A 64-bit hash (FNV-1a) of the job id: what tells this job's traffic from
// another's.
inline std::uint64_t job_hash(std::string_view job_id) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char ch : job_id) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Netmods loaded at run time. A netmod outside libiris is a shared module,
// `libiris-netmod-<name>.so`, found in the folders of IRIS_NETMOD_PATH
// (colon-separated), then beside Iris: the build tree's netmods/ when Iris
// runs from its build tree, else iris/ in the folder libiris (or the
// program that holds Iris) was loaded from, then <libdir>/iris as
// configured. It defines
//
//   extern "C" const iris::netmod::module_entry iris_netmod_module = {
//       .contract = iris::netmod::contract_version, .name = "<name>",
//       .create = &create, .tunables = &tunables};
//
// and is built against this header (installed as <includedir>/iris/netmod.h;
// compile with -I<includedir> -I<includedir>/iris). A module whose
// `contract` differs from this Iris's contract_version is refused: raise it
// whenever this header changes what a netmod or the device sees. The
// loader holds a lock while it opens a module: a module's static
// constructors must not call into Iris.
inline constexpr int contract_version = 4;

struct module_entry {
  int contract;      // the contract_version the module was built against; first, always
  const char *name;  // as IRIS_NETMOD names it: the file's <name>
  std::unique_ptr<netmod> (*create)();
  std::span<const device::tunable> (*tunables)();
};

// The module of the netmod called `name`, opened once per process and
// kept; nullptr with `why` (one line: where it looked, or why the file
// found is refused) when there is none.
const module_entry *module_load(std::string_view name, std::string &why);

// The registry, generated from the configure-time list (-Dnetmods=...).
// The names of the built netmods, the default first, comma-separated.
std::string_view netmods_built();
// Whether `name` is a netmod of this build or a module that loads; else
// `why` is a phrase ("is not a netmod of this build (built: ...) nor a
// loadable module: ...") naming the built ones and where it looked.
bool netmod_known(std::string_view name, std::string &why);
// The tunables of the built netmods, each netmod's table in turn: the
// device prints them with its own (device::tunables()).
std::vector<device::tunable> netmods_tunables();
// Builds the netmod called `name`, or the default when `name` is empty:
// one of this build, else a module (module_load). Throws error naming the
// built ones and where it looked when there is no such netmod.
std::unique_ptr<netmod> netmod_create(std::string_view name);

}  // namespace iris::netmod
