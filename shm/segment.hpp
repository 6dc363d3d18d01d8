// One shared-memory segment per node: a header and one ring per ordered pair
// of local processes. It knows nothing of MPI.
//
// Lifecycle:
//   segment::create(...)   by one process of the node, before the others look
//   segment::attach(...)   by the others, after a barrier outside this class
//   mark_attached()        by every process once mapped; the last one removes
//                          the name, so nothing is left in /dev/shm even if a
//                          process dies later
//   ~segment()             unmaps
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "shm/bell.hpp"
#include "shm/ring.hpp"

namespace iris::shm {

// Setup-time failure; the message is one line saying what and why.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct segment_shape {
  int local_size = 0;
  std::size_t ring_capacity = 0;  // a power of two, at least 4 cache lines

  std::size_t total_bytes() const;
  std::size_t ring_offset(int sender, int receiver) const;
  std::size_t bell_offset(int index) const;
};

class segment {
 public:
  // `name` starts with '/', as shm_open wants. Throws shm::error when the
  // name exists, /dev/shm lacks room for the whole segment, or mapping fails.
  static segment create(const std::string &name, const segment_shape &shape);
  static segment attach(const std::string &name, const segment_shape &shape);

  segment(segment &&other) noexcept;
  segment &operator=(segment &&other) noexcept;
  segment(const segment &) = delete;
  segment &operator=(const segment &) = delete;
  ~segment();

  // Counts this process as attached; the last of local_size removes the name.
  void mark_attached();

  // Maps into this process now the pages of the rings local rank `index`
  // writes and reads, so that its first lap around each ring does not take
  // a page fault every 64 packets. Best effort: an older kernel faults as
  // it goes.
  void populate(int index) const;

  ring_sender sender(int from, int to) const;
  ring_receiver receiver(int from, int to) const;
  // Local rank `index`'s doorbell (shm/bell.hpp).
  bell &bell_of(int index) const;

  const segment_shape &shape() const { return shape_; }
  const std::string &name() const { return name_; }

 private:
  segment(std::string name, const segment_shape &shape, std::byte *base)
      : name_(std::move(name)), shape_(shape), base_(base) {}

  ring_control *control(int from, int to) const;

  std::string name_;
  segment_shape shape_;
  std::byte *base_ = nullptr;
};

// Throws shm::error unless `capacity` is a usable ring capacity.
void check_ring_capacity(std::size_t capacity);

}  // namespace iris::shm
