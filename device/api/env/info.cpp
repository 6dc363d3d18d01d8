// MPI bindings for info objects: ordered (key, value) lists of strings.
// Keys and values are shorter than MPI_MAX_INFO_KEY and MPI_MAX_INFO_VAL, so
// that a buffer of that many characters always holds one with its NUL.
// Handles are of kind info (base/handle.hpp); index 0 is MPI_INFO_NULL, 1 MPI_INFO_ENV
// (empty: Iris records nothing about how the program was started). As MPI-4
// allows, they work before MPI_Init and after MPI_Finalize; an error then
// ends the process with one line (no communicator holds a handler yet).
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device/api/env/info.hpp"

#include "device/api/check.hpp"
#include "device/base/handle.hpp"

using namespace iris;

namespace {

using api::info_entries;

constexpr std::size_t env_index = 1;

// Indexed by handle_index; a freed object is std::nullopt. Only one
// thread at a time calls in (MPI_THREAD_SERIALIZED at most).
std::vector<std::optional<info_entries>> &infos() {
  static std::vector<std::optional<info_entries>> table{std::nullopt, info_entries{}};
  return table;
}

int info_handle(std::size_t index) {
  return device::handle_make(device::handle_kind::info, index);
}

int check_info(const char *call, MPI_Info handle, info_entries *&out) {
  const std::size_t index = device::handle_index(handle);
  if (!device::handle_is(handle, device::handle_kind::info) || index >= infos().size() ||
      !infos()[index]) {
    return device::error_raise(nullptr, call, MPI_ERR_INFO, "invalid info handle 0x%x",
                               static_cast<unsigned>(handle));
  }
  out = &*infos()[index];
  return MPI_SUCCESS;
}

int check_key(const char *call, const char *key) {
  if (int err = api::check_not_null(call, nullptr, key, "key")) return err;
  const std::size_t n = std::strlen(key);
  if (n == 0 || n >= MPI_MAX_INFO_KEY) {
    return device::error_raise(nullptr, call, MPI_ERR_INFO_KEY,
                               "info key of %zu characters (1 .. %d allowed)", n,
                               MPI_MAX_INFO_KEY - 1);
  }
  return MPI_SUCCESS;
}

info_entries::iterator find_key(info_entries &entries, const char *key) {
  auto it = entries.begin();
  while (it != entries.end() && it->first != key) ++it;
  return it;
}

// Copies at most `room` characters of `text` and a NUL into `out`.
void copy_truncated(const std::string &text, char *out, std::size_t room) {
  const std::size_t n = std::min(text.size(), room);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace

namespace iris::api {

const info_entries *info_find(MPI_Info info) {
  static const info_entries none;
  if (info == MPI_INFO_NULL) return &none;
  const std::size_t index = device::handle_index(info);
  if (!device::handle_is(info, device::handle_kind::info) || index >= infos().size() ||
      !infos()[index]) {
    return nullptr;
  }
  return &*infos()[index];
}

int info_read(const char *call, const device::communicator *c, MPI_Info info, info_entries &out) {
  const info_entries *found = info_find(info);
  if (found == nullptr) {
    out.clear();
    return device::error_raise(c, call, MPI_ERR_INFO, "invalid info handle 0x%x",
                               static_cast<unsigned>(info));
  }
  out = *found;
  return MPI_SUCCESS;
}

MPI_Info info_make(info_entries entries) {
  infos().emplace_back(std::move(entries));
  return info_handle(infos().size() - 1);
}

}  // namespace iris::api

extern "C" {

int MPI_Info_create(MPI_Info *info) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Info_create", nullptr, info, "info")) return err;
  infos().emplace_back(info_entries{});
  *info = info_handle(infos().size() - 1);
  return MPI_SUCCESS;
}

int MPI_Info_set(MPI_Info info, const char *key, const char *value) {
  const device::api_guard guard;
  const char *call = "MPI_Info_set";
  info_entries *entries = nullptr;
  if (int err = check_info(call, info, entries)) return err;
  if (int err = check_key(call, key)) return err;
  if (int err = api::check_not_null(call, nullptr, value, "value")) return err;
  const std::size_t n = std::strlen(value);
  if (n == 0 || n >= MPI_MAX_INFO_VAL) {
    return device::error_raise(nullptr, call, MPI_ERR_INFO_VALUE,
                               "info value of %zu characters (1 .. %d allowed)", n,
                               MPI_MAX_INFO_VAL - 1);
  }
  auto it = find_key(*entries, key);
  if (it != entries->end()) {
    it->second = value;
  } else {
    entries->emplace_back(key, value);
  }
  return MPI_SUCCESS;
}

int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag) {
  const device::api_guard guard;
  const char *call = "MPI_Info_get";
  info_entries *entries = nullptr;
  if (int err = check_info(call, info, entries)) return err;
  if (int err = check_key(call, key)) return err;
  if (int err = api::check_not_null(call, nullptr, flag, "flag")) return err;
  if (valuelen < 0) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "negative valuelen %d", valuelen);
  }
  if (int err = api::check_not_null(call, nullptr, value, "value")) return err;
  auto it = find_key(*entries, key);
  *flag = it != entries->end() ? 1 : 0;
  // valuelen excludes the NUL: the caller's buffer holds valuelen + 1.
  if (it != entries->end()) copy_truncated(it->second, value, static_cast<std::size_t>(valuelen));
  return MPI_SUCCESS;
}

int MPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag) {
  const device::api_guard guard;
  const char *call = "MPI_Info_get_string";
  info_entries *entries = nullptr;
  if (int err = check_info(call, info, entries)) return err;
  if (int err = check_key(call, key)) return err;
  if (int err = api::check_not_null(call, nullptr, flag, "flag")) return err;
  if (int err = api::check_not_null(call, nullptr, buflen, "buflen")) return err;
  if (*buflen < 0) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "negative buflen %d", *buflen);
  }
  if (*buflen > 0) {
    if (int err = api::check_not_null(call, nullptr, value, "value")) return err;
  }
  auto it = find_key(*entries, key);
  *flag = it != entries->end() ? 1 : 0;
  if (it == entries->end()) return MPI_SUCCESS;
  // buflen counts the NUL, on the way in (room) and out (the value's size).
  if (*buflen > 0) copy_truncated(it->second, value, static_cast<std::size_t>(*buflen - 1));
  *buflen = static_cast<int>(it->second.size() + 1);
  return MPI_SUCCESS;
}

int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag) {
  const device::api_guard guard;
  const char *call = "MPI_Info_get_valuelen";
  info_entries *entries = nullptr;
  if (int err = check_info(call, info, entries)) return err;
  if (int err = check_key(call, key)) return err;
  if (int err = api::check_not_null(call, nullptr, flag, "flag")) return err;
  if (int err = api::check_not_null(call, nullptr, valuelen, "valuelen")) return err;
  auto it = find_key(*entries, key);
  *flag = it != entries->end() ? 1 : 0;
  if (it != entries->end()) *valuelen = static_cast<int>(it->second.size());
  return MPI_SUCCESS;
}

int MPI_Info_delete(MPI_Info info, const char *key) {
  const device::api_guard guard;
  const char *call = "MPI_Info_delete";
  info_entries *entries = nullptr;
  if (int err = check_info(call, info, entries)) return err;
  if (int err = check_key(call, key)) return err;
  auto it = find_key(*entries, key);
  if (it == entries->end()) {
    return device::error_raise(nullptr, call, MPI_ERR_INFO_NOKEY, "no key \"%s\"", key);
  }
  entries->erase(it);
  return MPI_SUCCESS;
}

int MPI_Info_get_nkeys(MPI_Info info, int *nkeys) {
  const device::api_guard guard;
  const char *call = "MPI_Info_get_nkeys";
  info_entries *entries = nullptr;
  if (int err = check_info(call, info, entries)) return err;
  if (int err = api::check_not_null(call, nullptr, nkeys, "nkeys")) return err;
  *nkeys = static_cast<int>(entries->size());
  return MPI_SUCCESS;
}

int MPI_Info_get_nthkey(MPI_Info info, int n, char *key) {
  const device::api_guard guard;
  const char *call = "MPI_Info_get_nthkey";
  info_entries *entries = nullptr;
  if (int err = check_info(call, info, entries)) return err;
  if (int err = api::check_not_null(call, nullptr, key, "key")) return err;
  if (n < 0 || n >= static_cast<int>(entries->size())) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "key number %d of %zu", n,
                               entries->size());
  }
  copy_truncated((*entries)[static_cast<std::size_t>(n)].first, key, MPI_MAX_INFO_KEY - 1);
  return MPI_SUCCESS;
}

int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo) {
  const device::api_guard guard;
  const char *call = "MPI_Info_dup";
  info_entries *entries = nullptr;
  if (int err = check_info(call, info, entries)) return err;
  if (int err = api::check_not_null(call, nullptr, newinfo, "newinfo")) return err;
  info_entries copy = *entries;  // before emplace_back moves the table
  infos().emplace_back(std::move(copy));
  *newinfo = info_handle(infos().size() - 1);
  return MPI_SUCCESS;
}

int MPI_Info_free(MPI_Info *info) {
  const device::api_guard guard;
  const char *call = "MPI_Info_free";
  if (int err = api::check_not_null(call, nullptr, info, "info")) return err;
  info_entries *entries = nullptr;
  if (int err = check_info(call, *info, entries)) return err;
  const std::size_t index = device::handle_index(*info);
  if (index == env_index) {
    return device::error_raise(nullptr, call, MPI_ERR_INFO, "MPI_INFO_ENV cannot be freed");
  }
  infos()[index].reset();
  *info = MPI_INFO_NULL;
  return MPI_SUCCESS;
}

}  // extern "C"
