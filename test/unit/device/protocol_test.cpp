// The protocols in one process, over loopback transports: rank 0 of a world
// of two talks to "rank 1", whose VC carries every packet back to rank 0 as
// if rank 1 had sent it. One VC thus plays both sides of every protocol
// (credits spent and owed, RTS and CTS, cancel and its answer), through the
// real device code from send_start to packet_deliver.
//
// Each test runs over every loopback kind:
//   self      the real self transport: delivered inside send, no flow control
//   ring      a real shm ring in this process's memory; no single copy, so
//             rendezvous data goes CTS + data packets (pipeline)
//   ring_read the ring, with a synchronous single-copy read (as CMA)
//   net_rma   a bounded packet queue with an asynchronous read (as OFI RMA),
//             finished by a later poll
//   net       the bounded queue without read (as TCP)
// and message sizes from the live constants: 0, 1, the inline capacity of
// an unexpected message +-1, the eager limit +-1, the fragment +-1 and four
// fragments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device/collectives/schedule.hpp"
#include "device/protocols/cancel.hpp"
#include "device/protocols/credit.hpp"
#include "device/protocols/dispatch.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/rendezvous.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"
#include "device/transports/self.hpp"
#include "shm/ring.hpp"

namespace iris::device {
namespace {

enum class loop_kind { self, ring, ring_read, net_rma, net };

const char *kind_name(loop_kind k) {
  switch (k) {
    case loop_kind::self:
      return "self";
    case loop_kind::ring:
      return "ring";
    case loop_kind::ring_read:
      return "ring_read";
    case loop_kind::net_rma:
      return "net_rma";
    case loop_kind::net:
      return "net";
  }
  return "?";
}

constexpr int peer_rank = 1;
constexpr std::size_t ring_capacity = 64 * 1024;  // small, so that it fills and wraps
constexpr std::size_t queue_limit = 8;            // packets the fake net holds before retry

// A transport whose packets come back to this process as from `peer_rank`.
class loopback final : public transport {
 public:
  explicit loopback(loop_kind kind) : kind_(kind) {
    if (uses_ring()) {
      const std::size_t bytes = shm::ring_footprint(ring_capacity);
      memory_ = static_cast<std::byte *>(std::aligned_alloc(shm::cache_line, bytes));
      std::memset(memory_, 0, bytes);
      auto *control = new (memory_) shm::ring_control{};
      control->capacity = ring_capacity;
      tx_ = shm::ring_sender(control, memory_ + sizeof(shm::ring_control));
      rx_ = shm::ring_receiver(control, memory_ + sizeof(shm::ring_control));
    }
  }
  ~loopback() override { std::free(memory_); }
  loopback(const loopback &) = delete;
  loopback &operator=(const loopback &) = delete;

  bool uses_ring() const { return kind_ == loop_kind::ring || kind_ == loop_kind::ring_read; }
  std::size_t max_payload() const {
    return uses_ring() ? shm::max_record_payload(ring_capacity) - sizeof(packet_header)
                       : std::size_t{1} << 20;
  }

  std::string_view name() const override { return kind_name(kind_); }

  xfer send(vc &to, const packet_header &h, std::span<const iovec> payload) override {
    (void)to;
    std::size_t bytes = 0;
    for (const iovec &part : payload) bytes += part.iov_len;
    std::byte *slot = nullptr;
    std::vector<std::byte> packet;
    if (uses_ring()) {
      slot = tx_.reserve(sizeof(h) + bytes);
      if (slot == nullptr) return xfer::retry;
    } else {
      if (queue_.size() >= queue_limit) return xfer::retry;
      packet.resize(sizeof(h) + bytes);
      slot = packet.data();
    }
    std::memcpy(slot, &h, sizeof(h));
    std::size_t at = sizeof(h);
    for (const iovec &part : payload) {
      std::memcpy(slot + at, part.iov_base, part.iov_len);
      at += part.iov_len;
    }
    if (uses_ring()) {
      tx_.commit();
    } else {
      queue_.push_back(std::move(packet));
    }
    if (h.type == packet_type::data) data_sent.push_back({h.receiver_request, h.offset});
    ++sent_;
    return xfer::done;
  }

