// Communicators and groups: a group of ranks and a context id that keeps
// their traffic apart from every other communicator's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace iris::device {

struct context_queues;
struct node_collectives;
struct node_hierarchy;

// An ordered set of processes, named by their ranks in MPI_COMM_WORLD.
struct group {
  std::vector<int> world_ranks;
  // The session it comes from (MPI_Group_from_session_pset, and the groups
  // made from that one), or 0.
  int session = 0;

  int size() const { return static_cast<int>(world_ranks.size()); }
  // This group's rank of world rank `w`, or -1.
  int rank_of(int w) const;
};

struct communicator {
  int handle = 0;
  // Point-to-point traffic uses `context`; collectives use `context + 1`, so
  // that they never match user messages whatever the tags.
  std::uint32_t context = 0;
  int rank = 0;
  int size = 0;
  std::vector<int> world_rank;  // rank in this communicator -> rank in the world
  // MULTIPLE: the matcher's queues of `context`, set when the communicator
  // is published (comm_publish), for receives posted without the call lock.
  context_queues *queues = nullptr;
  int errhandler = 0;
  // The session it derives from (MPI_Comm_create_from_group of a session's
  // group, and what is made from that communicator), or 0: its buffered
  // sends may use the session's buffer (MPI-4.1).
  int session = 0;
  std::string name;
  // Info hints as the user gave them (MPI_Comm_set_info); Iris acts on none.
  std::vector<std::pair<std::string, std::string>> hints;
  // An intercommunicator: `size`, `world_rank` and the ranks of
  // point-to-point calls name the remote group; `rank` is this process's
  // rank in its own group, `local_world_rank`, whose members talk among
  // themselves (merge, dup) on `local_context` and `local_context + 1`.
  bool inter = false;
  // Which group comes first where both are numbered as one (Intercomm_merge
  // when both pass the same `high`, the nonblocking context agreement,
  // recovery's agreements): 1 this group, 2 the other. comm_register_inter
  // sets it from the first members' (job, rank) names, which read the same
  // at both groups (VC indices do not across jobs); an intercommunicator of
  // MPI_Comm_connect/accept puts the accepting group first.
  int merge_first = 0;
  std::vector<int> local_world_rank;
  std::uint32_t local_context = 0;

  int local_size() const { return inter ? static_cast<int>(local_world_rank.size()) : size; }
  bool local_first() const { return merge_first == 1; }

  // Nonblocking and persistent collectives started on this communicator so
  // far: their messages' tags (device/schedule.hpp).
  std::uint32_t nbc_sequence = 0;

  // The shared segment of the blocking collectives among one node's ranks
  // (collectives/node.hpp), made at the first one: `node_coll_state` 0 not
  // tried yet, 1 made, -1 none (messages only). Freed with the communicator.
  std::shared_ptr<node_collectives> node_coll;
  int node_coll_state = 0;
  // A communicator across nodes: its two levels (collectives/hierarchy.hpp),
  // found at the first such collective; the same states.
  std::shared_ptr<node_hierarchy> hierarchy;
  int hierarchy_state = 0;

  // Recovery (protocols/recovery.hpp): MPIX_Comm_revoke reached this
  // process; and how many of the failures known here (in the order they
  // became known: recovery_state::order) MPIX_Comm_ack_failed acknowledged.
  bool revoked = false;
  std::size_t acked = 0;
  // How many of those failures were looked for among its members, and
  // whether one was (a collective's refusal asks at every message).
  mutable std::size_t failures_looked = 0;
  mutable bool failed_member = false;

  std::uint32_t collective_context() const { return context + 1; }
};

inline constexpr std::uint32_t world_context = 0;
inline constexpr std::uint32_t self_context = 2;
inline constexpr std::uint32_t first_free_context = 4;
// Nonblocking agreements (MPI_Comm_idup) hand out blocks of four ids from
// here up, apart from the blocking agreements' ids below: an intercommunicator
// takes the first two, its local groups the last two.
inline constexpr std::uint32_t first_nonblocking_context = 0x80000000U;
inline constexpr std::uint32_t nonblocking_context_block = 4;
// A communicator whose agreement is still under way has this context.
inline constexpr std::uint32_t pending_context = 0xfffffff0U;

// Device-internal tags on the collective context (user-visible collectives
// use 100..999): see collective.cpp.
inline constexpr int tag_context_agree = 50;
inline constexpr int tag_split_gather = 51;
inline constexpr int tag_split_table = 52;
// Intercommunicators: the local broadcast of what the leaders exchanged,
// and the leaders' exchange for MPI_Intercomm_merge and dup.
inline constexpr int tag_inter_bcast = 53;
inline constexpr int tag_inter_leaders = 54;
// The making of a communicator's shared collective segment
// (collectives/node.cpp): made, mapped, ready.
inline constexpr int tag_node_coll_made = 55;
inline constexpr int tag_node_coll_mapped = 56;
inline constexpr int tag_node_coll_ready = 57;
// Whether every node of a communicator across nodes made its segment
// (collectives/hierarchy.cpp): each rank's answer, and the verdict.
inline constexpr int tag_node_levels = 58;
inline constexpr int tag_node_levels_all = 59;
// MPI_Comm_create_group's agreement: this base plus the user's tag (folded
// into the range below tag_nbc_base), so that concurrent calls with different
// tags on the same parent keep apart.
inline constexpr int tag_create_group_base = 1000;
// Nonblocking and persistent collectives: from here to INT_MAX
// (device/schedule.hpp).
inline constexpr int tag_nbc_base = 0x40000000;

