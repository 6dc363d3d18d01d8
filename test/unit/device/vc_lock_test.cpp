// MPI_THREAD_MULTIPLE's unlocked sends (device/README.md, "Threads"): the
// VC lock (a seeded stress test of spin_lock), two threads sending to two
// peers inside their transports at the same time while a third thread holds
// the call lock throughout, and a seeded stress test of unlocked senders
// against a call-lock holder that polls, returns credits and writes control
// packets on the same VCs. ThreadSanitizer watches the plain fields.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "device/base/threading.hpp"
#include "device/protocols/credit.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/runtime.hpp"
#include "multiple_runtime.hpp"

namespace iris::device {
namespace {

TEST(VcLock, SeededStressKeepsEveryUpdate) {
  constexpr int threads = 4;
  constexpr int rounds = 20000;
  spin_lock lock;
  std::uint64_t counter = 0;  // only touched under the lock
  int inside = 0;             // how many hold it: never more than one
  std::vector<int> broken(threads, 0);
  std::vector<std::uint64_t> added(threads, 0);
  std::vector<std::thread> pool;
  for (int id = 0; id < threads; ++id) {
    pool.emplace_back([&, id] {
      std::mt19937 random(static_cast<unsigned>(99 + id));
      for (int i = 0; i < rounds; ++i) {
        const bool tried = random() % 4 == 0;
        if (tried) {
          if (!lock.try_lock()) continue;
        } else {
          lock.lock();
        }
        if (++inside != 1) ++broken[static_cast<std::size_t>(id)];
        const std::uint64_t step = random() % 7 + 1;
        counter += step;
        added[static_cast<std::size_t>(id)] += step;
        --inside;
        lock.unlock();
      }
    });
  }
  for (auto &t : pool) t.join();
  std::uint64_t expected = 0;
  for (int id = 0; id < threads; ++id) {
    EXPECT_EQ(broken[static_cast<std::size_t>(id)], 0) << id;
    expected += added[static_cast<std::size_t>(id)];
  }
  EXPECT_EQ(counter, expected);
  EXPECT_FALSE(lock.held());
}

// A transport that keeps each peer's packets in its own queue, like the
// pair rings of shm_transport, bounded so that it fills. `meet`, when set,
// makes a send wait inside the transport until a send to every other peer
// is inside too (or a deadline passes).
class pair_queues final : public transport {
 public:
  explicit pair_queues(int peers) : queues_(static_cast<std::size_t>(peers)) {}
  std::string_view name() const override { return "pair_queues"; }
  bool concurrent_sends() const override { return true; }

  // As shm_shared_transport: send takes the VC's lock, send_held has it.
  xfer send(vc &to, const packet_header &h, std::span<const iovec> payload) override {
    const vc_guard guard(to);
    return send_held(to, h, payload);
  }

  xfer send_held(vc &to, const packet_header &h, std::span<const iovec> payload) override {
    EXPECT_TRUE(!to.shared || to.send_lock.held()) << "a send to a shared VC without its lock";
    if (meet) {
      inside.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (inside.load() < meet_count && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
      met = met && inside.load() >= meet_count;
    }
    auto &q = queues_[static_cast<std::size_t>(to.world_rank)];
    if (q.size() >= capacity) return xfer::retry;
    packet p{h, {}};
    for (const iovec &part : payload) {
      const auto *b = static_cast<const std::byte *>(part.iov_base);
      p.payload.insert(p.payload.end(), b, b + part.iov_len);
    }
    q.push_back(std::move(p));
    return xfer::done;
  }

  // The receiving side, as rank `to` would see it: takes every packet sent
  // to `to` so far (under its VC lock, as the test's stand-in for a ring's
  // consumer index).
  struct packet {
    packet_header h;
    std::vector<std::byte> payload;
  };
  std::deque<packet> take(vc &to) {
    const vc_guard guard(to);
    return std::exchange(queues_[static_cast<std::size_t>(to.world_rank)], {});
  }

  int poll(int budget) override {
    (void)budget;
    return 0;
  }

  static constexpr std::size_t capacity = 16;
  bool meet = false;
  int meet_count = 0;
  std::atomic<int> inside{0};
  std::atomic<bool> met{true};

 private:
  std::vector<std::deque<packet>> queues_;
};

class UnlockedSends : public ::testing::Test {
 protected:
  static constexpr int ranks = 3;  // this rank, 0, sends to 1 and 2

  void SetUp() override {
    ASSERT_EQ(rt, nullptr);
    rt = new runtime;
    rt->config = settings_load();
    rt->rank = 0;
    rt->size = ranks;
    rt->vcs.resize(ranks);
    rt->sending.reserve(ranks);
    auto t = std::make_unique<pair_queues>(ranks);
    queues_ = t.get();
    rt->transports.push_back(std::move(t));
    for (int i = 0; i < ranks; ++i) {
      vc &v = rt->vcs[static_cast<std::size_t>(i)];
      v.world_rank = i;
      v.via = queues_;
      v.eager_limit = 256;
      v.credits = v.window = 64;
      v.shared = true;  // as runtime_init sets it under MULTIPLE
    }
    comm_.context = world_context;
    comm_.rank = 0;
    comm_.size = ranks;
    comm_.world_rank = {0, 1, 2};
  }

  void TearDown() override {
    delete rt;
    rt = nullptr;
  }

  vc &peer(int i) { return rt->vcs[static_cast<std::size_t>(i)]; }

