// The TCP netmod's entry points (tcp_netmod.hpp has the class and the map of
// its files): init, poll, finalize, and what it says about itself.
#include "netmods/tcp/tcp.hpp"

#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "netmods/tcp/tcp_netmod.hpp"
#include "pmi/pmi.hpp"

namespace iris::netmod::tcp {

void tcp_netmod::init(pmi::client &pmi, const config &conf) {
  join(pmi, conf);
  settings_ = settings_load();
  job_ = job_hash(pmi.job_id());
  peers_.reserve(static_cast<std::size_t>(size_) + conf.dynamic_peers);
  peers_.resize(static_cast<std::size_t>(size_));
  peers_published_.store(peers_.size(), std::memory_order_release);
  losses_.resize(static_cast<std::size_t>(size_));
  if (getrandom(mine_.tok.data(), mine_.tok.size(), 0) != static_cast<ssize_t>(token_size)) {
    throw error("tcp: cannot draw a random connection token: " + errno_text(errno));
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw error("tcp: epoll_create1 failed: " + errno_text(errno));
  listen_on(choose_addresses());
  pmi.put(card_key, card_format(mine_));
  routes_ = host_routes();
  pmi.put(routes_key, routes_format(routes_));
}

int tcp_netmod::poll(record_sink &sink) {
  if (!reading_locked_) return poll_reading(sink);
  polling_.store(true, std::memory_order_relaxed);
  const int handled = poll_reading(sink);
  polling_.store(false, std::memory_order_relaxed);
  return handled;
}

int tcp_netmod::poll_reading(record_sink &sink) {
  int handled = 0;
  if (conf_.concurrent_sends) {
    reading_locked_ = aside_.settle();
    if (left_.load(std::memory_order_relaxed) && left_.exchange(false, std::memory_order_acquire))
      handled += frames_left(sink);
  }
  // One open connection and nothing else under way (two ranks, or one
  // peer off the node): reading it directly saves the epoll_wait in front
  // of every message (its errors show in the recv). epoll still looks
  // every few polls, for a stranger at the listener.
  if (solo_ >= 0) {
    connection &c = conn(solo_);
    bool direct = false;
    if (c.st == connection::state::open) {
      const lock_if guard(c.out, conf_.concurrent_sends);
      direct = !c.has_pending() && !c.read_done;
      if (direct) unwatch(c);  // back in the set after a partial write; else nothing
    }
    if (direct) {
      {
        const read_hold hold(c, reading_locked_);
        handled += frames_ready(solo_, &sink);
      }
      if ((++polls_ % epoll_every) != 0) {
        if (losses_.unreported()) (void)losses_.report(sink);
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
  if (losses_.unreported()) (void)losses_.report(sink);
  return handled;
}

void tcp_netmod::finalize() {
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

std::string tcp_netmod::preview(const config &conf) {
  conf_ = conf;
  settings_ = settings_load();
  return "tcp: card addresses " + joined(choose_addresses().addresses) +
         (settings_.port_base == 0 ? ", any free port"
                                   : ", port " + std::to_string(settings_.port_base) + " + rank");
}

std::string tcp_netmod::describe() const {
  return "tcp listening on port " + std::to_string(mine_.port) + ", card addresses " +
         joined(mine_.addresses);
}

std::string tcp_netmod::statistics() const {
  return "tcp: long bodies read in place " + std::to_string(counts_.body_bytes_placed) +
         " B, moved from the read buffer " + std::to_string(counts_.body_bytes_moved) +
         " B; partial writes " + std::to_string(counts_.partial_writes) + " (" +
         std::to_string(counts_.bytes_kept) + " B kept)";
}

std::unique_ptr<netmod> create() {
  return std::make_unique<tcp_netmod>();
}

}  // namespace iris::netmod::tcp
