#include "shm/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

namespace iris::shm {
namespace {

constexpr std::uint64_t segment_magic = 0x49726973'53484d31ULL;  // "IrisSHM1"
constexpr std::uint32_t layout_version = 2;                      // 2: the bells after the rings

// The first cache line of a segment.
struct alignas(cache_line) segment_header {
  std::atomic<std::uint64_t> magic;  // release by create() when the rest is
                                     // ready; acquire by attach()
  std::uint32_t version;
  std::uint32_t local_size;
  std::uint64_t ring_capacity;
  std::uint64_t total_bytes;
  std::atomic<std::uint32_t> attached;  // fetch_add by mark_attached()
};
static_assert(sizeof(segment_header) == cache_line);

std::string describe_errno(int err) {
  return std::string(std::strerror(err));
}

std::string mib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", bytes / (1024.0 * 1024.0));
  return text;
}

// A clear error before allocating, when /dev/shm cannot hold the segment.
void check_free_space(const std::string &name, std::size_t bytes) {
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) != 0) return;  // fallocate will tell
  const double free_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  if (static_cast<double>(bytes) > free_bytes) {
    throw error("/dev/shm has " + mib(free_bytes) + " free but the shared-memory segment " + name +
                " needs " + mib(static_cast<double>(bytes)) +
                "; enlarge /dev/shm or lower IRIS_SHM_RING_SIZE");
  }
}

std::byte *map_fd(int fd, std::size_t bytes, const std::string &name) {
  void *base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    throw error("cannot map shared-memory segment " + name + " (" + mib(double(bytes)) +
                "): " + describe_errno(errno));
  }
  return static_cast<std::byte *>(base);
}

}  // namespace

void check_ring_capacity(std::size_t capacity) {
  const bool power_of_two = capacity != 0 && (capacity & (capacity - 1)) == 0;
  if (!power_of_two || capacity < 4 * cache_line || capacity > (std::size_t{1} << 30)) {
    throw error("shared-memory ring size " + std::to_string(capacity) +
                " is not a power of two between 256 B and 1 GiB");
  }
}

std::size_t segment_shape::total_bytes() const {
  const auto n = static_cast<std::size_t>(local_size);
  return sizeof(segment_header) + n * n * ring_footprint(ring_capacity) + n * sizeof(bell);
}

std::size_t segment_shape::bell_offset(int index) const {
  const auto n = static_cast<std::size_t>(local_size);
  return sizeof(segment_header) + n * n * ring_footprint(ring_capacity) +
         static_cast<std::size_t>(index) * sizeof(bell);
}

std::size_t segment_shape::ring_offset(int sender, int receiver) const {
  const auto index = static_cast<std::size_t>(sender) * static_cast<std::size_t>(local_size) +
                     static_cast<std::size_t>(receiver);
  return sizeof(segment_header) + index * ring_footprint(ring_capacity);
}

segment segment::create(const std::string &name, const segment_shape &shape) {
  check_ring_capacity(shape.ring_capacity);
  const std::size_t bytes = shape.total_bytes();
  check_free_space(name, bytes);
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    throw error("cannot create shared-memory segment " + name + ": " + describe_errno(errno));
  }
  // Reserve every page now: a full /dev/shm must fail here, not as a SIGBUS
  // on first touch in the middle of a transfer.
  int err = ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
  if (err == 0) err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err != 0) {
    close(fd);
    shm_unlink(name.c_str());
    throw error("cannot reserve " + mib(double(bytes)) + " in /dev/shm for segment " + name + ": " +
                describe_errno(err) + "; enlarge /dev/shm or lower IRIS_SHM_RING_SIZE");
  }
  std::byte *base = nullptr;
  try {
    base = map_fd(fd, bytes, name);
  } catch (...) {
    close(fd);
    shm_unlink(name.c_str());
    throw;
  }
  close(fd);
  auto *header = new (base) segment_header{};
  header->version = layout_version;
  header->local_size = static_cast<std::uint32_t>(shape.local_size);
  header->ring_capacity = shape.ring_capacity;
  header->total_bytes = bytes;
  for (int from = 0; from < shape.local_size; ++from) {
    for (int to = 0; to < shape.local_size; ++to) {
      auto *control = new (base + shape.ring_offset(from, to)) ring_control{};
      control->capacity = shape.ring_capacity;
    }
  }
  for (int i = 0; i < shape.local_size; ++i) new (base + shape.bell_offset(i)) bell{};
  // Pairs with the acquire load in attach(): everything above is visible.
  header->magic.store(segment_magic, std::memory_order_release);
  return segment(name, shape, base);
}

