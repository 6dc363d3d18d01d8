// The transport contract: how the device moves packets to one peer.
//
// Lifecycle, as runtime_init drives it:
//   make (transport_*.cpp)  one object per kind in use: self, shm, net
//   attach each VC          vc.via points at the transport that reaches the
//                           peer, chosen once at setup; protocol state
//                           (credits, windows, queues) stays in the VC
//   send / poll             the data path: one indirect call per packet
//   read / expose / conceal optional single-copy rendezvous (CMA, RMA)
//   read_scattered ...      the same for non-contiguous layouts (CMA)
//   peer_access             optional put/get without the peer (CMA: device/am/)
//   window_*                optional put/get into a window without the peer
//                           (a netmod's RMA: device/api/rma/)
//   wait_arrival            optional sleep of the progress thread (epoll)
//   ~transport              at MPI_Finalize, after the last barrier
//
// The protocols (eager, credit, rendezvous, sync, cancel) only ever talk to
// this interface; no file outside transport*.{hpp,cpp} names a transport
// kind. A transport moves packets and knows the packet header only as bytes
// to carry: every arriving packet goes to packet_deliver (the one gate).
//
// Only the call lock's holder calls these methods (under MPI_THREAD_MULTIPLE
// also poll_aside from any thread, and the sends concurrent_sends allows).
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device/base/tunables.hpp"

#include "device/core/packet.hpp"

namespace iris::device {

struct vc;
struct request;

// What a data-path call of a transport returns: one kind everywhere.
enum class [[nodiscard]] xfer{
    done,         // finished now (send: the packet is the transport's; read: data is here)
    in_progress,  // started; the transport reports the end later (read: rendezvous_read_done)
    retry,        // not now: no room, or no single-copy path (the caller takes the generic one)
};

// A payload the sender writes in place: fill(context, out) writes the
// packet's payload bytes at `out` (a typed fragment packed straight into a
// ring record).
struct payload_filler {
  void (*fill)(const void *context, std::byte *out);
  const void *context;
};

// A single-copy read of non-contiguous data moves in pieces: two lists of
// at most max_read_iovecs iovecs (this process's memory, the sender's)
// covering the same number of bytes, in order.
inline constexpr std::size_t max_read_iovecs = 1024;  // IOV_MAX on Linux
struct read_piece {
  const iovec *local = nullptr;
  std::size_t local_count = 0;
  const iovec *remote = nullptr;
  std::size_t remote_count = 0;
  std::size_t bytes = 0;
};
// Where the pieces come from: the device walks both layouts (rendezvous.cpp).
class read_plan {
 public:
  // The next piece; false when there is none left.
  virtual bool next(read_piece &piece) = 0;
  // Whether the pieces are a message's data (false: something the device
  // reads first, such as the description of the sender's layout).
  virtual bool message() const { return true; }

 protected:
  ~read_plan() = default;
};

class transport {
 public:
  virtual ~transport() = default;

  virtual std::string_view name() const = 0;

  // Sends one packet to `to`: `h` followed by the concatenation of
  // `payload` (at most two parts). done: the caller may reuse the buffers;
  // retry: no room now (call again after poll). The self transport delivers
  // at once, before returning.
  virtual xfer send(vc &to, const packet_header &h, std::span<const iovec> payload) = 0;

  // Optional: send() of a packet of `bytes` of payload that `f` writes. The
  // default has `f` write into `staging` (at least `bytes`) and sends that;
  // a transport with records in memory has it write into the record.
  virtual xfer send_filled(vc &to, const packet_header &h, std::size_t bytes,
                           const payload_filler &f, std::byte *staging) {
    f.fill(f.context, staging);
    const iovec part{staging, bytes};
    return send(to, h, {&part, bytes != 0 ? 1U : 0U});
  }

  // One bounded pass over what arrived: at most `budget` packets from each
  // peer, each handed to packet_deliver. Returns how many it handled.
  virtual int poll(int budget) = 0;

