// Communicators and groups: a group of ranks and a context id that keeps
// their traffic apart from every other communicator's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace iris::device {

// An ordered set of processes, named by their ranks in MPI_COMM_WORLD.
struct group {
  std::vector<int> world_ranks;

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
  int errhandler = 0;
  std::string name;
  // Info hints as the user gave them (MPI_Comm_set_info); Iris acts on none.
  std::vector<std::pair<std::string, std::string>> hints;

  std::uint32_t collective_context() const { return context + 1; }
};

inline constexpr std::uint32_t world_context = 0;
inline constexpr std::uint32_t self_context = 2;
inline constexpr std::uint32_t first_free_context = 4;

// Device-internal tags on the collective context (user-visible collectives
// use 100..999): see collective.cpp.
inline constexpr int tag_context_agree = 50;
inline constexpr int tag_split_gather = 51;
inline constexpr int tag_split_table = 52;
// MPI_Comm_create_group's agreement: this base plus the user's tag (folded
// into the int range), so that concurrent calls with different tags on the
// same parent keep apart.
inline constexpr int tag_create_group_base = 1000;

// Collective over `parent`: a context id unused by every member, agreed by
// all (the maximum of their next free ids). Each member moves past it.
std::uint32_t context_agree(const communicator &parent);
// The same among `members` (ranks of `parent`, this rank among them) only,
// on `parent`'s collective context with `tag`: MPI_Comm_create_group.
std::uint32_t context_agree_among(const communicator &parent, const std::vector<int> &members,
                                  int tag);

// The node of rank `rank` of `comm`: ranks with the same node share memory
// (MPI_COMM_TYPE_SHARED). From the process manager.
int comm_node_of(const communicator &comm, int rank);

// Registers a new communicator of `world_ranks` (this process among them)
// with context `context`; returns its handle.
int comm_register(std::vector<int> world_ranks, std::uint32_t context, int errhandler);

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
