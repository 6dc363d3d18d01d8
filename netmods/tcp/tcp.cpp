// The TCP netmod. One listener per rank, and connections made on first use
// that carry records both ways (wire.hpp). Every socket is non-blocking and
// watched by one epoll set, polled (never waited on) by the progress engine.
//
// A send writes the frame with one sendmsg. What the kernel does not take
// at once is copied into the connection's pending buffer (reserved when the
// connection opened: no allocation on the data path) and written out by
// later polls; meanwhile further sends to that peer answer retry, so the
// device keeps them queued, in order.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "netmods/tcp/tcp.hpp"
#include "netmods/tcp/wire.hpp"
#include "pmi/pmi.hpp"

namespace iris::netmod::tcp {
namespace {

using clock_type = std::chrono::steady_clock;

constexpr const char *card_key = "iris.tcp";
// One read takes at most this much: small frames batch, and a long record
// shows its head early enough for its body to be read into its place.
constexpr std::size_t read_chunk = 64 * 1024;
constexpr std::size_t max_card_addresses = 16;
constexpr std::size_t max_unproven = 64;            // accepted connections still owing their hello
constexpr std::size_t min_placed_body = 16 * 1024;  // smaller bodies are copied, not placed
constexpr auto goodbye_wait = std::chrono::seconds(10);
constexpr std::uint64_t listener_tag = ~std::uint64_t{0};
constexpr unsigned epoll_every = 16;  // with a single connection, polls per epoll_wait

std::string errno_text(int err) {
  return std::strerror(err);
}

std::string address_text(const sockaddr_in &a) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

void no_delay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

struct connection {
  enum class state : std::uint8_t { free, dialing, awaiting_ack, awaiting_hello, open };
  state st = state::free;
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
};

// What this rank knows of one peer.
struct peer_link {
  int send_conn = -1;      // every record to the peer goes here, once chosen
  int dial_conn = -1;      // this rank's own connection to it, while it opens
  int accepted_conn = -1;  // the peer's connection to this rank
  card peer_card;
  std::size_t next_address = 0;
  std::string failures;  // what each address tried said
  // The peer refused this rank's dial because its own crosses it: its
  // connection will come, and no new dial starts before this.
  clock_type::time_point crossed_until{};
  bool lost = false;
  bool reported = false;
  std::string lost_why;
};

class tcp_netmod final : public netmod {
 public:
  ~tcp_netmod() override { close_all(); }

  std::string_view name() const override { return "tcp"; }

  void init(pmi::client &pmi, const config &conf) override {
    pmi_ = &pmi;
    conf_ = conf;
    rank_ = pmi.rank();
    size_ = pmi.size();
    job_ = job_hash(pmi.job_id());
    peers_.resize(static_cast<std::size_t>(size_));
    if (getrandom(mine_.tok.data(), mine_.tok.size(), 0) != static_cast<ssize_t>(token_size)) {
      throw error("tcp: cannot draw a random connection token: " + errno_text(errno));
    }
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) throw error("tcp: epoll_create1 failed: " + errno_text(errno));
    listen_on(choose_addresses());
    pmi.put(card_key, card_format(mine_));
  }

  send_status send(int peer, std::span<const iovec> parts) override {
    peer_link &p = peers_[static_cast<std::size_t>(peer)];
    if (p.send_conn < 0 && !choose_send_conn(peer)) return send_status::retry;
    connection &c = conn(p.send_conn);
    if (c.st != connection::state::open || c.has_pending()) return send_status::retry;
    std::uint32_t prefix = 0;
    iovec iov[4];
    iov[0] = {&prefix, sizeof(prefix)};
    std::size_t count = 1;
    std::size_t total = 0;
    for (const iovec &part : parts) {
      if (part.iov_len == 0) continue;
      iov[count++] = part;
      total += part.iov_len;
    }
    prefix = static_cast<std::uint32_t>(total);
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    const ssize_t n = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return send_status::retry;
      lose(p.send_conn, "writing to it failed: " + errno_text(errno));
      return send_status::retry;
    }
    const auto written = static_cast<std::size_t>(n);
    if (written == frame_prefix + total) return send_status::done;
    keep_unwritten(c, iov, count, written);
    ++counts_.partial_writes;
    counts_.bytes_kept += frame_prefix + total - written;
    watch(c, p.send_conn, events_for(c));
    return send_status::done;
  }