segment segment::attach(const std::string &name, const segment_shape &shape) {
  check_ring_capacity(shape.ring_capacity);
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    throw error("cannot open shared-memory segment " + name + ": " + describe_errno(errno));
  }
  struct stat st {};
  const std::size_t bytes = shape.total_bytes();
  if (fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != bytes) {
    close(fd);
    throw error("shared-memory segment " + name + " has the wrong size (" +
                std::to_string(st.st_size) + " B, expected " + std::to_string(bytes) + " B)");
  }
  std::byte *base = map_fd(fd, bytes, name);
  close(fd);
  auto *header = reinterpret_cast<segment_header *>(base);
  const bool matches = header->magic.load(std::memory_order_acquire) == segment_magic &&
                       header->version == layout_version &&
                       header->local_size == static_cast<std::uint32_t>(shape.local_size) &&
                       header->ring_capacity == shape.ring_capacity;
  if (!matches) {
    munmap(base, bytes);
    throw error("shared-memory segment " + name +
                " was made by another layout or job (magic, version or size differ)");
  }
  return segment(name, shape, base);
}

segment::segment(segment &&other) noexcept
    : name_(std::move(other.name_)),
      shape_(other.shape_),
      base_(std::exchange(other.base_, nullptr)) {}

segment &segment::operator=(segment &&other) noexcept {
  if (this != &other) {
    this->~segment();
    new (this) segment(std::move(other));
  }
  return *this;
}

segment::~segment() {
  if (base_ != nullptr) munmap(base_, shape_.total_bytes());
}

void segment::mark_attached() {
  auto *header = reinterpret_cast<segment_header *>(base_);
  // The last process to attach removes the name: everyone has it mapped now.
  const auto before = header->attached.fetch_add(1, std::memory_order_acq_rel);
  if (before + 1 == static_cast<std::uint32_t>(shape_.local_size)) {
    // A failure here is not fatal: the launcher removes leftovers by prefix.
    shm_unlink(name_.c_str());
  }
}

void segment::populate(int index) const {
#ifdef MADV_POPULATE_WRITE
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const auto populate_ring = [&](int from, int to) {
    const std::size_t begin = shape_.ring_offset(from, to) & ~(page - 1);  // madvise wants a page
    const std::size_t end = shape_.ring_offset(from, to) + ring_footprint(shape_.ring_capacity);
    madvise(base_ + begin, end - begin, MADV_POPULATE_WRITE);
  };
  for (int peer = 0; peer < shape_.local_size; ++peer) {
    if (peer == index) continue;
    populate_ring(index, peer);
    populate_ring(peer, index);
  }
#else
  (void)index;
#endif
}

ring_control *segment::control(int from, int to) const {
  return reinterpret_cast<ring_control *>(base_ + shape_.ring_offset(from, to));
}

bell &segment::bell_of(int index) const {
  return *reinterpret_cast<bell *>(base_ + shape_.bell_offset(index));
}

ring_sender segment::sender(int from, int to) const {
  ring_control *c = control(from, to);
  return ring_sender(c, reinterpret_cast<std::byte *>(c) + sizeof(ring_control));
}

ring_receiver segment::receiver(int from, int to) const {
  ring_control *c = control(from, to);
  return ring_receiver(c, reinterpret_cast<std::byte *>(c) + sizeof(ring_control));
}

}  // namespace iris::shm
