// Where a rank can be reached: the addresses its card publishes, the
// routes of its host, and the listening socket (IRIS_TCP_IF,
// IRIS_TCP_PORT). Also the socket helpers the other files share.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>

#include "netmods/tcp/tcp_netmod.hpp"
#include "pmi/pmi.hpp"

namespace iris::netmod::tcp {

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

std::string tcp_netmod::joined(const std::vector<std::string> &addresses) {
  std::string text;
  for (const std::string &a : addresses) text += (text.empty() ? "" : ",") + a;
  return text;
}

tcp_netmod::reachable tcp_netmod::choose_addresses() const {
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
    if (!settings_.interface.empty()) {
      if (settings_.interface != i->ifa_name || !r.addresses.empty()) continue;
      r.addresses.emplace_back(ip);
      r.bind_to = a->sin_addr;
    } else if ((i->ifa_flags & IFF_LOOPBACK) != 0) {
      loopback.emplace_back(ip);
    } else if (r.addresses.size() < max_card_addresses) {
      r.addresses.emplace_back(ip);
    }
  }
  freeifaddrs(list);
  if (!settings_.interface.empty() && r.addresses.empty()) {
    throw error("tcp: IRIS_TCP_IF=" + settings_.interface +
                " is not an interface with an IPv4 address that is up (there are: " + seen + ")");
  }
  // Loopback last: it reaches only ranks on this host, and only when the
  // interfaces above do not.
  for (const std::string &ip : loopback) r.addresses.push_back(ip);
  if (r.addresses.empty()) r.addresses.emplace_back("127.0.0.1");
  return r;
}

void tcp_netmod::listen_on(const reachable &where) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw error("tcp: cannot create a socket: " + errno_text(errno));
  const int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (settings_.port_base != 0 && settings_.port_base + rank_ > 65535) {
    throw error("tcp: IRIS_TCP_PORT=" + std::to_string(settings_.port_base) + " puts rank " +
                std::to_string(rank_) + " past port 65535");
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = where.bind_to;
  a.sin_port =
      htons(static_cast<std::uint16_t>(settings_.port_base == 0 ? 0 : settings_.port_base + rank_));
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

// This host's main routing table. Where it cannot be read, every address
// counts as reached (as when tcp is the only netmod).
std::vector<route> tcp_netmod::host_routes() {
  std::ifstream file("/proc/net/route");
  std::ostringstream table;
  table << file.rdbuf();
  auto routes = routes_from_table(table.str());
  if (!routes) return {route{0, 0}};
  return std::move(*routes);
}

// A pair is reached when each rank's routes lead to an address on the
// other's card. Both ranks read the same two cards and routes, so both
// come to the same verdict, also where one side's routes would lead to
// the other and not back.
bool tcp_netmod::reaches(int peer, std::string &why) {
  std::optional<card> theirs;
  std::optional<std::vector<route>> their_routes;
  try {
    theirs = card_parse(pmi_->get(peer, card_key));
    their_routes = routes_parse(pmi_->get(peer, routes_key));
  } catch (const std::exception &e) {
    why = std::string("no tcp card: ") + e.what();
    return false;
  }
  if (!theirs || !their_routes) {
    why = "its tcp card or routes are malformed";
    return false;
  }
  // The lower rank's routes first, at both ranks: both say the same.
  const bool lower = rank_ < peer;
  const std::pair<int, int> ranks[2] = {{rank_, peer}, {peer, rank_}};
  const std::vector<route> *routes[2] = {&routes_, &*their_routes};
  const std::vector<std::string> *addresses[2] = {&theirs->addresses, &mine_.addresses};
  for (int k = 0; k < 2; ++k) {
    const int i = lower ? k : 1 - k;
    if (routes_reach(*routes[i], *addresses[i])) continue;
    why = "rank " + std::to_string(ranks[i].first) + "'s routes (" + routes_format(*routes[i]) +
          ") lead to none of rank " + std::to_string(ranks[i].second) + "'s tcp addresses (" +
          joined(*addresses[i]) + ")";
    return false;
  }
  return true;
}

}  // namespace iris::netmod::tcp
