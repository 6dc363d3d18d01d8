// The TCP netmod. One listener per rank; one outbound connection per peer
// this rank sends to, made on the first send; one inbound connection per
// peer that sends to this rank. Every socket is non-blocking and watched by
// one epoll set, polled (never waited on) by the progress engine.
//
// A send writes the frame with one sendmsg. What the kernel does not take
// at once is copied into the connection's pending buffer (reserved at
// connect time: no allocation on the data path) and written out by later
// polls; meanwhile further sends to that peer answer retry, so the device
// keeps them queued, in order.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "netmods/tcp/tcp.hpp"
#include "netmods/tcp/wire.hpp"
#include "pmi/pmi.hpp"

namespace iris::netmod::tcp {
namespace {

using clock_type = std::chrono::steady_clock;

constexpr const char *card_key = "iris.tcp";
constexpr std::size_t read_slack = 64 * 1024;  // read beyond one frame, to batch small ones
constexpr int max_card_addresses = 16;
constexpr auto goodbye_wait = std::chrono::seconds(10);

// epoll user data: what kind of socket, and which.
enum class slot_kind : std::uint32_t { listener = 0, inbound = 1, outbound = 2 };
std::uint64_t epoll_tag(slot_kind kind, std::size_t index) {
  return (static_cast<std::uint64_t>(kind) << 32) | static_cast<std::uint32_t>(index);
}

std::string errno_text(int err) {
  return std::strerror(err);
}

std::string address_text(const sockaddr_in &a) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

struct outbound {
  enum class state : std::uint8_t { idle, connecting, awaiting_ack, open, lost };
  state st = state::idle;
  int fd = -1;
  card peer_card;
  std::size_t next_address = 0;
  clock_type::time_point deadline{};
  std::byte ack[sizeof(ack_magic)] = {};
  std::size_t ack_got = 0;
  std::vector<std::byte> pending;  // the unwritten end of the last frame
  std::size_t pending_done = 0;
  std::string failures;  // what each address tried said
  std::string lost_why;  // set with st == lost, reported by the next poll
  bool reported = false;
  bool has_pending() const { return pending_done < pending.size(); }
};

struct inbound {
  int fd = -1;
  int peer = -1;  // -1 until its hello checks out
  std::string from;
  clock_type::time_point deadline{};  // for the hello
  std::vector<std::byte> buf;
  std::size_t filled = 0;
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
    out_.resize(static_cast<std::size_t>(size_));
    if (getrandom(mine_.tok.data(), mine_.tok.size(), 0) != static_cast<ssize_t>(token_size)) {
      throw error("tcp: cannot draw a random connection token: " + errno_text(errno));
    }
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) throw error("tcp: epoll_create1 failed: " + errno_text(errno));
    listen_on(choose_addresses());
    pmi.put(card_key, card_format(mine_));
  }

  send_status send(int peer, std::span<const iovec> parts) override {
    outbound &o = out_[static_cast<std::size_t>(peer)];
    if (o.st != outbound::state::open) {
      if (o.st == outbound::state::idle) connect_start(peer);
      return send_status::retry;
    }
    if (o.has_pending()) return send_status::retry;
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
    const ssize_t n = ::sendmsg(o.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return send_status::retry;
      mark_lost(peer, "writing to it failed: " + errno_text(errno));
      return send_status::retry;
    }
    const std::size_t written = static_cast<std::size_t>(n);
    if (written == frame_prefix + total) return send_status::done;
    keep_unwritten(o, iov, count, written);
    watch(o.fd, slot_kind::outbound, static_cast<std::size_t>(peer), EPOLLIN | EPOLLOUT, true);
    return send_status::done;
  }

  int poll(record_sink &sink) override {
    epoll_event events[32];
    const int n = epoll_wait(epoll_fd_, events, 32, 0);
    int handled = 0;
    for (int i = 0; i < n; ++i) {
      const auto kind = static_cast<slot_kind>(events[i].data.u64 >> 32);
      const auto index = static_cast<std::size_t>(events[i].data.u64 & 0xffffffffU);
      switch (kind) {
        case slot_kind::listener:
          handled += accept_all();
          break;
        case slot_kind::inbound:
          handled += inbound_ready(index, sink);
          break;
        case slot_kind::outbound:
          handled += outbound_ready(static_cast<int>(index), events[i].events);
          break;
      }
    }
    if (waiting_ > 0) check_deadlines();
    if (unreported_ > 0) report_lost(sink);
    return handled;
  }

