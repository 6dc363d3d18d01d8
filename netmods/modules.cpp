// Netmods loaded at run time (netmod.hpp, "Netmods loaded at run time"):
// finding `libiris-netmod-<name>.so`, opening it and checking its entry.
#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "netmods/netmod.hpp"

#ifndef IRIS_NETMOD_INSTALL_DIR
#error "netmods/meson.build defines IRIS_NETMOD_INSTALL_DIR and IRIS_NETMOD_BUILD_DIR"
#endif

namespace iris::netmod {
namespace {

// Where modules are looked for, in order.
std::vector<std::string> module_dirs() {
  std::vector<std::string> dirs;
  if (const char *path = std::getenv("IRIS_NETMOD_PATH"); path != nullptr) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      if (colon != 0) dirs.emplace_back(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  dirs.emplace_back(IRIS_NETMOD_INSTALL_DIR);
  dirs.emplace_back(IRIS_NETMOD_BUILD_DIR);
  return dirs;
}

// A name that can only name a file in those folders.
bool plain_name(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

bool is_file(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Opens and checks the module at `path`; nullptr with `why` when refused.
const module_entry *open_module(const std::string &path, std::string_view name, std::string &why) {
  // RTLD_LOCAL: the module's own libraries stay out of the program's
  // namespace; it finds libiris's symbols, which the program loaded.
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char *reason = ::dlerror();
    why = path + " cannot be loaded (" + (reason != nullptr ? reason : "unknown reason") + ")";
    return nullptr;
  }
  const auto *entry = static_cast<const module_entry *>(::dlsym(handle, "iris_netmod_module"));
  if (entry == nullptr) {
    why = path + " has no iris_netmod_module: it is not a netmod module";
  } else if (entry->contract != contract_version) {
    why = path + " is a netmod of contract " + std::to_string(entry->contract) +
          ", and this Iris speaks contract " + std::to_string(contract_version) +
          ": rebuild it against this Iris's iris/netmod.h";
  } else if (entry->name == nullptr || name != entry->name || entry->create == nullptr ||
             entry->tunables == nullptr) {
    why = path + " does not describe a netmod called " + std::string(name) +
          " (its iris_netmod_module names " + (entry->name != nullptr ? entry->name : "nothing") +
          " or lacks a function)";
  } else {
    return entry;  // kept open for the process's life
  }
  ::dlclose(handle);
  return nullptr;
}

}  // namespace

const module_entry *module_load(std::string_view name, std::string &why) {
  static std::mutex lock;
  static std::map<std::string, const module_entry *, std::less<>> loaded;
  const std::lock_guard<std::mutex> hold(lock);
  if (auto found = loaded.find(name); found != loaded.end()) return found->second;
  if (!plain_name(name)) {
    why = "a module name is 1 to 32 of a-z, 0-9, - and _";
    return nullptr;
  }
  const std::string file = "libiris-netmod-" + std::string(name) + ".so";
  std::string looked;
  for (const std::string &dir : module_dirs()) {
    const std::string path = dir + "/" + file;
    if (!is_file(path)) {
      looked += (looked.empty() ? "" : ", ") + dir;
      continue;
    }
    const module_entry *entry = open_module(path, name, why);
    if (entry != nullptr) loaded.emplace(std::string(name), entry);
    return entry;
  }
  why = "no " + file + " in " + looked + " (IRIS_NETMOD_PATH adds folders)";
  return nullptr;
}

}  // namespace iris::netmod
