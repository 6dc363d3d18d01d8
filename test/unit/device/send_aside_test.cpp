// MPI_THREAD_MULTIPLE's aside sends (rendezvous.hpp): a rendezvous send of
// plain bytes to a shared VC joins the VC's sending_aside once its RTS is
// written, under the call lock (send_join_aside; not one whose RTS waits in
// the queue); its CTS, taken by an aside pass
// (packet_deliver_aside) or by the call lock's poll, clears it, and
// whichever thread holds the VC's lock writes its data packets
// (rendezvous_push_aside): the CTS's reader, its waiter, or the call lock's
// poll (send_push). The transport here is a sink that records every packet
// under the VC's lock and may refuse data (a full ring). Each case checks
// the bytes the "receiver" got, in order; a seeded stress test runs three
// senders, an aside reader and the call lock's holder at once.
// ThreadSanitizer watches the requests, the VC and the counters.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "device/base/threading.hpp"
#include "device/core/transport.hpp"
#include "device/protocols/cancel.hpp"
#include "device/protocols/dispatch.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/recv_multiple.hpp"
#include "device/protocols/rendezvous.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/runtime.hpp"
#include "multiple_runtime.hpp"

namespace iris::device {
namespace {

constexpr std::size_t fragment = 1000;

// Records what this rank sends its peer, under the VC's lock: each RTS, and
// each data packet's bytes appended to its receive's (receiver_request - 1)
// buffer, in order or counted as out of order. `room`: data packets it
// takes before it refuses (negative: no end).
class data_sink final : public transport {
 public:
  std::string_view name() const override { return "data_sink"; }
  bool concurrent_sends() const override { return true; }
  xfer send(vc &to, const packet_header &h, std::span<const iovec> payload) override {
    const vc_guard guard(to);
    return send_held(to, h, payload);
  }
  xfer send_held(vc &to, const packet_header &h, std::span<const iovec> payload) override {
    EXPECT_TRUE(to.send_lock.held()) << "a send to a shared VC without its lock";
    if (h.type == packet_type::rts) {
      if (refuse_rts) return xfer::retry;
      rtss.push_back(h);
      if (on_rts) on_rts(h);
      return xfer::done;
    }
    if (h.type != packet_type::data) return xfer::done;
    if (room == 0 || (refuse_one_in != 0 && dice() % refuse_one_in == 0)) return xfer::retry;
    if (room > 0) --room;
    std::vector<std::byte> &into = got.at(h.receiver_request - 1);
    if (h.offset != into.size() || payload.size() != 1 || payload[0].iov_len != h.length) {
      ++out_of_order;
    }
    const auto *bytes = static_cast<const std::byte *>(payload[0].iov_base);
    into.insert(into.end(), bytes, bytes + payload[0].iov_len);
    return xfer::done;
  }
  int poll(int budget) override {
    (void)budget;
    return 0;
  }
  bool streams_sends_aside(const vc &to) const override {
    (void)to;
    return aside;
  }
  bool aside = true;
  bool refuse_rts = false;
  int room = -1;
  unsigned refuse_one_in = 0;
  std::mt19937 dice{5};
  std::vector<packet_header> rtss;
  std::vector<std::vector<std::byte>> got = std::vector<std::vector<std::byte>>(64);
  int out_of_order = 0;
  std::function<void(const packet_header &)> on_rts;
};

std::vector<std::byte> pattern(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(i * 13 + seed);
  return v;
}

class AsideSends : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(rt, nullptr);
    auto sink = std::make_unique<data_sink>();
    sink_ = sink.get();
    peer_runtime(std::move(sink), comm_).fragment = fragment;
  }

  void TearDown() override {
    delete rt;
    rt = nullptr;
  }

  vc &peer() { return rt->vcs[1]; }

