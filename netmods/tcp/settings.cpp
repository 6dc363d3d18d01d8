// The TCP netmod's settings: its tunables, declared once with default and
// help text (iris_info prints them with the device's), read when the netmod
// starts.
#include <stdexcept>

#include "netmods/tcp/tcp.hpp"
#include "netmods/tcp/tcp_netmod.hpp"

namespace iris::netmod::tcp {

std::span<const device::tunable> tunables() {
  static constexpr device::tunable table[] = {
      {"IRIS_TCP_IF", 0, 0, 0, "",
       "tcp: the network interface (e.g. eth0) to listen on and publish; empty publishes every "
       "IPv4 interface that is up, loopback last, and a peer tries them in that order"},
      {"IRIS_TCP_PORT", 0, 0, 65535, nullptr,
       "tcp: 0 listens on any free port; N makes rank r listen on port N + r"},
      {"IRIS_TCP_CONNECT_TIMEOUT", 5000, 1, 3600 * 1000, nullptr,
       "tcp: milliseconds a connect to one address of a peer may take before the next is tried; "
       "when none answers the job ends with an error naming each address"},
  };
  return table;
}

settings settings_load() {
  try {
    settings s;
    s.interface = device::tunable_text(tunables()[0]);
    s.port_base = static_cast<int>(device::tunable_value(tunables()[1]));
    s.connect_timeout_ms = static_cast<int>(device::tunable_value(tunables()[2]));
    return s;
  } catch (const std::runtime_error &e) {
    throw error(e.what());
  }
}

}  // namespace iris::netmod::tcp
