#include "netmods/ofi/library.hpp"

#include <dlfcn.h>

#include <mutex>

#include "netmods/netmod.hpp"

namespace iris::netmod::ofi {
namespace {

template <typename Function>
void find(void *handle, const std::string &file, const char *name, Function &out) {
  void *symbol = ::dlsym(handle, name);
  if (symbol == nullptr) {
    throw error("ofi: " + file + " has no " + name + " (is it libfabric 1.11 or newer?)");
  }
  out = reinterpret_cast<Function>(symbol);
}

}  // namespace

const library &load_library(const std::string &file) {
  static std::mutex lock;
  static library table;
  static void *handle = nullptr;
  const std::lock_guard<std::mutex> hold(lock);
  if (handle != nullptr) return table;
  const std::string name = file.empty() ? default_library : file;
  // RTLD_LOCAL: libfabric's symbols stay out of the program's namespace.
  void *opened = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (opened == nullptr) {
    const char *why = ::dlerror();
    throw error("ofi: cannot load " + name + " (" + (why != nullptr ? why : "unknown reason") +
                "); install libfabric (Debian: libfabric1) or point IRIS_OFI_LIBRARY at it");
  }
  library found;
  try {
    find(opened, name, "fi_getinfo", found.getinfo);
    find(opened, name, "fi_freeinfo", found.freeinfo);
    find(opened, name, "fi_dupinfo", found.dupinfo);
    find(opened, name, "fi_fabric", found.fabric);
    find(opened, name, "fi_strerror", found.strerror);
  } catch (...) {
    ::dlclose(opened);
    throw;
  }
  table = found;
  handle = opened;
  return table;
}

}  // namespace iris::netmod::ofi