  // MPI_Isend under the call lock, as its binding: the send, then its
  // joining the aside sends.
  request *start(const std::vector<std::byte> &data, int tag) {
    call_lock_enter();
    request *r = send_start(comm_, comm_.context, data.data(), data.size(), 1, tag,
                            send_mode::standard, true);
    send_join_aside(*r);
    call_lock_leave();
    return r;
  }
  static packet_header cts(const request &s, std::size_t length, std::uint64_t receiver) {
    packet_header h{};
    h.type = packet_type::cts;
    h.sender_request = request_id(s);
    h.receiver_request = receiver;
    h.length = length;
    return h;
  }
  bool cts_aside(const packet_header &h) { return packet_deliver_aside(peer(), h, nullptr, 0); }
  void cts_locked(const packet_header &h) {
    call_lock_enter();
    EXPECT_EQ(packet_deliver_shared(peer(), h, nullptr, 0), nullptr);
    call_lock_leave();
  }
  void release(request *r) {
    call_lock_enter();
    rt->requests.release(r);
    call_lock_leave();
  }

  data_sink *sink_ = nullptr;
  communicator comm_;
};

// The RTS goes under the call lock and registers the send (not counted
// among the call lock's rendezvous sends); an aside pass takes its CTS and
// writes every data packet at once, without the call lock, completing it.
TEST_F(AsideSends, AnAsidePassTakesTheCtsAndWritesTheDataWithoutTheCallLock) {
  const multiple_receives on;
  const std::vector<std::byte> sent = pattern(2500, 1);
  request *s = start(sent, 3);
  ASSERT_EQ(sink_->rtss.size(), 1U);
  EXPECT_TRUE(s->stream_aside);
  EXPECT_TRUE(peer().sending_aside.holds(*s));
  EXPECT_EQ(rt->rendezvous_sends, 0);
  EXPECT_EQ(rt->stats.rendezvous_send_aside, 1U);
  EXPECT_FALSE(request_done(*s));
  ASSERT_TRUE(cts_aside(cts(*s, 2500, 1)));
  ASSERT_TRUE(request_done(*s));
  EXPECT_EQ(sink_->got[0], sent);
  EXPECT_EQ(sink_->out_of_order, 0);
  EXPECT_EQ(peer().aside_sent.get(), 3);
  EXPECT_TRUE(peer().sending_aside.empty());
  EXPECT_FALSE(cts_aside(cts(*s, 2500, 1))) << "a second CTS for it, taken aside";
  release(s);
}

// A full transport stops the push part-way; the next holder of the VC's
// lock goes on where it stopped: another thread without the call lock, then
// the call lock's poll (send_push), whose packets are not counted aside.
// A CTS asking for less (a truncating receive) gets only that much.
TEST_F(AsideSends, AStreamStoppedByAFullTransportIsFinishedByTheNextHolderOfTheVc) {
  const multiple_receives on;
  const std::vector<std::byte> sent = pattern(4500, 2);
  request *s = start(sent, 4);
  sink_->room = 1;
  ASSERT_TRUE(cts_aside(cts(*s, 4000, 1)));
  EXPECT_EQ(sink_->got[0].size(), fragment);
  EXPECT_FALSE(request_done(*s));
  sink_->room = 1;
  std::thread([&] { EXPECT_EQ(rendezvous_push_aside(peer()), 1); }).join();
  EXPECT_EQ(sink_->got[0].size(), 2 * fragment);
  EXPECT_FALSE(request_done(*s));
  sink_->room = -1;
  call_lock_enter();
  EXPECT_EQ(send_push(peer()), 2);
  call_lock_leave();
  ASSERT_TRUE(request_done(*s));
  EXPECT_EQ(sink_->got[0], std::vector<std::byte>(sent.begin(), sent.begin() + 4000));
  EXPECT_EQ(sink_->out_of_order, 0);
  EXPECT_EQ(peer().aside_sent.get(), 2) << "the call lock's packets counted aside";
  release(s);
}

