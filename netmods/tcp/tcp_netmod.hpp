// The TCP netmod's one class, private to netmods/tcp/. One listener per
// rank, and connections made on first use that carry records both ways
// (wire.hpp). Every socket is non-blocking and watched by one epoll set,
// polled (never waited on) by the progress engine.
//
// The class is defined by phase, one file each:
//   tcp.cpp          the netmod's entry points: init, poll, finalize, describe
//   settings.cpp     its tunables (IRIS_TCP_*)
//   listen.cpp       the addresses to publish and the listening socket
//   connections.cpp  the connection table, the epoll set, solo reading, losses
//   dial.cpp         this rank's connections to its peers: connect, hello, ack
//   accept.cpp       its peers' connections to it: accept, check the hello, ack
//   read.cpp         frames in: records to the device, bodies into their place
//   write.cpp        frames out: one sendmsg, and what the kernel did not take
//
// Under MPI_THREAD_MULTIPLE (config.concurrent_sends) threads write frames
// to their peers' open connections themselves (send_concurrent) while one
// thread at a time runs the rest. A connection becomes a peer's send
// connection only once it is open, and is then published for those threads
// (peer_link::sending); its write side (the pending bytes, its epoll
// registration, read_done) is changed only under its `out` lock, and it is
// unpublished under that lock before it leaves the open state (release).
// A thread that finds it unpublished once it holds the lock answers retry.
//
// Threads without the call lock also read (poll_aside, read.cpp): a
// connection with a peer is published for them once open
// (peer_link::reading); its read side (the bytes read, the body being
// placed, the stream's end) is then read and changed only under its
// `in_lock`, which poll takes (read_hold) once aside passes are on
// (aside_) and poll_aside only tries, and it is unpublished under that
// lock before it leaves the open state. Locking order: in_lock, then the
// device's (a sink's), then out; nothing takes in_lock holding out.
// Without concurrent_sends no lock is taken.
#pragma once

#include <netinet/in.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "netmods/common.hpp"
#include "netmods/netmod.hpp"
#include "netmods/tcp/wire.hpp"

namespace iris::netmod::tcp {

using clock_type = std::chrono::steady_clock;

inline constexpr const char *card_key = "iris.tcp";
// Where this rank's host routes to (routes_format), for reaches().
inline constexpr const char *routes_key = "iris.tcp.routes";
// One read takes at most this much: small frames batch, and a long record
// shows its head early enough for its body to be read into its place.
inline constexpr std::size_t read_chunk = 64 * 1024;
inline constexpr std::size_t max_card_addresses = 16;
inline constexpr std::size_t max_unproven = 64;  // accepted connections still owing their hello
inline constexpr std::size_t min_placed_body = 16 * 1024;  // smaller bodies are copied, not placed
inline constexpr auto goodbye_wait = std::chrono::seconds(10);
inline constexpr std::uint64_t listener_tag = ~std::uint64_t{0};
inline constexpr unsigned epoll_every = 16;  // with a single connection, polls per epoll_wait

std::string errno_text(int err);
std::string address_text(const sockaddr_in &a);
void no_delay(int fd);

// What IRIS_TCP_* say (settings.cpp).
struct settings {
  std::string interface;       // IRIS_TCP_IF: empty chooses
  int port_base = 0;           // IRIS_TCP_PORT: 0 any port, else rank r listens on base + r
  int connect_timeout_ms = 0;  // IRIS_TCP_CONNECT_TIMEOUT: per address tried
};
// Reads them from the environment. Throws error naming a malformed one.
settings settings_load();

struct connection {
  enum class state : std::uint8_t { free, dialing, awaiting_ack, awaiting_hello, open };
  state st = state::free;
  int index = -1;  // in the connection table: the epoll tag
  int fd = -1;
  int peer = -1;  // dialled: from the start; accepted: once its hello checks out
  bool dialled = false;
  bool goodbye = false;                   // the peer said goodbye on it: it sends nothing more
  bool read_done = false;                 // ... and shut its side: only this rank's writes are left
  std::string where;                      // the remote address, for messages
  clock_type::time_point deadline{};      // dialing, awaiting_hello
  std::size_t got = 0;                    // bytes of the hello or ack read so far
  std::byte answer[sizeof(ack_magic)]{};  // the acceptor's answer to a dial, as read
  std::vector<std::byte> in;              // frames being read
  std::size_t filled = 0;
  std::byte *place = nullptr;  // a record's body being read straight into the device's place
  std::size_t place_need = 0;
  std::size_t place_got = 0;
  std::vector<std::byte> head;     // that record's head
  bool head_first = false;         // a placed body just ended: read the next head alone
  bool watched = false;            // in the epoll set (the solo connection is not: solo_update)
  std::vector<std::byte> pending;  // the unwritten end of the last frame sent
  std::size_t pending_done = 0;
  bool has_pending() const { return pending_done < pending.size(); }
  device::spin_lock out;  // the write side, while published (see the top)
  // MULTIPLE's aside passes (see the top).
  device::spin_lock in_lock;  // the read side, while published
  bool in_held = false;       // poll holds in_lock (read_hold): release() must not take it
  bool left = false;          // an aside pass left whole frames in `in` for poll
  int end_error = 0;          // an aside pass's read met this error (the next read says 0)
};

// poll's hold of a connection's read side: its in_lock when `take` (once
// aside passes are on), nothing otherwise.
class read_hold {
 public:
  read_hold(connection &c, bool take) : c_(take ? &c : nullptr) {
    if (c_ == nullptr) return;
    c_->in_lock.lock();
    c_->in_held = true;
  }
  ~read_hold() {
    if (c_ == nullptr) return;
    c_->in_held = false;
    c_->in_lock.unlock();
  }
  read_hold(const read_hold &) = delete;
  read_hold &operator=(const read_hold &) = delete;

