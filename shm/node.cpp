#include "shm/node.hpp"

#include <fcntl.h>
#include <hwloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <utility>

namespace iris::shm {
namespace {

constexpr std::uint64_t node_magic = 0x49726973'53484d32ULL;  // "IrisSHM2"
constexpr std::uint32_t node_layout_version = 2;              // 2: the bells after the queues
constexpr std::size_t page = 4096;

// The first two cache lines of a node segment.
struct alignas(cache_line) node_header {
  std::atomic<std::uint64_t> magic;  // release by create() when the rest is
                                     // ready; acquire by attach()
  std::uint32_t version;
  std::uint32_t local_size;
  std::uint64_t queue_cells;
  std::uint64_t ring_capacity;
  std::uint64_t pool_bytes;
  std::atomic<std::uint32_t> attached;  // fetch_add by mark_attached()
  // Every process that takes a ring writes these: their own line.
  alignas(cache_line) std::atomic<std::uint64_t> pool_next;  // fetch_add by ring_take
  std::atomic<std::uint32_t> pool_closed;                    // release by ring_take when /dev/shm
                                                             // is full; acquire by ring_take
};
static_assert(sizeof(node_header) == 2 * cache_line);

constexpr std::size_t round_to_page(std::size_t n) {
  return (n + page - 1) & ~(page - 1);
}

std::string mib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", bytes / (1024.0 * 1024.0));
  return text;
}

std::byte *map_fd(int fd, std::size_t bytes, const std::string &name) {
  void *base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    throw error("cannot map shared-memory segment " + name + " (" + mib(double(bytes)) +
                "): " + std::strerror(errno));
  }
  return static_cast<std::byte *>(base);
}

// Maps reserved pages into this process now: the header and every queue at
// attach, a pooled ring when a pair takes it. Each sender writes one cell
// here and there in every receiver's queue, so without this every rank
// takes a page fault for almost every packet of its first lap around each
// queue (in the VM this was measured on, a 64-rank all-pairs exchange ran
// 16x slower: 2.0 s instead of 0.12 s for ten rounds), and one every 64
// small packets of a ring's first lap. This allocates nothing.
void populate_pages(std::byte *base, std::size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  madvise(base, bytes, MADV_POPULATE_WRITE);  // an older kernel: faults as it goes
#else
  (void)base, (void)bytes;
#endif
}

bool power_of_two(std::size_t n) {
  return n != 0 && (n & (n - 1)) == 0;
}

node_header *header_of(std::byte *base) {
  return reinterpret_cast<node_header *>(base);
}

// NUMA nodes of this machine, from sysfs (cheaper than loading hwloc in
// every rank of a 256-rank node just to learn that there is one).
int numa_nodes() {
  int n = 0;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && std::isdigit(name[4])) ++n;
  }
  return n;
}

}  // namespace

void check_node_shape(const node_shape &shape) {
  check_ring_capacity(shape.ring_capacity);
  if (!power_of_two(shape.queue_cells) || shape.queue_cells < 16 ||
      shape.queue_cells > (std::size_t{1} << 24)) {
    throw error("IRIS_SHM_QUEUE_CELLS=" + std::to_string(shape.queue_cells) +
                " is not a power of two between 16 and 16777216");
  }
}

std::size_t node_shape::base_bytes() const {
  return round_to_page(bell_offset(local_size));
}

std::size_t node_shape::bell_offset(int index) const {
  return sizeof(node_header) + static_cast<std::size_t>(local_size) * queue_footprint(queue_cells) +
         static_cast<std::size_t>(index) * sizeof(bell);
}

std::size_t node_shape::queue_offset(int index) const {
  return sizeof(node_header) + static_cast<std::size_t>(index) * queue_footprint(queue_cells);
}

std::size_t node_shape::slot_bytes() const {
  return round_to_page(ring_footprint(ring_capacity));
}

std::uint64_t node_shape::pool_slots() const {
  return pool_bytes / slot_bytes();
}

std::size_t node_shape::slot_offset(std::uint64_t slot) const {
  return base_bytes() + static_cast<std::size_t>(slot) * slot_bytes();
}

std::size_t node_shape::total_bytes() const {
  return base_bytes() + static_cast<std::size_t>(pool_slots()) * slot_bytes();
}

