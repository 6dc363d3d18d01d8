// A bounded lock-free multi-producer single-consumer queue of fixed cells in
// shared memory (Vyukov's bounded queue, with one sequence word per cell).
//
// Each receiving process owns one queue; any process of the node may push
// records into it. A record is one or more consecutive cells:
//
//   cell: [seq u64][length u32][from u16][kind u8][pad u8][payload 240 B]
//
// The first cell's header says who sent the record, its kind and its
// length; a record longer than one cell's payload continues in the payload
// of the next cells (their headers hold only the sequence word). The queue
// is FIFO as a whole, so the records of one sender stay in its order.
//
// Positions are absolute (they only grow). Cell `p % cells` is free for the
// record at position p when its seq is p, and holds a published record when
// its seq is p + 1; the consumer frees it for the next lap with p + cells.
// A producer claims k cells at position p with one compare-and-swap of the
// tail from p to p + k, after seeing the last of them (p + k - 1) free: the
// consumer frees cells strictly in order, so the k - 1 before it are free
// too. The producer then fills the cells and publishes the first one last;
// the consumer only ever looks at the first cell of the next record, so
// continuation cells need no handshake of their own.
//
// No atomic read-modify-write touches a cell: producers contend only on the
// tail word, and the consumer writes only the sequence words it frees.
//
// Memory layout (all offsets from the queue's base; no pointers are stored):
//   queue_control (one cache line: the tail, written by producers)
//   cell[cells]   (queue_cell_size bytes each, cache-line aligned)
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "shm/ring.hpp"

namespace iris::shm {

inline constexpr std::size_t queue_cell_size = 256;
inline constexpr std::size_t queue_cell_header = 16;
inline constexpr std::size_t queue_cell_payload = queue_cell_size - queue_cell_header;

// Written by every producer (tail), never by the consumer.
struct alignas(cache_line) queue_control {
  std::atomic<std::uint64_t> tail;  // compare-exchange by queue_sender::push
  std::uint64_t cells;              // set once at creation, read-only after
};
static_assert(sizeof(queue_control) == cache_line);

struct alignas(cache_line) queue_cell {
  std::atomic<std::uint64_t> seq;  // release by queue_sender::push (first cell of a
                                   // record: published) and by queue_receiver::consume
                                   // (freed); acquire by both
  std::uint32_t length;            // first cell: the record's bytes
  std::uint16_t from;              // first cell: the sender's index on the node
  std::uint8_t kind;               // first cell: what the record is (the caller's)
  std::uint8_t pad;
  std::byte payload[queue_cell_payload];
};
static_assert(sizeof(queue_cell) == queue_cell_size);
static_assert(offsetof(queue_cell, payload) == queue_cell_header);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "shared-memory queues need address-free 64-bit atomics");

// Bytes a queue of `cells` cells occupies in a segment.
inline constexpr std::size_t queue_footprint(std::size_t cells) {
  return sizeof(queue_control) + cells * queue_cell_size;
}

// Cells a record of `bytes` bytes takes.
inline constexpr std::size_t queue_cells_for(std::size_t bytes) {
  return bytes <= queue_cell_payload ? 1 : (bytes + queue_cell_payload - 1) / queue_cell_payload;
}

// Largest record a queue of `cells` cells carries: half the queue, so that
// a long record never waits for a queue emptied to its last cell.
inline constexpr std::size_t queue_max_record(std::size_t cells) {
  return cells / 2 * queue_cell_payload;
}

// Lays out an empty queue of `cells` cells (a power of two) at `base`, zeroed
// or not. Only the creator calls it, before any other process can see it.
inline void queue_init(std::byte *base, std::size_t cells) {
  auto *control = new (base) queue_control{};
  control->cells = cells;
  auto *cell = reinterpret_cast<queue_cell *>(base + sizeof(queue_control));
  for (std::size_t i = 0; i < cells; ++i) {
    new (&cell[i].seq) std::atomic<std::uint64_t>(i);
  }
}

// The producing side: any process of the node, any number of them at once;
// within one process only one thread at a time (the device's thread).
class queue_sender {
 public:
  queue_sender() = default;
  explicit queue_sender(std::byte *base)
      : control_(reinterpret_cast<queue_control *>(base)),
        cells_(reinterpret_cast<queue_cell *>(base + sizeof(queue_control))),
        count_(control_->cells) {}