// The call lock's poll may read the CTS first: the send streams the same
// way. A transport that does not allow it (streams_sends_aside false) keeps
// the send under the call lock, counted as before.
TEST_F(AsideSends, ACtsReadUnderTheCallLockClearsItTooAndOtherTransportsKeepTheOldPath) {
  const multiple_receives on;
  const std::vector<std::byte> sent = pattern(1800, 3);
  request *s = start(sent, 5);
  cts_locked(cts(*s, 1800, 1));
  ASSERT_TRUE(request_done(*s));
  EXPECT_EQ(sink_->got[0], sent);
  EXPECT_EQ(peer().aside_sent.get(), 0);
  release(s);

  sink_->aside = false;
  request *locked = start(sent, 6);
  EXPECT_FALSE(locked->stream_aside);
  EXPECT_EQ(rt->rendezvous_sends, 1);
  EXPECT_FALSE(cts_aside(cts(*locked, 1800, 2))) << "taken aside on a transport that forbids it";
  cts_locked(cts(*locked, 1800, 2));
  call_lock_enter();
  send_push(peer());
  call_lock_leave();
  ASSERT_TRUE(request_done(*locked));
  EXPECT_EQ(sink_->got[1], sent);
  EXPECT_EQ(rt->rendezvous_sends, 0);
  release(locked);
}

// An RTS the transport had no room for waits in the send queue; such a
// send never joins the aside sends (a thread without the call lock could
// complete it, and its waiter recycle it, while the call lock's holder
// still takes it off the queue): its RTS, CTS and data are the call
// lock's, as before.
TEST_F(AsideSends, ASendWhoseRtsWaitsInTheQueueStaysTheCallLocks) {
  const multiple_receives on;
  const std::vector<std::byte> sent = pattern(1500, 6);
  sink_->refuse_rts = true;
  request *s = start(sent, 10);
  EXPECT_FALSE(s->stream_aside);
  EXPECT_FALSE(peer().sending_aside.holds(*s));
  EXPECT_EQ(rt->rendezvous_sends, 1);
  sink_->refuse_rts = false;
  call_lock_enter();
  send_push(peer());  // the RTS goes now
  call_lock_leave();
  ASSERT_EQ(sink_->rtss.size(), 1U);
  EXPECT_FALSE(cts_aside(cts(*s, 1500, 1)));
  cts_locked(cts(*s, 1500, 1));
  call_lock_enter();
  send_push(peer());
  call_lock_leave();
  ASSERT_TRUE(request_done(*s));
  EXPECT_EQ(sink_->got[0], sent);
  EXPECT_EQ(peer().aside_sent.get(), 0);
  EXPECT_EQ(rt->rendezvous_sends, 0);
  release(s);
}

// MPI_Request_free before the last packet: the pusher does not complete
// it (only the call lock may release a request); the lock's next holder
// does, once.
TEST_F(AsideSends, ASendFreedBeforeItsLastPacketIsReleasedByTheCallLocksNextHolder) {
  const multiple_receives on;
  const std::vector<std::byte> sent = pattern(2000, 4);
  request *s = start(sent, 7);
  call_lock_enter();
  const std::size_t live = rt->requests.live();
  EXPECT_FALSE(request_mark_freed(*s));
  call_lock_leave();
  ASSERT_TRUE(cts_aside(cts(*s, 2000, 1)));
  EXPECT_EQ(sink_->got[0], sent);
  call_lock_enter();  // the holder finishes what the pusher left
  EXPECT_EQ(rt->requests.live(), live - 1) << "the freed send was not released";
  call_lock_leave();
  EXPECT_TRUE(peer().sending_aside.empty());
}

// MPI_Cancel before the CTS takes the send out of the aside sends (its CTS,
// if the receiver matched it first, is the call lock's); after the CTS it
// is too late, and the data goes.
TEST_F(AsideSends, ACancelBeforeTheCtsTakesItOutOfTheAsideSendsAndAfterIsTooLate) {
  const multiple_receives on;
  const std::vector<std::byte> sent = pattern(1500, 5);
  request *early = start(sent, 8);
  call_lock_enter();
  request_cancel(*early);
  call_lock_leave();
  EXPECT_TRUE(early->cancel_pending);
  EXPECT_FALSE(peer().sending_aside.holds(*early));
  EXPECT_FALSE(cts_aside(cts(*early, 1500, 1))) << "a cancelled send's CTS taken aside";

  request *late = start(sent, 9);
  sink_->room = 0;
  ASSERT_TRUE(cts_aside(cts(*late, 1500, 2)));
  call_lock_enter();
  request_cancel(*late);
  call_lock_leave();
  EXPECT_FALSE(late->cancel_pending) << "a send already streaming was asked to be cancelled";
  sink_->room = -1;
  EXPECT_EQ(rendezvous_push_aside(peer()), 2);
  ASSERT_TRUE(request_done(*late));
  EXPECT_EQ(sink_->got[1], sent);
  release(late);
  release(early);
}

