// Handle conversion between C and Fortran (every Iris handle is an int, so
// an MPI_Fint names the same object), status conversion, MPI_Alloc_mem and
// MPI_Free_mem, MPI_Pcontrol and MPI_Type_match_size.
#include <cstdlib>
#include <cstring>

#include "device/am/am.hpp"
#include "device/api/check.hpp"

using namespace iris;

static_assert(sizeof(MPI_Status) == MPI_F_STATUS_SIZE * sizeof(MPI_Fint),
              "MPI_F_STATUS_SIZE must cover MPI_Status");

extern "C" {

MPI_Fint MPI_Comm_c2f(MPI_Comm comm) {
  return comm;
}
MPI_Comm MPI_Comm_f2c(MPI_Fint comm) {
  return comm;
}
MPI_Fint MPI_Group_c2f(MPI_Group group) {
  return group;
}
MPI_Group MPI_Group_f2c(MPI_Fint group) {
  return group;
}
MPI_Fint MPI_Type_c2f(MPI_Datatype datatype) {
  return datatype;
}
MPI_Datatype MPI_Type_f2c(MPI_Fint datatype) {
  return datatype;
}
MPI_Fint MPI_Op_c2f(MPI_Op op) {
  return op;
}
MPI_Op MPI_Op_f2c(MPI_Fint op) {
  return op;
}
MPI_Fint MPI_Errhandler_c2f(MPI_Errhandler errhandler) {
  return errhandler;
}
MPI_Errhandler MPI_Errhandler_f2c(MPI_Fint errhandler) {
  return errhandler;
}
MPI_Fint MPI_Request_c2f(MPI_Request request) {
  return request;
}
MPI_Request MPI_Request_f2c(MPI_Fint request) {
  return request;
}
MPI_Fint MPI_Info_c2f(MPI_Info info) {
  return info;
}
MPI_Info MPI_Info_f2c(MPI_Fint info) {
  return info;
}
MPI_Fint MPI_Win_c2f(MPI_Win win) {
  return win;
}
MPI_Win MPI_Win_f2c(MPI_Fint win) {
  return win;
}
MPI_Fint MPI_File_c2f(MPI_File file) {
  return file;
}
MPI_File MPI_File_f2c(MPI_Fint file) {
  return file;
}
MPI_Fint MPI_Message_c2f(MPI_Message message) {
  return message;
}
MPI_Message MPI_Message_f2c(MPI_Fint message) {
  return message;
}
MPI_Fint MPI_Session_c2f(MPI_Session session) {
  return session;
}
MPI_Session MPI_Session_f2c(MPI_Fint session) {
  return session;
}

// A Fortran status is the C one's bytes as MPI_F_STATUS_SIZE integers; the
// MPI_F08_status is the C struct itself.
int MPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status) {
  const device::api_guard guard;
  const char *call = "MPI_Status_c2f";
  if (int err = api::check_not_null(call, nullptr, c_status, "c_status")) return err;
  if (int err = api::check_not_null(call, nullptr, f_status, "f_status")) return err;
  std::memcpy(f_status, c_status, sizeof(MPI_Status));
  return MPI_SUCCESS;
}

int MPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status) {
  const device::api_guard guard;
  const char *call = "MPI_Status_f2c";
  if (int err = api::check_not_null(call, nullptr, f_status, "f_status")) return err;
  if (int err = api::check_not_null(call, nullptr, c_status, "c_status")) return err;
  std::memcpy(c_status, f_status, sizeof(MPI_Status));
  return MPI_SUCCESS;
}

int MPI_Status_c2f08(const MPI_Status *c_status, MPI_F08_status *f08_status) {
  const device::api_guard guard;
  const char *call = "MPI_Status_c2f08";
  if (int err = api::check_not_null(call, nullptr, c_status, "c_status")) return err;
  if (int err = api::check_not_null(call, nullptr, f08_status, "f08_status")) return err;
  *f08_status = *c_status;
  return MPI_SUCCESS;
}