  void finalize() override {
    finalizing_ = true;
    const auto deadline = clock_type::now() + goodbye_wait;
    // What the kernel has not taken yet goes first, then the goodbyes.
    for (std::size_t peer = 0; peer < out_.size(); ++peer) {
      outbound &o = out_[peer];
      while (o.st == outbound::state::open && o.has_pending() && clock_type::now() < deadline) {
        if (!flush(static_cast<int>(peer))) sched_pause();
      }
      if (o.st != outbound::state::open) continue;
      const std::uint32_t goodbye = 0;
      (void)::send(o.fd, &goodbye, sizeof(goodbye), MSG_NOSIGNAL);
      ::shutdown(o.fd, SHUT_WR);
    }
    // Then every peer that sent to this rank says goodbye too, or goes.
    while (open_inbound() > 0 && clock_type::now() < deadline) {
      epoll_event events[32];
      const int n = epoll_wait(epoll_fd_, events, 32, 10);
      for (int i = 0; i < n; ++i) {
        if (static_cast<slot_kind>(events[i].data.u64 >> 32) != slot_kind::inbound) continue;
        drain_to_goodbye(static_cast<std::size_t>(events[i].data.u64 & 0xffffffffU));
      }
    }
    close_all();
  }

  std::string describe() const override {
    std::string text = "tcp listening on port " + std::to_string(mine_.port) + ", card addresses ";
    for (std::size_t i = 0; i < mine_.addresses.size(); ++i) {
      text += (i != 0 ? "," : "") + mine_.addresses[i];
    }
    return text;
  }

