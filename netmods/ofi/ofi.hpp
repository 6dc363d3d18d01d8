// The OFI netmod: Iris records over libfabric (FI_EP_RDM, FI_MSG), with
// rendezvous data read by RMA where the provider has it.
#pragma once

#include <memory>

#include "netmods/netmod.hpp"

namespace iris::netmod::ofi {

std::unique_ptr<netmod> create();

}  // namespace iris::netmod::ofi
