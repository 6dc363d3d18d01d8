// MPI_Op_create, MPI_Op_free, MPI_Op_commutative.
#include "device/datatypes/op.hpp"
#include "device/api/check.hpp"

using namespace iris;

extern "C" {

int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op) {
  const device::api_guard guard;
  const char *call = "MPI_Op_create";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, reinterpret_cast<void *>(user_fn), "user_fn")) {
    return err;
  }
  if (int err = api::check_not_null(call, nullptr, op, "op")) return err;
  *op = device::op_create(user_fn, commute != 0);
  return MPI_SUCCESS;
}

int MPI_Op_free(MPI_Op *op) {
  const device::api_guard guard;
  const char *call = "MPI_Op_free";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, op, "op")) return err;
  if (!device::op_free(*op)) {
    if (device::op_valid(*op)) {
      return device::error_raise(nullptr, call, MPI_ERR_OP, "%s is predefined and cannot be freed",
                                 device::op_name(*op));
    }
    return device::error_raise(nullptr, call, MPI_ERR_OP, "invalid op handle 0x%x",
                               static_cast<unsigned>(*op));
  }
  *op = MPI_OP_NULL;
  return MPI_SUCCESS;
}

int MPI_Op_commutative(MPI_Op op, int *commute) {
  const device::api_guard guard;
  const char *call = "MPI_Op_commutative";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, commute, "commute")) return err;
  if (!device::op_valid(op)) {
    return device::error_raise(nullptr, call, MPI_ERR_OP, "invalid op handle 0x%x",
                               static_cast<unsigned>(op));
  }
  *commute = device::op_commutative(op) ? 1 : 0;
  return MPI_SUCCESS;
}

}  // extern "C"