  int poll(int budget) override {
    int handled = 0;
    vc &from = rt->vcs[peer_rank];
    while (!reads_.empty()) {  // an asynchronous read ends in a later poll
      const pending_read r = reads_.front();
      reads_.pop_front();
      std::memcpy(r.to, reinterpret_cast<const void *>(r.address), r.bytes);
      rendezvous_read_done(r.cookie, nullptr);
      ++handled;
    }
    for (; handled < budget; ++handled) {
      if (uses_ring()) {
        shm::record_view record{};
        if (rx_.peek(record) != shm::peek_status::record) break;
        deliver(from, record.bytes, record.length);
        rx_.consume();
      } else {
        if (queue_.empty()) break;
        const std::vector<std::byte> packet = std::move(queue_.front());
        queue_.pop_front();
        deliver(from, packet.data(), packet.size());
      }
    }
    return handled;
  }

  void expose(vc &to, request &r, rts_payload &where) override {
    (void)to;
    where.address = reinterpret_cast<std::uint64_t>(r.buffer);
    if (kind_ == loop_kind::net_rma) {
      where.rma = 1;
      where.rma_address = where.address;
    }
  }

  xfer read(vc &from, const rts_payload &where, std::byte *to, std::size_t bytes,
            std::uint64_t cookie) override {
    (void)from;
    if (kind_ == loop_kind::ring_read) {
      std::memcpy(to, reinterpret_cast<const void *>(where.address), bytes);
      ++reads_done_;
      return xfer::done;
    }
    if (kind_ == loop_kind::net_rma && where.rma == 1) {
      reads_.push_back({where.rma_address, to, bytes, cookie});
      ++reads_done_;
      return xfer::in_progress;
    }
    return xfer::retry;
  }

  // The data packets sent, in order: which receive each continues, and where.
  struct data_piece {
    std::uint64_t receiver_request;
    std::uint64_t offset;
  };
  std::vector<data_piece> data_sent;

  int reads_done() const { return reads_done_; }
  int sent() const { return sent_; }

  // Runs of pipelined messages timed for an engine chooser (as the shm
  // transport's): asked for by `time_streams`, recorded in `runs`.
  struct timed_run {
    std::size_t bytes;
    std::size_t timed;
  };
  bool time_streams = false;
  std::vector<timed_run> runs;
  bool times_streams() const override { return time_streams; }
  void stream_timed(vc &from, std::size_t bytes, std::size_t timed, std::uint64_t ns) override {
    (void)from;
    (void)ns;
    runs.push_back({bytes, timed});
  }

 private:
  struct pending_read {
    std::uint64_t address;
    std::byte *to;
    std::size_t bytes;
    std::uint64_t cookie;
  };

  static void deliver(vc &from, const std::byte *bytes, std::size_t length) {
    packet_header h;
    ASSERT_GE(length, sizeof(h));
    std::memcpy(&h, bytes, sizeof(h));
    const char *why = packet_deliver(from, h, bytes + sizeof(h), length - sizeof(h));
    ASSERT_EQ(why, nullptr) << why;
  }

