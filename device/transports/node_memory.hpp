// Memory shared by the processes of this node, and single-copy reads of
// another process's memory, for the layers above the transports (the
// collectives' node segments): the seam lets only device/transports/ name
// shm/. Names are the caller's, under node_memory_prefix() so that mpiexec
// removes what a crash left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace iris::device {

// "/" and this job's (and this start's) prefix for /dev/shm names.
std::string node_memory_prefix();

// `bytes` of zeroed memory under `name`, every page reserved now (a full
// /dev/shm fails here, not at a first store). nullptr, with one line saying
// why in `why`, when it cannot.
void *node_memory_create(const std::string &name, std::size_t bytes, std::string &why);
// Maps what another process of this node created under `name`; nullptr when
// there is none of that size.
void *node_memory_map(const std::string &name, std::size_t bytes);
void node_memory_unmap(void *base, std::size_t bytes);
// Removes the name (the mappings stay until unmapped).
void node_memory_remove(const std::string &name);

// Reads `bytes` at `address` of process `pid` of this node into `to`
// (CMA). False when the kernel refuses or the read falls short.
bool node_memory_read(std::int64_t pid, std::uint64_t address, void *to, std::size_t bytes);
// Writes `bytes` from `from` at `address` of process `pid` (CMA; the kernel
// allows it wherever it allows the read). False when the kernel refuses or
// the write falls short.
bool node_memory_write(std::int64_t pid, std::uint64_t address, const void *from,
                       std::size_t bytes);

}  // namespace iris::device