  // MPI_THREAD_MULTIPLE: a poll by a thread that does not hold the call
  // lock, while another does. It hands each packet to packet_deliver_aside
  // and, at the first that returns false, leaves that peer's packets for
  // poll(), which must then see them in the same order; peers another
  // thread is reading are skipped. Returns how many it delivered. The
  // default delivers nothing: everything is poll()'s.
  virtual int poll_aside(int budget) {
    (void)budget;
    return 0;
  }
  // MPI_THREAD_MULTIPLE: whether poll_aside may answer the RTS of a
  // message of `bytes` from `from` itself, asking for the data as packets
  // (rendezvous_rts_aside): the transport's engine for it is then the
  // pipeline by a rule that reads nothing of the call lock's, and every
  // record from `from` is read under one lock that poll_aside and poll both
  // hold, which guards `from.streaming_aside`. The default: never.
  virtual bool pipelines_aside(const vc &from, std::size_t bytes) const {
    (void)from, (void)bytes;
    return false;
  }
  // MPI_THREAD_MULTIPLE, the sender's half: whether poll_aside may take the
  // CTS of a rendezvous send of plain bytes to `to` (rendezvous_cts_aside),
  // whose data packets any thread holding `to.send_lock` then writes with
  // send_held (rendezvous_push_aside). The default: never.
  virtual bool streams_sends_aside(const vc &to) const {
    (void)to;
    return false;
  }
  // Optional single copy, sender side: fills the transport's part of the
  // RTS of send `r` (where and how the receiver may read its buffer). The
  // default names nothing, so the receiver asks for the data (CTS).
  virtual void expose(vc &to, request &r, rts_payload &where) { (void)to, (void)r, (void)where; }
  // The send `r` is over: undo what expose did.
  virtual void conceal(request &r) { (void)r; }

  // Optional single copy, receiver side: reads `bytes` of the sender's data
  // named by `where` into `to`. done: the data is here; in_progress: it will
  // be, and rendezvous_read_done(cookie, ...) says so from a later poll();
  // retry: not this way, ask for the data as packets.
  virtual xfer read(vc &from, const rts_payload &where, std::byte *to, std::size_t bytes,
                    std::uint64_t cookie) {
    (void)from, (void)where, (void)to, (void)bytes, (void)cookie;
    return xfer::retry;
  }

  // A transport that learns which engine is faster (shm under `auto`:
  // engine_choice.hpp) times the messages that come as data packets: each
  // one of several packets that streams among others (vc.hpp), from its
  // first packet's arrival to its last, is reported to stream_timed
  // (`bytes` the message, `timed` those after the first packet).
  virtual bool times_streams() const { return false; }
  virtual void stream_timed(vc &from, std::size_t bytes, std::size_t timed, std::uint64_t ns) {
    (void)from, (void)bytes, (void)timed, (void)ns;
  }
  // A message alone that such a transport sent to the pipeline (it set
  // `from.alone_started` when it chose) arrived whole `ns` after the
  // choice, with nothing else streaming in meanwhile.
  virtual void alone_timed(vc &from, std::size_t bytes, std::uint64_t ns) {
    (void)from, (void)bytes, (void)ns;
  }

  // Optional single copy of a non-contiguous layout, sender side: names in
  // the RTS the buffer's origin `base` and the description of its layout
  // (`layout_bytes` bytes at `layout`, kept until the send is over). The
  // default names nothing, so the receiver asks for the data (CTS).
  virtual void expose_layout(vc &to, rts_payload &where, const void *base, const void *layout,
                             std::size_t layout_bytes) {
    (void)to, (void)where, (void)base, (void)layout, (void)layout_bytes;
  }
  // The smallest mean contiguous block of a non-contiguous side for which a
  // scattered read through this transport beats packing and unpacking;
  // SIZE_MAX (the default): never.
  virtual std::size_t scattered_min_block() const { return SIZE_MAX; }
  // Receiver side: whether a scattered read of a `bytes` message from
  // `from` may be made now (permitted, and chosen by the engine setting).
  virtual bool reads_scattered(vc &from, std::size_t bytes) {
    (void)from, (void)bytes;
    return false;
  }
  // Copies the pieces of `plan` from the sender named by `where` into this
  // process, in order. done: all of them are here; retry: not this way (some
  // may have been copied; ask for the data as packets).
  virtual xfer read_scattered(vc &from, const rts_payload &where, read_plan &plan) {
    (void)from, (void)where, (void)plan;
    return xfer::retry;
  }