  loop_kind kind_;
  std::byte *memory_ = nullptr;
  shm::ring_sender tx_;
  shm::ring_receiver rx_;
  std::deque<std::vector<std::byte>> queue_;
  std::deque<pending_read> reads_;
  int reads_done_ = 0;
  int sent_ = 0;
};

class Protocols : public ::testing::TestWithParam<loop_kind> {
 protected:
  void SetUp() override {
    ASSERT_EQ(rt, nullptr);
    rt = new runtime;
    rt->config = settings_load();
    rt->transport_config = transport_settings_load();
    rt->rank = 0;
    rt->size = 2;
    rt->vcs.resize(2);
    rt->vcs[0].world_rank = 0;
    rt->vcs[1].world_rank = 1;
    rt->sending.reserve(2);
    rt->spin_limit = 10;
    if (GetParam() == loop_kind::self) {
      auto self = std::make_unique<self_transport>();
      via_ = self.get();
      rt->transports.push_back(std::move(self));
    } else {
      auto loop = std::make_unique<loopback>(GetParam());
      loop_ = loop.get();
      via_ = loop.get();
      rt->polled.push_back(loop.get());
      rt->transports.push_back(std::move(loop));
    }
    vc &peer = rt->vcs[peer_rank];
    peer.via = via_;
    peer.flow_controlled = via_->flow_controlled();
    const std::size_t room = loop_ != nullptr ? loop_->max_payload() : std::size_t{1} << 20;
    peer.eager_limit = std::min(rt->config.eager_limit, room);
    peer.fragment = std::min(rt->transport_config.shm.fragment_size, room);
    peer.credits = peer.window = rt->config.eager_window;
    comm_.context = world_context;
    comm_.rank = 0;
    comm_.size = 2;
    comm_.world_rank = {0, 1};
  }

  void TearDown() override {
    rt->matching.release_all();
    EXPECT_EQ(rt->requests.live(), 0U) << "a test left a request behind";
    delete rt;
    rt = nullptr;
  }

  vc &peer() { return rt->vcs[peer_rank]; }

  // The sizes every protocol boundary sits at, from the live constants.
  std::vector<std::size_t> sizes() {
    const std::size_t inline_bytes = unexpected_msg::inline_capacity;
    const std::size_t eager = peer().eager_limit;
    const std::size_t fragment = peer().fragment;
    return {0,     1,         inline_bytes - 1, inline_bytes, inline_bytes + 1, eager - 1,
            eager, eager + 1, fragment - 1,     fragment,     fragment + 1,     4 * fragment};
  }

  // memcmp of n bytes, where an empty vector's data() may be null (n == 0).
  static bool same_bytes(const std::byte *a, const std::byte *b, std::size_t n) {
    return n == 0 || std::memcmp(a, b, n) == 0;
  }

