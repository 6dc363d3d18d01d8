// The constructors that make intercommunicators from an intercommunicator
// (MPI_Comm_split and MPI_Comm_create over one), for comm.cpp.
#pragma once

#include <utility>
#include <vector>

#include "device/core/comm.hpp"
#include "include/mpi.h"

namespace iris::api {

// Collective over both groups of intercommunicator `inter`: `table` holds
// every local rank's (color, key), the same on each member of the local
// group. For this process's `color` the result joins the local members of
// that color with the remote members of that color, each side ordered by
// key then by rank; MPI_COMM_NULL for MPI_UNDEFINED or when the remote
// group has no member of the color.
MPI_Comm inter_split(device::communicator &inter, const std::vector<std::pair<int, int>> &table,
                     int color);

}  // namespace iris::api
