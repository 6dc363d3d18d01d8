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
// paths deliver some, and every credit unit consumed goes back once.
// ThreadSanitizer watches the requests, the queues and the credits.
#include <gtest/gtest.h>

#include <atomic>
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

struct multiple_on {
  multiple_on() {
    threads_enabled = true;
    call_lock_entered = recv_taken_drain;  // as runtime_init sets it under MULTIPLE
  }
  ~multiple_on() {
    threads_enabled = false;
    call_lock_entered = nullptr;
  }
};

struct arrival {
  packet_header h;
  int value;
};

TEST(AsideDelivery, SeededStressEachMessageOnceInOrderAndEveryCreditBack) {
  ASSERT_EQ(rt, nullptr);
  rt = new runtime;
  rt->config = settings_load();
  rt->rank = 0;
  rt->size = 2;
  rt->next_context = 40;
  rt->vcs.resize(2);
  rt->sending.reserve(2);
  auto sink_owned = std::make_unique<credit_sink>();
  credit_sink &sink = *sink_owned;
  rt->transports.push_back(std::move(sink_owned));
  rt->vcs[0].flow_controlled = false;
  vc &peer = rt->vcs[1];
  peer.world_rank = 1;
  peer.via = &sink;
  peer.eager_limit = 256;
  peer.credits = peer.window = 64;
  peer.shared = true;  // as runtime_init sets it under MULTIPLE
  rt->matching.share();
  communicator comm;
  comm.context = world_context;
  comm.rank = 0;
  comm.size = 2;
  comm.world_rank = {0, 1};
  const multiple_on on;

  constexpr int receivers = 3;
  constexpr int receives = 2000;
  // Rank 1's messages, in its send order: each receiver's tag in a seeded
  // mix, every 16th one synchronous (never delivered aside).
  std::vector<arrival> ring;
  std::vector<int> sent(receivers, 0);
  std::mt19937 mix(7);
  for (int i = 0; i < receivers * receives; ++i) {
    int tag = static_cast<int>(mix() % receivers);
    while (sent[static_cast<std::size_t>(tag)] == receives) tag = (tag + 1) % receivers;
    arrival a{};
    a.h.type = i % 16 == 0 ? packet_type::eager_sync : packet_type::eager;
    a.h.context = world_context;
    a.h.source = 1;
    a.h.tag = tag;
    a.h.length = sizeof(int);
    a.h.sender_request = static_cast<std::uint64_t>(i) + 1;
    a.value = sent[static_cast<std::size_t>(tag)]++;
    ring.push_back(a);
  }
  spin_lock ring_lock;        // the ring's rx_lock
  std::size_t ring_next = 0;  // its consumer index, under ring_lock
  std::atomic<std::size_t> ring_done{0};

  std::vector<std::vector<request *>> made(receivers);
  std::vector<std::vector<int>> got(receivers, std::vector<int>(receives, -1));
  call_lock_enter();
  comm.queues = rt->matching.queues_of(comm.context);
  ASSERT_NE(comm.queues, nullptr);
  for (auto &mine : made) {
    for (int i = 0; i < receives; ++i)
      mine.push_back(rt->requests.allocate(request_kind::recv, &comm));
  }
  call_lock_leave();

  // One pass over the ring without the call lock: what may go aside, in
  // order, stopping at the first packet that may not.
  auto aside_pass = [&] {
    if (!ring_lock.try_lock()) return;
    while (ring_next < ring.size()) {
      const arrival &a = ring[ring_next];
      if (!packet_deliver_aside(peer, a.h, reinterpret_cast<const std::byte *>(&a.value),
                                sizeof(int))) {
        break;
      }
      ++ring_next;
    }
    ring_done.store(ring_next, std::memory_order_relaxed);
    ring_lock.unlock();
  };

  std::vector<std::thread> pool;
  for (int id = 0; id < receivers; ++id) {
    pool.emplace_back([&, id] {
      std::mt19937 random(static_cast<unsigned>(41 + id));
      int i = 0;
      for (request *r : made[static_cast<std::size_t>(id)]) {
        r->key = match_key{comm.context, random() % 2 == 0 ? 1 : any_source, id};
        r->buffer = reinterpret_cast<std::byte *>(
            &got[static_cast<std::size_t>(id)][static_cast<std::size_t>(i++)]);
        r->bytes = sizeof(int);
        r->aside = true;
        if (unexpected_msg *m = rt->matching.take_or_post(*comm.queues, r, true)) {
          r->taken = m;
          recv_taken_later(*r);
        }
        if (random() % 4 == 0) aside_pass();
      }
      for (request *r : made[static_cast<std::size_t>(id)]) {
        while (!request_done(*r)) {
          aside_pass();
          std::this_thread::yield();
        }
      }
    });
  }
  // The call lock's holder: a few packets at a time, credits folded first,
  // then the lock given up as a waiting thread does.
  std::mt19937 holder(5);
  while (ring_done.load(std::memory_order_relaxed) < ring.size()) {
    call_lock_enter();
    {
      const lock_if reading(ring_lock, true);
      credit_fold(peer);
      for (unsigned n = holder() % 8; n > 0 && ring_next < ring.size(); --n, ++ring_next) {
        const arrival &a = ring[ring_next];
        const char *why = packet_deliver_shared(
            peer, a.h, reinterpret_cast<const std::byte *>(&a.value), sizeof(int));
        ASSERT_EQ(why, nullptr);
      }
      ring_done.store(ring_next, std::memory_order_relaxed);
    }
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
  EXPECT_LT(aside, ring.size()) << "the call lock's poll delivered nothing";
  EXPECT_EQ(sink.acks, receivers * receives / 16) << "a synchronous send was not acknowledged";
  call_lock_enter();
  credit_fold(peer);
  EXPECT_EQ(sink.credits_back + peer.owed, static_cast<int>(ring.size()) * credit_cost(sizeof(int)))
      << "credit units lost or returned twice";
  EXPECT_EQ(rt->matching.unexpected_counts().depth, 0U);
  for (auto &mine : made) {
    for (request *r : mine) rt->requests.release(r);
  }
  call_lock_leave();
  delete rt;
  rt = nullptr;
}

}  // namespace
}  // namespace iris::device
