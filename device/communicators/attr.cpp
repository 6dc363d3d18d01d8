// Keyvals and attribute lists (attr.hpp).
#include "device/communicators/attr.hpp"
#include "device/base/handle.hpp"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace iris::device {

namespace {

struct keyval {
  attr_kind kind = attr_kind::comm;
  attr_copy_fn *copy = nullptr;
  attr_delete_fn *del = nullptr;
  void *extra = nullptr;
  int uses = 0;        // attributes attached with it
  bool freed = false;  // by the user; the entry stays while `uses` > 0
};

struct attribute {
  int keyval;
  void *value;
};

// An object's attributes in the order they were set (a replaced value
// counts as set again): MPI_Finalize deletes MPI_COMM_SELF's in reverse.
using attr_list = std::vector<attribute>;

struct tables {
  // Indexed by the keyval's handle_index: [0] MPI_KEYVAL_INVALID, then the
  // predefined ones, never looked up as user keyvals.
  std::vector<keyval> keyvals = std::vector<keyval>(predefined_keyvals + 1);
  std::unordered_map<std::uint64_t, attr_list> lists;
};

tables &state() {
  static tables t;
  return t;
}

std::uint64_t object_key(attr_kind kind, int obj) {
  return (static_cast<std::uint64_t>(kind) << 32) | static_cast<std::uint32_t>(obj);
}

std::size_t keyval_index(int handle) {
  return handle_index(handle);
}

keyval &keyval_of(int handle) {
  return state().keyvals[keyval_index(handle)];
}

void keyval_unuse(int handle) {
  --keyval_of(handle).uses;
}

attr_result call_delete(int obj, const attribute &a) {
  const keyval &k = keyval_of(a.keyval);
  if (k.del == nullptr) return {};
  return {k.del(obj, a.keyval, a.value, k.extra)};
}

attr_list *list_of(attr_kind kind, int obj) {
  auto it = state().lists.find(object_key(kind, obj));
  return it == state().lists.end() ? nullptr : &it->second;
}

}  // namespace

int keyval_create(attr_kind kind, attr_copy_fn *copy, attr_delete_fn *del, void *extra) {
  auto &keyvals = state().keyvals;
  keyvals.push_back({kind, copy, del, extra, 0, false});
  return handle_make(handle_kind::keyval, keyvals.size() - 1);
}

keyval_check keyval_lookup(attr_kind kind, int handle) {
  if (!handle_is(handle, handle_kind::keyval)) return keyval_check::invalid;
  const std::size_t index = keyval_index(handle);
  if (index == 0 || index >= state().keyvals.size()) return keyval_check::invalid;
  if (index <= predefined_keyvals) {
    return kind == attr_kind::comm ? keyval_check::predefined : keyval_check::wrong_kind;
  }
  const keyval &k = state().keyvals[index];
  if (k.freed && k.uses == 0) return keyval_check::invalid;
  if (k.kind != kind) return keyval_check::wrong_kind;
  return k.freed ? keyval_check::freed_in_use : keyval_check::ok;
}

void keyval_free(int handle) {
  keyval_of(handle).freed = true;
}

attr_result attr_set(attr_kind kind, int obj, int handle, void *value) {
  // unordered_map nodes stay put, so `list` survives what a callback does.
  attr_list &list = state().lists[object_key(kind, obj)];
  auto same = [&](const attribute &a) { return a.keyval == handle; };
  auto it = std::find_if(list.begin(), list.end(), same);
  if (it != list.end()) {
    const attr_result deleted = call_delete(obj, *it);
    if (!deleted.ok()) return deleted;                  // the old value stays, as it was
    it = std::find_if(list.begin(), list.end(), same);  // the callback may have changed the list
    if (it != list.end()) list.erase(it);
  } else {
    ++keyval_of(handle).uses;
  }
  list.push_back({handle, value});
  return {};
}

bool attr_get(attr_kind kind, int obj, int handle, void *&value) {
  const attr_list *list = list_of(kind, obj);
  if (list == nullptr) return false;
  for (const attribute &a : *list) {
    if (a.keyval == handle) {
      value = a.value;
      return true;
    }
  }
  return false;
}

bool attr_delete(attr_kind kind, int obj, int handle, attr_result &result) {
  attr_list *list = list_of(kind, obj);
  if (list == nullptr) return false;
  auto same = [&](const attribute &a) { return a.keyval == handle; };
  auto it = std::find_if(list->begin(), list->end(), same);
  if (it == list->end()) return false;
  result = call_delete(obj, *it);
  if (!result.ok()) return true;  // a failed delete callback leaves the attribute
  it = std::find_if(list->begin(), list->end(), same);
  if (it != list->end()) {
    list->erase(it);
    keyval_unuse(handle);
  }
  return true;
}

attr_result attrs_copy(attr_kind kind, int from, int to) {
  const attr_list *source = list_of(kind, from);
  if (source == nullptr) return {};
  const attr_list snapshot = *source;  // a callback may set attributes on `from`
  for (const attribute &a : snapshot) {
    const keyval &k = keyval_of(a.keyval);
    if (k.copy == nullptr) continue;
    void *out = nullptr;
    int flag = 0;
    const int code = k.copy(from, a.keyval, k.extra, a.value, &out, &flag);
    if (code != 0) {
      attrs_delete_all(kind, to);
      return {code};
    }
    if (flag != 0) {
      state().lists[object_key(kind, to)].push_back({a.keyval, out});
      ++keyval_of(a.keyval).uses;
    }
  }
  return {};
}

attr_result attrs_delete_all(attr_kind kind, int obj) {
  attr_list *list = list_of(kind, obj);
  while (list != nullptr && !list->empty()) {
    const attribute last = list->back();
    const attr_result r = call_delete(obj, last);
    if (!r.ok()) return r;
    // The callback may have changed the list (deleted or set others).
    list = list_of(kind, obj);
    if (list == nullptr) break;
    auto it = std::find_if(list->begin(), list->end(),
                           [&](const attribute &a) { return a.keyval == last.keyval; });
    if (it != list->end()) {
      list->erase(it);
      keyval_unuse(last.keyval);
    }
  }
  state().lists.erase(object_key(kind, obj));
  return {};
}

void attr_clear_all() {
  state() = tables{};
}

}  // namespace iris::device
