// MPI bindings for attribute caching: keyvals and the attributes of
// communicators, datatypes and windows (device/attr.hpp keeps them), the MPI-1
// names, the predefined callbacks and the predefined attributes.
#include "device/api/comm/attr.hpp"
#include <algorithm>
#include <cstdlib>

#include "device/api/check.hpp"
#include "device/api/rma/rma.hpp"
#include "device/communicators/attr.hpp"

using namespace iris;
using device::attr_kind;
using device::keyval_check;

namespace {

const char *kind_name(attr_kind kind) {
  switch (kind) {
    case attr_kind::comm:
      return "communicator";
    case attr_kind::type:
      return "datatype";
    case attr_kind::win:
      return "window";
  }
  return "?";
}

// Checks that `keyval` is a live keyval of `kind`; with `settable`, a
// predefined one (MPI_TAG_UB ...) is an error too. With `freed_ok`, so is
// a freed one that attributes still use (to get or delete those).
int check_keyval(const char *call, const device::communicator *c, attr_kind kind, int keyval,
                 bool settable, bool freed_ok = false) {
  switch (device::keyval_lookup(kind, keyval)) {
    case keyval_check::ok:
      return MPI_SUCCESS;
    case keyval_check::freed_in_use:
      if (freed_ok) return MPI_SUCCESS;
      break;
    case keyval_check::predefined:
      if (!settable) return MPI_SUCCESS;
      return device::error_raise(c, call, MPI_ERR_KEYVAL,
                                 "keyval 0x%x is predefined: it cannot be set, deleted or freed",
                                 static_cast<unsigned>(keyval));
    case keyval_check::wrong_kind:
      return device::error_raise(c, call, MPI_ERR_KEYVAL, "keyval 0x%x is not a %s keyval",
                                 static_cast<unsigned>(keyval), kind_name(kind));
    case keyval_check::invalid:
      break;
  }
  return device::error_raise(c, call, MPI_ERR_KEYVAL, "invalid keyval 0x%x",
                             static_cast<unsigned>(keyval));
}

// What a user's callback returned, reported as the call's error.
int callback_failed(const char *call, const device::communicator *c, const char *which, int code) {
  return device::error_raise(c, call, code, "the attribute %s callback returned error %d", which,
                             code);
}

int keyval_create(const char *call, attr_kind kind, device::attr_copy_fn *copy,
                  device::attr_delete_fn *del, int *keyval, void *extra) {
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, keyval, "keyval")) return err;
  *keyval = device::keyval_create(kind, copy, del, extra);
  return MPI_SUCCESS;
}

int keyval_free(const char *call, attr_kind kind, int *keyval) {
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, keyval, "keyval")) return err;
  // A second free through a copy of the handle, while attributes still use
  // the keyval, changes nothing (MPICH accepts it too): it is already marked.
  if (device::keyval_lookup(kind, *keyval) != keyval_check::freed_in_use) {
    if (int err = check_keyval(call, nullptr, kind, *keyval, true)) return err;
    device::keyval_free(*keyval);
  }
  *keyval = MPI_KEYVAL_INVALID;
  return MPI_SUCCESS;
}

// The predefined attributes' values: get_attr hands out pointers to them.
struct predefined_values {
  int tag_ub = api::tag_upper_bound;
  int host = MPI_PROC_NULL;
  int io = MPI_ANY_SOURCE;
  int wtime_is_global = 0;
  int universe_size = 1;
  int last_used_code = MPI_ERR_LASTCODE;
  int appnum = 0;
};

// Points `*out` at the value of predefined attribute `keyval`; false when
// it is absent (MPI_APPNUM when the launcher started one program: mpiexec
// sets IRIS_APPNUM only for `-n N a : -n M b` and spawn_multiple).
bool predefined_get(int keyval, void **out) {
  static predefined_values values;
  // IRIS_UNIVERSE_SIZE: how many processes the program may count on with
  // the ones it spawns (never below the world's size).
  values.universe_size =
      std::max(device::rt->size, static_cast<int>(device::rt->transport_config.net.universe_size));
  values.last_used_code = device::error_last_used();
  int *value = nullptr;
  switch (keyval) {
    case MPI_TAG_UB:
      value = &values.tag_ub;
      break;
    case MPI_HOST:
      value = &values.host;
      break;
    case MPI_IO:
      value = &values.io;
      break;
    case MPI_WTIME_IS_GLOBAL:
      value = &values.wtime_is_global;
      break;
    case MPI_UNIVERSE_SIZE:
      value = &values.universe_size;
      break;
    case MPI_LASTUSEDCODE:
      value = &values.last_used_code;
      break;
    case MPI_APPNUM: {
      const char *given = std::getenv("IRIS_APPNUM");
      if (given == nullptr || given[0] == '\0') return false;
      values.appnum = std::atoi(given);
      value = &values.appnum;
      break;
    }
    default:
      return false;
  }
  *out = value;
  return true;
}

