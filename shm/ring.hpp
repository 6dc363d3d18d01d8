// A single-producer single-consumer byte ring in shared memory.
//
// One ring carries the records of one sender process to one receiver process.
// A record is one 8-byte header word, 8 spare bytes and the caller's bytes,
// padded to whole cache lines:
//
//   [stamp u32][length:29 kind:3 u32][spare u64][bytes ...][pad to 64]
//
// The stamp names the record's absolute position in the ring (`stamp_of`:
// its line number, always odd, so never the cleared word's zero; it repeats
// only every 128 GiB through one ring). The sender writes the bytes first
// and the whole header word last, in one release store; the receiver polls
// that word at its head position (acquire) and finds the length and kind in
// the same load. A small message therefore moves in one cache line and
// needs no separate doorbell or index update on the sender's side: the
// receiver reads nothing else. The spare bytes are the caller's too: its
// bytes start 16 bytes into the line (aligned as a memcpy likes them), and a
// caller with a short header of its own may start it in the spare bytes
// instead, leaving it 56 bytes of the first line. The shm transport's brief
// records do, so that a 32-byte message fits one line (bench/results/,
// stop 30); before, the length and kind filled those 8 bytes.
//
// The stamp word where the next record will start must be clear before a
// record is published, so that stale bytes of an earlier lap can never look
// like a valid stamp there. The sender clears the first word of the free
// lines ahead of its tail *after* each publish (`clear_ahead`, up to
// `clear_ahead_bytes` past the tail and never into lines the receiver has
// not consumed), so a record of a few lines finds the line after it clear
// already; only a record that runs past the cleared lines clears the word
// after it first, before its stamp. Clearing before the stamp put a store to
// a line of the ring's previous lap, another core's, ahead of every
// message's release store: one ping-pong of 0-64 B took 0.157 us with it and
// 0.112 us without (bench/results/, stop 26). It always keeps one line of
// slack so that the next record's word is free space. The receiver never
// writes into the data lines: each line only moves from the sender's cache
// to the receiver's. The head is published in its own cache line; the
// sender reads it only when its cached copy says the ring is full.
//
// Memory layout (all offsets from the ring's base; no pointers are stored):
//   ring_control (one cache line, written by the receiver only)
//   data[capacity]
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace iris::shm {

inline constexpr std::size_t cache_line = 64;
inline constexpr std::size_t record_header_size = 16;
// The bytes of a record's header that its writer may use (the 8 before the
// pointer reserve() returns; peek's reader sees them there too).
inline constexpr std::size_t record_spare_bytes = 8;
// How far past its tail a sender keeps the ring's stamp words clear.
inline constexpr std::size_t clear_ahead_bytes = 16 * cache_line;

// Written by the receiver (head), read by the sender when it runs out of room.
struct alignas(cache_line) ring_control {
  std::atomic<std::uint64_t> head;  // release by ring_receiver::consume,
                                    // acquire by ring_sender::reserve
  std::uint64_t capacity;           // set once at creation, read-only after
};
static_assert(sizeof(ring_control) == cache_line);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "shared-memory rings need address-free 64-bit atomics");

// data: the caller's bytes; skip: the rest of the ring's end, left empty
// (peek consumes it); compact and brief: the caller's bytes in a second and
// a third layout of its own, which peek reports (the shm transport's
// packets with shorter headers, device/transport_shm.cpp).
enum class record_kind : std::uint32_t { data = 1, skip = 2, compact = 3, brief = 4 };

// The record header word (above). A length needs 29 bits: a record carries
// at most half of a ring of at most 1 GiB (check_ring_capacity).
inline constexpr unsigned record_length_bits = 29;
inline constexpr std::uint32_t stamp_of(std::uint64_t position) {
  return static_cast<std::uint32_t>(position >> 5) | 1u;  // a line's position is even here
}
inline constexpr std::uint64_t record_word(std::uint64_t position, std::size_t length,
                                           record_kind kind) {
  const std::uint64_t high =
      length | (std::uint64_t{static_cast<std::uint32_t>(kind)} << record_length_bits);
  return stamp_of(position) | high << 32;
}

inline constexpr std::size_t round_to_line(std::size_t n) {
  return (n + cache_line - 1) & ~(cache_line - 1);
}

// Bytes a ring of `capacity` occupies in a segment.
inline constexpr std::size_t ring_footprint(std::size_t capacity) {
  return sizeof(ring_control) + capacity;
}

