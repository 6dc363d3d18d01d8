// MPI bindings for intercommunicators: Intercomm_create and
// Intercomm_merge, and inter_split (Comm_split and Comm_create over an
// intercommunicator). Point-to-point over an intercommunicator takes the
// ordinary path (its `world_rank` is the remote group); its collectives
// are in nbc_inter.cpp.
#include "device/api/comm/intercomm.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "device/api/check.hpp"
#include "device/transports/dynamic.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

// The world ranks of the members of `color` in `table` (indexed by rank in
// a group whose world ranks are `world`), ordered by key then by rank.
std::vector<int> members_of(const std::vector<std::pair<int, int>> &table,
                            const std::vector<int> &world, int color) {
  std::vector<int> members;
  for (std::size_t r = 0; r < table.size(); ++r) {
    if (table[r].first == color) members.push_back(static_cast<int>(r));
  }
  std::stable_sort(members.begin(), members.end(), [&](int x, int y) {
    return table[static_cast<std::size_t>(x)].second < table[static_cast<std::size_t>(y)].second;
  });
  for (int &m : members) m = world.at(static_cast<std::size_t>(m));
  return members;
}

// Whether the members of `local` and the processes `remote` (job, rank)
// belong to more than one job. The same answer at every member of both
// groups: each has both tables.
bool spans_jobs(const device::communicator &local,
                const std::vector<std::pair<std::uint64_t, int>> &remote) {
  std::uint64_t first = 0;
  int first_rank = 0;
  device::process_id(local.world_rank.front(), first, first_rank);
  for (const int w : local.world_rank) {
    std::uint64_t job = 0;
    int rank = 0;
    device::process_id(w, job, rank);
    if (job != first) return true;
  }
  return std::any_of(remote.begin(), remote.end(), [&](const auto &p) { return p.first != first; });
}

}  // namespace

// As MPI_Comm_dup of an intercommunicator: each group agrees on a fresh
// local context, the leaders exchange theirs with their group's table, and
// two above the larger context is fresh for everyone (confirmed over both
// groups under MULTIPLE: context_agree_inter). The new
// intercommunicators of different colors share these contexts: their
// members are disjoint.
MPI_Comm iris::api::inter_split(device::communicator &inter,
                                const std::vector<std::pair<int, int>> &table, int color) {
  device::communicator local = device::inter_local_group(inter);
  ++device::rt->agreeing;  // the other group may start sending first
  const std::uint32_t mine = device::context_agree(local);
  std::vector<int> theirs;  // their context, then (color, key) of each remote rank
  if (inter.rank == 0) {
    std::vector<int> sent = {static_cast<int>(mine)};
    for (const auto &[c, k] : table) {
      sent.push_back(c);
      sent.push_back(k);
    }
    theirs = device::leader_exchange(inter, inter.collective_context(), 0,
                                     device::tag_inter_leaders, sent);
  }
  device::group_bcast(local, 0, theirs);
  const std::uint32_t context = device::context_agree_inter(
      local, 0, {&inter, inter.collective_context(), 0, device::tag_inter_leaders},
      std::max(mine, static_cast<std::uint32_t>(device::heard(theirs, 0))) + 2);
  --device::rt->agreeing;
  if (color == MPI_UNDEFINED) return MPI_COMM_NULL;
  std::vector<std::pair<int, int>> remote_table;
  for (std::size_t i = 1; i + 1 < theirs.size(); i += 2) {
    remote_table.emplace_back(theirs[i], theirs[i + 1]);
  }
  std::vector<int> remote = members_of(remote_table, inter.world_rank, color);
  if (remote.empty()) return MPI_COMM_NULL;
  const MPI_Comm made =
      device::comm_register_inter(members_of(table, inter.local_world_rank, color),
                                  std::move(remote), context, mine, inter.errhandler);
  api::comm_inherit(made, inter);
  return made;
}

