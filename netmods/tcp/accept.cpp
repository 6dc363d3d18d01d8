// Accepting: a peer's connection to this rank. It must send a hello that
// checks out (wire.hpp) within IRIS_TCP_CONNECT_TIMEOUT, or it is dropped
// with one line; at most max_unproven may owe their hello at once.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "netmods/tcp/tcp_netmod.hpp"

namespace iris::netmod::tcp {

int tcp_netmod::accept_all() {
  int accepted = 0;
  for (;;) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    const int fd =
        ::accept4(listen_fd_, reinterpret_cast<sockaddr *>(&a), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
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
    c.deadline = clock_type::now() + std::chrono::milliseconds(settings_.connect_timeout_ms);
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
void tcp_netmod::drop(int index, const std::string &why) {
  connection &c = conn(index);
  const std::string who =
      c.peer >= 0 ? "rank " + std::to_string(c.peer) + " (" + c.where + ")" : c.where;
  log("dropped the connection from " + who + ": " + why);
  if (c.st == connection::state::awaiting_hello) --unproven_;
  release(index);
}

int tcp_netmod::hello_ready(int index, record_sink *sink) {
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
  int from = h.from;
  if (h.job != job_ && conf_.dynamic_peers > 0) {
    std::string why;
    from = foreign_peer(h, sink, why);
    if (from < 0) {
      drop(index, why);
      return 1;
    }
  } else if (const char *why = hello_check(h, mine_.tok, job_, rank_, size_)) {
    drop(index, why);
    return 1;
  }
  peer_link &p = peers_[static_cast<std::size_t>(from)];
  if (p.accepted_conn >= 0) {
    drop(index, "a second connection from rank " + std::to_string(h.from));
    return 1;
  }
  // Both ranks dialled each other. One connection carries both ways (the
  // replies carry the ACKs): the lower rank's. The higher rank's dial is
  // refused here; at the higher rank, this rank's dial is accepted and
  // its own refused.
  const bool dialled_too = p.dial_conn >= 0 || (p.send_conn >= 0 && conn(p.send_conn).dialled);
  if (dialled_too && wins_crossing(from, h)) {
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
  c.peer = from;
  p.accepted_conn = index;
  open(c);
  return 1;
}

}  // namespace iris::netmod::tcp

namespace iris::netmod::tcp {

// A hello from another job: the peer it is (the device's, through the
// sink), or -1 with `why`.
int tcp_netmod::foreign_peer(const hello &h, record_sink *sink, std::string &why) {
  if (const char *refused = hello_check_foreign(h, mine_.tok, rank_)) {
    why = refused;
    return -1;
  }
  const int peer = sink != nullptr ? sink->peer_joining(h.job, h.from) : -1;
  if (peer < size_ || static_cast<std::size_t>(peer) >= peers_.size() ||
      !peers_[static_cast<std::size_t>(peer)].foreign) {
    why = "a process of another job this rank does not take (too many, or finalizing)";
    return -1;
  }
  return peer;
}

// The lower of the two (job hash, rank) pairs keeps its connection.
bool tcp_netmod::wins_crossing(int peer, const hello &h) const {
  if (!peers_[static_cast<std::size_t>(peer)].foreign) return rank_ < h.from;
  return job_ != h.job ? job_ < h.job : rank_ < h.from;
}

bool tcp_netmod::peer_add(int peer, std::uint64_t job, int rank, std::string_view card) {
  if (peer < size_ || static_cast<std::size_t>(peer) >= peers_.capacity()) return false;
  std::optional<struct card> parsed;
  if (!card.empty()) {
    parsed = card_parse(card);
    if (!parsed) return false;
  }
  while (peers_.size() <= static_cast<std::size_t>(peer)) peers_.emplace_back();
  losses_.grow(peers_.size());
  peer_link &p = peers_[static_cast<std::size_t>(peer)];
  p.foreign = true;
  p.job = job;
  p.remote_rank = rank;
  if (parsed) {
    p.peer_card = std::move(*parsed);
    p.card_known = true;
  }
  peers_published_.store(peers_.size(), std::memory_order_release);  // for poll_aside
  return true;
}

}  // namespace iris::netmod::tcp
