// The node segment of the scalable layout: one receive queue per process
// (shm/queue.hpp), reserved at start-up, and a pool of pair rings
// (shm/ring.hpp), reserved one ring at a time while the job runs. It knows
// nothing of MPI.
//
//   [header][queue 0]...[queue n-1][pool: ring slot 0 ... ring slot s-1]
//
// The file is as long as all of it, but only the header and the queues are
// backed at start-up (posix_fallocate); a ring slot is backed when a sender
// takes it, so a full /dev/shm makes ring_take return nothing instead of
// raising SIGBUS later. Every process maps the whole file (address space
// only) and keeps its descriptor, which outlives the name.
//
// Lifecycle:
//   node_segment::create(...)  by one process of the node, before the others look
//   node_segment::attach(...)  by the others, after a barrier outside this class
//   mark_attached()            by every process once mapped; the last removes the name
//   ~node_segment()            unmaps and closes
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "shm/bell.hpp"
#include "shm/queue.hpp"
#include "shm/ring.hpp"
#include "shm/segment.hpp"

namespace iris::shm {

struct node_shape {
  int local_size = 0;
  std::size_t queue_cells = 0;    // per process; a power of two
  std::size_t ring_capacity = 0;  // each pool ring; a power of two
  std::size_t pool_bytes = 0;     // most bytes of rings the pool may hold

  // Header and queues: what start-up reserves.
  std::size_t base_bytes() const;
  std::size_t queue_offset(int index) const;
  std::size_t bell_offset(int index) const;  // after the queues, in the base part
  // One ring's slot in the pool (whole pages, so each is reserved alone).
  std::size_t slot_bytes() const;
  std::uint64_t pool_slots() const;
  std::size_t slot_offset(std::uint64_t slot) const;
  std::size_t total_bytes() const;
};

class node_segment {
 public:
  // `name` starts with '/', as shm_open wants. Throws shm::error with one
  // line (what, how much, which setting) when the name exists, /dev/shm
  // cannot hold the header and queues, or mapping fails.
  static node_segment create(const std::string &name, const node_shape &shape);
  static node_segment attach(const std::string &name, const node_shape &shape);

  node_segment(node_segment &&other) noexcept;
  node_segment &operator=(node_segment &&other) noexcept;
  node_segment(const node_segment &) = delete;
  node_segment &operator=(const node_segment &) = delete;
  ~node_segment();

  // Counts this process as attached; the last of local_size removes the name.
  void mark_attached();

  // Binds the pages of queue `index` to the NUMA node this process runs on,
  // when the machine has more than one (hwloc). Says what it did, or why not.
  std::string place_queue(int index);

  // Local rank `index`'s doorbell (shm/bell.hpp).
  bell &bell_of(int index) const;

  queue_sender queue_to(int receiver) const;
  queue_receiver queue_of(int receiver) const;

  // Takes one ring from the pool and reserves its memory; returns its
  // offset, or nothing when the pool is spent or /dev/shm is full (then the
  // pool is closed for every process of the node). Any process may call it.
  std::optional<std::uint64_t> ring_take();
  // The two ends of the ring at `offset` (from ring_take).
  ring_sender ring_sender_at(std::uint64_t offset) const;
  ring_receiver ring_receiver_at(std::uint64_t offset) const;
  // Whether `offset` can be a ring's (checks what a peer announced).
  bool is_ring_offset(std::uint64_t offset) const;

  // Rings taken so far on this node, and whether the pool is closed.
  std::uint64_t rings_taken() const;
  bool pool_closed() const;

  const node_shape &shape() const { return shape_; }
  const std::string &name() const { return name_; }

 private:
  node_segment(std::string name, const node_shape &shape, std::byte *base, int fd)
      : name_(std::move(name)), shape_(shape), base_(base), fd_(fd) {}

  std::string name_;
  node_shape shape_;
  std::byte *base_ = nullptr;
  int fd_ = -1;
};

// Throws shm::error unless the shape's queue and pool settings are usable.
void check_node_shape(const node_shape &shape);

}  // namespace iris::shm