// Seeded stress: three threads start sends of seeded sizes under the call
// lock and wait for each as MPI_Wait does without it (pushing their VC,
// reading the "ring" aside); the peer answers each RTS with a CTS on the
// ring; the call lock's holder reads the ring too and pushes (send_push);
// the transport refuses a seeded share of the data packets. Every message
// arrives whole and in order, every send completes, and nothing stays
// registered or counted.
TEST_F(AsideSends, SeededStressEachStreamWholeInOrderWhoeverPushes) {
  const multiple_receives on;
  constexpr int senders = 3;
  constexpr int sends = 150;
  constexpr int total = senders * sends;
  sink_->got.assign(total, {});
  sink_->refuse_one_in = 6;
  std::mt19937 mix(23);
  std::vector<std::vector<std::byte>> data(total);
  for (int i = 0; i < total; ++i) data[i] = pattern(257 + mix() % (5 * fragment), i);
  // The ring of CTSs, written by the sink under the VC's lock as each RTS
  // goes (the receive's id: its place), read under ring_lock by `next`.
  std::vector<packet_header> ring(total);
  std::atomic<int> written{0};
  std::vector<int> tag_of(total);
  sink_->on_rts = [&](const packet_header &h) {
    const int at = written.load(std::memory_order_relaxed);
    tag_of[at] = h.tag;
    packet_header c{};
    c.type = packet_type::cts;
    c.sender_request = h.sender_request;
    c.receiver_request = static_cast<std::uint64_t>(at) + 1;
    c.length = h.length;
    ring[at] = c;
    written.store(at + 1, std::memory_order_release);
  };
  spin_lock ring_lock;
  int next = 0;  // under ring_lock
  std::atomic<int> aside_taken{0};
  auto aside_pass = [&] {
    if (!ring_lock.try_lock()) return;
    while (next < written.load(std::memory_order_acquire) &&
           packet_deliver_aside(peer(), ring[next], nullptr, 0)) {
      ++next;
      aside_taken.fetch_add(1, std::memory_order_relaxed);
    }
    ring_lock.unlock();
  };
  std::atomic<bool> stop{false};
  std::thread holder([&] {
    std::mt19937 random(41);
    while (!stop.load(std::memory_order_relaxed)) {
      call_lock_enter();
      {
        const lock_if reading(ring_lock, true);
        for (unsigned n = random() % 4; n > 0 && next < written.load(std::memory_order_acquire);
             --n, ++next) {
          EXPECT_EQ(packet_deliver_shared(peer(), ring[next], nullptr, 0), nullptr);
        }
      }
      send_push(peer());
      call_lock_leave();
      std::this_thread::yield();
    }
  });
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < senders; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < sends; ++k) {
        const int i = t * sends + k;
        call_lock_enter();
        request *s = send_start(comm_, comm_.context, data[i].data(), data[i].size(), 1, i,
                                send_mode::standard, true);
        send_join_aside(*s);
        call_lock_leave();
        if (!s->stream_aside) bad.fetch_add(1);
        while (!request_done(*s)) {
          rendezvous_push_aside(peer());
          aside_pass();
          std::this_thread::yield();
        }
        call_lock_enter();
        rt->requests.release(s);
        call_lock_leave();
      }
    });
  }
  for (auto &t : threads) t.join();
  stop = true;
  holder.join();
  EXPECT_EQ(bad.load(), 0) << "sends that did not register aside";
  ASSERT_EQ(written.load(), total);
  EXPECT_EQ(sink_->out_of_order, 0);
  for (int at = 0; at < total; ++at) {
    EXPECT_EQ(sink_->got[at], data[tag_of[at]]) << "message of tag " << tag_of[at];
  }
  EXPECT_GT(aside_taken.load(), 0) << "no CTS taken aside";
  EXPECT_GT(peer().aside_sent.get(), 0) << "no packet written without the call lock";
  EXPECT_TRUE(peer().sending_aside.empty());
  EXPECT_EQ(rt->rendezvous_sends, 0);
}

}  // namespace
}  // namespace iris::device