node_segment node_segment::create(const std::string &name, const node_shape &shape) {
  check_node_shape(shape);
  const std::size_t bytes = shape.base_bytes();
  const std::string advice = "; enlarge /dev/shm or lower IRIS_SHM_QUEUE_CELLS";
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) == 0) {
    const double free_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
    if (static_cast<double>(bytes) > free_bytes) {
      throw error("/dev/shm has " + mib(free_bytes) + " free but the receive queues of " +
                  std::to_string(shape.local_size) + " ranks in " + name + " need " +
                  mib(static_cast<double>(bytes)) + advice);
    }
  }
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    throw error("cannot create shared-memory segment " + name + ": " + std::strerror(errno));
  }
  // The file spans the pool too, but only the queues are reserved now; the
  // pool's pages are reserved ring by ring (ring_take).
  int err = ftruncate(fd, static_cast<off_t>(shape.total_bytes())) == 0 ? 0 : errno;
  if (err == 0) err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err != 0) {
    close(fd);
    shm_unlink(name.c_str());
    throw error("cannot reserve " + mib(double(bytes)) + " in /dev/shm for the receive queues of " +
                std::to_string(shape.local_size) + " ranks in " + name + ": " + std::strerror(err) +
                advice);
  }
  std::byte *base = nullptr;
  try {
    base = map_fd(fd, shape.total_bytes(), name);
  } catch (...) {
    close(fd);
    shm_unlink(name.c_str());
    throw;
  }
  auto *header = new (base) node_header{};
  header->version = node_layout_version;
  header->local_size = static_cast<std::uint32_t>(shape.local_size);
  header->queue_cells = shape.queue_cells;
  header->ring_capacity = shape.ring_capacity;
  header->pool_bytes = shape.pool_bytes;
  for (int i = 0; i < shape.local_size; ++i) {
    queue_init(base + shape.queue_offset(i), shape.queue_cells);
    new (base + shape.bell_offset(i)) bell{};
  }
  // Pairs with the acquire load in attach(): everything above is visible.
  header->magic.store(node_magic, std::memory_order_release);
  return node_segment(name, shape, base, fd);
}

node_segment node_segment::attach(const std::string &name, const node_shape &shape) {
  check_node_shape(shape);
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    throw error("cannot open shared-memory segment " + name + ": " + std::strerror(errno));
  }
  struct stat st {};
  const std::size_t bytes = shape.total_bytes();
  if (fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != bytes) {
    close(fd);
    throw error("shared-memory segment " + name + " has the wrong size (" +
                std::to_string(st.st_size) + " B, expected " + std::to_string(bytes) + " B)");
  }
  std::byte *base = nullptr;
  try {
    base = map_fd(fd, bytes, name);
  } catch (...) {
    close(fd);
    throw;
  }
  node_header *header = header_of(base);
  const bool matches = header->magic.load(std::memory_order_acquire) == node_magic &&
                       header->version == node_layout_version &&
                       header->local_size == static_cast<std::uint32_t>(shape.local_size) &&
                       header->queue_cells == shape.queue_cells &&
                       header->ring_capacity == shape.ring_capacity &&
                       header->pool_bytes == shape.pool_bytes;
  if (!matches) {
    munmap(base, bytes);
    close(fd);
    throw error("shared-memory segment " + name +
                " was made by another layout or job (magic, version or size differ)");
  }
  populate_pages(base, shape.base_bytes());
  return node_segment(name, shape, base, fd);
}

node_segment::node_segment(node_segment &&other) noexcept
    : name_(std::move(other.name_)),
      shape_(other.shape_),
      base_(std::exchange(other.base_, nullptr)),
      fd_(std::exchange(other.fd_, -1)) {}

node_segment &node_segment::operator=(node_segment &&other) noexcept {
  if (this != &other) {
    this->~node_segment();
    new (this) node_segment(std::move(other));
  }
  return *this;
}

node_segment::~node_segment() {
  if (base_ != nullptr) munmap(base_, shape_.total_bytes());
  if (fd_ >= 0) close(fd_);
}

void node_segment::mark_attached() {
  // The last process to attach removes the name: everyone has it mapped and
  // keeps its descriptor for reserving pool pages.
  const auto before = header_of(base_)->attached.fetch_add(1, std::memory_order_acq_rel);
  if (before + 1 == static_cast<std::uint32_t>(shape_.local_size)) shm_unlink(name_.c_str());
}

