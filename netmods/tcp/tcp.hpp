// The TCP netmod: non-blocking sockets and epoll, one connection per ordered
// pair of ranks made on first use (wire.hpp has the protocol).
#pragma once

#include <memory>
#include <span>

#include "device/base/tunables.hpp"

#include "netmods/netmod.hpp"

namespace iris::netmod::tcp {

std::unique_ptr<netmod> create();
// Its settings (IRIS_TCP_*), declared once in settings.cpp: iris_info prints
// them with the device's.
std::span<const device::tunable> tunables();

}  // namespace iris::netmod::tcp
