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
// And rendezvous messages into aside receives (rendezvous_rts_aside,
// rendezvous_data_aside): the RTS answered with a CTS without the call lock
// (or by its next holder when the transport is full), the data packets
// delivered by either side, the last one refused when the user freed the
// receive, and a seeded stress of both sides at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "device/base/threading.hpp"
#include "device/core/transport.hpp"
#include "device/protocols/credit.hpp"
#include "device/protocols/dispatch.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/recv_multiple.hpp"
#include "device/protocols/rendezvous.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/runtime.hpp"
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
    // Under the VC's lock from here.
    if (h.type == packet_type::cts && full.load(std::memory_order_relaxed)) return xfer::retry;
    credits_back += h.credits;
    if (h.type == packet_type::sync_ack) ++acks;
    if (h.type == packet_type::cts) {
      ctss.push_back(h);
      if (on_cts) on_cts(h);
    }
    return xfer::done;
  }
  int poll(int budget) override {
    (void)budget;
    return 0;
  }
  bool pipelines_aside(const vc &from, std::size_t bytes) const override {
    (void)from, (void)bytes;
    return pipelines;
  }
  int credits_back = 0;
  int acks = 0;
  // Rendezvous: whether aside passes answer RTSs; a full transport refuses
  // CTSs; the CTSs sent, and what the peer does on each (the stress test).
  bool pipelines = false;
  std::atomic<bool> full{false};
  std::vector<packet_header> ctss;
  std::function<void(const packet_header &)> on_cts;
};

struct arrival {
  packet_header h;
  int value;
};

class AsideDelivery : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(rt, nullptr);
    auto sink = std::make_unique<credit_sink>();
    sink_ = sink.get();
    peer_runtime(std::move(sink), comm_);
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

// A credit packet is taken aside, its credits with it: one at the head of a
// ring stopped every aside pass there until the call lock's poll came (a
// thread holding the call lock in a user op kept a large message from
// being delivered aside: threads.c, phase J).
TEST_F(AsideDelivery, ACreditPacketIsTakenAsideWithItsCredits) {
  const multiple_receives on;
  peer().credits = 10;
  packet_header h{};
  h.type = packet_type::credit;
  h.credits = 20;
  ASSERT_TRUE(packet_deliver_aside(peer(), h, nullptr, 0));
  EXPECT_EQ(peer().credits, 30);
  h.credits = 100;  // never past the window
  ASSERT_TRUE(packet_deliver_aside(peer(), h, nullptr, 0));
  EXPECT_EQ(peer().credits, peer().window);
  h.flags = 1;  // anything odd is the call lock's poll's to report
  EXPECT_FALSE(packet_deliver_aside(peer(), h, nullptr, 0));
}

// A control packet (here a CTS) to a rank known dead that finds its
// transport full is dropped, not left in the VC's backlog: a dead rank
// never makes room, and MPI_Finalize waits for every backlog to empty. A
// live rank's waits there as before.
TEST_F(AsideDelivery, AControlPacketToADeadRankIsDroppedWhenItFindsNoRoom) {
  sink_->full = true;
  packet_header h{};
  h.type = packet_type::cts;
  h.source = 0;
  rt->recovery.failed.assign(rt->vcs.size(), 0);
  rt->recovery.failed[1] = 1;
  rt->troubled = true;  // as failure_known leaves it
  call_lock_enter();
  control_send(peer(), h);
  call_lock_leave();
  EXPECT_TRUE(peer().backlog.empty()) << "a packet for a dead rank waits for room it never gets";
  EXPECT_FALSE(peer().on_sending_list);
  rt->recovery.failed[1] = 0;
  call_lock_enter();
  control_send(peer(), h);
  call_lock_leave();
  EXPECT_EQ(peer().backlog.size(), 1U);
  EXPECT_TRUE(peer().on_sending_list);
  peer().backlog.clear();
}

