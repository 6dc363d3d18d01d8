// The MPI-4 C functions of the families Iris does not implement yet:
// MPI-IO. Each one links, and reports
// MPI_ERR_UNSUPPORTED_OPERATION through the error handler of its
// communicator argument (MPI_COMM_WORLD's when it has none) with a line that
// names the call and the family. Output arguments are left untouched.
#include "device/api/check.hpp"

using namespace iris;

namespace {

enum family { mpi_io };

const char *family_name(family f) {
  switch (f) {
    case mpi_io:
      return "MPI-IO";
  }
  return "?";
}

int unsupported(const char *call, family f, MPI_Comm comm) {
  // A valid communicator argument chooses the handler; any other falls back
  // to MPI_COMM_WORLD's (or ends the process before MPI_Init).
  const device::communicator *c = device::rt != nullptr ? device::comm_lookup(comm) : nullptr;
  return device::error_raise(c, call, MPI_ERR_UNSUPPORTED_OPERATION,
                             "%s is not supported by Iris (%s)", call, family_name(f));
}

}  // namespace

extern "C" {

// Large-count MPI-IO calls, data representations
int MPI_File_get_type_extent_c(MPI_File, MPI_Datatype, MPI_Count *) {
  return unsupported("MPI_File_get_type_extent_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iread_all_c(MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iread_all_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iread_at_all_c(MPI_File, MPI_Offset, void *, MPI_Count, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iread_at_all_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iread_at_c(MPI_File, MPI_Offset, void *, MPI_Count, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iread_at_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iread_c(MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iread_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iread_shared_c(MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iread_shared_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iwrite_all_c(MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iwrite_all_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iwrite_at_all_c(MPI_File, MPI_Offset, const void *, MPI_Count, MPI_Datatype,
                             MPI_Request *) {
  return unsupported("MPI_File_iwrite_at_all_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iwrite_at_c(MPI_File, MPI_Offset, const void *, MPI_Count, MPI_Datatype,
                         MPI_Request *) {
  return unsupported("MPI_File_iwrite_at_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iwrite_c(MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iwrite_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iwrite_shared_c(MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iwrite_shared_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_all_begin_c(MPI_File, void *, MPI_Count, MPI_Datatype) {
  return unsupported("MPI_File_read_all_begin_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_all_c(MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read_all_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_at_all_begin_c(MPI_File, MPI_Offset, void *, MPI_Count, MPI_Datatype) {
  return unsupported("MPI_File_read_at_all_begin_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_at_all_c(MPI_File, MPI_Offset, void *, MPI_Count, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read_at_all_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_at_c(MPI_File, MPI_Offset, void *, MPI_Count, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read_at_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_c(MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_ordered_begin_c(MPI_File, void *, MPI_Count, MPI_Datatype) {
  return unsupported("MPI_File_read_ordered_begin_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_ordered_c(MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read_ordered_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_shared_c(MPI_File, void *, MPI_Count, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read_shared_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_all_begin_c(MPI_File, const void *, MPI_Count, MPI_Datatype) {
  return unsupported("MPI_File_write_all_begin_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_all_c(MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_write_all_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_at_all_begin_c(MPI_File, MPI_Offset, const void *, MPI_Count, MPI_Datatype) {
  return unsupported("MPI_File_write_at_all_begin_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_at_all_c(MPI_File, MPI_Offset, const void *, MPI_Count, MPI_Datatype,
                            MPI_Status *) {
  return unsupported("MPI_File_write_at_all_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_at_c(MPI_File, MPI_Offset, const void *, MPI_Count, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_write_at_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_c(MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_write_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_ordered_begin_c(MPI_File, const void *, MPI_Count, MPI_Datatype) {
  return unsupported("MPI_File_write_ordered_begin_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_ordered_c(MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_write_ordered_c", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_shared_c(MPI_File, const void *, MPI_Count, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_write_shared_c", mpi_io, MPI_COMM_NULL);
}
int MPI_Register_datarep(const char *, MPI_Datarep_conversion_function *,
                         MPI_Datarep_conversion_function *, MPI_Datarep_extent_function *, void *) {
  return unsupported("MPI_Register_datarep", mpi_io, MPI_COMM_NULL);
}
int MPI_Register_datarep_c(const char *, MPI_Datarep_conversion_function_c *,
                           MPI_Datarep_conversion_function_c *, MPI_Datarep_extent_function *,
                           void *) {
  return unsupported("MPI_Register_datarep_c", mpi_io, MPI_COMM_NULL);
}

// Dynamic processes

// MPI-IO
int MPI_File_open(MPI_Comm comm, const char *, int, MPI_Info, MPI_File *) {
  return unsupported("MPI_File_open", mpi_io, comm);
}
int MPI_File_close(MPI_File *) {
  return unsupported("MPI_File_close", mpi_io, MPI_COMM_NULL);
}
int MPI_File_delete(const char *, MPI_Info) {
  return unsupported("MPI_File_delete", mpi_io, MPI_COMM_NULL);
}
int MPI_File_set_size(MPI_File, MPI_Offset) {
  return unsupported("MPI_File_set_size", mpi_io, MPI_COMM_NULL);
}
int MPI_File_preallocate(MPI_File, MPI_Offset) {
  return unsupported("MPI_File_preallocate", mpi_io, MPI_COMM_NULL);
}
int MPI_File_get_size(MPI_File, MPI_Offset *) {
  return unsupported("MPI_File_get_size", mpi_io, MPI_COMM_NULL);
}
int MPI_File_get_group(MPI_File, MPI_Group *) {
  return unsupported("MPI_File_get_group", mpi_io, MPI_COMM_NULL);
}
int MPI_File_get_amode(MPI_File, int *) {
  return unsupported("MPI_File_get_amode", mpi_io, MPI_COMM_NULL);
}
int MPI_File_set_info(MPI_File, MPI_Info) {
  return unsupported("MPI_File_set_info", mpi_io, MPI_COMM_NULL);
}
int MPI_File_get_info(MPI_File, MPI_Info *) {
  return unsupported("MPI_File_get_info", mpi_io, MPI_COMM_NULL);
}
int MPI_File_set_view(MPI_File, MPI_Offset, MPI_Datatype, MPI_Datatype, const char *, MPI_Info) {
  return unsupported("MPI_File_set_view", mpi_io, MPI_COMM_NULL);
}
int MPI_File_get_view(MPI_File, MPI_Offset *, MPI_Datatype *, MPI_Datatype *, char *) {
  return unsupported("MPI_File_get_view", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_at(MPI_File, MPI_Offset, void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read_at", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_at_all(MPI_File, MPI_Offset, void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read_at_all", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read(MPI_File, void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_all(MPI_File, void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read_all", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_shared(MPI_File, void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read_shared", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_ordered(MPI_File, void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_read_ordered", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iread_at(MPI_File, MPI_Offset, void *, int, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iread_at", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iread_at_all(MPI_File, MPI_Offset, void *, int, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iread_at_all", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iread(MPI_File, void *, int, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iread", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iread_all(MPI_File, void *, int, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iread_all", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iread_shared(MPI_File, void *, int, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iread_shared", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_at_all_begin(MPI_File, MPI_Offset, void *, int, MPI_Datatype) {
  return unsupported("MPI_File_read_at_all_begin", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_at_all_end(MPI_File, void *, MPI_Status *) {
  return unsupported("MPI_File_read_at_all_end", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_all_begin(MPI_File, void *, int, MPI_Datatype) {
  return unsupported("MPI_File_read_all_begin", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_all_end(MPI_File, void *, MPI_Status *) {
  return unsupported("MPI_File_read_all_end", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_ordered_begin(MPI_File, void *, int, MPI_Datatype) {
  return unsupported("MPI_File_read_ordered_begin", mpi_io, MPI_COMM_NULL);
}
int MPI_File_read_ordered_end(MPI_File, void *, MPI_Status *) {
  return unsupported("MPI_File_read_ordered_end", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_at(MPI_File, MPI_Offset, const void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_write_at", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_at_all(MPI_File, MPI_Offset, const void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_write_at_all", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write(MPI_File, const void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_write", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_all(MPI_File, const void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_write_all", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_shared(MPI_File, const void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_write_shared", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_ordered(MPI_File, const void *, int, MPI_Datatype, MPI_Status *) {
  return unsupported("MPI_File_write_ordered", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iwrite_at(MPI_File, MPI_Offset, const void *, int, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iwrite_at", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iwrite_at_all(MPI_File, MPI_Offset, const void *, int, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iwrite_at_all", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iwrite(MPI_File, const void *, int, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iwrite", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iwrite_all(MPI_File, const void *, int, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iwrite_all", mpi_io, MPI_COMM_NULL);
}
int MPI_File_iwrite_shared(MPI_File, const void *, int, MPI_Datatype, MPI_Request *) {
  return unsupported("MPI_File_iwrite_shared", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_at_all_begin(MPI_File, MPI_Offset, const void *, int, MPI_Datatype) {
  return unsupported("MPI_File_write_at_all_begin", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_at_all_end(MPI_File, const void *, MPI_Status *) {
  return unsupported("MPI_File_write_at_all_end", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_all_begin(MPI_File, const void *, int, MPI_Datatype) {
  return unsupported("MPI_File_write_all_begin", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_all_end(MPI_File, const void *, MPI_Status *) {
  return unsupported("MPI_File_write_all_end", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_ordered_begin(MPI_File, const void *, int, MPI_Datatype) {
  return unsupported("MPI_File_write_ordered_begin", mpi_io, MPI_COMM_NULL);
}
int MPI_File_write_ordered_end(MPI_File, const void *, MPI_Status *) {
  return unsupported("MPI_File_write_ordered_end", mpi_io, MPI_COMM_NULL);
}
int MPI_File_seek(MPI_File, MPI_Offset, int) {
  return unsupported("MPI_File_seek", mpi_io, MPI_COMM_NULL);
}
int MPI_File_seek_shared(MPI_File, MPI_Offset, int) {
  return unsupported("MPI_File_seek_shared", mpi_io, MPI_COMM_NULL);
}
int MPI_File_get_position(MPI_File, MPI_Offset *) {
  return unsupported("MPI_File_get_position", mpi_io, MPI_COMM_NULL);
}
int MPI_File_get_position_shared(MPI_File, MPI_Offset *) {
  return unsupported("MPI_File_get_position_shared", mpi_io, MPI_COMM_NULL);
}
int MPI_File_get_byte_offset(MPI_File, MPI_Offset, MPI_Offset *) {
  return unsupported("MPI_File_get_byte_offset", mpi_io, MPI_COMM_NULL);
}
int MPI_File_get_type_extent(MPI_File, MPI_Datatype, MPI_Aint *) {
  return unsupported("MPI_File_get_type_extent", mpi_io, MPI_COMM_NULL);
}
int MPI_File_set_atomicity(MPI_File, int) {
  return unsupported("MPI_File_set_atomicity", mpi_io, MPI_COMM_NULL);
}
int MPI_File_get_atomicity(MPI_File, int *) {
  return unsupported("MPI_File_get_atomicity", mpi_io, MPI_COMM_NULL);
}
int MPI_File_sync(MPI_File) {
  return unsupported("MPI_File_sync", mpi_io, MPI_COMM_NULL);
}
int MPI_File_create_errhandler(MPI_File_errhandler_function *, MPI_Errhandler *) {
  return unsupported("MPI_File_create_errhandler", mpi_io, MPI_COMM_NULL);
}
int MPI_File_set_errhandler(MPI_File, MPI_Errhandler) {
  return unsupported("MPI_File_set_errhandler", mpi_io, MPI_COMM_NULL);
}
int MPI_File_get_errhandler(MPI_File, MPI_Errhandler *) {
  return unsupported("MPI_File_get_errhandler", mpi_io, MPI_COMM_NULL);
}
int MPI_File_call_errhandler(MPI_File, int) {
  return unsupported("MPI_File_call_errhandler", mpi_io, MPI_COMM_NULL);
}

// Not an error: a process that was not spawned has no parent.

}  // extern "C"
