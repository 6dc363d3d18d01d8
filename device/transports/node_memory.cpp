// node_memory.hpp over shm/'s blocks and CMA.
#include "device/transports/node_memory.hpp"

#include "device/runtime/runtime.hpp"
#include "pmi/pmi.hpp"
#include "shm/block.hpp"
#include "shm/cma.hpp"
#include "shm/segment.hpp"

namespace iris::device {

std::string node_memory_prefix() {
  return "/" + pmi::shm_name_prefix(*rt->pmi);
}

void *node_memory_create(const std::string &name, std::size_t bytes, std::string &why) {
  try {
    return shm::block_create(name, bytes);
  } catch (const shm::error &e) {
    why = e.what();
    return nullptr;
  }
}

void *node_memory_map(const std::string &name, std::size_t bytes) {
  return shm::block_map(name, bytes);
}

void node_memory_unmap(void *base, std::size_t bytes) {
  shm::block_unmap(base, bytes);
}

void node_memory_remove(const std::string &name) {
  shm::block_remove(name);
}

bool node_memory_read(std::int64_t pid, std::uint64_t address, void *to, std::size_t bytes) {
  return shm::cma::read(pid, address, to, bytes);
}

bool node_memory_write(std::int64_t pid, std::uint64_t address, const void *from,
                       std::size_t bytes) {
  return shm::cma::write(pid, address, from, bytes);
}

}  // namespace iris::device
