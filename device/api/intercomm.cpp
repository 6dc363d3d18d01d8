// MPI bindings for intercommunicators: Intercomm_create and
// Intercomm_merge. Point-to-point over an intercommunicator takes the
// ordinary path (its `world_rank` is the remote group); its collectives
// are in nbc_inter.cpp.
#include <algorithm>

#include "device/api/check.hpp"

using namespace iris;
using iris::api::communicator;

extern "C" {

// Each group agrees on a fresh context of its own (the intercommunicator's
// local context), the leaders exchange theirs and their groups over
// peer_comm with `tag`, each leader broadcasts what it heard to its group,
// and two above the larger context is fresh for both groups.
int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                         int remote_leader, int tag, MPI_Comm *newintercomm) {
  const device::api_guard guard;
  const char *call = "MPI_Intercomm_create";
  communicator *local = nullptr;
  if (int err = api::check_intracomm(call, local_comm, local)) return err;
  if (int err = api::check_not_null(call, local, newintercomm, "newintercomm")) return err;
  if (local_leader < 0 || local_leader >= local->size) {
    return device::error_raise(local, call, MPI_ERR_RANK,
                               "invalid local_leader %d (local_comm size %d)", local_leader,
                               local->size);
  }
  communicator *peer = nullptr;
  if (local->rank == local_leader) {
    if (int err = api::check_comm(call, peer_comm, peer)) return err;
    if (remote_leader < 0 || remote_leader >= peer->size || remote_leader == peer->rank) {
      return device::error_raise(peer, call, MPI_ERR_RANK,
                                 "invalid remote_leader %d (peer_comm size %d, this leader is %d)",
                                 remote_leader, peer->size, peer->rank);
    }
    if (int err = api::check_send_tag(call, *peer, tag)) return err;
  }
  ++device::rt->agreeing;  // the other group may start sending first
  const std::uint32_t mine = device::context_agree(*local);
  std::vector<int> theirs;  // their context, then their group's world ranks
  if (local->rank == local_leader) {
    std::vector<int> sent = {static_cast<int>(mine)};
    sent.insert(sent.end(), local->world_rank.begin(), local->world_rank.end());
    theirs = device::leader_exchange(*peer, peer->context, remote_leader, tag, sent);
  }
  device::group_bcast(*local, local_leader, theirs);
  const std::uint32_t context = std::max(mine, static_cast<std::uint32_t>(theirs.at(0))) + 2;
  device::rt->next_context = std::max(device::rt->next_context, context + 2);
  --device::rt->agreeing;
  std::vector<int> remote(theirs.begin() + 1, theirs.end());
  for (int w : remote) {
    if (std::find(local->world_rank.begin(), local->world_rank.end(), w) !=
        local->world_rank.end()) {
      return device::error_raise(local, call, MPI_ERR_COMM,
                                 "world rank %d is in both groups (they must be disjoint)", w);
    }
  }
  *newintercomm = device::comm_register_inter(local->world_rank, std::move(remote), context, mine,
                                              local->errhandler);
  return MPI_SUCCESS;
}

// The group that passed high = 0 comes first (both alike: the group whose
// first member has the lower world rank); the context is agreed as in
// MPI_Comm_dup of an intercommunicator, without the +2 (no local context).
int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm) {
  const device::api_guard guard;
  const char *call = "MPI_Intercomm_merge";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, intercomm, c)) return err;
  if (int err = api::check_not_null(call, c, newintracomm, "newintracomm")) return err;
  if (!c->inter) return device::error_raise(c, call, MPI_ERR_COMM, "not an intercommunicator");
  device::communicator local = device::inter_local_group(*c);
  ++device::rt->agreeing;
  const std::uint32_t mine = device::context_agree(local);
  std::vector<int> theirs;  // their context and their high
  if (c->rank == 0) {
    theirs = device::leader_exchange(*c, c->collective_context(), 0, device::tag_inter_leaders,
                                     {static_cast<int>(mine), high != 0 ? 1 : 0});
  }
  device::group_bcast(local, 0, theirs);
  const std::uint32_t context = std::max(mine, static_cast<std::uint32_t>(theirs.at(0)));
  device::rt->next_context = std::max(device::rt->next_context, context + 2);
  --device::rt->agreeing;
  const bool mine_high = high != 0;
  const bool theirs_high = theirs.at(1) != 0;
  const bool local_first =
      mine_high != theirs_high ? !mine_high : c->local_world_rank.front() < c->world_rank.front();
  std::vector<int> members = local_first ? c->local_world_rank : c->world_rank;
  const std::vector<int> &second = local_first ? c->world_rank : c->local_world_rank;
  members.insert(members.end(), second.begin(), second.end());
  *newintracomm = device::comm_register(std::move(members), context, c->errhandler);
  return MPI_SUCCESS;
}

}  // extern "C"