  static std::vector<std::byte> pattern(std::size_t bytes, unsigned seed) {
    std::vector<std::byte> v(bytes);
    for (std::size_t i = 0; i < bytes; ++i) v[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
    return v;
  }

  request *isend(const std::vector<std::byte> &data, int tag,
                 send_mode mode = send_mode::standard) {
    return send_start(comm_, comm_.context, data.data(), data.size(), peer_rank, tag, mode, true);
  }
  request *irecv(std::vector<std::byte> &into, int tag, int source = 0) {
    return recv_start(comm_, comm_.context, into.data(), into.size(), source, tag);
  }
  static void wait(request *r) { request_wait_release(r); }

  // Posts `messages` receives, then as many sends of `data`; waits for all
  // and checks every byte.
  void exchange_window(const std::vector<std::byte> &data, std::size_t messages, int tag) {
    std::vector<std::vector<std::byte>> into(messages, std::vector<std::byte>(data.size()));
    std::vector<request *> recvs;
    std::vector<request *> sends;
    for (auto &buffer : into) recvs.push_back(irecv(buffer, tag));
    for (std::size_t i = 0; i < messages; ++i) sends.push_back(isend(data, tag));
    for (request *r : sends) wait(r);
    for (request *r : recvs) wait(r);
    for (const auto &got : into) EXPECT_EQ(got, data);
  }

  // In a quiet moment every credit is either back with the sender or owed
  // by the receiver: on the loopback VC the two sides must add up.
  void expect_credits_conserved() {
    if (!peer().flow_controlled) return;
    EXPECT_EQ(peer().credits + peer().owed, peer().window);
  }

  communicator comm_;
  transport *via_ = nullptr;
  loopback *loop_ = nullptr;
};

TEST_P(Protocols, EveryBoundarySizeArrivesWholeWhetherPostedFirstOrNot) {
  unsigned seed = 0;
  for (const bool posted_first : {true, false}) {
    for (const std::size_t bytes : sizes()) {
      SCOPED_TRACE("bytes " + std::to_string(bytes) + (posted_first ? ", posted" : ", unexpected"));
      const std::vector<std::byte> data = pattern(bytes, ++seed);
      std::vector<std::byte> into(bytes + 8, std::byte{0x5a});
      request *recv = posted_first ? irecv(into, 7) : nullptr;
      request *send = isend(data, 7);
      if (!posted_first) recv = irecv(into, 7);
      progress_until([&] { return recv->complete && send->complete; });
      EXPECT_EQ(recv->status_bytes, bytes);
      EXPECT_EQ(recv->status_source, 0);
      EXPECT_EQ(recv->status_tag, 7);
      EXPECT_EQ(recv->status_error, 0);
      EXPECT_TRUE(same_bytes(into.data(), data.data(), bytes));
      for (std::size_t i = bytes; i < into.size(); ++i) ASSERT_EQ(into[i], std::byte{0x5a});
      wait(send);
      wait(recv);
    }
  }
  expect_credits_conserved();
}

TEST_P(Protocols, RendezvousReadsWhenTheTransportCanAndAsksForDataWhenNot) {
  const std::vector<std::byte> data = pattern(4 * peer().fragment, 3);
  std::vector<std::byte> into(data.size());
  request *recv = irecv(into, 1);
  wait(isend(data, 1));
  wait(recv);
  EXPECT_EQ(into, data);
  const bool reads = GetParam() == loop_kind::ring_read || GetParam() == loop_kind::net_rma;
  if (GetParam() == loop_kind::self) {
    EXPECT_EQ(rt->stats.rendezvous, 0U) << "a message to oneself is always eager";
  } else {
    EXPECT_EQ(rt->stats.rendezvous, 1U);
    EXPECT_EQ(loop_->reads_done(), reads ? 1 : 0);
    EXPECT_EQ(rt->stats.rendezvous_pipeline, reads ? 0U : 1U);
  }
  EXPECT_EQ(rt->pipeline_receives, 0);
  EXPECT_EQ(rt->rendezvous_sends, 0);
}

// Pipelined messages that stream among others are timed in runs for a
// transport that asks, messages of a single fragment too (a run of them is
// timed from its first packet, not counted, to its last): without them the
// shm transport never timed its pipeline for 32 KiB messages and kept its
// rule's engine.
TEST_P(Protocols, RunsOfPipelinedMessagesAreTimedMessagesOfOneFragmentToo) {
  if (GetParam() != loop_kind::ring && GetParam() != loop_kind::net) GTEST_SKIP();
  loop_->time_streams = true;
  for (const std::size_t bytes : {peer().fragment, 3 * peer().fragment}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    loop_->runs.clear();
    constexpr std::size_t messages = 4;
    exchange_window(pattern(bytes, 11), messages, 2);
    ASSERT_FALSE(loop_->runs.empty()) << "no run was timed";
    std::size_t timed = 0;
    for (const auto &run : loop_->runs) {
      EXPECT_EQ(run.bytes, bytes);
      EXPECT_GT(run.timed, 0U);
      timed += run.timed;
    }
    EXPECT_LT(timed, messages * bytes);  // each run's first packet is not counted
  }
}

// Sends streaming to one peer take turns, a fragment each, among the first
// `stream_width` of its queue; each message's own pieces stay in order. A window of
// sends of one buffer then reads each piece while it is in the cache
// (one-way 2-4 MiB streams: 13.4 -> 17-18 GB/s, bench/results/, stop 32).
TEST_P(Protocols, StreamingSendsToOnePeerTakeTurnsAFragmentEach) {
  if (GetParam() != loop_kind::ring && GetParam() != loop_kind::net) GTEST_SKIP();
  peer().stream_width = 4;  // the shm transports' width
  constexpr std::size_t messages = 6;
  const std::size_t fragment = peer().fragment;
  const std::vector<std::byte> data = pattern(3 * fragment, 5);
  exchange_window(data, messages, 4);
  const auto &sent = loop_->data_sent;
  ASSERT_EQ(sent.size(), 3 * messages);
  // The first four sends start before any of them has a second piece out.
  std::vector<std::uint64_t> first_four;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(sent[i].offset, 0U) << "piece " << i;
    first_four.push_back(sent[i].receiver_request);
  }
  std::sort(first_four.begin(), first_four.end());
  EXPECT_EQ(std::unique(first_four.begin(), first_four.end()), first_four.end())
      << "the first four pieces are not of four different messages";
  // Each message's pieces go in order, none twice.
  std::map<std::uint64_t, std::uint64_t> next;
  for (const auto &piece : sent) {
    EXPECT_EQ(piece.offset, next[piece.receiver_request]);
    next[piece.receiver_request] = piece.offset + fragment;
  }
  EXPECT_EQ(next.size(), messages);
}

// A run's bytes are counted packet by packet: when messages take turns,
// the first to complete leaves the others partly in, and counting whole
// messages at completion made a run that ended at 8 MiB look up to twice
// as slow (4 messages of 3 MiB: 9 MiB counted of the 12 timed).
TEST_P(Protocols, ARunOfInterleavedMessagesCountsEveryPacketInIt) {
  if (GetParam() != loop_kind::ring && GetParam() != loop_kind::net) GTEST_SKIP();
  peer().stream_width = 4;
  loop_->time_streams = true;
  constexpr std::size_t messages = 4;
  const std::size_t fragment = peer().fragment;
  const std::vector<std::byte> data = pattern(std::size_t{3} << 20, 9);
  exchange_window(data, messages, 6);
  ASSERT_FALSE(loop_->runs.empty()) << "no run was timed";
  // The run ends at the third completion (9 MiB in), when all but the
  // fourth message's last pieces have come.
  EXPECT_GE(loop_->runs.front().timed, messages * data.size() - 2 * messages * fragment);
}

TEST_P(Protocols, ATruncatedReceiveTakesWhatFitsAndSaysSo) {
  for (const std::size_t bytes : {peer().eager_limit, 4 * peer().fragment}) {
    const std::vector<std::byte> data = pattern(bytes, 5);
    std::vector<std::byte> into(bytes / 2);
    request *send = isend(data, 2);
    request *recv = irecv(into, 2);
    progress_until([&] { return recv->complete && send->complete; });
    EXPECT_EQ(recv->status_bytes, into.size());
    EXPECT_NE(recv->status_error, 0);
    EXPECT_TRUE(same_bytes(into.data(), data.data(), into.size()));
    wait(send);
    wait(recv);
  }
  expect_credits_conserved();
}

TEST_P(Protocols, SpentCreditsSendEagerSizedMessagesByRendezvousAndComeBack) {
  if (!peer().flow_controlled) GTEST_SKIP() << "messages to oneself are not flow-controlled";
  // Unexpected eager messages until the window is spent: the next ones go
  // by rendezvous, and nothing is held beyond the window.
  const std::size_t bytes = peer().eager_limit / 2;
  const int per_window = peer().window / credit_cost(bytes);
  const int count = per_window + 4;
  std::vector<std::vector<std::byte>> data;
  std::vector<request *> sends;
  for (int i = 0; i < count; ++i) data.push_back(pattern(bytes, static_cast<unsigned>(i)));
  for (int i = 0; i < count; ++i) sends.push_back(isend(data[static_cast<std::size_t>(i)], 3));
  for (int polls = 0; polls < 1000; ++polls) progress_poll();
  EXPECT_GE(rt->stats.credit_stalls, 4U);
  EXPECT_LE(rt->matching.unexpected_counts().bytes,
            static_cast<std::size_t>(peer().window) * credit_unit);
  // Received in send order, whatever protocol each took.
  for (int i = 0; i < count; ++i) {
    std::vector<std::byte> into(bytes);
    wait(irecv(into, 3));
    ASSERT_EQ(into, data[static_cast<std::size_t>(i)]) << "message " << i;
  }
  for (request *s : sends) wait(s);
  expect_credits_conserved();
  EXPECT_LE(rt->matching.unexpected_counts().bytes_peak,
            static_cast<std::size_t>(peer().window) * credit_unit);
}

TEST_P(Protocols, ASynchronousSendCompletesOnlyOnceMatched) {
  for (const std::size_t bytes : {std::size_t{0}, peer().eager_limit, 4 * peer().fragment}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    const std::vector<std::byte> data = pattern(bytes, 9);
    std::vector<std::byte> into(bytes);
    request *send = isend(data, 4, send_mode::synchronous);
    for (int polls = 0; polls < 100; ++polls) progress_poll();
    EXPECT_FALSE(send->complete) << "completed before any receive was posted";
    request *recv = irecv(into, 4);
    progress_until([&] { return recv->complete && send->complete; });
    EXPECT_EQ(into, data);
    wait(send);
    wait(recv);
  }
  expect_credits_conserved();
}

TEST_P(Protocols, ACancelledUnmatchedSendIsNeverReceivedAndItsCreditsReturn) {
  for (const std::size_t bytes : {std::size_t{1}, peer().eager_limit, 4 * peer().fragment}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    const std::vector<std::byte> data = pattern(bytes, 11);
    request *send = isend(data, 5);
    request_cancel(*send);
    progress_until([&] { return send->complete; });
    EXPECT_TRUE(send->cancelled);
    EXPECT_EQ(probe_find(comm_.context, 0, 5), nullptr);
    wait(send);
    expect_credits_conserved();
  }
  // A matched one cannot be cancelled.
  const std::vector<std::byte> data = pattern(16, 12);
  std::vector<std::byte> into(16);
  request *recv = irecv(into, 6);
  request *send = isend(data, 6);
  progress_until([&] { return recv->complete; });
  request_cancel(*send);
  progress_until([&] { return send->complete; });
  EXPECT_FALSE(send->cancelled);
  wait(send);
  wait(recv);
  // A posted receive is withdrawn at once.
  request *lonely = irecv(into, 99);
  request_cancel(*lonely);
  EXPECT_TRUE(lonely->complete);
  EXPECT_TRUE(lonely->cancelled);
  wait(lonely);
}

TEST_P(Protocols, ProbeSeesAndMprobeClaimsTheOldestMatch) {
  const std::size_t bytes = peer().eager_limit + 1;  // rendezvous when credited
  const std::vector<std::byte> first = pattern(bytes, 21);
  const std::vector<std::byte> second = pattern(10, 22);
  request *s1 = isend(first, 8);
  request *s2 = isend(second, 9);
  const unexpected_msg *seen = nullptr;
  progress_until(
      [&] { return (seen = probe_find(comm_.context, any_source, any_tag)) != nullptr; });
  EXPECT_EQ(seen->key.tag, 8);
  EXPECT_EQ(seen->length, bytes);
  unexpected_msg *claimed = message_claim(comm_.context, 0, 8);
  ASSERT_NE(claimed, nullptr);
  EXPECT_EQ(message_from_handle(message_handle(*claimed)), claimed);
  EXPECT_EQ(probe_find(comm_.context, 0, 8), nullptr) << "a claimed message is off the queue";
  std::vector<std::byte> into(bytes);
  wait(recv_claimed(comm_, claimed, into.data(), into.size()));
  EXPECT_EQ(into, first);
  std::vector<std::byte> rest(10);
  wait(irecv(rest, any_tag));
  EXPECT_EQ(rest, second);
  wait(s1);
  wait(s2);
  expect_credits_conserved();
}

TEST_P(Protocols, MessagesOfMixedProtocolsMatchInSendOrder) {
  const std::size_t eager = peer().eager_limit;
  const std::size_t fragment = peer().fragment;
  const std::vector<std::size_t> order = {1, 4 * fragment, 10, eager + 1, 0, eager, fragment, 3};
  std::vector<std::vector<std::byte>> data;
  std::vector<request *> sends;
  for (std::size_t i = 0; i < order.size(); ++i) data.push_back(pattern(order[i], 40 + i));
  for (const auto &d : data) sends.push_back(isend(d, 12));
  for (std::size_t i = 0; i < order.size(); ++i) {
    std::vector<std::byte> into(4 * fragment);
    request *r = recv_start(comm_, comm_.context, into.data(), into.size(), any_source, any_tag);
    progress_until([&] { return r->complete; });
    ASSERT_EQ(r->status_bytes, order[i]) << "message " << i << " overtaken";
    EXPECT_TRUE(same_bytes(into.data(), data[i].data(), order[i]));
    wait(r);
  }
  for (request *s : sends) wait(s);
  expect_credits_conserved();
}

TEST_P(Protocols, AMessageForAContextNoCommunicatorHasIsRefusedAtTheGate) {
  packet_header h{};
  h.type = packet_type::eager;
  h.context = rt->next_context + 100;
  h.source = 0;
  h.tag = 1;
  const char *why = packet_deliver(peer(), h, nullptr, 0);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("unknown context"), std::string::npos) << why;
  EXPECT_EQ(rt->matching.unexpected_counts().depth, 0U) << "a refused packet is not parked";
  // While this rank agrees on a new context, peers may already use it.
  ++rt->agreeing;
  EXPECT_EQ(packet_deliver(peer(), h, nullptr, 0), nullptr);
  --rt->agreeing;
  EXPECT_EQ(rt->matching.unexpected_counts().depth, 1U);
}

TEST_P(Protocols, UnexpectedEagerDataStopsAllocatingOnceThePoolIsWarm) {
  const std::size_t bytes = std::min<std::size_t>(peer().eager_limit, 4000);
  auto round = [&] {
    std::vector<std::vector<std::byte>> data;
    std::vector<request *> sends;
    for (int i = 0; i < 8; ++i) data.push_back(pattern(bytes, static_cast<unsigned>(i)));
    for (const auto &d : data) sends.push_back(isend(d, 13));
    for (int polls = 0; polls < 100; ++polls) progress_poll();
    for (const auto &d : data) {
      std::vector<std::byte> into(bytes);
      wait(irecv(into, 13));
      ASSERT_EQ(into, d);
    }
    for (request *s : sends) wait(s);
  };
  round();
  const std::size_t warm = rt->matching.buffers().heap_allocations();
  EXPECT_GT(warm, 0U) << "the first round parks data longer than the inline bytes";
  for (int i = 0; i < 5; ++i) round();
  EXPECT_EQ(rt->matching.buffers().heap_allocations(), warm);
}

// A collective's schedule over the loopback: its sends to "rank 1" come back
// to its own receives (as from rank 0, like every looped message here). Round 2 combines what round
// 1 received, so it must not start before round 1 is done; a persistent schedule runs again with
// new data; a second schedule's messages (the next sequence number) never complete the first one's
// receive.
TEST_P(Protocols, ScheduleRunsItsRoundsInOrderAndAgainOnRestart) {
  const int n = static_cast<int>(peer().eager_limit / sizeof(int)) + 100;  // rendezvous
  const dtype &ints = *dtype_lookup(MPI_INT);
  std::vector<int> a(static_cast<std::size_t>(n));
  std::vector<int> got(a.size());
  std::vector<int> sum(a.size());
  std::vector<int> echo(a.size());
  auto s = std::make_unique<schedule>(comm_);
  const typed_buffer img = s->scratch(n, ints);
  s->copy({a.data(), n, &ints}, img);
  s->send(img, peer_rank);
  s->recv({got.data(), n, &ints}, 0);
  s->fence();
  s->reduce({got.data(), n, &ints}, {sum.data(), n, &ints}, MPI_SUM, MPI_INT);
  s->send({sum.data(), n, &ints}, peer_rank, 1);
  s->recv({echo.data(), n, &ints}, 0, 1);
  request *r = rt->requests.allocate(request_kind::coll, &comm_);
  schedule_attach(*r, std::move(s), true);
  EXPECT_TRUE(r->complete) << "a persistent schedule waits for its start";
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (int i = 0; i < n; ++i) {
      a[static_cast<std::size_t>(i)] = i * 3 + round;
      sum[static_cast<std::size_t>(i)] = 1000;
    }
    schedule_start(*r);
    progress_until([r] { return r->complete; });
    EXPECT_EQ(r->status_error, MPI_SUCCESS);
    EXPECT_EQ(got, a);
    for (int i = 0; i < n; ++i) ASSERT_EQ(sum[static_cast<std::size_t>(i)], i * 3 + round + 1000);
    EXPECT_EQ(echo, sum);
  }
  EXPECT_EQ(progress_added.schedules_active, 0U);
  rt->requests.release(r);