int check_type(const char *call, MPI_Datatype type) {
  if (int err = api::check_initialized(call)) return err;
  if (device::dtype_lookup(type) != nullptr) return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                             static_cast<unsigned>(type));
}

// The object an attribute call names: a communicator (whose handler then
// reports errors), a datatype or a window.
int check_object(const char *call, attr_kind kind, int obj, device::communicator *&c) {
  if (kind == attr_kind::comm) return api::check_comm(call, obj, c);
  c = nullptr;
  if (kind == attr_kind::win) {
    api::rma::window *w = nullptr;
    return api::rma::check_window(call, obj, w);
  }
  return check_type(call, obj);
}

int set_attr(const char *call, attr_kind kind, int obj, int keyval, void *value) {
  device::communicator *c = nullptr;
  if (int err = check_object(call, kind, obj, c)) return err;
  if (int err = check_keyval(call, c, kind, keyval, true)) return err;
  const device::attr_result r = device::attr_set(kind, obj, keyval, value);
  if (!r.ok()) return callback_failed(call, c, "delete", r.code);
  return MPI_SUCCESS;
}

int get_attr(const char *call, attr_kind kind, int obj, int keyval, void *value, int *flag) {
  device::communicator *c = nullptr;
  if (int err = check_object(call, kind, obj, c)) return err;
  void *unused = nullptr;
  const bool window_predefined =
      kind == attr_kind::win && api::rma::predefined_attr(*api::rma::lookup(obj), keyval, &unused);
  if (!window_predefined) {
    if (int err = check_keyval(call, c, kind, keyval, false, true)) return err;
  }
  if (int err = api::check_not_null(call, c, value, "attribute_val")) return err;
  if (int err = api::check_not_null(call, c, flag, "flag")) return err;
  // attribute_val is really a void **: the value is a pointer, stored there.
  void *found = nullptr;
  if (kind == attr_kind::win && api::rma::predefined_attr(*api::rma::lookup(obj), keyval, &found)) {
    *static_cast<void **>(value) = found;
    *flag = 1;
    return MPI_SUCCESS;
  }
  const bool present = device::keyval_lookup(kind, keyval) == keyval_check::predefined
                           ? predefined_get(keyval, &found)
                           : device::attr_get(kind, obj, keyval, found);
  if (present) *static_cast<void **>(value) = found;
  *flag = present ? 1 : 0;
  return MPI_SUCCESS;
}

int delete_attr(const char *call, attr_kind kind, int obj, int keyval) {
  device::communicator *c = nullptr;
  if (int err = check_object(call, kind, obj, c)) return err;
  if (int err = check_keyval(call, c, kind, keyval, true, true)) return err;
  // Deleting an attribute the object does not have is no error: the
  // standard names none for it.
  device::attr_result r;
  if (device::attr_delete(kind, obj, keyval, r) && !r.ok()) {
    return callback_failed(call, c, "delete", r.code);
  }
  return MPI_SUCCESS;
}

}  // namespace

namespace iris::api {

int attrs_copy(const char *call, const device::communicator *c, attr_kind kind, int from, int to) {
  const device::attr_result r = device::attrs_copy(kind, from, to);
  if (!r.ok()) return callback_failed(call, c, "copy", r.code);
  return MPI_SUCCESS;
}

int attrs_delete_all(const char *call, const device::communicator *c, attr_kind kind, int obj) {
  const device::attr_result r = device::attrs_delete_all(kind, obj);
  if (!r.ok()) return callback_failed(call, c, "delete", r.code);
  return MPI_SUCCESS;
}

}  // namespace iris::api

extern "C" {

int iris_attr_null_copy_fn(int, int, void *, void *, void *, int *flag) {
  *flag = 0;
  return MPI_SUCCESS;
}

int iris_attr_dup_fn(int, int, void *, void *attribute_val_in, void *attribute_val_out, int *flag) {
  *static_cast<void **>(attribute_val_out) = attribute_val_in;
  *flag = 1;
  return MPI_SUCCESS;
}

int iris_attr_null_delete_fn(int, int, void *, void *) {
  return MPI_SUCCESS;
}

int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy, MPI_Comm_delete_attr_function *del,
                           int *keyval, void *extra_state) {
  const device::api_guard guard;
  return keyval_create("MPI_Comm_create_keyval", attr_kind::comm, copy, del, keyval, extra_state);
}