int MPI_Status_f082c(const MPI_F08_status *f08_status, MPI_Status *c_status) {
  const device::api_guard guard;
  const char *call = "MPI_Status_f082c";
  if (int err = api::check_not_null(call, nullptr, f08_status, "f08_status")) return err;
  if (int err = api::check_not_null(call, nullptr, c_status, "c_status")) return err;
  *c_status = *f08_status;
  return MPI_SUCCESS;
}

int MPI_Status_f2f08(const MPI_Fint *f_status, MPI_F08_status *f08_status) {
  const device::api_guard guard;
  return MPI_Status_f2c(f_status, f08_status);
}

int MPI_Status_f082f(const MPI_F08_status *f08_status, MPI_Fint *f_status) {
  const device::api_guard guard;
  return MPI_Status_c2f(f08_status, f_status);
}

// From 4 KiB on a node with other ranks, memory they map (device/am/
// memory.cpp: their puts and gets into it are plain copies); else plain
// memory. No hints are read.
int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr) {
  const device::api_guard guard;
  const char *call = "MPI_Alloc_mem";
  (void)info;
  if (int err = api::check_not_null(call, nullptr, baseptr, "baseptr")) return err;
  if (size < 0) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "negative size %lld",
                               static_cast<long long>(size));
  }
  void *p = device::am_alloc_mem(static_cast<std::size_t>(size));
  if (p == nullptr) p = std::malloc(size > 0 ? static_cast<std::size_t>(size) : 1);
  if (p == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_NO_MEM, "cannot allocate %lld bytes",
                               static_cast<long long>(size));
  }
  std::memcpy(baseptr, &p, sizeof(p));
  return MPI_SUCCESS;
}

int MPI_Free_mem(void *base) {
  const device::api_guard guard;
  if (!device::am_free_mem(base)) std::free(base);
  return MPI_SUCCESS;
}

// Profiling control: Iris has no profiling levels to switch.
int MPI_Pcontrol(const int level, ...) {
  const device::api_guard guard;
  (void)level;
  return MPI_SUCCESS;
}

// The Fortran types of each class by size (MPI-4.1 19.3.6); C codes get
// them too, since their layouts are those of C types.
int MPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_match_size";
  if (int err = api::check_not_null(call, nullptr, datatype, "datatype")) return err;
  MPI_Datatype found = MPI_DATATYPE_NULL;
  switch (typeclass) {
    case MPI_TYPECLASS_INTEGER:
      found = size == 1   ? MPI_INTEGER1
              : size == 2 ? MPI_INTEGER2
              : size == 4 ? MPI_INTEGER4
              : size == 8 ? MPI_INTEGER8
                          : MPI_DATATYPE_NULL;
      break;
    case MPI_TYPECLASS_REAL:
      found = size == 4    ? MPI_REAL4
              : size == 8  ? MPI_REAL8
              : size == 16 ? MPI_REAL16
                           : MPI_DATATYPE_NULL;
      break;
    case MPI_TYPECLASS_COMPLEX:
      found = size == 8    ? MPI_COMPLEX8
              : size == 16 ? MPI_COMPLEX16
              : size == 32 ? MPI_COMPLEX32
                           : MPI_DATATYPE_NULL;
      break;
    default:
      return device::error_raise(nullptr, call, MPI_ERR_ARG,
                                 "typeclass %d is not MPI_TYPECLASS_INTEGER, _REAL or _COMPLEX",
                                 typeclass);
  }
  if (found == MPI_DATATYPE_NULL) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "no type of class %d has %d bytes",
                               typeclass, size);
  }
  *datatype = found;
  return MPI_SUCCESS;
}

// The MPI-1 error handler names, removed in MPI-3, as MPICH keeps them.
int MPI_Errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler) {
  const device::api_guard guard;
  return MPI_Comm_create_errhandler(function, errhandler);
}

int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler) {
  const device::api_guard guard;
  return MPI_Comm_set_errhandler(comm, errhandler);
}

int MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler) {
  const device::api_guard guard;
  return MPI_Comm_get_errhandler(comm, errhandler);
}

}  // extern "C"
