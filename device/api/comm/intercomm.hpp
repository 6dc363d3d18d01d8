// The constructors that make intercommunicators from an intercommunicator
// (MPI_Comm_split and MPI_Comm_create over one), for comm.cpp.
#pragma once

#include <cstdint>
#include <string>
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

// MPI_Intercomm_create across jobs (dynamic.cpp), collective over `local`:
// every member's netmod card for processes of other jobs, gathered at
// `leader` and packed as ints for leader_exchange (at the leader; empty
// elsewhere, and when a member cannot reach other jobs: then MPI_ERR_OTHER
// at every member, after the caller still exchanges the empty table).
int group_cards(device::communicator &local, int leader, const char *call,
                std::vector<int> &packed);

// The VC of rank `rank` of job `job` for MPI_Intercomm_create: the one this
// process knows, else one made from the card that `packed` (the other
// group's group_cards) gives it. -1, with `why`, when neither exists.
int card_peer(const std::vector<int> &packed, std::uint64_t job, int rank, std::string &why);

}  // namespace iris::api
