// Blocks: memory one process allocates in /dev/shm so that the processes of
// its node can map it too, and so read and write it with plain loads and
// stores (the device serves MPI_Alloc_mem from them, for put and get
// without a system call). It knows nothing of MPI.
//
// The owner creates a block by name and removes the name when it frees it
// (a peer that mapped it keeps its mapping until it unmaps it). Names are
// the caller's; a job's prefix lets mpiexec remove what a crash left.
#pragma once

#include <cstddef>
#include <string>

namespace iris::shm {

// `bytes` of zeroed shared memory under `name` (starting with '/'), every
// page reserved now, so that a full /dev/shm fails here and not as SIGBUS
// at a first touch. Throws shm::error with one line saying why.
void *block_create(const std::string &name, std::size_t bytes);
// Maps another process's block `name` of `bytes`. nullptr when there is
// none of that size (removed, or never made).
void *block_map(const std::string &name, std::size_t bytes);
// Unmaps a block created or mapped here.
void block_unmap(void *base, std::size_t bytes);
// Removes the name (the owner, when it frees the block).
void block_remove(const std::string &name);

}  // namespace iris::shm