 private:
  connection *c_;
};

// A peer's send connection as the sending threads see it: null, or an open
// connection (see the top). A copy (the table's setup) starts null.
class published_connection {
 public:
  published_connection() = default;
  published_connection(const published_connection &) {}
  published_connection &operator=(const published_connection &) { return *this; }
  ~published_connection() = default;
  connection *get() const { return c_.load(std::memory_order_acquire); }
  void set(connection *c) { c_.store(c, std::memory_order_release); }

 private:
  std::atomic<connection *> c_{nullptr};
};

// What this rank knows of one peer.
struct peer_link {
  int send_conn = -1;            // every record to the peer goes here, once chosen
  published_connection sending;  // send_conn's connection, for send_concurrent
  published_connection reading;  // an open connection from it, for poll_aside
  int dial_conn = -1;            // this rank's own connection to it, while it opens
  int accepted_conn = -1;        // the peer's connection to this rank
  card peer_card;
  std::size_t next_address = 0;
  std::string failures;  // what each address tried said
  // The peer refused this rank's dial because its own crosses it: its
  // connection will come, and no new dial starts before this.
  clock_type::time_point crossed_until{};
  // A process of another job (peer_add): its job's hash, its rank there,
  // and whether peer_card holds its card (else it is dialled never).
  bool foreign = false;
  std::uint64_t job = 0;
  int remote_rank = -1;
  bool card_known = false;
};

class tcp_netmod final : public netmod_base {
 public:
  ~tcp_netmod() override { close_all(); }

  // tcp.cpp
  std::string_view name() const override { return "tcp"; }
  void init(pmi::client &pmi, const config &conf) override;
  send_status send(int peer, std::span<const iovec> parts) override;  // write.cpp
  bool concurrent_sends() const override { return true; }
  send_status send_concurrent(int peer, std::span<const iovec> parts) override;  // write.cpp
  int poll(record_sink &sink) override;
  bool reaches(int peer, std::string &why) override;  // listen.cpp
  std::string dynamic_card() const override { return card_format(mine_); }
  bool peer_add(int peer, std::uint64_t job, int rank,
                std::string_view card) override;  // accept.cpp
  int poll_aside(aside_sink &sink) override;      // read.cpp
  bool wait(int timeout_ms) override;             // connections.cpp
  void finalize() override;
  std::string preview(const config &conf) override;
  std::string describe() const override;
  std::string statistics() const override;

 private:
  // listen.cpp: the addresses peers may reach this rank at, the preferred
  // first, and the one to bind (INADDR_ANY unless IRIS_TCP_IF names an
  // interface).
  struct reachable {
    std::vector<std::string> addresses;
    in_addr bind_to{};
  };
  static std::string joined(const std::vector<std::string> &addresses);
  reachable choose_addresses() const;
  void listen_on(const reachable &where);
  static std::vector<route> host_routes();