 private:
  // ---- Setup --------------------------------------------------------------

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
        if (conf_.interface != i->ifa_name) continue;
        r.addresses.emplace_back(ip);
        r.bind_to = a->sin_addr;
        break;
      }
      if ((i->ifa_flags & IFF_LOOPBACK) != 0) {
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
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr = where.bind_to;
    a.sin_port =
        htons(static_cast<std::uint16_t>(conf_.port_base == 0 ? 0 : conf_.port_base + rank_));
    if (conf_.port_base != 0 && conf_.port_base + rank_ > 65535) {
      throw error("tcp: IRIS_TCP_PORT=" + std::to_string(conf_.port_base) + " puts rank " +
                  std::to_string(rank_) + " past port 65535");
    }
    if (::bind(listen_fd_, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0) {
      throw error("tcp: cannot listen on " + address_text(a) + ": " + errno_text(errno));
    }
    if (::listen(listen_fd_, 128) != 0) throw error("tcp: listen failed: " + errno_text(errno));
    socklen_t len = sizeof a;
    getsockname(listen_fd_, reinterpret_cast<sockaddr *>(&a), &len);
    mine_.port = ntohs(a.sin_port);
    mine_.addresses = where.addresses;
    watch(listen_fd_, slot_kind::listener, 0, EPOLLIN, false);
  }

  void watch(int fd, slot_kind kind, std::size_t index, std::uint32_t events, bool modify) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = epoll_tag(kind, index);
    epoll_ctl(epoll_fd_, modify ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
  }

  // ---- Outbound: connect, hello, ack --------------------------------------

  void connect_start(int peer) {
    outbound &o = out_[static_cast<std::size_t>(peer)];
    std::string text;
    try {
      text = pmi_->get(peer, card_key);
    } catch (const std::exception &e) {
      mark_lost(peer, std::string("no tcp business card: ") + e.what());
      return;
    }
    auto parsed = card_parse(text);
    if (!parsed) {
      mark_lost(peer, "its tcp business card is malformed: '" + text + "'");
      return;
    }
    o.peer_card = std::move(*parsed);
    o.next_address = 0;
    o.pending.reserve(conf_.max_record + frame_prefix);
    ++waiting_;
    connect_next(peer);
  }

  // Tries the peer's addresses in turn from next_address.
  void connect_next(int peer) {
    outbound &o = out_[static_cast<std::size_t>(peer)];
    while (o.next_address < o.peer_card.addresses.size()) {
      const std::string &ip = o.peer_card.addresses[o.next_address++];
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(o.peer_card.port);
      if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
        connect_failed(o, ip, "not an IPv4 address");
        continue;
      }
      o.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (o.fd < 0) {
        connect_failed(o, ip, errno_text(errno));
        continue;
      }
      if (::connect(o.fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0 &&
          errno != EINPROGRESS) {
        connect_failed(o, address_text(a), errno_text(errno));
        continue;
      }
      o.st = outbound::state::connecting;
      o.deadline = clock_type::now() + std::chrono::milliseconds(conf_.connect_timeout_ms);
      watch(o.fd, slot_kind::outbound, static_cast<std::size_t>(peer), EPOLLOUT, false);
      return;
    }
    --waiting_;
    mark_lost(peer, "cannot reach it over tcp: " + o.failures);
  }

  void connect_failed(outbound &o, const std::string &where, const std::string &why) {
    if (o.fd >= 0) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, o.fd, nullptr);
      ::close(o.fd);
      o.fd = -1;
    }
    o.failures += (o.failures.empty() ? "" : "; ") + where + " " + why;
  }

  std::string current_address(const outbound &o) const {
    return o.peer_card.addresses[o.next_address - 1] + ":" + std::to_string(o.peer_card.port);
  }

  int outbound_ready(int peer, std::uint32_t events) {
    outbound &o = out_[static_cast<std::size_t>(peer)];
    switch (o.st) {
      case outbound::state::connecting:
        return connect_completed(peer);
      case outbound::state::awaiting_ack:
        return ack_arrived(peer);
      case outbound::state::open:
        if ((events & EPOLLOUT) != 0) flush(peer);
        if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) closed_by_peer(peer);
        return 1;
      default:
        return 0;
    }
  }

  int connect_completed(int peer) {
    outbound &o = out_[static_cast<std::size_t>(peer)];
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(o.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      connect_failed(o, current_address(o), errno_text(err));
      connect_next(peer);
      return 1;
    }
    const int one = 1;
    setsockopt(o.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    hello h{};
    std::memcpy(h.magic, hello_magic, sizeof h.magic);
    h.acceptor = o.peer_card.tok;
    h.from = rank_;
    h.to = peer;
    h.job = job_;
    if (::send(o.fd, &h, sizeof h, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof h)) {
      connect_failed(o, current_address(o), "the hello could not be sent");
      connect_next(peer);
      return 1;
    }
    // The ack comes when the peer's progress engine runs, which may be late:
    // no deadline from here on, only a closed connection moves on.
    o.st = outbound::state::awaiting_ack;
    o.ack_got = 0;
    --waiting_;
    watch(o.fd, slot_kind::outbound, static_cast<std::size_t>(peer), EPOLLIN, true);
    return 1;
  }

  int ack_arrived(int peer) {
    outbound &o = out_[static_cast<std::size_t>(peer)];
    const ssize_t n = ::recv(o.fd, o.ack + o.ack_got, sizeof(o.ack) - o.ack_got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n <= 0 || std::memcmp(o.ack, ack_magic, o.ack_got + static_cast<std::size_t>(n)) != 0) {
      connect_failed(o, current_address(o),
                     n <= 0 ? "closed the connection before accepting it" : "answered garbage");
      ++waiting_;
      connect_next(peer);
      return 1;
    }
    o.ack_got += static_cast<std::size_t>(n);
    if (o.ack_got < sizeof(o.ack)) return 1;
    o.st = outbound::state::open;
    return 1;
  }

  // Copies what sendmsg did not take of `iov` (its first `written` bytes went).
  static void keep_unwritten(outbound &o, const iovec *iov, std::size_t count,
                             std::size_t written) {
    std::size_t rest = 0;
    for (std::size_t i = 0; i < count; ++i) rest += iov[i].iov_len;
    rest -= written;
    o.pending.resize(rest);  // within the capacity reserved at connect time
    o.pending_done = 0;
    std::size_t at = 0;
    std::size_t skip = written;
    for (std::size_t i = 0; i < count; ++i) {
      std::size_t len = iov[i].iov_len;
      const auto *base = static_cast<const std::byte *>(iov[i].iov_base);
      if (skip >= len) {
        skip -= len;
        continue;
      }
      std::memcpy(o.pending.data() + at, base + skip, len - skip);
      at += len - skip;
      skip = 0;
    }
  }

  // Writes more of the pending frame. True when it is all out.
  bool flush(int peer) {
    outbound &o = out_[static_cast<std::size_t>(peer)];
    while (o.has_pending()) {
      const ssize_t n = ::send(o.fd, o.pending.data() + o.pending_done,
                               o.pending.size() - o.pending_done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
        mark_lost(peer, "writing to it failed: " + errno_text(errno));
        return false;
      }
      o.pending_done += static_cast<std::size_t>(n);
    }
    o.pending.clear();
    o.pending_done = 0;
    watch(o.fd, slot_kind::outbound, static_cast<std::size_t>(peer), EPOLLIN, true);
    return true;
  }

  // The peer never writes on this connection: readable means it closed.
  void closed_by_peer(int peer) {
    outbound &o = out_[static_cast<std::size_t>(peer)];
    char byte = 0;
    const ssize_t n = ::recv(o.fd, &byte, 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (finalizing_) return;
    mark_lost(peer, n == 0 ? "it closed its connection without a goodbye (it died?)"
                           : "its connection failed: " + errno_text(errno));
  }

  void mark_lost(int peer, std::string why) {
    outbound &o = out_[static_cast<std::size_t>(peer)];
    if (o.st == outbound::state::lost) return;
    if (o.fd >= 0) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, o.fd, nullptr);
      ::close(o.fd);
      o.fd = -1;
    }
    o.st = outbound::state::lost;
    o.lost_why = std::move(why);
    ++unreported_;
  }

  void report_lost(record_sink &sink) {
    for (std::size_t peer = 0; peer < out_.size(); ++peer) {
      outbound &o = out_[peer];
      if (o.st != outbound::state::lost || o.reported) continue;
      o.reported = true;
      --unreported_;
      sink.peer_lost(static_cast<int>(peer), o.lost_why.c_str());
    }
  }

  void check_deadlines() {
    const auto now = clock_type::now();
    for (std::size_t peer = 0; peer < out_.size(); ++peer) {
      outbound &o = out_[peer];
      if (o.st != outbound::state::connecting || now < o.deadline) continue;
      connect_failed(o, current_address(o),
                     "timed out after " + std::to_string(conf_.connect_timeout_ms) + " ms");
      connect_next(static_cast<int>(peer));
    }
    for (std::size_t i = 0; i < in_.size(); ++i) {
      inbound &c = in_[i];
      if (c.fd >= 0 && c.peer < 0 && now >= c.deadline) {
        drop(i, "sent no hello within " + std::to_string(conf_.connect_timeout_ms) + " ms");
      }
    }
  }

  // ---- Inbound: accept, hello, frames -------------------------------------

  int accept_all() {
    int accepted = 0;
    for (;;) {
      sockaddr_in a{};
      socklen_t len = sizeof a;
      const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr *>(&a), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return accepted;
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::size_t slot = 0;
      while (slot < in_.size() && in_[slot].fd >= 0) ++slot;
      if (slot == in_.size()) in_.emplace_back();
      inbound &c = in_[slot];
      c.fd = fd;
      c.peer = -1;
      c.from = address_text(a);
      c.deadline = clock_type::now() + std::chrono::milliseconds(conf_.connect_timeout_ms);
      c.buf.resize(sizeof(hello));
      c.filled = 0;
      ++waiting_;
      watch(fd, slot_kind::inbound, slot, EPOLLIN, false);
      ++accepted;
    }
  }

  void drop(std::size_t slot, const std::string &why) {
    inbound &c = in_[slot];
    std::string who = c.peer >= 0 ? "rank " + std::to_string(c.peer) + " (" + c.from + ")" : c.from;
    log("dropped the connection from " + who + ": " + why);
    release(slot);
  }

  void release(std::size_t slot) {
    inbound &c = in_[slot];
    if (c.peer < 0) --waiting_;
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    c.fd = -1;
    c.peer = -1;
    c.filled = 0;
  }

  int hello_ready(std::size_t slot) {
    inbound &c = in_[slot];
    const ssize_t n = ::recv(c.fd, c.buf.data() + c.filled, sizeof(hello) - c.filled, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n <= 0) {
      drop(slot, c.filled == 0 ? "closed without a hello" : "closed in the middle of its hello");
      return 1;
    }
    c.filled += static_cast<std::size_t>(n);
    if (c.filled < sizeof(hello)) return 1;
    hello h;
    std::memcpy(&h, c.buf.data(), sizeof h);
    if (const char *why = hello_check(h, mine_.tok, job_, rank_, size_)) {
      drop(slot, why);
      return 1;
    }
    for (const inbound &other : in_) {
      if (other.fd >= 0 && other.peer == h.from) {
        drop(slot, "a second connection from rank " + std::to_string(h.from));
        return 1;
      }
    }
    if (::send(c.fd, ack_magic, sizeof ack_magic, MSG_NOSIGNAL) !=
        static_cast<ssize_t>(sizeof ack_magic)) {
      drop(slot, "the ack could not be sent");
      return 1;
    }
    --waiting_;
    c.peer = h.from;
    c.filled = 0;
    c.buf.resize(conf_.max_record + frame_prefix + read_slack);
    return 1;
  }

  int inbound_ready(std::size_t slot, record_sink &sink) {
    inbound &c = in_[slot];
    if (c.fd < 0) return 0;
    if (c.peer < 0) return hello_ready(slot);
    const ssize_t n = ::recv(c.fd, c.buf.data() + c.filled, c.buf.size() - c.filled, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n <= 0) {
      const int peer = c.peer;
      const std::string why = n == 0 ? "it closed its connection without a goodbye (it died?)"
                                     : "its connection failed: " + errno_text(errno);
      release(slot);
      sink.peer_lost(peer, why.c_str());
      return 1;
    }
    c.filled += static_cast<std::size_t>(n);
    int records = 0;
    std::size_t at = 0;
    for (;;) {
      const frame f = frame_parse(c.buf.data() + at, c.filled - at, conf_.max_record);
      if (f.what == frame::kind::partial) break;
      if (f.what == frame::kind::too_long) {
        drop(slot, "a frame of " + std::to_string(f.record_length) + " bytes (at most " +
                       std::to_string(conf_.max_record) + ")");
        return records + 1;
      }
      if (f.what == frame::kind::goodbye) {
        release(slot);  // the peer is done sending: a clean close
        return records + 1;
      }
      if (const char *why =
              sink.record_arrived(c.peer, c.buf.data() + at + frame_prefix, f.record_length)) {
        drop(slot, std::string("a bad packet: ") + why);
        return records + 1;
      }
      at += frame_prefix + f.record_length;
      ++records;
    }
    if (at > 0) {
      std::memmove(c.buf.data(), c.buf.data() + at, c.filled - at);
      c.filled -= at;
    }
    return records;
  }

  // At finalize: reads and drops whatever comes until the goodbye or EOF.
  void drain_to_goodbye(std::size_t slot) {
    inbound &c = in_[slot];
    if (c.fd < 0) return;
    if (c.peer < 0) {
      release(slot);
      return;
    }
    const ssize_t n = ::recv(c.fd, c.buf.data() + c.filled, c.buf.size() - c.filled, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
      release(slot);
      return;
    }
    c.filled += static_cast<std::size_t>(n);
    std::size_t at = 0;
    for (;;) {
      const frame f = frame_parse(c.buf.data() + at, c.filled - at, conf_.max_record);
      if (f.what == frame::kind::partial) break;
      if (f.what != frame::kind::record) {
        release(slot);
        return;
      }
      at += frame_prefix + f.record_length;
    }
    std::memmove(c.buf.data(), c.buf.data() + at, c.filled - at);
    c.filled -= at;
  }

  std::size_t open_inbound() const {
    std::size_t n = 0;
    for (const inbound &c : in_) n += c.fd >= 0 ? 1 : 0;
    return n;
  }

  // ---- Odds and ends ------------------------------------------------------

  void log(const std::string &what) const {
    const std::string line = "iris: rank " + std::to_string(rank_) + ": tcp: " + what + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  }

  static void sched_pause() { ::usleep(100); }

  void close_all() {
    for (outbound &o : out_) {
      if (o.fd >= 0) ::close(o.fd);
      o.fd = -1;
    }
    for (inbound &c : in_) {
      if (c.fd >= 0) ::close(c.fd);
      c.fd = -1;
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
  std::vector<outbound> out_;  // indexed by peer rank
  std::vector<inbound> in_;    // slots, reused; fd < 0 when free
  int waiting_ = 0;            // connects and hellos with a deadline
  int unreported_ = 0;         // lost peers not yet told to the device
  bool finalizing_ = false;
};

}  // namespace

std::unique_ptr<netmod> create() {
  return std::make_unique<tcp_netmod>();
}

}  // namespace iris::netmod::tcp
