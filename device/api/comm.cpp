// MPI bindings for communicators, collectives, datatypes and error handlers.
#include <cstring>

#include "device/api/check.hpp"

using namespace iris;
using iris::api::communicator;

extern "C" {

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Comm_rank", comm, c)) return err;
  if (int err = api::check_not_null("MPI_Comm_rank", c, rank, "rank")) return err;
  *rank = c->rank;
  return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
  communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Comm_size", comm, c)) return err;
  if (int err = api::check_not_null("MPI_Comm_size", c, size, "size")) return err;
  *size = c->size;
  return MPI_SUCCESS;
}

int MPI_Barrier(MPI_Comm comm) {
  communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Barrier", comm, c)) return err;
  device::barrier(*c);
  return MPI_SUCCESS;
}

int MPI_Type_size(MPI_Datatype datatype, int *size) {
  const char *call = "MPI_Type_size";
  if (int err = api::check_not_null(call, nullptr, size, "size")) return err;
  const int bytes = device::datatype_size(datatype);
  if (bytes == 0) {
    return device::error_raise(nullptr, call, MPI_ERR_TYPE, "invalid datatype handle 0x%x",
                               static_cast<unsigned>(datatype));
  }
  *size = bytes;
  return MPI_SUCCESS;
}

}  // extern "C"
