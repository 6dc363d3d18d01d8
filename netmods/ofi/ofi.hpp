// The OFI netmod: Iris records over libfabric (FI_EP_RDM, FI_MSG), with
// rendezvous data read by RMA where the provider has it.
#pragma once

#include <memory>
#include <span>

#include "device/base/tunables.hpp"

#include "netmods/netmod.hpp"

namespace iris::netmod::ofi {

std::unique_ptr<netmod> create();
// Its settings (IRIS_OFI_*), declared once in settings.cpp: iris_info prints
// them with the device's.
std::span<const device::tunable> tunables();

}  // namespace iris::netmod::ofi
