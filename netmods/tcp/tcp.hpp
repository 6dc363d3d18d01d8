// The TCP netmod: non-blocking sockets and epoll, one connection per ordered
// pair of ranks made on first use (wire.hpp has the protocol).
#pragma once

#include <memory>

#include "netmods/netmod.hpp"

namespace iris::netmod::tcp {

std::unique_ptr<netmod> create();

}  // namespace iris::netmod::tcp
