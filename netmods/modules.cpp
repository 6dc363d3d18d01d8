// Netmods loaded at run time (netmod.hpp, "Netmods loaded at run time"):
// finding `libiris-netmod-<name>.so`, opening it and checking its entry.
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "device/base/text.hpp"
#include "netmods/netmod.hpp"

#ifndef IRIS_NETMOD_INSTALL_DIR
#error "netmods/meson.build defines IRIS_NETMOD_INSTALL_DIR, IRIS_NETMOD_BUILD_DIR and ..._ROOT"
#endif

namespace iris::netmod {
namespace {

// The folder of the object that holds this code: libiris, or a program
// linked with Iris's static libraries (iris_info, the unit tests).
std::string own_folder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(&module_load), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  const std::string file = info.dli_fname;
  const std::size_t slash = file.rfind('/');
  return slash == std::string::npos ? std::string(".") : file.substr(0, slash);
}

// Where modules are looked for, in order: IRIS_NETMOD_PATH's folders; the
// build tree's netmods/ when this code runs from the build tree (an
// installed Iris never looks there); iris/ beside libiris, so that a staged
// or moved install finds its own; the configured <libdir>/iris.
std::vector<std::string> module_dirs() {
  std::vector<std::string> dirs;
  auto add = [&dirs](std::string dir) {
    if (!dir.empty() && std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) {
      dirs.push_back(std::move(dir));
    }
  };
  if (const char *path = std::getenv("IRIS_NETMOD_PATH"); path != nullptr) {
    for (const std::string_view dir : device::split(path, ':')) add(std::string(dir));
  }
  const std::string own = own_folder();
  const std::string build_root = IRIS_NETMOD_BUILD_ROOT;
  if (own.rfind(build_root + "/", 0) == 0) {
    add(IRIS_NETMOD_BUILD_DIR);
  } else if (!own.empty()) {
    add(own + "/iris");
  }
  add(IRIS_NETMOD_INSTALL_DIR);
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

// What looking for a module found: its entry, or nullptr and why not.
struct module_found {
  const module_entry *entry = nullptr;
  std::string why;
};

// Looks in module_dirs() and opens the first file of `name` found.
module_found find_module(std::string_view name) {
  module_found result;
  if (!plain_name(name)) {
    result.why = "a module name is 1 to 32 of a-z, 0-9, - and _";
    return result;
  }
  const std::string file = "libiris-netmod-" + std::string(name) + ".so";
  std::string looked;
  for (const std::string &dir : module_dirs()) {
    const std::string path = dir + "/" + file;
    if (is_file(path)) {
      result.entry = open_module(path, name, result.why);
      return result;
    }
    looked += (looked.empty() ? "" : ", ") + dir;
  }
  result.why = "no " + file + " in " + looked + " (IRIS_NETMOD_PATH adds folders)";
  return result;
}

}  // namespace

const module_entry *module_load(std::string_view name, std::string &why) {
  // Each name is looked up once per process, found or refused: a refused
  // module is not opened (and its constructors run) again.
  static std::mutex lock;
  static std::map<std::string, module_found, std::less<>> known;
  const std::lock_guard<std::mutex> hold(lock);
  auto found = known.find(name);
  if (found == known.end()) found = known.emplace(std::string(name), find_module(name)).first;
  if (found->second.entry == nullptr) why = found->second.why;
  return found->second.entry;
}

}  // namespace iris::netmod