  // Copies one record, the concatenation of `parts`, into the queue.
  // False: no room now (the consumer always drains: call again later).
  // The record must be at most queue_max_record(cells) bytes.
  [[nodiscard]] bool push(std::uint16_t from, std::uint8_t kind, std::span<const iovec> parts) {
    std::size_t bytes = 0;
    for (const iovec &part : parts) bytes += part.iov_len;
    const std::uint64_t k = queue_cells_for(bytes);
    std::uint64_t position = control_->tail.load(std::memory_order_relaxed);
    for (;;) {
      // Pairs with the release store in queue_receiver::consume: the
      // consumer is done with this cell, and with every cell before it.
      const std::uint64_t seq = cell(position + k - 1).seq.load(std::memory_order_acquire);
      const auto lag = static_cast<std::int64_t>(seq - (position + k - 1));
      if (lag < 0) return false;  // not yet consumed from the previous lap: full
      if (lag == 0 &&
          control_->tail.compare_exchange_weak(position, position + k, std::memory_order_relaxed,
                                               std::memory_order_relaxed)) {
        break;
      }
      // Another producer moved the tail (the failed exchange reloaded it),
      // or this one read a stale tail: look again.
      if (lag > 0) position = control_->tail.load(std::memory_order_relaxed);
    }
    fill(position, k, parts);
    queue_cell &first = cell(position);
    first.length = static_cast<std::uint32_t>(bytes);
    first.from = from;
    first.kind = kind;
    // Pairs with the acquire load in queue_receiver::peek: the header, the
    // payload and every continuation cell are visible before the record is.
    first.seq.store(position + 1, std::memory_order_release);
    return true;
  }

  bool attached() const { return control_ != nullptr; }

 private:
  queue_cell &cell(std::uint64_t position) const { return cells_[position & (count_ - 1)]; }

  void fill(std::uint64_t position, std::uint64_t k, std::span<const iovec> parts) {
    std::uint64_t index = 0;
    std::size_t used = 0;  // bytes of cell `index` filled
    for (const iovec &part : parts) {
      const auto *from = static_cast<const std::byte *>(part.iov_base);
      std::size_t left = part.iov_len;
      while (left > 0) {
        if (used == queue_cell_payload) {
          // Marked full for anyone looking; only the first cell's seq
          // publishes the record.
          cell(position + index + 1).seq.store(position + index + 2, std::memory_order_relaxed);
          ++index, used = 0;
        }
        const std::size_t n = std::min(left, queue_cell_payload - used);
        std::memcpy(cell(position + index).payload + used, from, n);
        used += n, from += n, left -= n;
      }
    }
    for (++index; index < k; ++index) {
      cell(position + index).seq.store(position + index + 1, std::memory_order_relaxed);
    }
  }

  queue_control *control_ = nullptr;
  queue_cell *cells_ = nullptr;
  std::uint64_t count_ = 0;
};

// A record as the consumer sees it.
struct queue_record {
  std::uint16_t from;
  std::uint8_t kind;
  const std::byte *bytes;
  std::size_t length;
};

// The consuming side. Lives in the receiver's private memory; only the
// receiving process (its device thread) may call it.
class queue_receiver {
 public:
  queue_receiver() = default;
  explicit queue_receiver(std::byte *base)
      : control_(reinterpret_cast<queue_control *>(base)),
        cells_(reinterpret_cast<queue_cell *>(base + sizeof(queue_control))),
        count_(control_->cells),
        bounce_(queue_max_record(count_)) {}

  // Looks at the next record without consuming it. A record of one cell is
  // read in place; a longer one is gathered into a private buffer.
  // `corrupt`: a published record whose length cannot be right.
  [[nodiscard]] peek_status peek(queue_record &out) {
    queue_cell &first = cell(head_);
    if (first.seq.load(std::memory_order_acquire) != head_ + 1) return peek_status::empty;
    const std::size_t length = first.length;
    if (length > bounce_.size()) return peek_status::corrupt;
    current_cells_ = queue_cells_for(length);
    const std::byte *bytes = first.payload;
    if (current_cells_ > 1) {
      std::size_t done = 0;
      for (std::uint64_t i = 0; done < length; ++i) {
        const std::size_t n = std::min(length - done, queue_cell_payload);
        std::memcpy(bounce_.data() + done, cell(head_ + i).payload, n);
        done += n;
      }
      bytes = bounce_.data();
    }
    out = {first.from, first.kind, bytes, length};
    return peek_status::record;
  }

  // Consumes the record returned by the last successful peek(): frees its
  // cells in order.
  void consume() {
    for (std::uint64_t i = 0; i < current_cells_; ++i) {
      // Pairs with the acquire load in queue_sender::push.
      cell(head_ + i).seq.store(head_ + i + count_, std::memory_order_release);
    }
    head_ += current_cells_;
  }

  bool attached() const { return control_ != nullptr; }

 private:
  queue_cell &cell(std::uint64_t position) const { return cells_[position & (count_ - 1)]; }

  queue_control *control_ = nullptr;
  queue_cell *cells_ = nullptr;
  std::uint64_t count_ = 0;
  std::uint64_t head_ = 0;  // next absolute position to read
  std::uint64_t current_cells_ = 0;
  std::vector<std::byte> bounce_;
};

}  // namespace iris::shm