// Largest payload one record may carry in a ring of `capacity`: half the ring,
// so that a record and the line of slack always fit once the ring is drained.
inline constexpr std::size_t max_record_payload(std::size_t capacity) {
  return capacity / 2 - record_header_size;
}

// The sending side. Lives in the sender's private memory; one per peer.
// Only the sending thread may call it.
class ring_sender {
 public:
  ring_sender() = default;
  ring_sender(ring_control *control, std::byte *data)
      : control_(control), data_(data), capacity_(control->capacity) {}

  // Returns where to write `bytes` bytes of payload, or nullptr when the ring
  // has no room now (the caller retries after progress). `bytes` must be at
  // most max_record_payload(capacity).
  [[nodiscard]] std::byte *reserve(std::size_t bytes) {
    const std::size_t need = round_to_line(record_header_size + bytes);
    for (;;) {
      const std::size_t offset = tail_ & (capacity_ - 1);
      const std::size_t to_end = capacity_ - offset;
      const std::size_t want = need <= to_end ? need : to_end;
      if (!have_room(want + cache_line)) [[unlikely]] {
        return nullptr;  // + the next record's stamp
      }
      if (need <= to_end) [[likely]] {
        reserved_ = need;
        reserved_length_ = bytes;
        return data_ + offset + record_header_size;
      }
      // The record does not fit before the end: fill the rest with a skip
      // record and start again at offset 0.
      publish(tail_, to_end, record_kind::skip);
      tail_ += to_end;
    }
  }

  // Publishes the record reserved by the last reserve(), of `kind` data,
  // compact or brief.
  void commit(record_kind kind = record_kind::data) {
    const std::uint64_t tail = tail_;
    const std::size_t span = reserved_;
    tail_ = tail + span;
    publish(tail, span, kind, reserved_length_);
    clear_ahead();
  }

  // When the receiver has drained the ring and the tail is `from` bytes or
  // more into it, fills the rest with a skip record, so that the next
  // record starts at offset 0: a lone large message then reuses the lines
  // the last ones used, still in the caches, instead of the ring's colder
  // ones further on. Reads the receiver's head (another core's line): for
  // the start of a large message, not for every record.
  void rewind_if_drained(std::size_t from) {
    const std::size_t offset = tail_ & (capacity_ - 1);
    if (offset < from || offset < cache_line) return;
    head_cache_ = control_->head.load(std::memory_order_acquire);
    if (head_cache_ != tail_) return;
    const std::size_t to_end = capacity_ - offset;
    publish(tail_, to_end, record_kind::skip);
    tail_ += to_end;
    clear_ahead();
  }

  bool attached() const { return control_ != nullptr; }

 private:
  bool have_room(std::size_t want) {
    if (tail_ + want - head_cache_ <= capacity_) return true;
    head_cache_ = control_->head.load(std::memory_order_acquire);
    return tail_ + want - head_cache_ <= capacity_;
  }

  // Publishes the record of `span` bytes at `position` (a skip record fills
  // its span; a data record carries `length` bytes).
  void publish(std::uint64_t position, std::size_t span, record_kind kind, std::size_t length = 0) {
    if (kind == record_kind::skip) length = span - record_header_size;
    // Locals: with -fno-strict-aliasing every store into the ring would
    // otherwise reload the members.
    std::byte *const data = data_;
    const std::uint64_t mask = capacity_ - 1;
    std::byte *const record = data + (position & mask);
    // The next record's stamp word must be clear first (the release store
    // below orders this before the receiver can look there): clear_ahead
    // has done it unless this record ran past the lines it cleared.
    const std::uint64_t next = position + span;
    if (cleared_ <= next) [[unlikely]] {
      stamp_at(data + (next & mask)).store(0, std::memory_order_relaxed);
      cleared_ = next + cache_line;
    }
    // Pairs with the acquire load in ring_receiver::peek: the payload is
    // visible before the header word is.
    stamp_at(record).store(record_word(position, length, kind), std::memory_order_release);
  }

  // After a publish, off its path: clears the stamp word of each line from
  // the cleared frontier to clear_ahead_bytes past the tail, in lines the
  // receiver has consumed (by the cached head: at worst it clears fewer).
  // The stores drain behind the stamp's; the next record's release store
  // orders them before the receiver reaches them.
  void clear_ahead() {
    std::byte *const data = data_;
    const std::uint64_t mask = capacity_ - 1;
    const std::uint64_t limit = std::min(tail_ + clear_ahead_bytes, head_cache_ + capacity_);
    std::uint64_t at = cleared_;
    for (; at + cache_line <= limit; at += cache_line) {
      stamp_at(data + (at & mask)).store(0, std::memory_order_relaxed);
    }
    cleared_ = at;
  }

