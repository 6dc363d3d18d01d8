#include "shm/cma.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>

namespace iris::shm::cma {
namespace {

// The word every process publishes the address of: "IrisCMA!".
const std::uint64_t probe_word = 0x49726973434d4121ULL;

}  // namespace

std::string card() {
  char text[64];
  std::snprintf(text, sizeof(text), "%llx:%llx", static_cast<unsigned long long>(getpid()),
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(&probe_word)));
  return text;
}

bool permitted(const std::string &card) {
  unsigned long long pid = 0;
  unsigned long long address = 0;
  if (std::sscanf(card.c_str(), "%llx:%llx", &pid, &address) != 2) return false;
  std::uint64_t word = 0;
  return read(static_cast<std::int64_t>(pid), address, &word, sizeof(word)) && word == probe_word;
}

std::int64_t card_pid(const std::string &card) {
  unsigned long long pid = 0;
  unsigned long long address = 0;
  if (std::sscanf(card.c_str(), "%llx:%llx", &pid, &address) != 2) return 0;
  return static_cast<std::int64_t>(pid);
}

bool write(std::int64_t pid, std::uint64_t address, const void *from, std::size_t bytes) {
  const auto *out = static_cast<const std::byte *>(from);
  std::size_t done = 0;
  while (done < bytes) {
    iovec local{const_cast<std::byte *>(out + done), bytes - done};
    iovec remote{reinterpret_cast<void *>(address + done), bytes - done};
    const ssize_t n = process_vm_writev(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool read(std::int64_t pid, std::uint64_t address, void *to, std::size_t bytes) {
  auto *into = static_cast<std::byte *>(to);
  std::size_t done = 0;
  while (done < bytes) {
    iovec local{into + done, bytes - done};
    iovec remote{reinterpret_cast<void *>(address + done), bytes - done};
    const ssize_t n = process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool readv(std::int64_t pid, const iovec *local, std::size_t local_count, const iovec *remote,
           std::size_t remote_count, std::size_t bytes) {
  // A short count means a fault part-way (an unmapped remote page): the
  // caller does not trust any of it.
  const ssize_t n =
      process_vm_readv(static_cast<pid_t>(pid), local, local_count, remote, remote_count, 0);
  return n >= 0 && static_cast<std::size_t>(n) == bytes;
}

}  // namespace iris::shm::cma
