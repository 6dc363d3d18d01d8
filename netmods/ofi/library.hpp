// libfabric, opened with dlopen when the OFI netmod starts instead of linked
// into libiris. Loading libfabric loads its providers' libraries too (psm2,
// infinipath, verbs), and their constructors take ~0.2 s on this kind of
// host: linked, every rank of every job would pay that, TCP and shm ones too.
// The netmod calls libfabric's few exported functions through this table;
// the rest of its API is inline calls through the objects' own tables.
#pragma once

#include <rdma/fabric.h>

#include <string>

namespace iris::netmod::ofi {

struct library {
  decltype(&::fi_getinfo) getinfo = nullptr;
  decltype(&::fi_freeinfo) freeinfo = nullptr;
  decltype(&::fi_dupinfo) dupinfo = nullptr;
  decltype(&::fi_fabric) fabric = nullptr;
  decltype(&::fi_strerror) strerror = nullptr;
};

// The default file: libfabric's soname, as its development package links it.
inline constexpr const char *default_library = "libfabric.so.1";

// Opens `file` (empty: default_library) once per process and returns its
// table; later calls return the same table whatever they name. Throws
// netmod::error naming the file and the loader's reason when it cannot.
const library &load_library(const std::string &file);

}  // namespace iris::netmod::ofi
