// MPI_THREAD_MULTIPLE's delivery without the call lock
// (packet_deliver_aside, message_arrived_aside): a seeded stress test of one
// peer's packets read in order by whoever holds the "ring" (a spin lock and
// an index, as a pair ring's rx_lock and consumer index): three threads post
// receives without the call lock (take_or_post, as recv_unlocked does) and,
// between posts, deliver what they may without it, stopping at the first
// packet they must leave; a fourth holds the call lock and delivers
// everything (packet_deliver_shared: parks, matches, acknowledges
// synchronous sends), as the call lock's poll does. Every message reaches
// exactly one receive, each thread's k-th receive its k-th message, both
// paths deliver some, and every credit unit consumed goes back once. And
// receives freed by the call lock's holder (MPI_Request_free) while the
// aside passes run: each released exactly once, by whichever side comes
// second. ThreadSanitizer watches the requests, the queues and the credits.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "device/credit.hpp"
#include "device/recv.hpp"
#include "device/recv_multiple.hpp"
#include "device/runtime.hpp"
#include "device/threading.hpp"
#include "device/transport.hpp"
#include "multiple_runtime.hpp"

namespace iris::device {
namespace {

// Takes every packet the receiving side sends back to the peer (credit
// packets, synchronous sends' acknowledgements) and adds up the credit
// units they carry, as the peer would.
class credit_sink final : public transport {
 public:
  std::string_view name() const override { return "credit_sink"; }
  bool concurrent_sends() const override { return true; }
  xfer send(vc &to, const packet_header &h, std::span<const iovec> payload) override {
    const vc_guard guard(to);
    return send_held(to, h, payload);
  }
  xfer send_held(vc &to, const packet_header &h, std::span<const iovec> payload) override {
    (void)payload;
    EXPECT_TRUE(to.send_lock.held()) << "a send to a shared VC without its lock";
    credits_back += h.credits;  // under the VC's lock
    if (h.type == packet_type::sync_ack) ++acks;
    return xfer::done;
  }
  int poll(int budget) override {
    (void)budget;
    return 0;
  }
  int credits_back = 0;
  int acks = 0;
};

struct arrival {
  packet_header h;
  int value;
};

class AsideDelivery : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(rt, nullptr);
    rt = new runtime;
    rt->config = settings_load();
    rt->rank = 0;
    rt->size = 2;
    rt->next_context = 40;
    rt->vcs.resize(2);
    rt->sending.reserve(2);
    auto sink = std::make_unique<credit_sink>();
    sink_ = sink.get();
    rt->transports.push_back(std::move(sink));
    rt->vcs[0].flow_controlled = false;
    vc &p = peer();
    p.world_rank = 1;
    p.via = sink_;
    p.eager_limit = 256;
    p.credits = p.window = 64;
    p.shared = true;  // as runtime_init sets it under MULTIPLE
    rt->matching.share();
    comm_.context = world_context;
    comm_.rank = 0;
    comm_.size = 2;
    comm_.world_rank = {0, 1};
    call_lock_enter();
    comm_.queues = rt->matching.queues_of(comm_.context);
    call_lock_leave();
    ASSERT_NE(comm_.queues, nullptr);
  }

  void TearDown() override {
    delete rt;
    rt = nullptr;
  }

  vc &peer() { return rt->vcs[1]; }

  // Rank 1's next message, in its send order.
  void arrives(packet_type type, int tag, int value) {
    arrival a{};
    a.h.type = type;
    a.h.context = world_context;
    a.h.source = 1;
    a.h.tag = tag;
    a.h.length = sizeof(int);
    a.h.sender_request = ring_.size() + 1;
    a.value = value;
    ring_.push_back(a);
  }

  // Made under the call lock, as a thread's request cache is.
  std::vector<request *> requests(int n) {
    std::vector<request *> made;
    call_lock_enter();
    for (int i = 0; i < n; ++i) made.push_back(rt->requests.allocate(request_kind::recv, &comm_));
    call_lock_leave();
    return made;
  }

  // Without the call lock, as recv_unlocked does: a receive of one int.
  void post(request *r, int source, int tag, int *into) {
    r->key = match_key{comm_.context, source, tag};
    r->buffer = reinterpret_cast<std::byte *>(into);
    r->bytes = sizeof(int);
    recv_post_unlocked(*comm_.queues, *r);
  }

