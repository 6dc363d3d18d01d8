// The shared-memory ring: single-threaded edge cases, then a seeded
// two-thread stress test that checks every byte and the order (run it under
// ThreadSanitizer too: the sanitizer pass of the suite does).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "shm/ring.hpp"

namespace iris::shm {
namespace {

// A ring in ordinary memory, laid out as in a segment.
class test_ring {
 public:
  explicit test_ring(std::size_t capacity)
      : memory_(
            static_cast<std::byte *>(std::aligned_alloc(cache_line, ring_footprint(capacity)))) {
    std::memset(memory_.get(), 0, ring_footprint(capacity));
    control_ = new (memory_.get()) ring_control{};
    control_->capacity = capacity;
  }
  ring_sender sender() { return ring_sender(control_, memory_.get() + sizeof(ring_control)); }
  ring_receiver receiver() { return ring_receiver(control_, memory_.get() + sizeof(ring_control)); }
  std::byte *data() const { return memory_.get() + sizeof(ring_control); }

 private:
  struct free_deleter {
    void operator()(std::byte *p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, free_deleter> memory_;
  ring_control *control_ = nullptr;
};

void put(ring_sender &tx, std::size_t bytes, int salt) {
  std::byte *p = tx.reserve(bytes);
  ASSERT_NE(p, nullptr);
  for (std::size_t i = 0; i < bytes; ++i) p[i] = std::byte(static_cast<unsigned char>(i + salt));
  tx.commit();
}

void take(ring_receiver &rx, std::size_t bytes, int salt) {
  record_view r{};
  ASSERT_EQ(rx.peek(r), peek_status::record);
  ASSERT_EQ(r.length, bytes);
  for (std::size_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(r.bytes[i], std::byte(static_cast<unsigned char>(i + salt))) << "byte " << i;
  }
  rx.consume();
}

TEST(Ring, EmptyRingHasNothing) {
  test_ring ring(4096);
  auto rx = ring.receiver();
  record_view r{};
  EXPECT_EQ(rx.peek(r), peek_status::empty);
}

TEST(Ring, RecordsComeOutInOrderWithTheirBytes) {
  test_ring ring(4096);
  auto tx = ring.sender();
  auto rx = ring.receiver();
  const std::size_t sizes[] = {0, 1, 47, 48, 49, 100, 1000};
  for (int i = 0; i < 7; ++i) put(tx, sizes[i], i);
  for (int i = 0; i < 7; ++i) take(rx, sizes[i], i);
  record_view r{};
  EXPECT_EQ(rx.peek(r), peek_status::empty);
}

// A record keeps the kind it was committed with (the shm transport's
// compact headers), across the skip record at the ring's end too.
TEST(Ring, RecordsKeepTheirKind) {
  test_ring ring(1024);
  auto tx = ring.sender();
  auto rx = ring.receiver();
  for (int i = 0; i < 40; ++i) {
    const std::size_t bytes = i % 3 == 0 ? 200 : 40;
    const record_kind kinds[] = {record_kind::compact, record_kind::data, record_kind::brief};
    const record_kind kind = kinds[i % 3];
    std::byte *p = tx.reserve(bytes);
    ASSERT_NE(p, nullptr);
    std::memset(p, i, bytes);
    tx.commit(kind);
    record_view r{};
    ASSERT_EQ(rx.peek(r), peek_status::record);
    EXPECT_EQ(r.kind, kind) << "record " << i;
    EXPECT_EQ(r.length, bytes);
    EXPECT_EQ(r.bytes[bytes - 1], std::byte(static_cast<unsigned char>(i)));
    rx.consume();
  }
}

// The 8 bytes before a record's bytes are its writer's: what it writes
// there reaches the reader, and nothing of the ring's header is lost.
TEST(Ring, TheSpareBytesCarryTheWritersBytes) {
  test_ring ring(1024);
  auto tx = ring.sender();
  auto rx = ring.receiver();
  for (int i = 0; i < 40; ++i) {
    const std::size_t bytes = static_cast<std::size_t>(i * 13 % 120);
    std::byte *p = tx.reserve(bytes);
    ASSERT_NE(p, nullptr);
    std::memset(p - record_spare_bytes, 0xA0 + i % 16, record_spare_bytes + bytes);
    tx.commit(record_kind::brief);
    record_view r{};
    ASSERT_EQ(rx.peek(r), peek_status::record) << "record " << i;
    ASSERT_EQ(r.length, bytes);
    EXPECT_EQ(r.kind, record_kind::brief);
    for (std::size_t b = 0; b < record_spare_bytes + bytes; ++b) {
      ASSERT_EQ(r.bytes[b - record_spare_bytes], std::byte(0xA0 + i % 16)) << "byte " << b;
    }
    rx.consume();
  }
}

TEST(Ring, FullRingRefusesUntilTheReceiverConsumes) {
  test_ring ring(1024);
  auto tx = ring.sender();
  auto rx = ring.receiver();
  // 16 + 112 = 128 bytes a record; one line stays free for the next header
  // word, so seven fill 1024 and leave room for one line-sized record only.
  for (int i = 0; i < 7; ++i) put(tx, 112, i);
  EXPECT_EQ(tx.reserve(112), nullptr);
  EXPECT_EQ(tx.reserve(49), nullptr);
  take(rx, 112, 0);
  put(tx, 112, 7);
  for (int i = 1; i <= 7; ++i) take(rx, 112, i);
}

TEST(Ring, RecordsThatDoNotFitBeforeTheEndWrapWithASkip) {
  test_ring ring(1024);
  auto tx = ring.sender();
  auto rx = ring.receiver();
  // Over many laps, sizes that never divide the ring evenly.
  for (int i = 0; i < 500; ++i) {
    const std::size_t bytes = static_cast<std::size_t>((i * 37) % (max_record_payload(1024) + 1));
    put(tx, bytes, i);
    take(rx, bytes, i);
  }
}

// A lone large message starts at the ring's offset 0 when the receiver has
// drained it, so that it reuses the lines still in the caches (a 2 MiB
// ping-pong over a 4 MiB ring: 180 -> 166 us, bench/results/, stop 32).
TEST(Ring, ADrainedRingRewindsToItsStartAndNoOtherDoes) {
  test_ring ring(4096);
  auto tx = ring.sender();
  auto rx = ring.receiver();
  const std::byte *start = ring.data() + record_header_size;
  // Where the next record of 8 bytes is written (committed, empty).
  auto next_at = [&tx] {
    std::byte *p = tx.reserve(8);
    if (p != nullptr) tx.commit();
    return p;
  };
  auto drain = [&rx] {
    record_view r{};
    while (rx.peek(r) == peek_status::record) rx.consume();
  };
  put(tx, 1000, 1);  // one record: 1024 bytes of the ring
  tx.rewind_if_drained(512);
  EXPECT_EQ(next_at(), start + 1024) << "not drained: the next record follows on";
  drain();
  tx.rewind_if_drained(2048);
  EXPECT_EQ(next_at(), start + 1088) << "drained, but not that far in yet";
  drain();
  tx.rewind_if_drained(512);
  EXPECT_EQ(next_at(), start) << "drained and far enough in: back to the start";
  record_view r{};
  ASSERT_EQ(rx.peek(r), peek_status::record) << "the skip record is crossed";
  EXPECT_EQ(r.bytes, start);
  rx.consume();
  // Records keep coming whole across later laps. (Until the receiver has
  // crossed the skip record, the sender has only the lines before the old
  // tail: the transport rewinds from far past a fragment.)
  for (int i = 0; i < 50; ++i) {
    SCOPED_TRACE("lap " + std::to_string(i));
    put(tx, 900, i);
    tx.rewind_if_drained(64);  // not drained
    take(rx, 900, i);
    put(tx, 900, i + 1);
    take(rx, 900, i + 1);
    tx.rewind_if_drained(1024);
  }
  EXPECT_EQ(rx.peek(r), peek_status::empty);
}

TEST(Ring, StaleBytesOfAnEarlierLapNeverLookLikeARecord) {
  test_ring ring(256);
  auto tx = ring.sender();
  auto rx = ring.receiver();
  record_view r{};
  // Lap 0: a two-line record at position 0 whose payload holds, at offset 64
  // of the ring, exactly the header word a record at position 320 would carry.
  std::byte *p = tx.reserve(112);
  ASSERT_NE(p, nullptr);
  std::memset(p, 0, 112);
  const std::uint64_t fake_stamp = record_word(320, 0, record_kind::data);
  std::memcpy(p + (64 - record_header_size), &fake_stamp, sizeof(fake_stamp));
  tx.commit();
  ASSERT_EQ(rx.peek(r), peek_status::record);
  rx.consume();
  put(tx, 112, 1);  // positions 128..255
  take(rx, 112, 1);
  put(tx, 0, 2);  // position 256: one line, ring offset 0
  take(rx, 0, 2);
  // The head is at 320 (ring offset 64), where lap 0 left its payload.
  EXPECT_EQ(rx.peek(r), peek_status::empty);
}

// Every payload carries, in each line it covers, the header word a record would
// carry at that line in the next lap and the one after: stale lines a sender
// failed to clear would then read as records. Seeded, one thread, random
// sizes (skips at the ring's end included) and random interleavings of
// sends and receives, with the ring often full; the receiver must see exactly
// the records sent, in order, and nothing when none is outstanding.
// ready() says whether a record waits at the head; next_ready(), between a
// peek and its consume, whether another waits after the peeked one (the
// shm transport's sign that a message is not alone).
TEST(Ring, ReadyAndNextReadySeeWhatTheSenderWrote) {
  test_ring ring(1024);
  auto tx = ring.sender();
  auto rx = ring.receiver();
  record_view r{};
  EXPECT_FALSE(rx.ready());
  put(tx, 40, 1);
  EXPECT_TRUE(rx.ready());
  ASSERT_EQ(rx.peek(r), peek_status::record);
  EXPECT_FALSE(rx.next_ready());
  put(tx, 100, 2);
  EXPECT_TRUE(rx.next_ready());
  rx.consume();
  EXPECT_TRUE(rx.ready());
  take(rx, 100, 2);
  EXPECT_FALSE(rx.ready());
  // Laps around the ring, skips at its end included: stale lines never
  // read as written.
  for (int i = 0; i < 20; ++i) {
    put(tx, 200, i);
    ASSERT_EQ(rx.peek(r), peek_status::record);
    EXPECT_FALSE(rx.next_ready()) << "lap step " << i;
    rx.consume();
    EXPECT_FALSE(rx.ready()) << "lap step " << i;
  }
}

TEST(Ring, ForgedStampsInEarlierLapsNeverLookLikeRecords) {
  for (const unsigned seed : {1u, 2u, 3u, 4u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    constexpr std::size_t capacity = 2048;
    test_ring ring(capacity);
    auto tx = ring.sender();
    auto rx = ring.receiver();
    std::mt19937 rng(seed);
    std::uint64_t tail = 0;  // the sender's absolute position, as the test follows it
    int sent = 0;
    int received = 0;
    for (int step = 0; step < 20000; ++step) {
      if (rng() % 2 == 0) {
        const std::size_t bytes =
            8 + (rng() % 3 == 0 ? rng() % (max_record_payload(capacity) - 8) : rng() % 200);
        std::byte *p = tx.reserve(bytes);
        if (p == nullptr) continue;  // full: a receive comes first
        const auto offset = static_cast<std::uint64_t>(p - record_header_size - ring.data());
        if (offset != tail % capacity) tail += capacity - tail % capacity;  // after a skip
        std::memset(p, 0, bytes);
        std::memcpy(p, &sent, sizeof(sent));
        // At each line start inside the payload, the stamp a record would
        // carry there one or two laps on.
        for (std::size_t b = cache_line - record_header_size; b + 8 <= bytes; b += cache_line) {
          const std::uint64_t line = tail + record_header_size + b;
          const std::uint64_t forged =
              record_word(line + (1 + rng() % 2) * capacity, rng() % 64, record_kind::data);
          std::memcpy(p + b, &forged, sizeof(forged));
        }
        tx.commit();
        tail += round_to_line(record_header_size + bytes);
        ++sent;
      } else {
        record_view r{};
        const peek_status status = rx.peek(r);
        if (received == sent) {
          ASSERT_EQ(status, peek_status::empty) << "after " << received << " records";
          continue;
        }
        ASSERT_EQ(status, peek_status::record) << "record " << received;
        int index = -1;
        std::memcpy(&index, r.bytes, sizeof(index));
        ASSERT_EQ(index, received);
        rx.consume();
        ++received;
      }
    }
    EXPECT_GT(tail, 20 * capacity);  // many laps
  }
}

// What peek() makes of a ring of one 8-byte record whose header word has
// `high` for its length and kind half.
peek_status peek_forged(std::uint32_t high) {
  test_ring ring(1024);
  auto tx = ring.sender();
  auto rx = ring.receiver();
  std::byte *p = tx.reserve(8);
  if (p == nullptr) return peek_status::empty;
  tx.commit();
  std::memcpy(p - record_header_size + 4, &high, sizeof(high));
  record_view r{};
  return rx.peek(r);
}

TEST(Ring, AnImpossibleLengthIsReportedAsCorrupt) {
  const std::uint32_t data = static_cast<std::uint32_t>(record_kind::data) << record_length_bits;
  EXPECT_EQ(peek_forged(8u | data), peek_status::record);
  EXPECT_EQ(peek_forged((1u << 28) | data), peek_status::corrupt);
}

TEST(Ring, AnUnknownKindIsReportedAsCorrupt) {
  for (const std::uint32_t kind : {0u, 5u, 7u}) {
    EXPECT_EQ(peek_forged(8u | (kind << record_length_bits)), peek_status::corrupt)
        << "kind " << kind;
  }
}

// A stamp is odd, so never the zero of a cleared word, and differs from its
// neighbours' where its 32 bits wrap (every 2^31 lines: 128 GiB).
TEST(Ring, StampsNeverMatchTheClearedWordNorTheirNeighbours) {
  for (const std::uint64_t line :
       {std::uint64_t{0}, std::uint64_t{1} << 36, (std::uint64_t{1} << 31) - 1,
        std::uint64_t{1} << 31, (std::uint64_t{1} << 32) - 1, std::uint64_t{1} << 40}) {
    const std::uint64_t position = line * cache_line;
    EXPECT_EQ(stamp_of(position) & 1u, 1u) << "line " << line;
    EXPECT_NE(stamp_of(position), stamp_of(position + cache_line)) << "line " << line;
    EXPECT_NE(static_cast<std::uint32_t>(record_word(position, 0, record_kind::data)), 0u);
  }
}

// Two threads, one ring, random sizes from a seed; every byte and the order
// are checked. The seed is printed so that a failure can be replayed.
TEST(RingStress, SeededProducerConsumer) {
  for (const unsigned seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    constexpr std::size_t capacity = 8192;
    constexpr int records = 60000;
    test_ring ring(capacity);
    auto tx = ring.sender();
    auto rx = ring.receiver();
    std::atomic<bool> stop{false};  // set by the consumer when it gives up
    std::thread producer([&] {
      std::mt19937 rng(seed);
      std::uniform_int_distribution<std::size_t> size(0, max_record_payload(capacity) - 8);
      for (int i = 0; i < records; ++i) {
        const std::size_t bytes = i % 4 == 0 ? size(rng) : size(rng) % 64;
        std::byte *p = nullptr;
        while ((p = tx.reserve(bytes + 8)) == nullptr) {
          if (stop.load()) return;
          std::this_thread::yield();
        }
        const auto length = static_cast<std::uint32_t>(bytes);
        std::memcpy(p, &i, sizeof(i));
        std::memcpy(p + 4, &length, sizeof(length));
        for (std::size_t b = 0; b < bytes; ++b) {
          p[8 + b] = std::byte(static_cast<unsigned char>(i + static_cast<int>(b)));
        }
        tx.commit();
        // The start of a large message asks to go back to the ring's start
        // (it does when the consumer has drained the ring by then).
        if (i % 8 == 0) tx.rewind_if_drained(size(rng) % capacity);
      }
    });
    for (int i = 0; i < records && !stop.load(); ++i) {
      record_view r{};
      peek_status status;
      while ((status = rx.peek(r)) == peek_status::empty) std::this_thread::yield();
      int index = -1;
      std::uint32_t bytes = 0;
      if (status == peek_status::record) {
        std::memcpy(&index, r.bytes, sizeof(index));
        std::memcpy(&bytes, r.bytes + 4, sizeof(bytes));
      }
      bool good = status == peek_status::record && index == i && r.length == bytes + 8u;
      for (std::size_t b = 0; good && b < bytes; ++b) {
        good = r.bytes[8 + b] == std::byte(static_cast<unsigned char>(i + static_cast<int>(b)));
      }
      if (!good) {
        ADD_FAILURE() << "record " << i << ": status " << static_cast<int>(status) << ", index "
                      << index << ", length " << r.length << " for " << bytes << " bytes";
        stop.store(true);
        break;
      }
      rx.consume();
    }
    producer.join();
  }
}

}  // namespace
}  // namespace iris::shm
