// Collectives the device itself needs, on each communicator's collective
// context so that they never match user traffic.
#pragma once

#include "device/core/comm.hpp"

namespace iris::device {

// Blocks until every rank of `comm` has called it (dissemination barrier on
// the collective context).
void barrier(const communicator &comm);

}  // namespace iris::device
