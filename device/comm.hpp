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

// Collective over `parent`: a context id unused by every member, agreed by
// all (the maximum of their next free ids). Each member moves past it.
std::uint32_t context_agree(const communicator &parent);

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