  // Optional, for active messages' put and get to a peer without the
  // peer's help (device/am/): writes (`write`) or reads `bytes` at
  // `address` in the peer's process from or into `local`. done: moved;
  // retry: not this way (no such path, or the kernel refused; nothing is
  // known of the bytes then: the caller reports it or sends packets).
  virtual xfer peer_access(vc &peer, bool write, std::uint64_t address, void *local,
                           std::size_t bytes) {
    (void)peer, (void)write, (void)address, (void)local, (void)bytes;
    return xfer::retry;
  }
  // With peer_access: a word each rank publishes to the ranks that reach
  // its memory, in memory they share (device/am/ keeps there the version of
  // its exposure table, so that an origin reads the table again only when
  // it changed). This rank's and `peer`'s; nullptr: none.
  virtual std::atomic<std::uint64_t> *published_word() { return nullptr; }
  virtual const std::atomic<std::uint64_t> *peer_published_word(const vc &peer) const {
    (void)peer;
    return nullptr;
  }
  // Optional, memory the ranks of this node map and then read and write
  // with plain loads and stores (MPI_Alloc_mem, for put and get: device/am/):
  // a new block of `bytes` that this rank names `key`; nullptr: none here
  // (the caller allocates plainly). block_unlink removes the name (the
  // caller unmaps); peer_block maps `peer`'s block `key` of `bytes` at its
  // first use (kept until finalize; nullptr: none of that size).
  virtual void *block_alloc(std::size_t bytes, std::uint64_t key) {
    (void)bytes, (void)key;
    return nullptr;
  }
  virtual void block_unlink(std::uint64_t key) { (void)key; }
  virtual std::byte *peer_block(vc &peer, std::uint64_t key, std::size_t bytes) {
    (void)peer, (void)key, (void)bytes;
    return nullptr;
  }
  // Whether peer_access may work for `peer`.
  virtual bool peer_accessible(const vc &peer) const {
    (void)peer;
    return false;
  }
  // Optional, one-sided windows over remote memory (a netmod's RMA writes
  // and reads: device/api/rma/). window_expose makes [base, base + bytes)
  // writable and readable by the peers this transport reaches, and names
  // the region in `region` (its start as the peers' operations name it,
  // and its key), which the window's ranks exchange; false: this transport
  // cannot (or reaches nobody). window_conceal undoes it.
  // window_write and window_read move `bytes` between `local` and the
  // peer's region `region` (its start moved to where the bytes go):
  // in_progress, counted in `ops.busy` until the transport says it ended,
  // from a later poll (a write: its bytes are in the peer's memory); retry:
  // not this way (the caller sends the op as messages).
  struct window_ops {
    int busy = 0;       // started and not ended
    std::string error;  // the first failure's reason, if any
  };
  virtual bool window_expose(const void *base, std::size_t bytes, std::uint64_t region[2]) {
    (void)base, (void)bytes, (void)region;
    return false;
  }
  virtual void window_conceal(const std::uint64_t region[2]) { (void)region; }
  virtual xfer window_write(vc &to, const std::uint64_t region[2], const void *local,
                            std::size_t bytes, window_ops &ops) {
    (void)to, (void)region, (void)local, (void)bytes, (void)ops;
    return xfer::retry;
  }
  virtual xfer window_read(vc &from, const std::uint64_t region[2], void *local, std::size_t bytes,
                           window_ops &ops) {
    (void)from, (void)region, (void)local, (void)bytes, (void)ops;
    return xfer::retry;
  }
  // The progress thread's sleep (device/am/progress_thread.cpp) on a
  // transport whose packets cannot ring the bell: waits until something may
  // have arrived or `timeout_ms` passes, without the call lock (it reads
  // nothing the call lock's holder writes). false: this transport cannot
  // wait so, and the thread naps instead.
  virtual bool wait_arrival(int timeout_ms) {
    (void)timeout_ms;
    return false;
  }
  // Called under the call lock (or the program flag) just before
  // wait_arrival, after a poll that found nothing: false when the wait
  // could miss what already arrived (poll again instead).
  virtual bool wait_arm() { return true; }

