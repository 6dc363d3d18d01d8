// The connection table: slots reused by index (the index is the epoll tag),
// the epoll set, the one connection read without epoll, the deadlines of
// connections being set up, and losing a peer whose connection broke.
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <string>

#include "netmods/tcp/tcp_netmod.hpp"

namespace iris::netmod::tcp {

int tcp_netmod::conn_new() {
  leave_solo();  // a connection being set up is watched through epoll
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    if (conns_[i]->st == connection::state::free) return static_cast<int>(i);
  }
  conns_.push_back(std::make_unique<connection>());
  conns_.back()->index = static_cast<int>(conns_.size() - 1);
  return conns_.back()->index;
}

void tcp_netmod::watch(connection &c, int index, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = static_cast<std::uint64_t>(index);
  epoll_ctl(epoll_fd_, c.watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c.fd, &ev);
  c.watched = true;
}

void tcp_netmod::unwatch(connection &c) {
  if (c.watched) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  c.watched = false;
}

// What an open connection waits for: data, and room for its pending bytes.
std::uint32_t tcp_netmod::events_for(const connection &c) {
  return (c.read_done ? 0U : std::uint32_t{EPOLLIN}) |
         (c.has_pending() ? std::uint32_t{EPOLLOUT} : 0U);
}

// Closes connection `index` and frees its slot.
void tcp_netmod::release(int index) {
  connection &c = conn(index);
  if (c.peer >= 0) {
    peer_link &p = peers_[static_cast<std::size_t>(c.peer)];
    if (p.send_conn == index) {
      // Unpublished under its lock first: a thread writing to it finishes,
      // and none starts after (send_concurrent).
      {
        const lock_if guard(c.out, conf_.concurrent_sends);
        p.sending.set(nullptr);
      }
      p.send_conn = -1;
    }
    if (p.reading.get() == &c) {
      // The same for the aside passes' reads (poll_aside), under the read
      // side's lock, which poll may hold already (read_hold).
      const lock_if guard(c.in_lock, conf_.concurrent_sends && !c.in_held);
      p.reading.set(nullptr);
    }
    if (p.dial_conn == index) p.dial_conn = -1;
    if (p.accepted_conn == index) p.accepted_conn = -1;
  }
  if (c.st == connection::state::dialing || c.st == connection::state::awaiting_hello) {
    --waiting_;
  }
  if (c.fd >= 0) {
    unwatch(c);
    ::close(c.fd);
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
  c.left = false;
  c.end_error = 0;
  c.pending.clear();
  c.pending_done = 0;
  solo_update();
}

// Buffers for a connection that now carries frames (not on the data path).
void tcp_netmod::open(connection &c) {
  c.st = connection::state::open;
  c.in.resize(conf_.max_record + frame_prefix + read_chunk);
  c.head.resize(conf_.record_head);
  c.filled = 0;
  c.pending.reserve(conf_.max_record + frame_prefix);
  if (conf_.concurrent_sends && c.peer >= 0) {
    published_connection &reading = peers_[static_cast<std::size_t>(c.peer)].reading;
    if (reading.get() == nullptr) reading.set(&c);  // a second one is poll's alone
  }
  solo_update();
}

// The one open connection, when there is exactly one and no dial or
// hello is under way; else -1. poll reads it directly and takes it out of
// the epoll set: over loopback every segment that reaches a watched socket
// wakes the epoll on the sending rank's CPU (sock_def_readable, 2% of a
// 4 KiB stream's sender in perf).
void tcp_netmod::solo_update() {
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
  solo_fd_.store(only >= 0 ? conn(only).fd : -1, std::memory_order_relaxed);
}

// Ends solo reading: the connection goes back into the epoll set.
void tcp_netmod::leave_solo() {
  if (solo_ < 0) return;
  connection &c = conn(solo_);
  if (c.st == connection::state::open) {
    const lock_if guard(c.out, conf_.concurrent_sends);
    if (!c.watched) watch(c, solo_, events_for(c));
  }
  solo_ = -1;
  solo_fd_.store(-1, std::memory_order_relaxed);
}

// The epoll set is readable while a watched socket has events (level-
// triggered, so nothing that came before the wait is missed); the solo
// connection is outside it and watched here directly.
bool tcp_netmod::wait(int timeout_ms) {
  pollfd fds[2] = {{epoll_fd_, POLLIN, 0}, {solo_fd_.load(std::memory_order_relaxed), POLLIN, 0}};
  const nfds_t n = fds[1].fd >= 0 ? 2 : 1;
  if (epoll_fd_ < 0) return false;
  ::poll(fds, n, timeout_ms);
  return true;
}

void tcp_netmod::check_deadlines() {
  const auto now = clock_type::now();
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    connection &c = conn(static_cast<int>(i));
    if (now < c.deadline) continue;
    const std::string ms = std::to_string(settings_.connect_timeout_ms) + " ms";
    if (c.st == connection::state::dialing) {
      dial_failed(static_cast<int>(i), "timed out after " + ms);
    } else if (c.st == connection::state::awaiting_hello) {
      drop(static_cast<int>(i), "sent no hello within " + ms);
    }
  }
}

// Connection `index` broke while it was in use: its peer is lost.
void tcp_netmod::lose(int index, const std::string &why) {
  const int peer = conn(index).peer;
  release(index);
  if (!finalizing_) losses_.note(peer, why);
}

std::size_t tcp_netmod::open_without_goodbye() const {
  std::size_t n = 0;
  for (const auto &c : conns_) n += c->st == connection::state::open && !c->goodbye ? 1 : 0;
  return n;
}

void tcp_netmod::close_all() {
  for (auto &c : conns_) {
    if (c->fd >= 0) ::close(c->fd);
    c->fd = -1;
    c->st = connection::state::free;
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  listen_fd_ = epoll_fd_ = -1;
}

}  // namespace iris::netmod::tcp