  static std::atomic_ref<std::uint64_t> stamp_at(std::byte *where) {
    return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t *>(where));
  }

  ring_control *control_ = nullptr;
  std::byte *data_ = nullptr;
  std::uint64_t capacity_ = 0;
  std::uint64_t tail_ = 0;        // next absolute position to write
  std::uint64_t head_cache_ = 0;  // last head read from control_
  // Every line from the tail to here starts with a clear stamp word (the
  // tail's own line always: publish keeps cleared_ past the tail).
  std::uint64_t cleared_ = 0;
  std::size_t reserved_ = 0;
  std::size_t reserved_length_ = 0;
};

// A record as the receiver sees it.
struct record_view {
  const std::byte *bytes;
  std::size_t length;
  record_kind kind;  // data, compact or brief, as committed
};

enum class peek_status { empty, record, corrupt };

// The receiving side. Lives in the receiver's private memory; one per peer.
// Only the receiving thread may call it.
class ring_receiver {
 public:
  ring_receiver() = default;
  ring_receiver(ring_control *control, std::byte *data)
      : control_(control), data_(data), capacity_(control->capacity) {}

  // Looks at the next record without consuming it. Skip records are consumed
  // here. `corrupt` means a stamped record whose length cannot be right.
  [[nodiscard]] peek_status peek(record_view &out) {
    for (;;) {
      const std::size_t offset = head_ & (capacity_ - 1);
      std::byte *record = data_ + offset;
      const std::uint64_t word =
          std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t *>(record))
              .load(std::memory_order_acquire);
      if (static_cast<std::uint32_t>(word) != stamp_of(head_)) return peek_status::empty;
      const auto high = static_cast<std::uint32_t>(word >> 32);
      const std::size_t length = high & ((1u << record_length_bits) - 1);
      const std::uint32_t kind = high >> record_length_bits;
      const std::size_t span = round_to_line(record_header_size + length);
      if (span > capacity_ - offset) return peek_status::corrupt;
      if (kind == static_cast<std::uint32_t>(record_kind::skip)) {
        release(span);
        continue;
      }
      if (kind != static_cast<std::uint32_t>(record_kind::data) &&
          kind != static_cast<std::uint32_t>(record_kind::compact) &&
          kind != static_cast<std::uint32_t>(record_kind::brief)) {
        return peek_status::corrupt;
      }
      out = {record + record_header_size, length, static_cast<record_kind>(kind)};
      current_span_ = span;
      return peek_status::record;
    }
  }

  // Consumes the record returned by the last successful peek().
  void consume() { release(current_span_); }

  // Whether a record is stamped at the head (ready()), or, between a peek()
  // and its consume(), right after the peeked one (next_ready()): whether
  // the sender has written more already.
  bool ready() const { return stamped(head_); }
  bool next_ready() const { return stamped(head_ + current_span_); }
  // ready() for a thread that may not be the one reading the ring now (the
  // reader changes its head under a lock of the caller's): asks at the head
  // last published to the sender. Stale by a consume in flight, it may say
  // true for a record just consumed (the caller's peek, once it holds the
  // reader, says empty), and false only when nothing was stamped there.
  bool ready_published() const { return stamped(control_->head.load(std::memory_order_relaxed)); }

  bool attached() const { return control_ != nullptr; }

 private:
  bool stamped(std::uint64_t position) const {
    return static_cast<std::uint32_t>(
               std::atomic_ref<std::uint64_t>(
                   *reinterpret_cast<std::uint64_t *>(data_ + (position & (capacity_ - 1))))
                   .load(std::memory_order_acquire)) == stamp_of(position);
  }

  void release(std::size_t span) {
    head_ += span;
    // Pairs with the acquire load in ring_sender::have_room.
    control_->head.store(head_, std::memory_order_release);
  }

  ring_control *control_ = nullptr;
  std::byte *data_ = nullptr;
  std::uint64_t capacity_ = 0;
  std::uint64_t head_ = 0;  // next absolute position to read
  std::size_t current_span_ = 0;
};

}  // namespace iris::shm
