// The shared-memory receive queue (shm/queue.hpp): single-threaded edge
// cases, then a seeded stress test with several producer threads and one
// consumer that checks every byte and each producer's order (the suite's
// ThreadSanitizer pass runs it too); and the node segment's ring pool
// (shm/node.hpp): exhaustion, and the name removed once all attached.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "shm/node.hpp"
#include "shm/queue.hpp"

namespace iris::shm {
namespace {

// A queue in ordinary memory, laid out as in a segment.
class test_queue {
 public:
  explicit test_queue(std::size_t cells)
      : memory_(static_cast<std::byte *>(std::aligned_alloc(cache_line, queue_footprint(cells)))) {
    queue_init(memory_.get(), cells);
  }
  queue_sender sender() { return queue_sender(memory_.get()); }
  queue_receiver receiver() { return queue_receiver(memory_.get()); }

 private:
  struct free_deleter {
    void operator()(std::byte *p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, free_deleter> memory_;
};

// The byte `i` of record `n` of producer `from`.
std::byte pattern(int from, std::uint64_t n, std::size_t i) {
  return std::byte(static_cast<unsigned char>(from * 31 + n * 7 + i * 13 + (i >> 8)));
}

// Pushes record `n` of `from` in two parts (split at `split`).
bool push(queue_sender &tx, int from, std::uint64_t n, std::size_t bytes, std::size_t split,
          std::vector<std::byte> &scratch) {
  scratch.resize(bytes + sizeof(n));
  std::memcpy(scratch.data(), &n, sizeof(n));
  for (std::size_t i = 0; i < bytes; ++i) scratch[sizeof(n) + i] = pattern(from, n, i);
  split = std::min(split, scratch.size());
  const iovec parts[2] = {{scratch.data(), split},
                          {scratch.data() + split, scratch.size() - split}};
  return tx.push(static_cast<std::uint16_t>(from), 1, parts);
}

// Takes the next record and checks that it is record `n` of `from` with
// `bytes` payload bytes.
void take(queue_receiver &rx, int from, std::uint64_t n, std::size_t bytes) {
  queue_record r{};
  ASSERT_EQ(rx.peek(r), peek_status::record);
  ASSERT_EQ(r.from, from);
  ASSERT_EQ(r.kind, 1);
  ASSERT_EQ(r.length, bytes + sizeof(n));
  std::uint64_t got = 0;
  std::memcpy(&got, r.bytes, sizeof(got));
  ASSERT_EQ(got, n);
  for (std::size_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(r.bytes[sizeof(n) + i], pattern(from, n, i)) << "byte " << i;
  }
  rx.consume();
}

TEST(Queue, LayoutIsCacheLines) {
  EXPECT_EQ(sizeof(queue_cell) % cache_line, 0u);
  EXPECT_EQ(queue_cell_header + sizeof(std::uint64_t) * 6, 64u) << "a 48-byte header in one line";
  EXPECT_EQ(queue_cells_for(0), 1u);
  EXPECT_EQ(queue_cells_for(queue_cell_payload), 1u);
  EXPECT_EQ(queue_cells_for(queue_cell_payload + 1), 2u);
  EXPECT_EQ(queue_max_record(64), 32 * queue_cell_payload);
}

TEST(Queue, EmptyQueueHasNothing) {
  test_queue q(16);
  auto rx = q.receiver();
  queue_record r{};
  EXPECT_EQ(rx.peek(r), peek_status::empty);
}

TEST(Queue, RecordsOfEverySizeComeOutInOrderWithTheirBytes) {
  test_queue q(64);
  auto tx = q.sender();
  auto rx = q.receiver();
  std::vector<std::byte> scratch;
  const std::size_t p = queue_cell_payload - sizeof(std::uint64_t);  // payload filling one cell
  const std::size_t sizes[] = {0, 1, p - 1, p, p + 1, 2 * queue_cell_payload, 5000};
  // Several laps, so that records wrap around the end of the cells.
  for (int lap = 0; lap < 5; ++lap) {
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
      ASSERT_TRUE(push(tx, 3, lap * 10 + i, sizes[i], 5 + i * 100, scratch)) << sizes[i];
    }
    for (std::size_t i = 0; i < std::size(sizes); ++i) take(rx, 3, lap * 10 + i, sizes[i]);
  }
  queue_record r{};
  EXPECT_EQ(rx.peek(r), peek_status::empty);
}

TEST(Queue, FullQueueRefusesUntilTheConsumerFreesCells) {
  test_queue q(16);
  auto tx = q.sender();
  auto rx = q.receiver();
  std::vector<std::byte> scratch;
  for (std::uint64_t n = 0; n < 16; ++n) ASSERT_TRUE(push(tx, 1, n, 8, 0, scratch));
  EXPECT_FALSE(push(tx, 1, 16, 8, 0, scratch)) << "every cell holds a record";
  take(rx, 1, 0, 8);
  EXPECT_FALSE(push(tx, 1, 16, 300, 0, scratch)) << "a two-cell record needs two free cells";
  EXPECT_TRUE(push(tx, 1, 16, 8, 0, scratch));
  for (std::uint64_t n = 1; n < 3; ++n) take(rx, 1, n, 8);
  EXPECT_TRUE(push(tx, 1, 17, 300, 0, scratch)) << "two cells free now";
  for (std::uint64_t n = 3; n < 17; ++n) take(rx, 1, n, 8);
  take(rx, 1, 17, 300);
}

TEST(Queue, AnImpossibleLengthIsCorrupt) {
  std::unique_ptr<std::byte, void (*)(void *)> memory(
      static_cast<std::byte *>(std::aligned_alloc(cache_line, queue_footprint(16))), std::free);
  queue_init(memory.get(), 16);
  auto *cell = reinterpret_cast<queue_cell *>(memory.get() + sizeof(queue_control));
  cell[0].length = 1 << 20;
  cell[0].seq.store(1);
  queue_receiver rx(memory.get());
  queue_record r{};
  EXPECT_EQ(rx.peek(r), peek_status::corrupt);
}

// Several producers, one consumer, records of random sizes (one cell and
// several), a small queue so that it is often full and wraps often.
void stress(unsigned seed, int producers, std::size_t cells, int records) {
  test_queue q(cells);
  const std::size_t largest = queue_max_record(cells) - sizeof(std::uint64_t);
  std::atomic<bool> stop{false};  // the consumer failed: producers give up
  std::vector<std::thread> threads;
  for (int from = 0; from < producers; ++from) {
    threads.emplace_back([&q, &stop, seed, from, records, largest] {
      std::mt19937 random(seed * 1000 + static_cast<unsigned>(from));
      auto tx = q.sender();
      std::vector<std::byte> scratch;
      for (std::uint64_t n = 0; n < static_cast<std::uint64_t>(records); ++n) {
        const std::size_t bytes = random() % 4 == 0 ? random() % largest : random() % 200;
        const std::size_t split = random() % (bytes + 9);
        while (!push(tx, from, n, bytes, split, scratch)) {
          if (stop.load()) return;
          std::this_thread::yield();
        }
      }
    });
  }
  auto rx = q.receiver();
  std::vector<std::uint64_t> next(static_cast<std::size_t>(producers), 0);
  std::vector<std::mt19937> expect;
  for (int from = 0; from < producers; ++from) {
    expect.emplace_back(seed * 1000 + static_cast<unsigned>(from));
  }
  const auto consume = [&] {
    for (int left = producers * records; left > 0;) {
      queue_record r{};
      const peek_status status = rx.peek(r);
      if (status == peek_status::empty) {
        std::this_thread::yield();
        continue;
      }
      ASSERT_EQ(status, peek_status::record);
      ASSERT_LT(r.from, producers);
      // The same draws as the producer: its sizes, in its order.
      std::mt19937 &random = expect[r.from];
      const std::size_t bytes = random() % 4 == 0 ? random() % largest : random() % 200;
      (void)(random() % (bytes + 9));
      const std::uint64_t n = next[r.from]++;
      take(rx, r.from, n, bytes);
      if (testing::Test::HasFatalFailure()) return;
      --left;
    }
  };
  consume();
  stop.store(true);
  for (auto &t : threads) t.join();
  if (testing::Test::HasFatalFailure()) return;
  queue_record r{};
  EXPECT_EQ(rx.peek(r), peek_status::empty);
}

TEST(Queue, SeededStressEveryByteAndEachProducersOrder) {
  for (unsigned seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    stress(seed, 4, 64, 3000);
    if (HasFatalFailure()) return;
  }
}

TEST(Queue, SeededStressManyProducersTinyQueue) {
  stress(7, 8, 16, 1500);
}

// ---- the node segment's ring pool ------------------------------------------

std::string test_name(const char *what) {
  return "/iris-unit-" + std::to_string(getpid()) + "-" + what;
}

TEST(NodePool, RingsComeUntilThePoolIsSpentThenNone) {
  const std::string name = test_name("pool");
  const node_shape shape{2, 16, 4096, 3 * (4096 + 4096)};
  ASSERT_EQ(shape.slot_bytes(), 8192u) << "a ring and its control line, in whole pages";
  ASSERT_EQ(shape.pool_slots(), 3u);
  node_segment a = node_segment::create(name, shape);
  node_segment b = node_segment::attach(name, shape);
  a.mark_attached();
  b.mark_attached();
  EXPECT_NE(access(("/dev/shm" + name).c_str(), F_OK), 0) << "left in /dev/shm";
  std::vector<std::uint64_t> offsets;
  for (int i = 0; i < 3; ++i) {
    const auto offset = (i % 2 == 0 ? a : b).ring_take();
    ASSERT_TRUE(offset.has_value()) << i;
    EXPECT_TRUE(a.is_ring_offset(*offset));
    offsets.push_back(*offset);
  }
  EXPECT_FALSE(a.ring_take().has_value()) << "the pool holds three rings";
  EXPECT_FALSE(b.ring_take().has_value());
  EXPECT_EQ(a.rings_taken(), 3u);
  EXPECT_FALSE(a.pool_closed()) << "spent, not closed: /dev/shm did not fill";
  EXPECT_FALSE(a.is_ring_offset(0));
  EXPECT_FALSE(a.is_ring_offset(offsets[0] + 64));
  // Each ring carries records from one process to the other.
  ring_sender tx = a.ring_sender_at(offsets[1]);
  ring_receiver rx = b.ring_receiver_at(offsets[1]);
  std::byte *slot = tx.reserve(5);
  ASSERT_NE(slot, nullptr);
  std::memcpy(slot, "hello", 5);
  tx.commit();
  record_view r{};
  ASSERT_EQ(rx.peek(r), peek_status::record);
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(r.bytes), r.length), "hello");
}

TEST(NodePool, QueuesCarryRecordsBetweenProcessesOfTheSegment) {
  const std::string name = test_name("queues");
  const node_shape shape{3, 32, 4096, 0};
  EXPECT_EQ(shape.pool_slots(), 0u);
  node_segment a = node_segment::create(name, shape);
  node_segment b = node_segment::attach(name, shape);
  node_segment c = node_segment::attach(name, shape);
  for (node_segment *s : {&a, &b, &c}) s->mark_attached();
  EXPECT_FALSE(a.ring_take().has_value()) << "an empty pool";
  queue_sender to_c_from_a = a.queue_to(2);
  queue_sender to_c_from_b = b.queue_to(2);
  std::vector<std::byte> scratch;
  ASSERT_TRUE(push(to_c_from_a, 0, 0, 10, 3, scratch));
  ASSERT_TRUE(push(to_c_from_b, 1, 0, 1000, 500, scratch));
  ASSERT_TRUE(push(to_c_from_a, 0, 1, 20, 3, scratch));
  queue_receiver rx = c.queue_of(2);
  take(rx, 0, 0, 10);
  take(rx, 1, 0, 1000);
  take(rx, 0, 1, 20);
  queue_receiver other = a.queue_of(1);
  queue_record r{};
  EXPECT_EQ(other.peek(r), peek_status::empty);
}

TEST(NodePool, ABadShapeOrAMissingSegmentIsAClearError) {
  const std::string name = test_name("bad");
  EXPECT_THROW(node_segment::create(name, {2, 100, 4096, 0}), error) << "cells not a power of two";
  EXPECT_THROW(node_segment::attach(name, {2, 16, 4096, 0}), error) << "no such segment";
  {
    node_segment a = node_segment::create(name, {2, 16, 4096, 0});
    EXPECT_THROW(node_segment::attach(name, {2, 32, 4096, 0}), error) << "other shape";
    node_segment b = node_segment::attach(name, {2, 16, 4096, 0});
    a.mark_attached();
    b.mark_attached();
  }
  try {
    // Far larger than /dev/shm: refused before a byte is allocated.
    node_segment::create(name, {65535, std::size_t{1} << 24, 4096, 0});
    ADD_FAILURE() << "a 256 TiB segment was created";
  } catch (const error &e) {
    EXPECT_NE(std::string(e.what()).find("/dev/shm has"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("IRIS_SHM_QUEUE_CELLS"), std::string::npos) << e.what();
  }
  EXPECT_NE(access(("/dev/shm" + name).c_str(), F_OK), 0);
}

}  // namespace
}  // namespace iris::shm