extern "C" {

// Each group agrees on a fresh context of its own (the intercommunicator's
// local context), the leaders exchange theirs and their groups over
// peer_comm with `tag`, each leader broadcasts what it heard to its group,
// and two above the larger context is fresh for both groups (confirmed over
// both groups under MULTIPLE, through the leaders' same link:
// context_agree_inter).
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
    // Over an intercommunicator (two jobs joined by connect or spawn), the
    // remote leader is a rank of the other group.
    if (remote_leader < 0 || remote_leader >= peer->size ||
        (!peer->inter && remote_leader == peer->rank)) {
      return device::error_raise(peer, call, MPI_ERR_RANK,
                                 "invalid remote_leader %d (peer_comm size %d, this leader is %d)",
                                 remote_leader, peer->size, peer->rank);
    }
    if (int err = api::check_send_tag(call, *peer, tag)) return err;
  }
  ++device::rt->agreeing;  // the other group may start sending first
  const std::uint32_t mine = device::context_agree(*local);
  // Their context, then each member of their group as every process can
  // read it: its job's hash (two ints) and its rank there (a VC index is
  // this process's own, and processes of other jobs have other ones).
  std::vector<int> theirs;
  if (local->rank == local_leader) {
    std::vector<int> sent = {static_cast<int>(mine)};
    for (const int w : local->world_rank) {
      std::uint64_t job = 0;
      int rank = 0;
      device::process_id(w, job, rank);
      sent.insert(sent.end(), {static_cast<int>(job >> 32), static_cast<int>(job), rank});
    }
    theirs = device::leader_exchange(*peer, peer->context, remote_leader, tag, sent);
  }
  device::group_bcast(*local, local_leader, theirs);
  const std::uint32_t context = device::context_agree_inter(
      *local, local_leader, {peer, peer != nullptr ? peer->context : 0, remote_leader, tag},
      std::max(mine, static_cast<std::uint32_t>(device::heard(theirs, 0))) + 2);
  --device::rt->agreeing;
  std::vector<std::pair<std::uint64_t, int>> named;  // the other group, (job, rank)
  for (std::size_t i = 1; i + 2 < theirs.size(); i += 3) {
    const std::uint64_t job = static_cast<std::uint64_t>(static_cast<std::uint32_t>(theirs[i]))
                                  << 32 |
                              static_cast<std::uint32_t>(theirs[i + 1]);
    named.emplace_back(job, theirs[i + 2]);
  }
  if (named.empty()) {  // a group has a member: the leaders' exchange failed
    *newintercomm = MPI_COMM_NULL;
    return device::error_raise(
        local, call, device::rt->troubled ? MPIX_ERR_PROC_FAILED : MPI_ERR_OTHER,
        "the other group's leader (rank %d of peer_comm at the local leader) gave no members",
        remote_leader);
  }
  // Processes of more than one job in the two groups: a member may never
  // have met some of the other group (MPICH's spaiccreate: only the
  // spawning rank knows the children). Every member decides alike from
  // both tables, and then the groups' cards travel by the leaders too.
  std::vector<int> their_cards;
  if (spans_jobs(*local, named)) {
    std::vector<int> mine_cards;
    const int cards_err = api::group_cards(*local, local_leader, call, mine_cards);
    if (local->rank == local_leader) {
      their_cards = device::leader_exchange(*peer, peer->context, remote_leader, tag, mine_cards);
    }
    device::group_bcast(*local, local_leader, their_cards);
    if (cards_err != MPI_SUCCESS) return cards_err;
  }
  std::vector<int> remote;
  for (const auto &[job, rank] : named) {
    std::string why;
    const int w = their_cards.empty() ? device::known_peer(job, rank)
                                      : api::card_peer(their_cards, job, rank, why);
    if (w < 0) {
      return device::error_raise(
          local, call, MPI_ERR_OTHER, "cannot reach rank %d of the other group's job: %s", rank,
          why.empty() ? "this process has never connected to it" : why.c_str());
    }
    remote.push_back(w);
  }
  for (int w : remote) {
    if (std::find(local->world_rank.begin(), local->world_rank.end(), w) !=
        local->world_rank.end()) {
      return device::error_raise(local, call, MPI_ERR_COMM,
                                 "world rank %d is in both groups (they must be disjoint)", w);
    }
  }
  *newintercomm = device::comm_register_inter(local->world_rank, std::move(remote), context, mine,
                                              local->errhandler);
  if (int err = api::made_despite_failure(call, *local, *newintercomm)) return err;
  api::comm_inherit(*newintercomm, *local);
  return MPI_SUCCESS;
}

// The group that passed high = 0 comes first (both alike: the one
// communicator::local_first names); each group proposes its members'
// next free id and the larger is the context (no local context is kept),
// confirmed over both groups under MULTIPLE (context_agree_inter).
int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm) {
  const device::api_guard guard;
  const char *call = "MPI_Intercomm_merge";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, intercomm, c)) return err;
  if (int err = api::check_not_null(call, c, newintracomm, "newintracomm")) return err;
  if (!c->inter) return device::error_raise(c, call, MPI_ERR_COMM, "not an intercommunicator");
  device::communicator local = device::inter_local_group(*c);
  ++device::rt->agreeing;
  // A proposal only: the local group keeps no context of its own here.
  const std::uint32_t mine = device::context_propose(local);
  std::vector<int> theirs;  // their proposal and their high
  const device::inter_link link{c, c->collective_context(), 0, device::tag_inter_leaders};
  if (c->rank == 0) {
    theirs = device::leader_exchange(*c, link.context, 0, link.tag,
                                     {static_cast<int>(mine), high != 0 ? 1 : 0});
  }
  device::group_bcast(local, 0, theirs);
  const std::uint32_t context = device::context_agree_inter(
      local, 0, link, std::max(mine, static_cast<std::uint32_t>(device::heard(theirs, 0))));
  --device::rt->agreeing;
  const bool mine_high = high != 0;
  const bool theirs_high = device::heard(theirs, 1) != 0;
  const bool local_first = mine_high != theirs_high ? !mine_high : c->local_first();
  std::vector<int> members = local_first ? c->local_world_rank : c->world_rank;
  const std::vector<int> &second = local_first ? c->world_rank : c->local_world_rank;
  members.insert(members.end(), second.begin(), second.end());
  *newintracomm = device::comm_register(std::move(members), context, c->errhandler);
  if (int err = api::made_despite_failure(call, *c, *newintracomm)) return err;
  api::comm_inherit(*newintracomm, *c);
  return MPI_SUCCESS;
}

}  // extern "C"