  int first = -1;
  int second = 7;
  // What the first schedule's messages carry: its sequence number, sub-tag 0.
  const int waits_tag = tag_nbc_base + static_cast<int>(comm_.nbc_sequence << 8);
  auto waits = std::make_unique<schedule>(comm_);
  waits->recv({&first, 1, &ints}, 0);
  auto sends = std::make_unique<schedule>(comm_);
  sends->send({&second, 1, &ints}, peer_rank);
  request *w = rt->requests.allocate(request_kind::coll, &comm_);
  request *x = rt->requests.allocate(request_kind::coll, &comm_);
  schedule_attach(*w, std::move(waits), false);
  schedule_attach(*x, std::move(sends), false);
  progress_until([x] { return x->complete; });
  for (int polls = 0; polls < 100; ++polls) progress_poll();
  EXPECT_FALSE(w->complete) << "another schedule's message matched";
  EXPECT_EQ(first, -1);
  rt->requests.release(x);
  wait(send_start(comm_, comm_.collective_context(), &second, sizeof(second), peer_rank, waits_tag,
                  send_mode::standard, true));
  progress_until([w] { return w->complete; });
  EXPECT_EQ(first, 7);
  rt->requests.release(w);
}

// A freed schedule's memory and lists are kept for the next one built on
// this thread (a nonblocking collective builds one each call), which starts
// with none of the first one's steps.
TEST_P(Protocols, AFreedScheduleIsTakenByTheNextOneEmpty) {
  const dtype &ints = *dtype_lookup(MPI_INT);
  int calls = 0;
  int polls = 0;
  int sent = 5;
  int got = 0;
  auto first = std::make_unique<schedule>(comm_);
  first->call([&calls](schedule &) { ++calls; });
  first->poll([&polls](int &) {
    ++polls;
    return true;
  });
  first->send({&sent, 1, &ints}, peer_rank);
  first->recv({&got, 1, &ints}, 0);
  const void *memory = first.get();
  EXPECT_EQ(schedule_run(std::move(first)), MPI_SUCCESS);
  EXPECT_EQ(got, 5);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(polls, 1);
  // The heap would give a freed block of this size to the next request of
  // it: this one takes it there, not from the kept ones.
  void *other = ::operator new(sizeof(schedule));
  auto second = std::make_unique<schedule>(comm_);
  EXPECT_EQ(static_cast<const void *>(second.get()), memory)
      << "the freed schedule's memory was not kept for the next one";
  ::operator delete(other);
  second->call([&calls](schedule &) { calls += 10; });
  EXPECT_EQ(schedule_run(std::move(second)), MPI_SUCCESS);
  EXPECT_EQ(calls, 11) << "the second schedule ran steps of the first";
  EXPECT_EQ(polls, 1);
}

INSTANTIATE_TEST_SUITE_P(Loopback, Protocols,
                         ::testing::Values(loop_kind::self, loop_kind::ring, loop_kind::ring_read,
                                           loop_kind::net_rma, loop_kind::net),
                         [](const ::testing::TestParamInfo<loop_kind> &info) {
                           return std::string(kind_name(info.param));
                         });

}  // namespace
}  // namespace iris::device
