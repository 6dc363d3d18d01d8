// Cross-memory attach (CMA): the single-copy engine for ranks of one node.
// A receiver reads the sender's buffer straight into its own with
// process_vm_readv. Kernels may refuse (containers, Yama ptrace policy), so
// each process publishes a probe card and a peer tries one word first.
// It knows nothing of MPI.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace iris::shm::cma {

// This process's probe card: its pid and the address of a known word.
std::string card();

// Whether the kernel lets this process read the memory of the process that
// published `card` (false on any refusal or a malformed card).
bool permitted(const std::string &card);

// The pid a card names (0 for a malformed card).
std::int64_t card_pid(const std::string &card);

// Writes `bytes` from `from` at `address` in process `pid`. False when the
// kernel refuses or the write falls short (some bytes may have landed).
bool write(std::int64_t pid, std::uint64_t address, const void *from, std::size_t bytes);

// Reads `bytes` at `address` in process `pid` into `to`. False when the
// kernel refuses or the read falls short.
bool read(std::int64_t pid, std::uint64_t address, void *to, std::size_t bytes);

// Reads `bytes` from process `pid` in one call: the concatenation of the
// `remote_count` iovecs `remote` (its addresses) into that of the
// `local_count` iovecs `local` (both at most IOV_MAX; both cover `bytes`).
// False when the kernel refuses or the read falls short.
bool readv(std::int64_t pid, const iovec *local, std::size_t local_count, const iovec *remote,
           std::size_t remote_count, std::size_t bytes);

}  // namespace iris::shm::cma
