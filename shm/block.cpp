#include "shm/block.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shm/segment.hpp"

namespace iris::shm {

void *block_create(const std::string &name, std::size_t bytes) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    throw error("cannot create shared-memory block " + name + ": " + std::strerror(errno));
  }
  int err = ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
  if (err == 0) err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  void *base = MAP_FAILED;
  if (err == 0) {
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) err = errno;
  }
  close(fd);
  if (err != 0) {
    shm_unlink(name.c_str());
    throw error("cannot reserve " + std::to_string(bytes) + " B in /dev/shm for block " + name +
                ": " + std::strerror(err));
  }
  return base;
}

void *block_map(const std::string &name, std::size_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return nullptr;
  struct stat st {};
  void *base = MAP_FAILED;
  if (fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) == bytes) {
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  close(fd);
  return base == MAP_FAILED ? nullptr : base;
}

void block_unmap(void *base, std::size_t bytes) {
  munmap(base, bytes);
}

void block_remove(const std::string &name) {
  shm_unlink(name.c_str());
}

}  // namespace iris::shm