  int poll(record_sink &sink) override {
    int handled = 0;
    // One open connection and nothing else under way (two ranks, or one
    // peer off the node): reading it directly saves the epoll_wait in front
    // of every message (its errors show in the recv). epoll still looks
    // every few polls, for a stranger at the listener.
    if (solo_ >= 0) {
      connection &c = conn(solo_);
      if (c.st == connection::state::open && !c.has_pending() && !c.read_done) {
        unwatch(c);  // back in the set after a partial write; else nothing
        handled = frames_ready(solo_, &sink);
        if ((++polls_ % epoll_every) != 0) {
          if (unreported_ > 0) report_lost(sink);
          return handled;
        }
      }
    }
    epoll_event events[32];
    const int n = epoll_wait(epoll_fd_, events, 32, 0);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == listener_tag) {
        handled += accept_all();
      } else {
        handled += ready(static_cast<int>(events[i].data.u64), events[i].events, &sink);
      }
    }
    if (waiting_ > 0) check_deadlines();
    if (unreported_ > 0) report_lost(sink);
    return handled;
  }

  void finalize() override {
    finalizing_ = true;
    leave_solo();  // the goodbyes are waited for through epoll
    const auto deadline = clock_type::now() + goodbye_wait;
    // What the kernel has not taken yet goes first, then a goodbye on every
    // open connection: this rank sends nothing more.
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      connection &c = conn(static_cast<int>(i));
      while (c.st == connection::state::open && c.has_pending() && clock_type::now() < deadline) {
        if (!flush(static_cast<int>(i))) ::usleep(100);
      }
      if (c.st != connection::state::open) continue;
      const std::uint32_t goodbye = 0;
      (void)::send(c.fd, &goodbye, sizeof(goodbye), MSG_NOSIGNAL);
      ::shutdown(c.fd, SHUT_WR);
    }
    // Every peer says goodbye too (or goes): reading to the end means no
    // reset can cut off what this rank sent last.
    while (open_without_goodbye() > 0 && clock_type::now() < deadline) {
      epoll_event events[32];
      const int n = epoll_wait(epoll_fd_, events, 32, 10);
      for (int i = 0; i < n; ++i) {
        if (events[i].data.u64 == listener_tag) continue;
        (void)ready(static_cast<int>(events[i].data.u64), events[i].events, nullptr);
      }
    }
    close_all();
  }

  std::string preview(const config &conf) override {
    conf_ = conf;
    return "tcp: card addresses " + joined(choose_addresses().addresses) +
           (conf.port_base == 0 ? ", any free port"
                                : ", port " + std::to_string(conf.port_base) + " + rank");
  }

  std::string describe() const override {
    return "tcp listening on port " + std::to_string(mine_.port) + ", card addresses " +
           joined(mine_.addresses);
  }

  std::string statistics() const override {
    return "tcp: long bodies read in place " + std::to_string(counts_.body_bytes_placed) +
           " B, moved from the read buffer " + std::to_string(counts_.body_bytes_moved) +
           " B; partial writes " + std::to_string(counts_.partial_writes) + " (" +
           std::to_string(counts_.bytes_kept) + " B kept)";
  }

 private:
  // ---- Setup --------------------------------------------------------------

  static std::string joined(const std::vector<std::string> &addresses) {
    std::string text;
    for (const std::string &a : addresses) text += (text.empty() ? "" : ",") + a;
    return text;
  }

  // The addresses peers may reach this rank at, the preferred first, and the
  // one to bind (INADDR_ANY unless IRIS_TCP_IF names an interface).
  struct reachable {
    std::vector<std::string> addresses;
    in_addr bind_to{};
  };

  reachable choose_addresses() const {
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) throw error("tcp: getifaddrs failed: " + errno_text(errno));
    reachable r;
    r.bind_to.s_addr = htonl(INADDR_ANY);
    std::vector<std::string> loopback;
    std::string seen;
    for (ifaddrs *i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
      if ((i->ifa_flags & IFF_UP) == 0) continue;
      const auto *a = reinterpret_cast<const sockaddr_in *>(i->ifa_addr);
      char ip[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
      seen += (seen.empty() ? "" : ", ") + std::string(i->ifa_name) + " " + ip;
      if (!conf_.interface.empty()) {
        if (conf_.interface != i->ifa_name || !r.addresses.empty()) continue;
        r.addresses.emplace_back(ip);
        r.bind_to = a->sin_addr;
      } else if ((i->ifa_flags & IFF_LOOPBACK) != 0) {
        loopback.emplace_back(ip);
      } else if (r.addresses.size() < max_card_addresses) {
        r.addresses.emplace_back(ip);
      }
    }
    freeifaddrs(list);
    if (!conf_.interface.empty() && r.addresses.empty()) {
      throw error("tcp: IRIS_TCP_IF=" + conf_.interface +
                  " is not an interface with an IPv4 address that is up (there are: " + seen + ")");
    }
    // Loopback last: it reaches only ranks on this host, and only when the
    // interfaces above do not.
    for (const std::string &ip : loopback) r.addresses.push_back(ip);
    if (r.addresses.empty()) r.addresses.emplace_back("127.0.0.1");
    return r;
  }

  void listen_on(const reachable &where) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw error("tcp: cannot create a socket: " + errno_text(errno));
    const int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (conf_.port_base != 0 && conf_.port_base + rank_ > 65535) {
      throw error("tcp: IRIS_TCP_PORT=" + std::to_string(conf_.port_base) + " puts rank " +
                  std::to_string(rank_) + " past port 65535");
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr = where.bind_to;
    a.sin_port =
        htons(static_cast<std::uint16_t>(conf_.port_base == 0 ? 0 : conf_.port_base + rank_));
    if (::bind(listen_fd_, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0) {
      throw error("tcp: cannot listen on " + address_text(a) + ": " + errno_text(errno));
    }
    if (::listen(listen_fd_, 128) != 0) throw error("tcp: listen failed: " + errno_text(errno));
    socklen_t len = sizeof a;
    getsockname(listen_fd_, reinterpret_cast<sockaddr *>(&a), &len);
    mine_.port = ntohs(a.sin_port);
    mine_.addresses = where.addresses;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = listener_tag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  }

  // ---- Connections ----------------------------------------------------------

  connection &conn(int index) { return *conns_[static_cast<std::size_t>(index)]; }

  int conn_new() {
    leave_solo();  // a connection being set up is watched through epoll
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      if (conns_[i]->st == connection::state::free) return static_cast<int>(i);
    }
    conns_.push_back(std::make_unique<connection>());
    return static_cast<int>(conns_.size() - 1);
  }

  void watch(connection &c, int index, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = static_cast<std::uint64_t>(index);
    epoll_ctl(epoll_fd_, c.watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c.fd, &ev);
    c.watched = true;
  }

  void unwatch(connection &c) {
    if (c.watched) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    c.watched = false;
  }

  // What an open connection waits for: data, and room for its pending bytes.
  static std::uint32_t events_for(const connection &c) {
    return (c.read_done ? 0U : std::uint32_t{EPOLLIN}) |
           (c.has_pending() ? std::uint32_t{EPOLLOUT} : 0U);
  }

  // Closes connection `index` and frees its slot.
  void release(int index) {
    connection &c = conn(index);
    if (c.st == connection::state::dialing || c.st == connection::state::awaiting_hello) {
      --waiting_;
    }
    if (c.fd >= 0) {
      unwatch(c);
      ::close(c.fd);
    }
    if (c.peer >= 0) {
      peer_link &p = peers_[static_cast<std::size_t>(c.peer)];
      if (p.dial_conn == index) p.dial_conn = -1;
      if (p.accepted_conn == index) p.accepted_conn = -1;
      if (p.send_conn == index) p.send_conn = -1;
    }
    c.st = connection::state::free;
    c.fd = -1;
    c.peer = -1;
    c.goodbye = false;
    c.read_done = false;
    c.got = 0;
    c.filled = 0;
    c.place = nullptr;
    c.head_first = false;
    c.pending.clear();
    c.pending_done = 0;
    solo_update();
  }

  // Buffers for a connection that now carries frames (not on the data path).
  void open(connection &c) {
    c.st = connection::state::open;
    c.in.resize(conf_.max_record + frame_prefix + read_chunk);
    c.head.resize(conf_.record_head);
    c.filled = 0;
    c.pending.reserve(conf_.max_record + frame_prefix);
    solo_update();
  }

  // The one open connection, when there is exactly one and no dial or
  // hello is under way; else -1. poll reads it directly and takes it out of
  // the epoll set: over loopback every segment that reaches a watched socket
  // wakes the epoll on the sending rank's CPU (sock_def_readable, 2% of a
  // 4 KiB stream's sender in perf).
  void solo_update() {
    int only = -1;
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      const connection::state st = conns_[i]->st;
      if (st == connection::state::free) continue;
      if (st != connection::state::open || only >= 0) {
        only = -1;
        break;
      }
      only = static_cast<int>(i);
    }
    if (only != solo_) leave_solo();
    solo_ = only;
  }

  // Ends solo reading: the connection goes back into the epoll set.
  void leave_solo() {
    if (solo_ < 0) return;
    connection &c = conn(solo_);
    if (c.st == connection::state::open && !c.watched) watch(c, solo_, events_for(c));
    solo_ = -1;
  }

  // The connection every record to `peer` will go on. False while there is
  // none yet (a dial is started or under way).
  bool choose_send_conn(int peer) {
    peer_link &p = peers_[static_cast<std::size_t>(peer)];
    if (p.lost) return false;
    if (p.accepted_conn >= 0 && conn(p.accepted_conn).st == connection::state::open) {
      p.send_conn = p.accepted_conn;
      return true;
    }
    if (p.dial_conn < 0 && clock_type::now() >= p.crossed_until) dial_start(peer);
    return false;
  }

  // ---- Dialling: connect, hello, ack ----------------------------------------

  void dial_start(int peer) {
    peer_link &p = peers_[static_cast<std::size_t>(peer)];
    std::string text;
    try {
      text = pmi_->get(peer, card_key);
    } catch (const std::exception &e) {
      lose_peer(peer, std::string("no tcp business card: ") + e.what());
      return;
    }
    auto parsed = card_parse(text);
    if (!parsed) {
      lose_peer(peer, "its tcp business card is malformed: '" + text + "'");
      return;
    }
    p.peer_card = std::move(*parsed);
    p.next_address = 0;
    dial_next(peer);
  }

  // Tries the peer's addresses in turn, from next_address.
  void dial_next(int peer) {
    peer_link &p = peers_[static_cast<std::size_t>(peer)];
    while (p.next_address < p.peer_card.addresses.size()) {
      const std::string &ip = p.peer_card.addresses[p.next_address++];
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(p.peer_card.port);
      if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
        p.failures += (p.failures.empty() ? "" : "; ") + ip + " is not an IPv4 address";
        continue;
      }
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        lose_peer(peer, "cannot create a socket: " + errno_text(errno));
        return;
      }
      if (::connect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0 &&
          errno != EINPROGRESS) {
        p.failures += (p.failures.empty() ? "" : "; ") + address_text(a) + " " + errno_text(errno);
        ::close(fd);
        continue;
      }
      const int index = conn_new();
      connection &c = conn(index);
      c.st = connection::state::dialing;
      c.fd = fd;
      c.peer = peer;
      c.dialled = true;
      c.where = address_text(a);
      c.deadline = clock_type::now() + std::chrono::milliseconds(conf_.connect_timeout_ms);
      ++waiting_;
      p.dial_conn = index;
      watch(c, index, EPOLLOUT);
      return;
    }
    lose_peer(peer, "cannot reach it over tcp: " + p.failures);
  }

  // This address did not work out: note why and try the next.
  void dial_failed(int index, const std::string &why) {
    connection &c = conn(index);
    const int peer = c.peer;
    peer_link &p = peers_[static_cast<std::size_t>(peer)];
    p.failures += (p.failures.empty() ? "" : "; ") + c.where + " " + why;
    release(index);
    dial_next(peer);
  }

  int dial_connected(int index) {
    connection &c = conn(index);
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      dial_failed(index, errno_text(err));
      return 1;
    }
    no_delay(c.fd);
    hello h{};
    std::memcpy(h.magic, hello_magic, sizeof h.magic);
    h.acceptor = peers_[static_cast<std::size_t>(c.peer)].peer_card.tok;
    h.from = rank_;
    h.to = c.peer;
    h.job = job_;
    if (::send(c.fd, &h, sizeof h, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof h)) {
      dial_failed(index, "could not take the hello");
      return 1;
    }
    // The ack comes when the peer's progress engine runs, which may be late:
    // no deadline from here on, only a closed connection moves on.
    c.st = connection::state::awaiting_ack;
    c.got = 0;
    --waiting_;
    watch(c, index, EPOLLIN);
    return 1;
  }

  int ack_ready(int index) {
    connection &c = conn(index);
    // Only the answer's own bytes: frames may follow an ack at once.
    const ssize_t n = ::recv(c.fd, c.answer + c.got, sizeof(c.answer) - c.got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n > 0) c.got += static_cast<std::size_t>(n);
    const auto is = [&](const char *magic) { return std::memcmp(c.answer, magic, c.got) == 0; };
    if (n <= 0 || !(is(ack_magic) || is(crossed_magic))) {
      ++waiting_;  // release() counts it out again
      c.st = connection::state::dialing;
      dial_failed(index, n <= 0 ? "closed the connection instead of accepting it"
                                : "answered something that is not an Iris ack");
      return 1;
    }
    if (c.got < sizeof(c.answer)) return 1;
    peer_link &p = peers_[static_cast<std::size_t>(c.peer)];
    if (is(crossed_magic)) {
      // The peer dialled this rank too, and its connection is the pair's.
      p.crossed_until = clock_type::now() + std::chrono::milliseconds(conf_.connect_timeout_ms);
      release(index);
      return 1;
    }
    open(c);
    p.dial_conn = -1;
    if (p.send_conn < 0) p.send_conn = index;
    return 1;
  }

  // ---- Accepting: hello, ack ------------------------------------------------

  int accept_all() {
    int accepted = 0;
    for (;;) {
      sockaddr_in a{};
      socklen_t len = sizeof a;
      const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr *>(&a), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return accepted;
      if (unproven_ >= max_unproven) {
        log("refused a connection from " + address_text(a) + ": " + std::to_string(max_unproven) +
            " others have not sent their hello yet");
        ::close(fd);
        continue;
      }
      no_delay(fd);
      const int index = conn_new();
      connection &c = conn(index);
      c.st = connection::state::awaiting_hello;
      c.fd = fd;
      c.peer = -1;
      c.dialled = false;
      c.where = address_text(a);
      c.deadline = clock_type::now() + std::chrono::milliseconds(conf_.connect_timeout_ms);
      c.in.resize(sizeof(hello));
      c.got = 0;
      ++waiting_;
      ++unproven_;
      watch(c, index, EPOLLIN);
      ++accepted;
    }
  }

  // Drops an accepted connection that did not prove itself, or one that
  // broke the protocol, with one line saying why.
  void drop(int index, const std::string &why) {
    connection &c = conn(index);
    const std::string who =
        c.peer >= 0 ? "rank " + std::to_string(c.peer) + " (" + c.where + ")" : c.where;
    log("dropped the connection from " + who + ": " + why);
    if (c.st == connection::state::awaiting_hello) --unproven_;
    release(index);
  }

  int hello_ready(int index) {
    connection &c = conn(index);
    const ssize_t n = ::recv(c.fd, c.in.data() + c.got, sizeof(hello) - c.got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n <= 0) {
      drop(index, c.got == 0 ? "closed without a hello" : "closed in the middle of its hello");
      return 1;
    }
    c.got += static_cast<std::size_t>(n);
    if (c.got < sizeof(hello)) return 1;
    hello h;
    std::memcpy(&h, c.in.data(), sizeof h);
    if (const char *why = hello_check(h, mine_.tok, job_, rank_, size_)) {
      drop(index, why);
      return 1;
    }
    peer_link &p = peers_[static_cast<std::size_t>(h.from)];
    if (p.accepted_conn >= 0) {
      drop(index, "a second connection from rank " + std::to_string(h.from));
      return 1;
    }
    // Both ranks dialled each other. One connection carries both ways (the
    // replies carry the ACKs): the lower rank's. The higher rank's dial is
    // refused here; at the higher rank, this rank's dial is accepted and
    // its own refused.
    const bool dialled_too = p.dial_conn >= 0 || (p.send_conn >= 0 && conn(p.send_conn).dialled);
    if (dialled_too && rank_ < h.from) {
      (void)::send(c.fd, crossed_magic, sizeof crossed_magic, MSG_NOSIGNAL);
      --unproven_;
      release(index);
      return 1;
    }
    if (::send(c.fd, ack_magic, sizeof ack_magic, MSG_NOSIGNAL) !=
        static_cast<ssize_t>(sizeof ack_magic)) {
      drop(index, "the ack could not be sent");
      return 1;
    }
    --waiting_;
    --unproven_;
    c.peer = h.from;
    p.accepted_conn = index;
    open(c);
    return 1;
  }

  // ---- Open connections: frames -----------------------------------------------

  // Epoll says connection `index` is ready. `sink` is null at finalize, when
  // records are read and dropped.
  int ready(int index, std::uint32_t events, record_sink *sink) {
    if (static_cast<std::size_t>(index) >= conns_.size()) return 0;
    connection &c = conn(index);
    switch (c.st) {
      case connection::state::dialing:
        // Only a writable socket has finished connecting (an event meant
        // for an earlier connection in this slot says nothing).
        return (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0 ? dial_connected(index) : 0;
      case connection::state::awaiting_ack:
        return ack_ready(index);
      case connection::state::awaiting_hello:
        return hello_ready(index);
      case connection::state::open:
        if ((events & EPOLLOUT) != 0 && c.has_pending()) flush(index);
        if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) == 0) return 1;
        if (c.read_done) {
          // The peer, past its goodbye, gave up waiting for this rank's.
          release(index);
          return 1;
        }
        return frames_ready(index, sink);
      case connection::state::free:
        return 0;
    }
    return 0;
  }

  int frames_ready(int index, record_sink *sink) {
    connection &c = conn(index);
    if (c.place != nullptr) return body_ready(index, sink);
    // Rendezvous data comes as a row of long records: after one, read only
    // the next one's head, so that all of its body goes to its place rather
    // than partly through `in`.
    const std::size_t want = c.head_first && c.filled == 0
                                 ? frame_prefix + conf_.record_head
                                 : std::min(c.in.size() - c.filled, read_chunk);
    const ssize_t n = ::recv(c.fd, c.in.data() + c.filled, want, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    c.head_first = false;
    if (n <= 0) {
      ended(index, n == 0 ? 0 : errno);
      return 1;
    }
    c.filled += static_cast<std::size_t>(n);
    int records = 0;
    std::size_t at = 0;
    for (;;) {
      const std::byte *start = c.in.data() + at;
      const std::size_t have = c.filled - at;
      const frame f = frame_parse(start, have, conf_.max_record);
      if (f.what == frame::kind::partial) {
        if (sink != nullptr && try_place(index, *sink, f, start, have)) at = c.filled;
        break;
      }
      if (f.what == frame::kind::too_long) {
        drop(index, "a frame of " + std::to_string(f.record_length) + " bytes (at most " +
                        std::to_string(conf_.max_record) + ")");
        return records + 1;
      }
      if (f.what == frame::kind::goodbye) {
        c.goodbye = true;
        c.filled = 0;
        if (finalizing_) release(index);
        return records + 1;
      }
      const std::byte *record = start + frame_prefix;
      const std::size_t head = std::min(conf_.record_head, f.record_length);
      if (sink != nullptr &&
          !deliver(index, *sink, {record, head}, {record + head, f.record_length - head})) {
        return records + 1;
      }
      at += frame_prefix + f.record_length;
      ++records;
    }
    if (at > 0) {
      std::memmove(c.in.data(), c.in.data() + at, c.filled - at);
      c.filled -= at;
    }
    return records;
  }

  // The connection's stream ended (`err` 0: closed, else the error).
  void ended(int index, int err) {
    connection &c = conn(index);
    if (finalizing_) {
      release(index);
    } else if (c.goodbye && err == 0) {
      // A clean end of the peer's side. It waits for this rank's goodbye,
      // so keep the socket, for writing only, until MPI_Finalize.
      c.read_done = true;
      watch(c, index, events_for(c));
    } else {
      lose(index, err == 0 ? "it closed its connection without a goodbye (it died?)"
                           : "its connection failed: " + errno_text(err));
    }
  }

  // Hands one record to the device. False when the device refused it: the
  // connection is dropped then.
  bool deliver(int index, record_sink &sink, std::span<const std::byte> head,
               std::span<const std::byte> body) {
    if (const char *why = sink.record_arrived(conn(index).peer, head, body)) {
      drop(index, std::string("a bad packet: ") + why);
      return false;
    }
    return true;
  }

  // A long record whose head is here and whose body is not: asks the device
  // where the body goes and, when it says, moves there what of it is here.
  // True when the record is being placed (every byte read so far is its).
  bool try_place(int index, record_sink &sink, const frame &f, const std::byte *start,
                 std::size_t have) {
    connection &c = conn(index);
    const std::size_t head = conf_.record_head;
    if (f.record_length < head + min_placed_body || have < frame_prefix + head) return false;
    const std::size_t body = f.record_length - head;
    std::byte *place = sink.body_place(c.peer, {start + frame_prefix, head}, body);
    if (place == nullptr) return false;
    std::memcpy(c.head.data(), start + frame_prefix, head);
    const std::size_t here = have - frame_prefix - head;  // less than body: the frame is partial
    std::memcpy(place, start + frame_prefix + head, here);
    counts_.body_bytes_moved += here;
    c.place = place;
    c.place_need = body;
    c.place_got = here;
    return true;
  }

  // Reads more of a placed body, and delivers the record once it is whole.
  // Reads of at most read_chunk: over loopback, one recv into a large cold
  // buffer holds the socket long enough to stall the sender (4 MiB
  // ping-pong 1265 -> 720 us with 64 KiB reads; bench/README.md).
  int body_ready(int index, record_sink *sink) {
    connection &c = conn(index);
    const ssize_t n =
        ::recv(c.fd, c.place + c.place_got, std::min(c.place_need - c.place_got, read_chunk), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n <= 0) {
      ended(index, n == 0 ? 0 : errno);
      return 1;
    }
    c.place_got += static_cast<std::size_t>(n);
    counts_.body_bytes_placed += static_cast<std::size_t>(n);
    if (c.place_got < c.place_need) return 1;
    const std::byte *body = c.place;
    c.place = nullptr;
    c.head_first = true;
    if (sink != nullptr) (void)deliver(index, *sink, c.head, {body, c.place_need});
    return 1;
  }

  // Copies what sendmsg did not take of `iov` (its first `written` bytes went).
  static void keep_unwritten(connection &c, const iovec *iov, std::size_t count,
                             std::size_t written) {
    std::size_t rest = 0;
    for (std::size_t i = 0; i < count; ++i) rest += iov[i].iov_len;
    c.pending.resize(rest - written);  // within the capacity reserved by open()
    c.pending_done = 0;
    std::size_t at = 0;
    std::size_t skip = written;
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t len = iov[i].iov_len;
      if (skip >= len) {
        skip -= len;
        continue;
      }
      std::memcpy(c.pending.data() + at, static_cast<const std::byte *>(iov[i].iov_base) + skip,
                  len - skip);
      at += len - skip;
      skip = 0;
    }
  }

  // Writes more of the pending frame. True when it is all out.
  bool flush(int index) {
    connection &c = conn(index);
    while (c.has_pending()) {
      const ssize_t n = ::send(c.fd, c.pending.data() + c.pending_done,
                               c.pending.size() - c.pending_done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
        lose(index, "writing to it failed: " + errno_text(errno));
        return false;
      }
      c.pending_done += static_cast<std::size_t>(n);
    }
    c.pending.clear();
    c.pending_done = 0;
    watch(c, index, events_for(c));
    return true;
  }

  // ---- Losing peers -----------------------------------------------------------

  // Connection `index` broke while it was in use: its peer is lost.
  void lose(int index, const std::string &why) {
    const int peer = conn(index).peer;
    release(index);
    if (!finalizing_) lose_peer(peer, why);
  }

  // Recorded now, told to the device by the next poll.
  void lose_peer(int peer, std::string why) {
    peer_link &p = peers_[static_cast<std::size_t>(peer)];
    if (p.lost) return;
    p.lost = true;
    p.lost_why = std::move(why);
    ++unreported_;
  }

  void report_lost(record_sink &sink) {
    for (std::size_t peer = 0; peer < peers_.size(); ++peer) {
      peer_link &p = peers_[peer];
      if (!p.lost || p.reported) continue;
      p.reported = true;
      --unreported_;
      sink.peer_lost(static_cast<int>(peer), p.lost_why.c_str());
    }
  }

  void check_deadlines() {
    const auto now = clock_type::now();
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      connection &c = conn(static_cast<int>(i));
      if (now < c.deadline) continue;
      const std::string ms = std::to_string(conf_.connect_timeout_ms) + " ms";
      if (c.st == connection::state::dialing) {
        dial_failed(static_cast<int>(i), "timed out after " + ms);
      } else if (c.st == connection::state::awaiting_hello) {
        drop(static_cast<int>(i), "sent no hello within " + ms);
      }
    }
  }

  // ---- Odds and ends ----------------------------------------------------------

  std::size_t open_without_goodbye() const {
    std::size_t n = 0;
    for (const auto &c : conns_) n += c->st == connection::state::open && !c->goodbye ? 1 : 0;
    return n;
  }

  void log(const std::string &what) const {
    const std::string line = "iris: rank " + std::to_string(rank_) + ": tcp: " + what + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  }

  void close_all() {
    for (auto &c : conns_) {
      if (c->fd >= 0) ::close(c->fd);
      c->fd = -1;
      c->st = connection::state::free;
    }
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    listen_fd_ = epoll_fd_ = -1;
  }

  pmi::client *pmi_ = nullptr;
  config conf_;
  int rank_ = 0;
  int size_ = 1;
  std::uint64_t job_ = 0;
  card mine_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  std::vector<peer_link> peers_;                    // indexed by rank
  std::vector<std::unique_ptr<connection>> conns_;  // slots, reused; the epoll tag is the index
  int waiting_ = 0;                                 // dials and hellos with a deadline
  std::size_t unproven_ = 0;                        // accepted, hello not yet checked
  int unreported_ = 0;                              // lost peers not yet told to the device
  int solo_ = -1;       // the only connection, read without epoll (solo_update)
  unsigned polls_ = 0;  // polls since start, for epoll_every
  bool finalizing_ = false;
  struct {
    std::size_t body_bytes_placed = 0;  // read by recv straight into a place
    std::size_t body_bytes_moved = 0;   // read into `in` first, then copied to their place
    std::size_t partial_writes = 0;     // sends the kernel took only part of
    std::size_t bytes_kept = 0;         // ... and what was copied into `pending`
  } counts_;
};

}  // namespace

std::unique_ptr<netmod> create() {
  return std::make_unique<tcp_netmod>();
}

}  // namespace iris::netmod::tcp
