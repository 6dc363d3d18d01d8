// Dialling: this rank's connection to a peer, made on the first send to it.
// Connect (each address of the peer's card in turn, each within
// IRIS_TCP_CONNECT_TIMEOUT), send the hello, wait for the ack.
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <string>

#include "netmods/tcp/tcp_netmod.hpp"
#include "pmi/pmi.hpp"

namespace iris::netmod::tcp {

// The connection every record to `peer` will go on. False while there is
// none yet (a dial is started or under way).
bool tcp_netmod::choose_send_conn(int peer) {
  peer_link &p = peers_[static_cast<std::size_t>(peer)];
  if (losses_.lost(peer)) return false;
  if (p.accepted_conn >= 0 && conn(p.accepted_conn).st == connection::state::open) {
    set_send_conn(peer, p.accepted_conn);
    return true;
  }
  if (p.dial_conn < 0 && clock_type::now() >= p.crossed_until) dial_start(peer);
  return false;
}

// Open connection `index` carries every record to `peer` from now on, and
// is published for send_concurrent.
void tcp_netmod::set_send_conn(int peer, int index) {
  peer_link &p = peers_[static_cast<std::size_t>(peer)];
  p.send_conn = index;
  p.sending.set(&conn(index));
}

void tcp_netmod::dial_start(int peer) {
  peer_link &p = peers_[static_cast<std::size_t>(peer)];
  if (p.foreign) {  // its card came with peer_add, not from the process manager
    if (!p.card_known) {
      losses_.note(peer, "a process of another job whose card this rank does not have");
      return;
    }
    p.next_address = 0;
    dial_next(peer);
    return;
  }
  std::string text;
  try {
    text = pmi_->get(peer, card_key);
  } catch (const std::exception &e) {
    losses_.note(peer, std::string("no tcp business card: ") + e.what());
    return;
  }
  auto parsed = card_parse(text);
  if (!parsed) {
    losses_.note(peer, "its tcp business card is malformed: '" + text + "'");
    return;
  }
  p.peer_card = std::move(*parsed);
  p.next_address = 0;
  dial_next(peer);
}

// Tries the peer's addresses in turn, from next_address.
void tcp_netmod::dial_next(int peer) {
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
      losses_.note(peer, "cannot create a socket: " + errno_text(errno));
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
    c.deadline = clock_type::now() + std::chrono::milliseconds(settings_.connect_timeout_ms);
    ++waiting_;
    p.dial_conn = index;
    watch(c, index, EPOLLOUT);
    return;
  }
  losses_.note(peer, "cannot reach it over tcp: " + p.failures);
}

// This address did not work out: note why and try the next.
void tcp_netmod::dial_failed(int index, const std::string &why) {
  connection &c = conn(index);
  const int peer = c.peer;
  peer_link &p = peers_[static_cast<std::size_t>(peer)];
  p.failures += (p.failures.empty() ? "" : "; ") + c.where + " " + why;
  release(index);
  dial_next(peer);
}

int tcp_netmod::dial_connected(int index) {
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
  const peer_link &p = peers_[static_cast<std::size_t>(c.peer)];
  h.from = rank_;
  h.to = p.foreign ? p.remote_rank : c.peer;
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

int tcp_netmod::ack_ready(int index) {
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
    p.crossed_until = clock_type::now() + std::chrono::milliseconds(settings_.connect_timeout_ms);
    release(index);
    return 1;
  }
  open(c);
  p.dial_conn = -1;
  if (p.send_conn < 0) set_send_conn(c.peer, index);
  return 1;
}

}  // namespace iris::netmod::tcp
