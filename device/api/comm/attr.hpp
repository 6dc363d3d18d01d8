// What the communicator and datatype bindings call for attributes: the
// copy callbacks when an object is duplicated, the delete callbacks when it
// is freed. Each returns MPI_SUCCESS or, after the error handler of `c`
// (MPI_COMM_WORLD's when null) has run, the code a user callback returned.
#pragma once

#include "device/communicators/attr.hpp"
#include "device/core/comm.hpp"

namespace iris::api {

int attrs_copy(const char *call, const device::communicator *c, device::attr_kind kind, int from,
               int to);
int attrs_delete_all(const char *call, const device::communicator *c, device::attr_kind kind,
                     int obj);

}  // namespace iris::api
