// Attribute caching (MPI-4.1 chapter 7.7): keyvals and the attributes that
// communicators, datatypes and windows carry, with the user's copy and
// delete callbacks (windows are never duplicated: delete only).
//
// Lifecycle: keyval_create -> attr_set / attr_get / attr_delete on objects
// -> attrs_copy when an object is duplicated (Comm_dup, Type_dup) ->
// attrs_delete_all when it is freed (Comm_free, Type_free, and
// MPI_COMM_SELF's at the start of MPI_Finalize) -> attr_clear_all after
// MPI_Finalize. A freed keyval lives on while attributes still use it.
//
// Every handle is an int here (communicators, datatypes and keyvals alike),
// so one callback signature serves both kinds. Only the thread that calls
// MPI (one at a time, MPI_THREAD_SERIALIZED at most) touches the tables.
#pragma once

#include <cstdint>

namespace iris::device {

enum class attr_kind : std::uint8_t { comm, type, win };

// MPI_Comm_copy_attr_function / MPI_Type_copy_attr_function / MPI_Copy_function.
using attr_copy_fn = int(int oldobj, int keyval, void *extra, void *in, void *out, int *flag);
// MPI_Comm_delete_attr_function / MPI_Type_delete_attr_function / MPI_Delete_function.
using attr_delete_fn = int(int obj, int keyval, void *value, void *extra);

// Keyval handles are of kind keyval (base/handle.hpp); index 0 is MPI_KEYVAL_INVALID and
// 1..predefined_keyvals the predefined communicator attributes (MPI_TAG_UB
// ...), which attr_get answers itself and which cannot be set or freed.
inline constexpr int predefined_keyvals = 7;

// A new keyval of `kind`; a null callback stands for the null one.
int keyval_create(attr_kind kind, attr_copy_fn *copy, attr_delete_fn *del, void *extra);

// freed_in_use: freed by the user while attributes still use it, which the
// program deletes with (a copy of) the freed handle, as MPI-4.1 7.7.2 says.
enum class keyval_check : std::uint8_t { ok, invalid, wrong_kind, predefined, freed_in_use };
// Whether `keyval` is a live keyval of `kind` (predefined: a predefined one).
keyval_check keyval_lookup(attr_kind kind, int keyval);
// Marks a keyval freed (checked by keyval_lookup first).
void keyval_free(int keyval);

// What a user callback answered; `code` is its return value.
struct attr_result {
  int code = 0;  // MPI_SUCCESS or the callback's error
  bool ok() const { return code == 0; }
};

// Sets (or replaces, calling the delete callback of the old value first)
// the attribute `keyval` of object `obj`.
attr_result attr_set(attr_kind kind, int obj, int keyval, void *value);
// The attribute's value, or false when the object has none for `keyval`.
bool attr_get(attr_kind kind, int obj, int keyval, void *&value);
// Deletes the attribute (delete callback first); false when there is none.
bool attr_delete(attr_kind kind, int obj, int keyval, attr_result &result);

// Calls the copy callback of each attribute of `from` and attaches what it
// returns to `to`. On a callback's error, what was copied is deleted again.
attr_result attrs_copy(attr_kind kind, int from, int to);
// Deletes every attribute of `obj`, the last set first. Stops at the first
// callback that fails and leaves the rest attached.
attr_result attrs_delete_all(attr_kind kind, int obj);

// Forgets every keyval and attribute, calling nothing (after MPI_Finalize).
void attr_clear_all();

}  // namespace iris::device