// Collective over `parent`: a context id unused by every member, agreed by
// all (the maximum of their next free ids). Each member moves past it.
std::uint32_t context_agree(const communicator &parent);
// The same among `members` (ranks of `parent`, this rank among them) only,
// on `parent`'s collective context with `tag`: MPI_Comm_create_group.
std::uint32_t context_agree_among(const communicator &parent, const std::vector<int> &members,
                                  int tag);

// The first round of context_agree alone: the largest of the members' next
// free ids (above it by the spread under MULTIPLE), confirmed nowhere and
// moved past by nobody. MPI_Intercomm_merge's proposal for
// context_agree_inter.
std::uint32_t context_propose(const communicator &parent);

class schedule;
// Nonblocking (MPI_Comm_idup): adds to `s` (a schedule over `parent`) the
// rounds of an agreement, over every member of parent (both groups of an
// intercommunicator), on a block of context ids in the nonblocking range
// that no member uses; then `done` runs with the block's first id. Each
// attempt is an allreduce(max) of the members' proposals by dissemination,
// then an allreduce(max) of "this value clashes here" (with an id handed
// out, or with another agreement's tentative value that was there first);
// after a clash anywhere all try again above it. The progress engine runs
// the rounds, so several agreements may be under way on one process.
void context_agree_schedule(schedule &s, communicator &parent,
                            std::function<void(std::uint32_t)> done);
// Registers (unpublished) the communicator that MPI_Comm_idup on `parent`
// makes, on pending_context; comm_activate gives it its agreed block and
// publishes it (the object lives until MPI_Finalize even if freed).
int comm_register_pending(const communicator &parent);
void comm_activate(communicator &c, std::uint32_t context);

// The node of rank `rank` of `comm`: ranks with the same node share memory
// (MPI_COMM_TYPE_SHARED). From the process manager.
int comm_node_of(const communicator &comm, int rank);

// Registers a new communicator of `world_ranks` (this process among them)
// with context `context`; returns its handle.
int comm_register(std::vector<int> world_ranks, std::uint32_t context, int errhandler);

// Registers an intercommunicator between this process's group `local`
// and `remote`, on `context`, its local group on `local_context`.
int comm_register_inter(std::vector<int> local, std::vector<int> remote, std::uint32_t context,
                        std::uint32_t local_context, int errhandler);
// How the leader of a group reaches the other group's leader while an
// intercommunicator is built: rank `peer` of `channel`, on `context`, with
// `tag` (unused on the other members).
struct inter_link {
  const communicator *channel = nullptr;
  std::uint32_t context = 0;
  int peer = 0;
  int tag = 0;
};

// Collective over both groups of an intercommunicator being built (`local`
// is this process's group, `leader` its leader there): the context id of
// the result, from `first`, the same on every member of both groups (the
// larger of the two groups' values). Below MULTIPLE that is the context. Under
// MULTIPLE it is tentative until a round over both groups finds that no
// member saw it clash (context_confirm); on a clash anywhere every member
// proposes again above it. Every member moves past the result.
std::uint32_t context_agree_inter(const communicator &local, int leader, const inter_link &link,
                                  std::uint32_t first);
// The confirming rounds of context_agree_inter under MULTIPLE, apart from
// the messages, for tests: `max_all(v)` returns the maximum of v over every
// member (this one included); `spread` picks the retries' offsets.
std::uint32_t context_confirm(std::uint32_t first, std::uint32_t spread,
                              const std::function<std::uint32_t(std::uint32_t)> &max_all);

// The local group of intercommunicator `inter` as an intracommunicator on
// its local context (not registered: for agreements among the group).
communicator inter_local_group(const communicator &inter);
// Leaders only: sends `mine` to rank `peer` of `channel` on `context` with
// `tag` and returns what the peer sent the same way (any length).
std::vector<int> leader_exchange(const communicator &channel, std::uint32_t context, int peer,
                                 int tag, const std::vector<int> &mine);
// Element `i` of what leader_exchange or group_bcast gave, or 0 where it is
// shorter (recovery: the exchange with a rank that died ended early).
inline int heard(const std::vector<int> &v, std::size_t i) {
  return i < v.size() ? v[i] : 0;
}
// Collective over `group`: `data` of rank `root` reaches every member
// (linear, on the collective context, tag_inter_bcast).
void group_bcast(const communicator &group, int root, std::vector<int> &data);

// Collective over `parent`: every member's (color, key), indexed by rank.
std::vector<std::pair<int, int>> comm_allgather_pairs(const communicator &parent, int color,
                                                      int key);

// Registers a group; returns its handle. The group named by a handle, or
// nullptr (MPI_GROUP_EMPTY names an empty group).
int group_register(std::vector<int> world_ranks);
group *group_lookup(int handle);
void group_release(int handle);

// Releases a communicator's handle. Its object lives until MPI_Finalize, so
// that operations still pending on it complete normally.
void comm_release(int handle);

}  // namespace iris::device