  // One pass over the ring without the call lock, as drain_aside: what may
  // go aside, in order, stopping at the first packet that may not.
  void aside_pass() {
    if (!ring_lock_.try_lock()) return;
    while (ring_next_ < arrived()) {
      const arrival &a = ring_[ring_next_];
      if (!packet_deliver_aside(peer(), a.h, reinterpret_cast<const std::byte *>(&a.value),
                                sizeof(int))) {
        break;
      }
      ++ring_next_;
    }
    ring_done_.store(ring_next_, std::memory_order_relaxed);
    ring_lock_.unlock();
  }

  // Under the call lock, as drain<true>: credits folded, then a few packets
  // whatever they are.
  void holder_pass(std::mt19937 &random) {
    const lock_if reading(ring_lock_, true);
    credit_fold(peer());
    for (unsigned n = random() % 8; n > 0 && ring_next_ < arrived(); --n, ++ring_next_) {
      const arrival &a = ring_[ring_next_];
      const char *why = packet_deliver_shared(
          peer(), a.h, reinterpret_cast<const std::byte *>(&a.value), sizeof(int));
      ASSERT_EQ(why, nullptr);
    }
    ring_done_.store(ring_next_, std::memory_order_relaxed);
  }

  bool ring_empty() const { return ring_done_.load(std::memory_order_relaxed) == ring_.size(); }

  // How many of the ring's messages the peer has written so far: all of
  // them, unless a test lets them in a few at a time (arrive_more).
  std::size_t arrived() const {
    return std::min(ring_.size(), arrived_.load(std::memory_order_acquire));
  }
  void arrive_more(std::size_t n) {
    arrived_.store(std::min(ring_.size(), arrived() + n), std::memory_order_release);
  }

  // Every credit unit consumed went back once: in packets to the peer, or
  // owed on the next.
  void credits_all_back() {
    call_lock_enter();
    credit_fold(peer());
    EXPECT_EQ(sink_->credits_back + peer().owed,
              static_cast<int>(ring_.size()) * credit_cost(sizeof(int)))
        << "credit units lost or returned twice";
    call_lock_leave();
  }

  credit_sink *sink_ = nullptr;
  communicator comm_;
  std::vector<arrival> ring_;
  spin_lock ring_lock_;        // the ring's rx_lock
  std::size_t ring_next_ = 0;  // its consumer index, under ring_lock_
  std::atomic<std::size_t> ring_done_{0};
  std::atomic<std::size_t> arrived_{SIZE_MAX};
};

TEST_F(AsideDelivery, SeededStressEachMessageOnceInOrderAndEveryCreditBack) {
  const multiple_receives on;
  constexpr int receivers = 3;
  constexpr int receives = 2000;
  // Each receiver's tag in a seeded mix, every 16th message synchronous
  // (never delivered aside).
  std::vector<int> sent(receivers, 0);
  std::mt19937 mix(7);
  for (int i = 0; i < receivers * receives; ++i) {
    int tag = static_cast<int>(mix() % receivers);
    while (sent[static_cast<std::size_t>(tag)] == receives) tag = (tag + 1) % receivers;
    arrives(i % 16 == 0 ? packet_type::eager_sync : packet_type::eager, tag,
            sent[static_cast<std::size_t>(tag)]++);
  }
  std::vector<std::vector<request *>> made;
  for (int id = 0; id < receivers; ++id) made.push_back(requests(receives));
  std::vector<std::vector<int>> got(receivers, std::vector<int>(receives, -1));

  std::vector<std::thread> pool;
  for (int id = 0; id < receivers; ++id) {
    pool.emplace_back([&, id] {
      std::mt19937 random(static_cast<unsigned>(41 + id));
      auto &mine = made[static_cast<std::size_t>(id)];
      for (std::size_t i = 0; i < mine.size(); ++i) {
        post(mine[i], random() % 2 == 0 ? 1 : any_source, id,
             &got[static_cast<std::size_t>(id)][i]);
        if (random() % 4 == 0) aside_pass();
      }
      for (request *r : mine) {
        while (!request_done(*r)) {
          aside_pass();
          std::this_thread::yield();
        }
      }
    });
  }
  // The call lock's holder, giving the lock up as a waiting thread does.
  std::mt19937 holder(5);
  while (!ring_empty()) {
    call_lock_enter();
    holder_pass(holder);
    call_lock_pause(true);
    call_lock_leave();
  }
  // The receives that took a parked message are delivered by the call
  // lock's next holder.
  for (bool all = false; !all;) {
    call_lock_enter();
    call_lock_leave();
    all = true;
    for (const auto &mine : made) {
      for (request *r : mine) all = all && request_done(*r);
    }
  }
  for (auto &t : pool) t.join();

  for (int id = 0; id < receivers; ++id) {
    for (int i = 0; i < receives; ++i) {
      ASSERT_EQ(got[static_cast<std::size_t>(id)][static_cast<std::size_t>(i)], i)
          << "receiver " << id << " receive " << i;
    }
  }
  const std::uint64_t aside = rt->matching.aside_deliveries();
  EXPECT_GT(aside, 0U) << "no message was delivered without the call lock";
  EXPECT_LT(aside, ring_.size()) << "the call lock's poll delivered nothing";
  EXPECT_EQ(sink_->acks, receivers * receives / 16) << "a synchronous send was not acknowledged";
  credits_all_back();
  EXPECT_EQ(rt->matching.unexpected_counts().depth, 0U);
  call_lock_enter();
  for (auto &mine : made) {
    for (request *r : mine) rt->requests.release(r);
  }
  call_lock_leave();
}