// Rendezvous into aside receives: packets built by hand, delivered as a
// pair ring's readers would (packet_deliver_aside without the call lock,
// packet_deliver_shared with it).
class AsideRendezvous : public AsideDelivery {
 protected:
  void SetUp() override {
    AsideDelivery::SetUp();
    sink_->pipelines = true;
  }

  static packet_header rts(int tag, std::size_t length, std::uint64_t sender_request) {
    packet_header h{};
    h.type = packet_type::rts;
    h.context = world_context;
    h.source = 1;
    h.tag = tag;
    h.length = length;
    h.sender_request = sender_request;
    return h;
  }
  static packet_header data(const request &r, std::size_t offset, std::size_t length) {
    packet_header h{};
    h.type = packet_type::data;
    h.receiver_request = request_id(r);
    h.offset = offset;
    h.length = length;
    return h;
  }
  bool rts_aside(const packet_header &h) {
    const rts_payload where{};
    return packet_deliver_aside(peer(), h, reinterpret_cast<const std::byte *>(&where),
                                sizeof(where));
  }
  void rts_locked(const packet_header &h) {
    const rts_payload where{};
    call_lock_enter();
    EXPECT_EQ(packet_deliver_shared(peer(), h, reinterpret_cast<const std::byte *>(&where),
                                    sizeof(where)),
              nullptr);
    call_lock_leave();
  }
  // Without the call lock, as recv_unlocked: a receive of `bytes`.
  void post_bytes(request *r, int tag, std::byte *into, std::size_t bytes) {
    r->key = match_key{comm_.context, 1, tag};
    r->buffer = into;
    r->bytes = bytes;
    recv_post_unlocked(*comm_.queues, *r);
  }
  bool data_aside(const packet_header &h, const std::byte *payload) {
    return packet_deliver_aside(peer(), h, payload, h.length);
  }
  void data_locked(const packet_header &h, const std::byte *payload) {
    call_lock_enter();
    EXPECT_EQ(packet_deliver_shared(peer(), h, payload, h.length), nullptr);
    call_lock_leave();
  }
  static std::vector<std::byte> pattern(std::size_t n, int seed) {
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(i * 7 + seed);
    return v;
  }
};

// An RTS that meets an aside receive is answered by the aside pass (its
// CTS carries both requests and the length), and its data packets, from
// either reader, fill the buffer; the last completes it. Neither counts
// among the pipeline's receives, which the call lock's engine choice reads.
TEST_F(AsideRendezvous, AnAsidePassAnswersTheRtsAndEitherReaderDeliversTheData) {
  const multiple_receives on;
  request *r = requests(1)[0];
  std::vector<std::byte> in(3000);
  const std::vector<std::byte> sent = pattern(3000, 1);
  post_bytes(r, 5, in.data(), in.size());
  ASSERT_TRUE(rts_aside(rts(5, 3000, 77)));
  ASSERT_EQ(sink_->ctss.size(), 1U);
  EXPECT_EQ(sink_->ctss[0].sender_request, 77U);
  EXPECT_EQ(sink_->ctss[0].receiver_request, request_id(*r));
  EXPECT_EQ(sink_->ctss[0].length, 3000U);
  EXPECT_EQ(rt->matching.aside_rendezvous(), 1U);
  // Out of sequence: refused, left to the call lock's poll.
  EXPECT_FALSE(data_aside(data(*r, 1000, 1000), sent.data() + 1000));
  ASSERT_TRUE(data_aside(data(*r, 0, 1000), sent.data()));
  data_locked(data(*r, 1000, 1000), sent.data() + 1000);
  EXPECT_FALSE(request_done(*r));
  ASSERT_TRUE(data_aside(data(*r, 2000, 1000), sent.data() + 2000));
  ASSERT_TRUE(request_done(*r));
  EXPECT_EQ(r->status_bytes, 3000U);
  EXPECT_EQ(r->status_tag, 5);
  EXPECT_EQ(in, sent);
  EXPECT_EQ(peer().aside_data.get(), 2);
  EXPECT_TRUE(peer().streaming_aside.empty());
  EXPECT_EQ(rt->pipeline_receives, 0);
  call_lock_enter();
  rt->requests.release(r);
  call_lock_leave();
}