  // Whether a send to a peer of this transport must ever wait for the
  // receiver: false only for the self transport, whose packets are
  // delivered at once and buffered, so that eager credits and rendezvous do
  // not apply (a send to oneself never waits).
  virtual bool flow_controlled() const { return true; }

  // MPI_THREAD_MULTIPLE: whether sends to one peer may run while another
  // thread sends to a different peer or polls: then send and send_filled
  // take that VC's send_lock (vc.hpp) themselves, send_held is called with
  // it held (send_unlocked), and poll takes it where it gives credits back
  // (packet_deliver_shared). True under MULTIPLE for shm_shared_transport
  // (the pair rings), shm_queue_shared_transport (a large node's queues and
  // rings) and net_transport over a netmod with send_concurrent (tcp; ofi
  // when IRIS_OFI_CONCURRENT_SENDS=1). Self delivers at once into the
  // matcher, and stays under the call lock.
  virtual bool concurrent_sends() const { return false; }
  virtual xfer send_held(vc &to, const packet_header &h, std::span<const iovec> payload) {
    return send(to, h, payload);
  }

  // Sleeping waiters (progress_idle). A rank may sleep only if every
  // transport it polls wakes it when a packet comes: the shm transports
  // ring the receiver's bell after each send (shm/bell.hpp), oneself never
  // needs waking, and a netmod cannot (its packets come on sockets).
  virtual bool wakes_sleepers() const { return false; }
  // Whether this transport holds this rank's bell, where it sleeps.
  virtual bool holds_bell() const { return false; }
  // The sleeper's steps, on the transport that holds the bell:
  // sleep_begin marks this rank asleep and makes every sender see it
  // before the last poll (false: the kernel refused; never sleep again);
  // sleep_wait waits until a sender rings or `timeout_ms` passes (false:
  // the time ran out); sleep_end marks it awake.
  virtual bool sleep_begin() { return false; }
  virtual bool sleep_wait(int timeout_ms) {
    (void)timeout_ms;
    return true;
  }
  virtual void sleep_end() {}
  // From any thread (the launcher's report of a death, protocols/
  // recovery.hpp): wakes this rank if it sleeps on this transport's bell.
  virtual void wake_self() {}