  communicator comm_;
  pair_queues *queues_ = nullptr;
};

// Two threads each inside the transport's send to their own peer at once,
// while this thread holds the call lock the whole time: neither send takes
// the call lock, and neither waits for the other. With one lock for both
// (the call lock, or a single VC lock) each would wait for the other to be
// inside, and `met` would turn false at the deadline.
TEST_F(UnlockedSends, SendsToTwoPeersRunAtOnceWhileTheCallLockIsHeld) {
  const multiple_on on;
  queues_->meet = true;
  queues_->meet_count = 2;
  call_lock_enter();
  std::atomic<int> sent{0};
  std::vector<std::thread> senders;
  for (int to = 1; to <= 2; ++to) {
    senders.emplace_back([&, to] {
      const std::uint64_t word = 42;
      if (send_unlocked(peer(to), comm_, comm_.context, &word, sizeof(word), to, nullptr)) {
        sent.fetch_add(1);
      }
    });
  }
  for (auto &t : senders) t.join();
  call_lock_leave();
  EXPECT_TRUE(queues_->met.load());
  EXPECT_EQ(sent.load(), 2);
  for (int to = 1; to <= 2; ++to) {
    const auto got = queues_->take(peer(to));
    ASSERT_EQ(got.size(), 1U);
    EXPECT_EQ(got.front().h.tag, to);
    EXPECT_EQ(got.front().h.type, packet_type::eager);
  }
}

// What cannot go out at once is refused, with nothing spent or sent: too
// large, short of credits, behind a queued request.
TEST_F(UnlockedSends, WhatCannotGoAtOnceIsLeftForTheCallLock) {
  const multiple_on on;
  std::vector<std::byte> big(peer(1).eager_limit + 1);
  EXPECT_FALSE(send_unlocked(peer(1), comm_, comm_.context, big.data(), big.size(), 0, nullptr));
  peer(1).credits = 1;
  EXPECT_FALSE(send_unlocked(peer(1), comm_, comm_.context, big.data(), 8, 0, nullptr));
  EXPECT_EQ(peer(1).credits, 1);
  peer(1).credits = peer(1).window;
  peer(1).queued_sends.add(1);
  EXPECT_FALSE(send_unlocked(peer(1), comm_, comm_.context, big.data(), 8, 0, nullptr));
  peer(1).queued_sends.add(-1);
  EXPECT_TRUE(queues_->take(peer(1)).empty());
  EXPECT_TRUE(send_unlocked(peer(1), comm_, comm_.context, big.data(), 8, 0, nullptr));
  EXPECT_EQ(peer(1).credits, peer(1).window - credit_cost(8));
}

// Seeded stress: three threads stream to two peers without the call lock
// while this thread, holding it, plays the receivers: takes what arrived,
// gives the credits back (credit_receive_shared), and now and then owes some
// (credit_return, which may write a credit packet) or writes a control
// packet itself (packet_write). Every message arrives once, each sender's
// messages to one peer in the order sent, and the credits add up.
TEST_F(UnlockedSends, SeededStressAgainstACallLockHolder) {
  const multiple_on on;
  constexpr int senders = 3;
  constexpr int messages = 3000;
  std::atomic<int> done{0};
  std::vector<std::thread> pool;
  for (int id = 0; id < senders; ++id) {
    pool.emplace_back([&, id] {
      std::mt19937 random(static_cast<unsigned>(7 + id));
      for (int i = 0; i < messages; ++i) {
        const int to = 1 + static_cast<int>(random() % 2);
        const std::uint32_t seq = static_cast<std::uint32_t>(i);
        const int tag = id * 1000000 + i;
        while (!send_unlocked(peer(to), comm_, comm_.context, &seq, sizeof(seq), tag, nullptr)) {
          std::this_thread::yield();  // no credits or no room: the receiver catches up
        }
      }
      done.fetch_add(1);
    });
  }
  std::mt19937 random(2026);
  std::vector<std::vector<int>> last(3, std::vector<int>(senders, -1));
  int received = 0, controls = 0;
  call_lock_enter();
  for (bool finished = false; !finished;) {
    finished = done.load() == senders;  // read before the last pass
    for (int to = 1; to <= 2; ++to) {
      for (const auto &p : queues_->take(peer(to))) {
        // Credits the "peer" had piggybacked come back with its packets.
        if (p.h.type == packet_type::credit) {
          ++controls;
          continue;
        }
        ASSERT_EQ(p.h.type, packet_type::eager);
        const int id = p.h.tag / 1000000, i = p.h.tag % 1000000;
        auto &seen = last[static_cast<std::size_t>(to)][static_cast<std::size_t>(id)];
        EXPECT_GT(i, seen) << "rank " << to << " got sender " << id << "'s messages out of order";
        seen = i;
        ++received;
        packet_header back{};
        back.credits = static_cast<std::uint16_t>(credit_cost(p.payload.size()));
        credit_receive_shared(peer(to), back);
        if (random() % 16 == 0) credit_return(peer(to), random() % 64);
        if (random() % 32 == 0) {
          packet_header h{};
          h.type = packet_type::credit;
          if (packet_write(peer(to), h, nullptr, 0)) ++controls;
        }
      }
    }
    call_lock_pause(true);
  }
  call_lock_leave();
  for (auto &t : pool) t.join();
  for (int to = 1; to <= 2; ++to) {
    for (const auto &p : queues_->take(peer(to))) {
      EXPECT_EQ(p.h.type, packet_type::credit);
    }
  }
  EXPECT_EQ(received, senders * messages);
  EXPECT_GT(controls, 0);
  std::uint64_t unlocked = 0;
  for (int to = 1; to <= 2; ++to) {
    EXPECT_EQ(peer(to).credits, peer(to).window) << "every credit came back";
    unlocked += peer(to).unlocked_eager;
  }
  EXPECT_EQ(unlocked, static_cast<std::uint64_t>(senders * messages));
}

}  // namespace
}  // namespace iris::device