// The same receive matched under the call lock (its poll read the RTS)
// joins the aside streams too, so an aside pass delivers its data; a
// receive posted under the call lock (not aside) does not, and its RTS is
// never the aside pass's.
TEST_F(AsideRendezvous, AnAsideReceiveAnsweredUnderTheCallLockStreamsAsideToo) {
  const multiple_receives on;
  std::vector<request *> made = requests(2);
  std::vector<std::byte> in(2000), locked_in(2000);
  const std::vector<std::byte> sent = pattern(2000, 2);
  post_bytes(made[0], 6, in.data(), in.size());
  rts_locked(rts(6, 2000, 88));
  ASSERT_EQ(sink_->ctss.size(), 1U);
  EXPECT_EQ(rt->pipeline_receives, 0) << "an aside stream was counted";
  ASSERT_TRUE(data_aside(data(*made[0], 0, 1000), sent.data()));
  ASSERT_TRUE(data_aside(data(*made[0], 1000, 1000), sent.data() + 1000));
  ASSERT_TRUE(request_done(*made[0]));
  EXPECT_EQ(in, sent);

  call_lock_enter();
  request *locked =
      recv_start(comm_, comm_.context, locked_in.data(), locked_in.size(), 1, 7, made[1]);
  call_lock_leave();
  EXPECT_FALSE(rts_aside(rts(7, 2000, 99))) << "an RTS for a receive posted under the lock";
  rts_locked(rts(7, 2000, 99));
  ASSERT_EQ(sink_->ctss.size(), 2U);
  EXPECT_EQ(rt->pipeline_receives, 1);
  EXPECT_FALSE(data_aside(data(*locked, 0, 1000), sent.data())) << "not an aside stream";
  data_locked(data(*locked, 0, 1000), sent.data());
  data_locked(data(*locked, 1000, 1000), sent.data() + 1000);
  ASSERT_TRUE(request_done(*locked));
  EXPECT_EQ(locked_in, sent);
  EXPECT_EQ(rt->pipeline_receives, 0);
  call_lock_enter();
  for (request *r : made) rt->requests.release(r);
  call_lock_leave();
}

// A transport with no room for the CTS: the aside pass still takes the RTS
// and hands the CTS to the call lock's next holder, which sends it once.
TEST_F(AsideRendezvous, ACtsTheTransportHasNoRoomForIsSentByTheNextHolder) {
  const multiple_receives on;
  request *r = requests(1)[0];
  std::vector<std::byte> in(1000);
  const std::vector<std::byte> sent = pattern(1000, 3);
  post_bytes(r, 8, in.data(), in.size());
  sink_->full = true;
  ASSERT_TRUE(rts_aside(rts(8, 1000, 55)));
  EXPECT_TRUE(sink_->ctss.empty());
  sink_->full = false;
  call_lock_enter();  // the new holder sends what aside passes could not
  call_lock_leave();
  ASSERT_EQ(sink_->ctss.size(), 1U);
  EXPECT_EQ(sink_->ctss[0].sender_request, 55U);
  EXPECT_EQ(sink_->ctss[0].receiver_request, request_id(*r));
  call_lock_enter();
  call_lock_leave();
  EXPECT_EQ(sink_->ctss.size(), 1U) << "sent twice";
  ASSERT_TRUE(data_aside(data(*r, 0, 1000), sent.data()));
  ASSERT_TRUE(request_done(*r));
  EXPECT_EQ(in, sent);
  call_lock_enter();
  rt->requests.release(r);
  call_lock_leave();
}

