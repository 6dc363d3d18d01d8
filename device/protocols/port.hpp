// The packets of MPI_Comm_connect and MPI_Comm_accept: a connect's root
// and an accept's root, which may belong to different jobs, exchange their
// groups through these; nothing else is matched or queued for them. Each
// arriving step waits in the runtime's port inbox (runtime.hpp) until the
// call that wants it takes it (api/comm/dynamic.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "device/core/packet.hpp"
#include "device/core/vc.hpp"

namespace iris::device {

// Writes one step for `port` to `to`; false while its transport has no room
// (call again after a progress poll).
bool port_send(vc &to, port_step step, int port, std::span<const std::byte> table);

// The handler of port packets: the step joins the inbox.
const char *port_on_packet(vc &from, const packet_header &h, const std::byte *payload);

}  // namespace iris::device