std::string node_segment::place_queue(int index) {
  const int nodes = numa_nodes();
  if (nodes <= 1) return "one NUMA node";
  hwloc_topology_t topology = nullptr;
  if (hwloc_topology_init(&topology) != 0) return "hwloc_topology_init failed";
  std::unique_ptr<hwloc_topology, void (*)(hwloc_topology_t)> owner(topology,
                                                                    hwloc_topology_destroy);
  if (hwloc_topology_load(topology) != 0) return "hwloc cannot load the topology";
  hwloc_nodeset_t where = hwloc_bitmap_alloc();
  std::string said = "queue not placed";
  if (hwloc_get_last_cpu_location(topology, where, HWLOC_CPUBIND_THREAD) == 0) {
    hwloc_cpuset_to_nodeset(topology, where, where);
    std::byte *queue = base_ + shape_.queue_offset(index);
    const std::size_t begin = reinterpret_cast<std::uintptr_t>(queue) & ~(page - 1);
    const std::size_t end = round_to_page(reinterpret_cast<std::uintptr_t>(queue) +
                                          queue_footprint(shape_.queue_cells));
    if (hwloc_set_area_membind(topology, reinterpret_cast<void *>(begin), end - begin, where,
                               HWLOC_MEMBIND_BIND,
                               HWLOC_MEMBIND_MIGRATE | HWLOC_MEMBIND_BYNODESET) == 0) {
      char text[64];
      hwloc_bitmap_snprintf(text, sizeof(text), where);
      said = "queue on NUMA node " + std::string(text);
    }
  }
  hwloc_bitmap_free(where);
  return said;
}

bell &node_segment::bell_of(int index) const {
  return *reinterpret_cast<bell *>(base_ + shape_.bell_offset(index));
}

queue_sender node_segment::queue_to(int receiver) const {
  return queue_sender(base_ + shape_.queue_offset(receiver));
}

queue_receiver node_segment::queue_of(int receiver) const {
  return queue_receiver(base_ + shape_.queue_offset(receiver));
}

std::optional<std::uint64_t> node_segment::ring_take() {
  node_header *header = header_of(base_);
  // Pairs with the release store below, in whichever process found /dev/shm full.
  if (header->pool_closed.load(std::memory_order_acquire) != 0) return std::nullopt;
  const std::uint64_t slot = header->pool_next.fetch_add(1, std::memory_order_relaxed);
  if (slot >= shape_.pool_slots()) return std::nullopt;
  const std::size_t offset = shape_.slot_offset(slot);
  // Reserve the pages before anyone touches them: a full /dev/shm is an
  // error here, never a SIGBUS on first touch.
  if (posix_fallocate(fd_, static_cast<off_t>(offset), static_cast<off_t>(shape_.slot_bytes())) !=
      0) {
    header->pool_closed.store(1, std::memory_order_release);
    return std::nullopt;
  }
  // Fresh pages read as zero: every stamp is clear. Only the capacity needs
  // writing; the queue record that announces the ring publishes it.
  auto *control = new (base_ + offset) ring_control{};
  control->capacity = shape_.ring_capacity;
  return offset;
}

bool node_segment::is_ring_offset(std::uint64_t offset) const {
  return offset >= shape_.base_bytes() && offset < shape_.total_bytes() &&
         (offset - shape_.base_bytes()) % shape_.slot_bytes() == 0;
}

ring_sender node_segment::ring_sender_at(std::uint64_t offset) const {
  populate_pages(base_ + offset, shape_.slot_bytes());
  auto *c = reinterpret_cast<ring_control *>(base_ + offset);
  return ring_sender(c, reinterpret_cast<std::byte *>(c) + sizeof(ring_control));
}

ring_receiver node_segment::ring_receiver_at(std::uint64_t offset) const {
  populate_pages(base_ + offset, shape_.slot_bytes());
  auto *c = reinterpret_cast<ring_control *>(base_ + offset);
  return ring_receiver(c, reinterpret_cast<std::byte *>(c) + sizeof(ring_control));
}

std::uint64_t node_segment::rings_taken() const {
  const std::uint64_t next = header_of(base_)->pool_next.load(std::memory_order_relaxed);
  return std::min(next, shape_.pool_slots());
}

bool node_segment::pool_closed() const {
  return header_of(base_)->pool_closed.load(std::memory_order_acquire) != 0;
}

}  // namespace iris::shm
