// The memory this process exposed to put and get (MPIX_Expose): a fixed
// table at a fixed address, so that a peer on this node checks it itself,
// reading it by the transport's peer_access (CMA), without this process
// doing anything. The table's address is this process's card (am_card_put).
// A region inside a block of MPI_Alloc_mem (memory.cpp) names the block, so
// that such a peer maps it and puts and gets with plain copies.
//
// Writers (MPIX_Expose, MPIX_Conceal) hold the call lock. Readers are this
// process's targets (under the call lock) and peers reading it remotely at
// any moment: a slot is filled base last and emptied base first (base 0:
// empty; a region may have 0 bytes), and an emptied slot is reused only
// when the table is full.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace iris::device {

// Every MPI window takes two of a rank's (its memory, its control block):
// programs keep a thousand windows open (MPICH's window_creation test).
inline constexpr std::size_t exposure_slots = 4096;
// A slot's words, in order.
enum exposure_word : std::size_t {
  slot_base,          // 0: an empty slot
  slot_bytes,         //
  slot_block,         // the MPI_Alloc_mem block it lies in (0: none)
  slot_block_offset,  // where `base` lies in that block
  slot_block_bytes,   // the block's size
  slot_words,
};
struct exposure_slot {
  std::atomic<std::uint64_t> word[slot_words];
};
struct exposure_table {
  std::atomic<std::uint64_t> used;  // slots [0, used) may be filled
  exposure_slot slots[exposure_slots];
};
// The part of a table a peer reads first: its used count and first slots.
inline constexpr std::size_t exposure_head_slots = 15;
static_assert(sizeof(exposure_slot) == slot_words * 8 && sizeof(std::atomic<std::uint64_t>) == 8);

// This process's table.
exposure_table &exposures();

// Exposes [base, base + bytes), lying in block `block` at `block_offset`
// (0: in none). MPI_SUCCESS, or MPI_ERR_NO_MEM (every slot taken) /
// MPI_ERR_ARG (`base` already exposed).
int exposure_add(const void *base, std::size_t bytes, std::uint64_t block,
                 std::uint64_t block_offset, std::uint64_t block_bytes);
// MPI_SUCCESS, or MPI_ERR_ARG when `base` is not the base of an exposed region.
int exposure_remove(const void *base);

// The slot of `slots` (`used` of them, slot_words words each, as this
// process or a peer read them) whose region holds [address, address +
// bytes), or nullptr.
const std::uint64_t *exposure_covering(const std::uint64_t *slots, std::size_t used,
                                       std::uint64_t address, std::uint64_t bytes);
// Whether [address, address + bytes) lies in regions of `slots` that
// follow one another (a dynamic window's adjacent attachments), none of
// which holds it all.
bool exposure_chain(const std::uint64_t *slots, std::size_t used, std::uint64_t address,
                    std::uint64_t bytes);
// Whether this process's own table has a region that holds [address,
// address + bytes), or regions that follow one another do.
bool exposed_here(std::uint64_t address, std::uint64_t bytes);

}  // namespace iris::device