// MPI_Request_free of a receive posted without the call lock, while aside
// passes may be delivering into it: the aside pass never takes a freed
// receive (the holder delivers it and releases it), and a receive freed
// once complete is released by the free. Either way each is released once:
// none is left live, and the pool's count never goes below zero.
TEST_F(AsideDelivery, AFreedReceiveIsReleasedOnceWhicheverSideComesSecond) {
  const multiple_receives on;
  constexpr int receives = 4000;
  for (int i = 0; i < receives; ++i) arrives(packet_type::eager, 0, i);
  std::vector<request *> made = requests(receives);
  std::vector<int> got(receives, -1);
  std::vector<bool> freed(receives);
  std::mt19937 pick(11);
  for (int i = 0; i < receives; ++i) freed[static_cast<std::size_t>(i)] = pick() % 2 == 0;
  std::atomic<int> posted{0};
  // The holder lets messages in as it frees receives, so that which comes
  // first is its seeded choice: some receives are freed before their
  // message, some after (how many of the messages go aside is the
  // threads' timing; the test above counts on some).
  arrived_.store(0);

  std::thread poster([&] {
    std::mt19937 random(43);
    for (int i = 0; i < receives; ++i) {
      post(made[static_cast<std::size_t>(i)], 1, 0, &got[static_cast<std::size_t>(i)]);
      posted.store(i + 1, std::memory_order_release);
      if (random() % 2 == 0) aside_pass();
    }
    // Only its own: a freed receive is the device's once freed.
    for (int i = 0; i < receives; ++i) {
      if (freed[static_cast<std::size_t>(i)]) continue;
      while (!request_done(*made[static_cast<std::size_t>(i)])) {
        aside_pass();
        std::this_thread::yield();
      }
    }
  });
  std::mt19937 holder(13);
  int next_free = 0;
  int released_by_free = 0;
  while (!ring_empty() || next_free < receives) {
    call_lock_enter();
    // A few of the receives posted so far are freed, a few more messages
    // arrive: some receives are freed before their message, some after.
    const int upto = posted.load(std::memory_order_acquire);
    for (unsigned n = holder() % 8; n > 0 && next_free < upto; --n, ++next_free) {
      if (!freed[static_cast<std::size_t>(next_free)]) continue;
      request *r = made[static_cast<std::size_t>(next_free)];
      if (request_mark_freed(*r)) {
        rt->requests.release(r);
        ++released_by_free;
      }
    }
    // Never ahead of the posts: a message that found no receive would be
    // taken by its receive's post, complete before anyone frees it.
    arrive_more(std::min<std::size_t>(holder() % 8, static_cast<std::size_t>(upto) - arrived()));
    holder_pass(holder);
    // The pool is the call lock's: its holder takes from it and gives back
    // whenever it likes (other bindings do), so a release from anywhere
    // else races with it.
    rt->requests.release(rt->requests.allocate(request_kind::recv, &comm_));
    call_lock_pause(true);
    call_lock_leave();
  }
  poster.join();

  for (int i = 0; i < receives; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], i) << i;
  const auto freed_count = static_cast<int>(std::count(freed.begin(), freed.end(), true));
  EXPECT_GT(released_by_free, 0) << "no receive was complete when freed";
  EXPECT_LT(released_by_free, freed_count) << "no freed receive was released by its completion";
  credits_all_back();
  call_lock_enter();
  EXPECT_EQ(rt->requests.live(), static_cast<std::size_t>(receives - freed_count))
      << "a freed receive was released twice or never";
  for (int i = 0; i < receives; ++i) {
    if (!freed[static_cast<std::size_t>(i)])
      rt->requests.release(made[static_cast<std::size_t>(i)]);
  }
  call_lock_leave();
}

}  // namespace
}  // namespace iris::device