  // tcp.cpp: poll's pass, polling_ set around it once aside passes are on.
  int poll_reading(record_sink &sink);

  // connections.cpp
  connection &conn(int index) { return *conns_[static_cast<std::size_t>(index)]; }
  int conn_new();
  void watch(connection &c, int index, std::uint32_t events);
  void unwatch(connection &c);
  static std::uint32_t events_for(const connection &c);
  void release(int index);
  void open(connection &c);
  void solo_update();
  void leave_solo();
  void check_deadlines();
  void lose(int index, const std::string &why);
  std::size_t open_without_goodbye() const;
  void close_all();

  // dial.cpp
  bool choose_send_conn(int peer);
  void set_send_conn(int peer, int index);
  void dial_start(int peer);
  void dial_next(int peer);
  void dial_failed(int index, const std::string &why);
  int dial_connected(int index);
  int ack_ready(int index);

  // accept.cpp
  int accept_all();
  void drop(int index, const std::string &why);
  int hello_ready(int index, record_sink *sink);
  int foreign_peer(const hello &h, record_sink *sink, std::string &why);
  // Whether this rank's connection wins when it and `peer` dial each other.
  bool wins_crossing(int peer, const hello &h) const;

  // read.cpp
  int ready(int index, std::uint32_t events, record_sink *sink);
  int frames_ready(int index, record_sink *sink);
  void ended(int index, int err);
  bool deliver(int index, record_sink &sink, std::span<const std::byte> head,
               std::span<const std::byte> body);
  bool try_place(int index, record_sink &sink, const frame &f, const std::byte *start,
                 std::size_t have);
  int body_ready(int index, record_sink *sink);
  int frames_left(record_sink &sink);
  int frames_aside(connection &c, aside_sink &sink);

  // write.cpp
  enum class wrote : std::uint8_t { done, busy, failed };
  wrote write_frame(connection &c, std::span<const iovec> parts, int &err);
  static void keep_unwritten(connection &c, const iovec *iov, std::size_t count,
                             std::size_t written);
  bool flush(int index);

  settings settings_;
  std::uint64_t job_ = 0;
  card mine_;
  std::vector<route> routes_;  // this host's (routes_key)
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  // Indexed by rank, then the dynamic peers: reserved at init for all of
  // them, so that a peer added later moves none (their connections are
  // published to other threads).
  std::vector<peer_link> peers_;
  // How many of peers_ an aside pass walks (MULTIPLE): stored with a
  // release once a peer added later is made, so that a pass never reads
  // the vector's size while it grows, nor an entry still being made.
  std::atomic<std::size_t> peers_published_{0};
  peer_losses losses_;                              // indexed by rank
  std::vector<std::unique_ptr<connection>> conns_;  // slots, reused; the epoll tag is the index
  int waiting_ = 0;                                 // dials and hellos with a deadline
  std::size_t unproven_ = 0;                        // accepted, hello not yet checked
  int solo_ = -1;  // the only connection, read without epoll (solo_update)
  // solo_'s socket for wait(), which runs in another thread (relaxed: a
  // stale one only ends a wait early or late by its timeout).
  std::atomic<int> solo_fd_{-1};
  unsigned polls_ = 0;  // polls since start, for epoll_every
  bool finalizing_ = false;
  // MULTIPLE (conf_.concurrent_sends): whether aside passes read, and
  // whether this poll takes the read sides' locks (aside_.settle()).
  device::aside_switch aside_;
  bool reading_locked_ = false;
  std::atomic<bool> left_{false};  // some connection's `left` is set
  // poll is reading: an aside pass would only make the same system calls
  // beside it, contending for the sockets' locks.
  std::atomic<bool> polling_{false};
  struct {
    std::size_t body_bytes_placed = 0;  // read by recv straight into a place
    std::size_t body_bytes_moved = 0;   // read into `in` first, then copied to their place
    std::atomic<std::size_t> partial_writes = 0;  // sends the kernel took only part of
    std::atomic<std::size_t> bytes_kept = 0;      // ... and what was copied into `pending`
  } counts_;
};

}  // namespace iris::netmod::tcp