// MPI_Request_free while the data streams in: the aside pass refuses the
// last packet (only the call lock may release a request), the call lock's
// poll delivers it and releases the receive, once.
TEST_F(AsideRendezvous, AReceiveFreedWhileStreamingIsFinishedAndReleasedUnderTheCallLock) {
  const multiple_receives on;
  request *r = requests(1)[0];
  std::vector<std::byte> in(2000);
  const std::vector<std::byte> sent = pattern(2000, 4);
  post_bytes(r, 9, in.data(), in.size());
  ASSERT_TRUE(rts_aside(rts(9, 2000, 66)));
  ASSERT_TRUE(data_aside(data(*r, 0, 1000), sent.data()));
  call_lock_enter();
  const std::size_t live = rt->requests.live();
  EXPECT_FALSE(request_mark_freed(*r));
  call_lock_leave();
  EXPECT_FALSE(data_aside(data(*r, 1000, 1000), sent.data() + 1000));
  data_locked(data(*r, 1000, 1000), sent.data() + 1000);
  EXPECT_EQ(in, sent);
  call_lock_enter();
  EXPECT_EQ(rt->requests.live(), live - 1) << "the freed receive was not released";
  call_lock_leave();
  EXPECT_TRUE(peer().streaming_aside.empty());
}

// Seeded stress: three threads post receives of rendezvous messages without
// the call lock and deliver aside between posts; the peer (the sink) writes
// each message's data packets, in a seeded size, once it sees its CTS; the
// call lock's holder reads the same "ring" and delivers everything, and its
// transport is full for a seeded share of the aside CTSs. Every message
// reaches its receive whole, each CTS goes once, and nothing stays counted.
TEST_F(AsideRendezvous, SeededStressEachStreamWholeAndEachCtsOnce) {
  const multiple_receives on;
  constexpr int receivers = 3;
  constexpr int receives = 300;
  constexpr std::size_t fragment = 256;
  std::mt19937 mix(17);
  std::vector<std::size_t> length(receivers * receives);
  for (auto &n : length) n = 1 + mix() % (4 * fragment);
  // The ring: the RTSs first (tag = receiver, in each receiver's order),
  // then data packets as the CTSs come. Written under the VC's lock (the
  // sink's send_held), read under ring_lock_ by the index `next`.
  struct slot {
    packet_header h;
    const std::byte *payload;
  };
  std::vector<slot> ring(receivers * receives * 6);
  std::atomic<std::size_t> written{0};
  std::vector<int> next_of(receivers, 0);
  std::vector<std::vector<std::byte>> payloads(length.size());
  std::vector<std::uint64_t> sender_of(length.size());
  for (std::size_t m = 0; m < length.size(); ++m) {
    const int tag = static_cast<int>(m % receivers);
    payloads[m] = pattern(length[m], static_cast<int>(m));
    sender_of[m] = m + 1;
    ring[written.load()] = {rts(tag, length[m], m + 1), nullptr};
    written.fetch_add(1);
  }
  static const rts_payload nowhere{};
  std::mt19937 fullness(19);
  sink_->on_cts = [&](const packet_header &cts) {
    const std::size_t m = cts.sender_request - 1;
    EXPECT_EQ(cts.length, length[m]);
    for (std::size_t at = 0; at < length[m]; at += fragment) {
      packet_header h{};
      h.type = packet_type::data;
      h.receiver_request = cts.receiver_request;
      h.offset = at;
      h.length = std::min(fragment, length[m] - at);
      ring[written.load(std::memory_order_relaxed)] = {h, payloads[m].data() + at};
      written.fetch_add(1, std::memory_order_release);
    }
    sink_->full = fullness() % 4 == 0;  // the next aside CTS may find no room
  };
  std::size_t next = 0;  // under ring_lock_
  // Whether aside passes have taken an RTS and a data packet: until then
  // (or 2 s) the call lock's holder delivers nothing, so that a loaded
  // machine that runs the holder first still tests the aside paths (the
  // sanitizer pass once found no RTS answered aside).
  std::atomic<bool> aside_rts{false};
  std::atomic<bool> aside_data{false};
  const auto deliver = [&](bool aside) {
    for (int n = 0; n < 16 && next < written.load(std::memory_order_acquire); ++n) {
      const slot &s = ring[next];
      const std::byte *p =
          s.h.type == packet_type::rts ? reinterpret_cast<const std::byte *>(&nowhere) : s.payload;
      const std::size_t len = s.h.type == packet_type::rts ? sizeof(nowhere) : s.h.length;
      if (aside) {
        if (!packet_deliver_aside(peer(), s.h, p, len)) return;
        (s.h.type == packet_type::rts ? aside_rts : aside_data).store(true);
      } else {
        EXPECT_EQ(packet_deliver_shared(peer(), s.h, p, len), nullptr);
      }
      ++next;
    }
  };
  std::vector<std::vector<request *>> made;
  for (int id = 0; id < receivers; ++id) made.push_back(requests(receives));
  std::vector<std::vector<std::byte>> in(length.size());
  for (std::size_t m = 0; m < length.size(); ++m) in[m].resize(4 * fragment);
  std::atomic<int> done{0};
  std::vector<std::thread> pool;
  for (int id = 0; id < receivers; ++id) {
    pool.emplace_back([&, id] {
      std::mt19937 random(static_cast<unsigned>(61 + id));
      auto &mine = made[static_cast<std::size_t>(id)];
      for (int i = 0; i < receives; ++i) {
        const std::size_t m = static_cast<std::size_t>(i * receivers + id);
        post_bytes(mine[static_cast<std::size_t>(i)], id, in[m].data(), in[m].size());
        if (random() % 2 == 0 && ring_lock_.try_lock()) {
          deliver(true);
          ring_lock_.unlock();
        }
      }
      for (request *r : mine) {
        while (!request_done(*r)) {
          if (ring_lock_.try_lock()) {
            deliver(true);
            ring_lock_.unlock();
          }
          std::this_thread::yield();
        }
      }
      done.fetch_add(1);
    });
  }
  // The call lock's holder, giving the lock up as a waiting thread does.
  std::mt19937 holder(23);
  const auto start = std::chrono::steady_clock::now();
  const auto aside_seen = [&] {
    return (aside_rts.load() && aside_data.load()) ||
           std::chrono::steady_clock::now() - start > std::chrono::seconds(2);
  };
  while (done.load() < receivers) {
    call_lock_enter();
    if (holder() % 2 == 0 && aside_seen()) {
      const lock_if reading(ring_lock_, true);
      deliver(false);
    }
    // The transport gets room again now and then; what found it full waits
    // in the backlog, as the poll's sends push it.
    if (holder() % 4 == 0) sink_->full = false;
    if (!peer().backlog.empty()) send_push(peer());
    call_lock_pause(true);
    call_lock_leave();
  }
  for (auto &t : pool) t.join();

  for (std::size_t m = 0; m < length.size(); ++m) {
    const request &r = *made[m % receivers][m / receivers];
    ASSERT_EQ(r.status_bytes, length[m]) << "message " << m;
    ASSERT_TRUE(std::equal(payloads[m].begin(), payloads[m].end(), in[m].begin()))
        << "message " << m;
  }
  std::vector<int> ctss(length.size(), 0);
  for (const packet_header &h : sink_->ctss) ++ctss[h.sender_request - 1];
  EXPECT_EQ(std::count(ctss.begin(), ctss.end(), 1), static_cast<long>(length.size()))
      << "a CTS went twice or never";
  EXPECT_GT(rt->matching.aside_rendezvous(), 0U) << "no RTS was answered aside";
  EXPECT_GT(peer().aside_data.get(), 0) << "no data packet was delivered aside";
  EXPECT_EQ(rt->pipeline_receives, 0);
  EXPECT_TRUE(peer().streaming_aside.empty());
  call_lock_enter();
  for (auto &mine : made) {
    for (request *r : mine) rt->requests.release(r);
  }
  call_lock_leave();
}

}  // namespace
}  // namespace iris::device