int MPI_Comm_free_keyval(int *keyval) {
  const device::api_guard guard;
  return keyval_free("MPI_Comm_free_keyval", attr_kind::comm, keyval);
}

int MPI_Comm_set_attr(MPI_Comm comm, int keyval, void *attribute_val) {
  const device::api_guard guard;
  return set_attr("MPI_Comm_set_attr", attr_kind::comm, comm, keyval, attribute_val);
}

int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag) {
  const device::api_guard guard;
  return get_attr("MPI_Comm_get_attr", attr_kind::comm, comm, keyval, attribute_val, flag);
}

int MPI_Comm_delete_attr(MPI_Comm comm, int keyval) {
  const device::api_guard guard;
  return delete_attr("MPI_Comm_delete_attr", attr_kind::comm, comm, keyval);
}

int MPI_Type_create_keyval(MPI_Type_copy_attr_function *copy, MPI_Type_delete_attr_function *del,
                           int *keyval, void *extra_state) {
  const device::api_guard guard;
  return keyval_create("MPI_Type_create_keyval", attr_kind::type, copy, del, keyval, extra_state);
}

int MPI_Type_free_keyval(int *keyval) {
  const device::api_guard guard;
  return keyval_free("MPI_Type_free_keyval", attr_kind::type, keyval);
}

int MPI_Type_set_attr(MPI_Datatype type, int keyval, void *attribute_val) {
  const device::api_guard guard;
  return set_attr("MPI_Type_set_attr", attr_kind::type, type, keyval, attribute_val);
}

int MPI_Type_get_attr(MPI_Datatype type, int keyval, void *attribute_val, int *flag) {
  const device::api_guard guard;
  return get_attr("MPI_Type_get_attr", attr_kind::type, type, keyval, attribute_val, flag);
}

int MPI_Type_delete_attr(MPI_Datatype type, int keyval) {
  const device::api_guard guard;
  return delete_attr("MPI_Type_delete_attr", attr_kind::type, type, keyval);
}

int MPI_Win_create_keyval(MPI_Win_copy_attr_function *copy, MPI_Win_delete_attr_function *del,
                          int *keyval, void *extra_state) {
  const device::api_guard guard;
  return keyval_create("MPI_Win_create_keyval", attr_kind::win, copy, del, keyval, extra_state);
}

int MPI_Win_free_keyval(int *keyval) {
  const device::api_guard guard;
  return keyval_free("MPI_Win_free_keyval", attr_kind::win, keyval);
}

int MPI_Win_set_attr(MPI_Win win, int keyval, void *attribute_val) {
  const device::api_guard guard;
  return set_attr("MPI_Win_set_attr", attr_kind::win, win, keyval, attribute_val);
}

int MPI_Win_get_attr(MPI_Win win, int keyval, void *attribute_val, int *flag) {
  const device::api_guard guard;
  return get_attr("MPI_Win_get_attr", attr_kind::win, win, keyval, attribute_val, flag);
}

int MPI_Win_delete_attr(MPI_Win win, int keyval) {
  const device::api_guard guard;
  return delete_attr("MPI_Win_delete_attr", attr_kind::win, win, keyval);
}

int MPI_Keyval_create(MPI_Copy_function *copy, MPI_Delete_function *del, int *keyval,
                      void *extra_state) {
  const device::api_guard guard;
  return keyval_create("MPI_Keyval_create", attr_kind::comm, copy, del, keyval, extra_state);
}

int MPI_Keyval_free(int *keyval) {
  const device::api_guard guard;
  return keyval_free("MPI_Keyval_free", attr_kind::comm, keyval);
}

int MPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val) {
  const device::api_guard guard;
  return set_attr("MPI_Attr_put", attr_kind::comm, comm, keyval, attribute_val);
}

int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag) {
  const device::api_guard guard;
  return get_attr("MPI_Attr_get", attr_kind::comm, comm, keyval, attribute_val, flag);
}

int MPI_Attr_delete(MPI_Comm comm, int keyval) {
  const device::api_guard guard;
  return delete_attr("MPI_Attr_delete", attr_kind::comm, comm, keyval);
}

}  // extern "C"
