// The doorbells of shm/bell.hpp: a sleeper and a sender in one process (the
// heavy fence covers threads as it covers processes), and a seeded stress
// test in which every wait must end by a wake, never by the timeout: a lost
// wake-up would show as a timeout.
#include "shm/bell.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <thread>

namespace iris::shm {
namespace {

TEST(Bell, WakingAnAwakeBellDoesNothing) {
  bell b;
  bell_wake(b);
  EXPECT_EQ(b.asleep.load(), 0U);
}

TEST(Bell, WaitOnAnAwakeBellReturnsAtOnceAsWoken) {
  bell b;
  EXPECT_TRUE(bell_wait(b, 10000));
}

TEST(Bell, WaitWithoutAWakeEndsByTheTimeout) {
  bell b;
  b.asleep.store(1);
  EXPECT_FALSE(bell_wait(b, 20));
  EXPECT_EQ(b.asleep.load(), 1U);
}

TEST(Bell, AWakeFromAnotherThreadEndsTheWait) {
  bell b;
  b.asleep.store(1);
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    bell_wake(b);
  });
  EXPECT_TRUE(bell_wait(b, 60000));
  waker.join();
  EXPECT_EQ(b.asleep.load(), 0U);
}

// A producer posts items and rings; the consumer sleeps with the same steps
// as progress_idle whenever it finds nothing. Seeded delays on both sides
// move the race between "asleep" and "posted" around.
TEST(Bell, NoWakeIsLostUnderStress) {
  if (!bells_register()) GTEST_SKIP() << "this kernel lacks MEMBARRIER_CMD_GLOBAL_EXPEDITED";
  constexpr std::uint64_t items = 20000;
  bell b;
  std::atomic<std::uint64_t> posted{0};
  std::uint64_t timeouts = 0, sleeps = 0, consumed = 0;
  std::thread producer([&] {
    std::mt19937 random(12345);
    for (std::uint64_t i = 1; i <= items; ++i) {
      for (unsigned spin = random() % 512; spin > 0; --spin)
        std::atomic_signal_fence(std::memory_order_seq_cst);
      if (random() % 64 == 0) std::this_thread::yield();
      posted.store(i, std::memory_order_release);
      bell_wake(b);
    }
  });
  std::mt19937 random(67890);
  while (consumed < items) {
    if (posted.load(std::memory_order_acquire) > consumed) {
      ++consumed;
      continue;
    }
    if (random() % 2 == 0) continue;  // sometimes poll again first
    b.asleep.store(1, std::memory_order_relaxed);
    ASSERT_TRUE(heavy_fence());
    if (posted.load(std::memory_order_acquire) == consumed) {
      ++sleeps;
      if (!bell_wait(b, 10000)) ++timeouts;
    }
    b.asleep.store(0, std::memory_order_relaxed);
  }
  producer.join();
  EXPECT_EQ(consumed, items);
  EXPECT_EQ(timeouts, 0U) << "of " << sleeps << " sleeps";
  EXPECT_GT(sleeps, 0U);
}

}  // namespace
}  // namespace iris::shm
