// The call lock of MPI_THREAD_MULTIPLE (device/threading.hpp): a seeded
// stress test of nested guards and pauses from several threads, checked by
// plain (unsynchronised) counters that ThreadSanitizer watches, and the
// hand-over a waiting thread owes a thread that asks for the lock.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "device/base/threading.hpp"
#include "multiple_runtime.hpp"

namespace iris::device {
namespace {

TEST(CallLock, NestedGuardsAndPausesKeepEveryUpdate) {
  const multiple_on on;
  constexpr int threads = 4;
  constexpr int rounds = 20000;
  std::uint64_t counter = 0;  // only touched under the lock
  int owner = -1;             // who is inside, between pauses
  std::vector<std::thread> pool;
  std::vector<int> broken(threads, 0);
  for (int id = 0; id < threads; ++id) {
    pool.emplace_back([&, id] {
      std::mt19937 random(static_cast<unsigned>(1234 + id));
      for (int i = 0; i < rounds; ++i) {
        const api_guard outer;
        owner = id;
        ++counter;
        if (random() % 2 == 0) {
          const api_guard inner;  // a binding calling another
          ++counter;
          if (owner != id) ++broken[static_cast<std::size_t>(id)];
        }
        if (random() % 8 == 0) {
          call_lock_pause(random() % 2 == 0);  // a wait letting others in
          owner = id;                          // held again, at the same depth
        }
        if (owner != id) ++broken[static_cast<std::size_t>(id)];
        --counter;
      }
    });
  }
  for (auto &t : pool) t.join();
  const api_guard check;
  for (int id = 0; id < threads; ++id) EXPECT_EQ(broken[static_cast<std::size_t>(id)], 0) << id;
  // Each round adds one per inner guard it took; the random draws repeat.
  std::uint64_t expected = 0;
  for (int id = 0; id < threads; ++id) {
    std::mt19937 random(static_cast<unsigned>(1234 + id));
    for (int i = 0; i < rounds; ++i) {
      if (random() % 2 == 0) ++expected;
      if (random() % 8 == 0) (void)random();
    }
  }
  EXPECT_EQ(counter, expected);
}

TEST(CallLock, AWaitingThreadLetsAnotherIn) {
  const multiple_on on;
  bool flag = false;  // set under the lock by the other thread
  const api_guard waiting;
  std::thread other([&] {
    const api_guard guard;
    flag = true;
  });
  // Without the hand-over this spins forever (the test times out).
  while (!flag) call_lock_pause(false);
  other.join();
  EXPECT_TRUE(flag);
}

TEST(CallLock, BelowMultipleTheGuardTakesNothing) {
  ASSERT_FALSE(threads_enabled);
  const api_guard held;
  bool entered = false;
  std::thread other([&] {
    const api_guard guard;  // would block forever if the guard locked
    entered = true;
  });
  other.join();
  EXPECT_TRUE(entered);
  EXPECT_FALSE(call_lock_pause(true));
}

// The progress thread of active messages below MULTIPLE without
// membarrier(2) (call_guarding::locked alone): every binding takes the call
// lock, the small-message ones too, which run their plain body under it,
// never MULTIPLE's unlocked half.
TEST(CallLock, WithTheProgressThreadBelowMultipleEveryBindingLocks) {
  ASSERT_FALSE(threads_enabled);
  call_guard = call_guarding::locked;
  bool body_locked = false;
  bool multiple_ran = false;
  const int result = api_send_call(
      [&] {
        body_locked = call_lock_held();
        return 7;
      },
      [&] {
        multiple_ran = true;
        return 0;
      });
  EXPECT_EQ(result, 7);
  EXPECT_TRUE(body_locked);
  EXPECT_FALSE(multiple_ran);
  EXPECT_FALSE(call_lock_held());
  {
    const api_guard held;
    EXPECT_TRUE(call_lock_held());
    bool other_entered = false;
    std::thread other([&] { other_entered = call_lock_try_enter(); });
    other.join();
    EXPECT_FALSE(other_entered);
  }
  EXPECT_FALSE(call_lock_held());
  call_guard = call_guarding::none;
}

// With membarrier(2) (call_guarding::flagged): the program's bindings raise
// its flag, nested ones once; the progress thread gets in only while it is
// down, and a binding entered meanwhile waits for it to leave; a binding
// that a handler calls on the progress thread takes nothing. A seeded
// stress: the two threads add to one plain counter, each only inside.
TEST(ProgramFlag, ProgramAndProgressThreadNeverOverlap) {
  if (!program_flag_possible()) GTEST_SKIP() << "no membarrier(2) here";
  ASSERT_FALSE(threads_enabled);
  call_guard = call_guarding::flagged;
  // Relaxed everywhere but the flags: only their protocol orders the two
  // threads, so that TSan reports `shared` if it does not.
  long shared = 0;
  std::atomic<bool> stop{false};
  std::atomic<int> inside{0};
  long progress_entries = 0;
  std::thread progress([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      if (!program_flag_try()) {
        std::this_thread::yield();  // each try is a membarrier: leave the cores some room
        continue;
      }
      if (inside.fetch_add(1, std::memory_order_relaxed) != 0) ADD_FAILURE() << "both inside";
      {
        const api_guard from_a_handler;  // a handler calling a binding: takes nothing
        ++shared;
      }
      ++progress_entries;
      inside.fetch_sub(1, std::memory_order_relaxed);
      program_flag_done();
      std::this_thread::yield();
    }
  });
  unsigned seed = 20261128;
  for (int i = 0; i < 4000; ++i) {
    const api_guard outer;
    {
      const api_guard nested;  // a binding calling another: still one flag
      if (inside.fetch_add(1, std::memory_order_relaxed) != 0) ADD_FAILURE() << "both inside";
      ++shared;
      inside.fetch_sub(1, std::memory_order_relaxed);
    }
    seed = seed * 1103515245U + 12345U;
    for (unsigned spin = (seed >> 16) % 64; spin > 0; --spin) asm volatile("");
  }
  stop = true;
  progress.join();
  EXPECT_EQ(shared, 4000 + progress_entries);
  EXPECT_FALSE(call_flags.program.load());
  EXPECT_EQ(call_flags.depth, 0);
  call_guard = call_guarding::none;
}

}  // namespace
}  // namespace iris::device
