// The OFI netmod's settings: its tunables, declared once with default and
// help text (iris_info prints them with the device's), read when the netmod
// starts.
#include <stdexcept>

#include "netmods/ofi/ofi.hpp"
#include "netmods/ofi/ofi_netmod.hpp"

namespace iris::netmod::ofi {

std::span<const device::tunable> tunables() {
  static constexpr device::tunable table[] = {
      {"IRIS_OFI_PROVIDER", 0, 0, 0, "",
       "ofi: the libfabric provider to use (e.g. tcp;ofi_rxm, sockets, shm); empty takes the "
       "first that fits, after libfabric's own FI_PROVIDER filter"},
      {"IRIS_OFI_LIBRARY", 0, 0, 0, "",
       "ofi: the libfabric shared library to load when the ofi netmod starts (a file name or "
       "path); empty loads libfabric.so.1 from the loader's usual places"},
      {"IRIS_OFI_CONCURRENT_SENDS", 0, 0, 1, nullptr,
       "ofi: 1 lets threads of an MPI_THREAD_MULTIPLE job send through the endpoint at once, "
       "each libfabric call under the netmod's domain lock; 0 leaves every send under the call "
       "lock (senders that outran tcp;ofi_rxm's progress cost a 4-thread stream 40% here)"},
  };
  return table;
}

settings settings_load() {
  try {
    settings s;
    s.provider = device::tunable_text(tunables()[0]);
    s.library = device::tunable_text(tunables()[1]);
    s.concurrent_sends = device::tunable_value(tunables()[2]) != 0;
    return s;
  } catch (const std::runtime_error &e) {
    throw error(e.what());
  }
}

}  // namespace iris::netmod::ofi