  // One line for IRIS_DEBUG (empty: nothing to say).
  virtual std::string describe() const { return {}; }
  // One line for IRIS_STATS (empty: nothing counted).
  virtual std::string statistics() const { return {}; }
  // A counter of this transport's own, by the name MPIX_Stat_get is given
  // (false: not one of its names).
  virtual bool statistic(std::string_view name, std::uint64_t &value) const {
    (void)name, (void)value;
    return false;
  }
  // `peer`, reached through this transport, died (recovery,
  // protocols/recovery.hpp): nothing more is owed to it or awaited from it.
  virtual void peer_gone(vc &peer) { (void)peer; }
  // Recovery (MPI_Init, once recovery_start ran): watch the peers'
  // processes where this transport can see them end, and report each that
  // ends before finishing MPI (recovery_report), whatever the launcher
  // says. The shm transports do (transports/liveness.hpp); finalize stops it.
  virtual void watch_peers() {}
  // Called once after the last barrier of MPI_Finalize: flush and close.
  virtual void finalize() {}
};

struct runtime;

// How rendezvous data moves between ranks of one node (IRIS_RNDV_ENGINE).
enum class rndv_engine : std::uint8_t { automatic = 0, cma = 1, pipeline = 2 };

// The transports' own settings, read from their tunables
// (transport_settings.cpp) at MPI_Init beside the device's.
struct transport_settings {
  struct {
    bool enabled;                // false: every peer through the netmod (IRIS_SHM=0)
    std::size_t ring_size;       // each pair ring (see dense_ring_size)
    bool ring_chosen;            // IRIS_SHM_RING_SIZE=-1: dense_ring_size picks it
    std::size_t fragment_size;   // rendezvous pieces through a ring or queue
    int dense_ranks;             // at most this many local ranks: a ring per pair
    std::size_t queue_cells;     // cells of each rank's receive queue
    std::size_t pool_size;       // most bytes of pooled pair rings per node
    std::uint64_t busy_packets;  // queued packets to one peer before a pair ring
    rndv_engine engine;
    std::size_t cma_threshold;
    std::size_t pipeline_large;
    std::size_t scattered_min_block;  // smallest mean block of a scattered single-copy read
  } shm;
  struct {
    // IRIS_NETMOD: the built netmods this rank offers, in its order of
    // preference (transports/choose.cpp picks one per peer).
    std::vector<std::string> netmods;
    // IRIS_NETMOD=auto (with more than one built): each pair of nodes takes
    // the faster of the netmods it shares, measured at MPI_Init (probe.cpp).
    bool probe;
    std::size_t fragment_size;
    std::size_t eager_limit;
    int eager_window;  // credit units
    bool rma;
    // Processes of other jobs (MPI_Comm_connect/accept) one process may
    // come to know, and how long a connect waits for its accept.
    std::size_t dynamic_peers;
    int connect_timeout_s;
    std::int64_t universe_size;  // MPI_UNIVERSE_SIZE, at least the world's size
  } net;
};

// The smallest ring IRIS_SHM_RING_SIZE=-1 gives, and the one the settings
// are settled against before the node's size is known.
inline constexpr std::size_t shm_ring_floor = 256 * 1024;

// The pair ring of a node of `local_size` ranks that reserves one per ordered
// pair, when IRIS_SHM_RING_SIZE=-1: each rank's rings share 8 MiB, a power of
// two from shm_ring_floor to 4 MiB. A ring larger than a large message keeps
// the sender from waiting for room: on this project's machine a 1 MiB
// ping-pong took 34 us with 1 MiB rings against 112 us with 256 KiB ones
// (bench/results/, stop 23).
std::size_t dense_ring_size(int local_size);

// Whether IRIS_NETMOD's `text` means auto: "auto", or empty in a build of
// several netmods.
bool netmod_auto(std::string_view text);
// IRIS_NETMOD's list of netmods ("ofi,tcp"; auto: every netmod built;
// empty: auto, or the build's one netmod). Throws std::runtime_error naming
// the variable when a name is empty, not built, or listed twice.
std::vector<std::string> netmod_list(std::string_view text);
// MPI_Init's line when none of a list of netmods starts here; `failures`
// says why each did not ("tcp: ...; ofi: ...").
std::string netmods_none_start(const transport_settings &s, const std::string &failures);
// Whether this build has the netmod called `name`.
bool netmod_built(std::string_view name);

// The transports' tunables, then each built netmod's own (netmods/).
std::span<const tunable> transport_tunables();

// Reads them. Throws std::runtime_error naming the variable and the
// accepted values when one is malformed or out of range.
transport_settings transport_settings_load();

// Checks the transports' settings and caps what must fit their records (an
// eager message and a rendezvous fragment fit one shm record). Throws
// std::runtime_error naming the setting.
void transports_settle(settings &device, transport_settings &s);

// A value of the transports' settings that MPIX_Stat_get reports by name
// (shm_fragment_size, net_eager_limit, net_fragment_size); false for any
// other name.
bool transport_setting_value(const transport_settings &s, std::string_view name,
                             std::uint64_t &value);

// A counter of the transports' own that MPIX_Stat_get reports by name
// (rendezvous_cma, rendezvous_rma, window_rma): the transport in use answers; a job
// without it reads 0. False for any other name.
bool transport_statistic(std::span<const std::unique_ptr<transport>> in_use, std::string_view name,
                         std::uint64_t &value);

// What iris_info prints of the transports a job started now would use: the
// netmod and whether ranks of a node share memory. Throws
// std::runtime_error (a setting) or netmod::error (the netmod cannot start).
std::string transports_preview();

// Setup, as runtime_init calls it around the PMI fence (transport.cpp):
// transports_open makes the transports this rank needs and lets them put
// their cards (the netmod's, the node segment's creator's, CMA's probe);
// after the fence transports_connect attaches them and points every VC at
// the transport that reaches its peer. Both throw std::runtime_error with a
// one-line reason.
void transports_open(runtime &r);
void transports_connect(runtime &r);

}  // namespace iris::device
