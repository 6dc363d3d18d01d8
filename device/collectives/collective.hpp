// Collectives the device itself needs, on each communicator's collective
// context so that they never match user traffic.
#pragma once

#include "device/core/comm.hpp"

namespace iris::device {

// Blocks until every rank of `comm` has called it (dissemination barrier on
// the collective context, round k on tag `tag_base` + k). Returns 0, or the
// error class a failure or a revocation ended it with
// (protocols/recovery.hpp).
int barrier(const communicator &comm, int tag_base = 0);

}  // namespace iris::device
