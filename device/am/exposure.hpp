// The memory this process exposed to put and get (MPIX_Expose): a fixed
// table at a fixed address, so that a peer on this node checks it itself,
// reading it by the transport's peer_access (CMA), without this process
// doing anything. The table's address is this process's card (am_card_put).
//
// Writers (MPIX_Expose, MPIX_Conceal) hold the call lock. Readers are this
// process's targets (under the call lock) and peers reading it remotely at
// any moment: a slot is filled bytes first and base last, and emptied base
// first (base 0: empty; a region may have 0 bytes), and an emptied slot is
// reused only when the table is full.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace iris::device {

inline constexpr std::size_t exposure_slots = 256;
struct exposure_slot {
  std::atomic<std::uint64_t> base;  // 0: an empty slot
  std::atomic<std::uint64_t> bytes;
};
struct exposure_table {
  std::atomic<std::uint64_t> used;  // slots [0, used) may be filled
  exposure_slot slots[exposure_slots];
};
// The part of a table a peer reads first: its used count and first slots.
inline constexpr std::size_t exposure_head_slots = 15;
static_assert(sizeof(exposure_slot) == 16 && sizeof(std::atomic<std::uint64_t>) == 8);

// This process's table.
exposure_table &exposures();

// MPI_SUCCESS, or MPI_ERR_NO_MEM (every slot taken) / MPI_ERR_ARG (`base`
// already exposed).
int exposure_add(const void *base, std::size_t bytes);
// MPI_SUCCESS, or MPI_ERR_ARG when `base` is not the base of an exposed region.
int exposure_remove(const void *base);

// Whether [address, address + bytes) lies inside one region of `slots`
// (`used` of them), as this process or a peer read them.
bool exposure_covers(const std::uint64_t (*slots)[2], std::size_t used, std::uint64_t address,
                     std::uint64_t bytes);
// The same against this process's own table.
bool exposed_here(std::uint64_t address, std::uint64_t bytes);

}  // namespace iris::device
