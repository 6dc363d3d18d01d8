// The netmod contract (netmods/netmod.hpp), tested once and run on every
// netmod this build has: TCP over loopback, and OFI on each libfabric
// provider this host has that Iris supports. What only one netmod does (its
// wire format, its strangers' bytes, TCP's epoll habits, OFI's provider
// choice) is tested in tcp_test.cpp and ofi_test.cpp.
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "device/setup/tunables.hpp"
#include "netmods/netmod.hpp"
#include "test/unit/netmod_fixture.hpp"

namespace iris::netmod {
namespace {

using namespace iris::netmod::fixture;

struct netmod_case {
  const char *netmod;
  const char *provider;  // ofi: the libfabric provider; else empty
};

// Every netmod Iris has, on every provider it is tested on. Those this build
// or this host lacks are skipped.
const netmod_case cases[] = {
    {"tcp", ""},
    {"ofi", "tcp;ofi_rxm"},
    {"ofi", "sockets"},
    {"ofi", "shm"},
};

void PrintTo(const netmod_case &c, std::ostream *os) {
  *os << c.netmod << (*c.provider != '\0' ? " on " : "") << c.provider;
}

std::string case_name(const ::testing::TestParamInfo<netmod_case> &info) {
  std::string n = std::string(info.param.netmod) + "_" + info.param.provider;
  for (char &c : n) {
    c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  while (n.back() == '_') n.pop_back();
  return n;
}

bool built(std::string_view name) {
  const std::string list = "," + std::string(netmods_built()) + ",";
  return list.find("," + std::string(name) + ",") != std::string::npos;
}

class NetmodContract : public netmod_ranks, public ::testing::WithParamInterface<netmod_case> {
 protected:
  void SetUp() override {
    if (!built(GetParam().netmod)) GTEST_SKIP() << "this build has no " << GetParam().netmod;
    if (*GetParam().provider != '\0') provider.emplace("IRIS_OFI_PROVIDER", GetParam().provider);
    // What init would choose, without a job: a provider this host lacks is
    // an error here.
    try {
      (void)netmod_create(GetParam().netmod)->preview(conf());
    } catch (const error &e) {
      GTEST_SKIP() << e.what();
    }
  }

  config conf() const {
    config c;
    c.max_record = max_record;
    c.record_head = record_head;
    return c;
  }

  void start(int n) { netmod_ranks::start(GetParam().netmod, n, conf()); }

  std::optional<scoped_env> provider;

  // Where the netmod's business card is on the board, and where its
  // stderr lines begin.
  std::string card_key() const { return "iris." + std::string(GetParam().netmod); }
  std::string log_prefix(int rank) const {
    return "iris: rank " + std::to_string(rank) + ": " + GetParam().netmod + ": ";
  }

  // Polls every rank for `how_long`: for what must not happen.
  void poll_for(std::chrono::milliseconds how_long) {
    const auto end = std::chrono::steady_clock::now() + how_long;
    while (std::chrono::steady_clock::now() < end) poll_all();
  }
};

TEST_P(NetmodContract, RecordsArriveWholeAndInOrderPerSender) {
  start(3);
  std::mt19937 rng(42);
  std::vector<std::vector<std::byte>> from0;
  std::vector<std::vector<std::byte>> from2;
  for (unsigned i = 0; i < 200; ++i) {
    // Small ones, some the longest allowed, from two senders interleaved.
    const std::size_t length = i % 10 == 0 ? max_record : 1 + rng() % 3000;
    from0.push_back(pattern(length, i));
    from2.push_back(pattern(length / 2 + 1, i + 1000));
    ASSERT_TRUE(send_record(0, 1, from0.back())) << "record " << i;
    ASSERT_TRUE(send_record(2, 1, from2.back())) << "record " << i;
    if (i % 7 == 0) {
      ASSERT_TRUE(send_record(1, 0, from2.back()));
    }
  }
  ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == 400; }));
  std::size_t next0 = 0;
  std::size_t next2 = 0;
  for (const auto &[peer, bytes] : sink(1).records) {
    ASSERT_TRUE(peer == 0 || peer == 2) << peer;
    if (peer == 0) {
      EXPECT_EQ(bytes, from0[next0]) << "rank 0's record " << next0;
      ++next0;
    } else {
      EXPECT_EQ(bytes, from2[next2]) << "rank 2's record " << next2;
      ++next2;
    }
  }
  ASSERT_TRUE(poll_until([&] { return sink(0).records.size() == 29; }));
  for (std::size_t i = 0; i < 29; ++i) {
    EXPECT_EQ(sink(0).records[i].first, 1);
    EXPECT_EQ(sink(0).records[i].second, from2[7 * i]) << "record " << i;
  }
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(sink(r).lost.empty()) << "rank " << r;
}

// The lengths a record may have, from the shortest to max_record, and each
// side of every size at which a netmod changes how it moves one.
std::vector<std::size_t> record_lengths() {
  std::vector<std::size_t> lengths = {1, record_head - 1, record_head, record_head + 1};
  for (std::size_t edge : {std::size_t{4096 - 16}, std::size_t{4096}, std::size_t{16 * 1024},
                           record_head + 16 * 1024, std::size_t{64 * 1024}}) {
    lengths.insert(lengths.end(), {edge - 1, edge, edge + 1});
  }
  lengths.insert(lengths.end(), {max_record - 1, max_record});
  return lengths;
}

TEST_P(NetmodContract, RecordsOfEveryLengthArriveWhole) {
  start(2);
  // The second time through, long bodies may be read into a place the
  // device names (as rendezvous data is).
  for (const bool placed : {false, true}) {
    sink(1).place.assign(placed ? max_record : 0, std::byte{0});
    sink(1).records.clear();
    const std::vector<std::size_t> lengths = record_lengths();
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      const auto bytes = pattern(lengths[i], static_cast<unsigned>(i));
      ASSERT_TRUE(send_record(0, 1, bytes)) << lengths[i] << " bytes";
      ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == i + 1; }))
          << lengths[i] << " bytes";
      EXPECT_EQ(sink(1).records[i].second, bytes) << lengths[i] << " bytes, placed " << placed;
    }
  }
  EXPECT_TRUE(sink(0).lost.empty());
  EXPECT_TRUE(sink(1).lost.empty());
}

TEST_P(NetmodContract, AThreePartSendArrivesAsOneRecord) {
  start(2);
  const auto head = pattern(record_head, 1);
  const auto middle = pattern(1000, 2);
  const auto tail = pattern(max_record - record_head - 1000, 3);
  const auto part = [](const std::vector<std::byte> &v) {
    return iovec{const_cast<std::byte *>(v.data()), v.size()};
  };
  const std::vector<std::byte> none;
  // Header, payload and a second piece of payload, as the device gathers
  // them; empty parts anywhere; and a short record in three pieces.
  const std::vector<std::vector<iovec>> sends = {
      {part(head), part(middle), part(tail)},
      {part(head), part(none), part(middle)},
      {part(none), part(head), part(none)},
      {part(head), part(middle)},
  };
  std::vector<std::vector<std::byte>> expected;
  for (const auto &parts : sends) {
    std::vector<std::byte> whole;
    for (const iovec &p : parts) {
      const auto *b = static_cast<const std::byte *>(p.iov_base);
      whole.insert(whole.end(), b, b + p.iov_len);
    }
    expected.push_back(std::move(whole));
    ASSERT_TRUE(send_parts(0, 1, parts));
  }
  ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == sends.size(); }));
  for (std::size_t i = 0; i < sends.size(); ++i) {
    EXPECT_EQ(sink(1).records[i].second, expected[i]) << "send " << i;
  }
}

// A sender configured for longer records than the receiver (a rank of the
// job with a bug): its record over the receiver's max_record never reaches
// the receiver's device, and the receiver's other peers go on.
TEST_P(NetmodContract, ARecordOverMaxRecordIsRefused) {
  config sender = conf();
  sender.max_record = 2 * max_record;
  ranks.push_back(start_rank(GetParam().netmod, 0, 3, board, sender));
  ranks.push_back(start_rank(GetParam().netmod, 1, 3, board, conf()));
  ranks.push_back(start_rank(GetParam().netmod, 2, 3, board, conf()));
  ASSERT_TRUE(send_record(0, 1, pattern(100, 1)));
  ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == 1; }));
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(send_record(0, 1, pattern(max_record + 1, 2)));
  ASSERT_TRUE(send_record(2, 1, pattern(200, 3)));
  ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == 2; }));
  poll_for(std::chrono::milliseconds(300));
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(sink(1).records.size(), 2U);
  EXPECT_EQ(sink(1).records[1].first, 2);
  EXPECT_EQ(sink(1).records[1].second, pattern(200, 3));
  EXPECT_NE(log.find(log_prefix(1) + "dropped"), std::string::npos) << log;
  EXPECT_NE(log.find(std::to_string(max_record + 1)), std::string::npos) << log;
  EXPECT_TRUE(sink(1).lost.empty());
}

// A process outside the job that has rank 1's card but for its token (which
// only the job's ranks can read): the netmod of another job, dialling rank
// 1 with a card whose first hex digit, the token's, is changed.
TEST_P(NetmodContract, AStrangerIsDroppedWithOneLineAndTheJobGoesOn) {
  start(2);
  cards elsewhere;
  std::string card = board.at({1, card_key()});
  card[0] = card[0] == '0' ? '1' : '0';
  elsewhere[{1, card_key()}] = card;
  auto stranger = start_rank(GetParam().netmod, 0, 2, elsewhere, conf());
  ::testing::internal::CaptureStderr();
  const auto bytes = pattern(100, 7);
  const iovec part{const_cast<std::byte *>(bytes.data()), bytes.size()};
  bool sent = false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1000);
  while (std::chrono::steady_clock::now() < end) {
    if (!sent && stranger->net->send(1, {&part, 1}) == send_status::done) sent = true;
    (void)stranger->net->poll(stranger->sink);
    poll_all();
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find(log_prefix(1) + "dropped"), std::string::npos) << log;
  EXPECT_EQ(log.find(log_prefix(0)), std::string::npos) << log;
  EXPECT_TRUE(sink(1).records.empty());
  EXPECT_TRUE(sink(1).lost.empty());
  // The job goes on.
  ASSERT_TRUE(send_record(0, 1, bytes));
  ASSERT_TRUE(send_record(1, 0, bytes));
  ASSERT_TRUE(
      poll_until([&] { return sink(1).records.size() == 1 && sink(0).records.size() == 1; }));
  EXPECT_EQ(sink(1).records[0].second, bytes);
}

TEST_P(NetmodContract, ARefusedRecordIsLoggedAndOtherSendersGoOn) {
  start(3);
  sink(1).refuse_length = 13;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(send_record(2, 1, pattern(13, 0)));
  ASSERT_TRUE(send_record(0, 1, pattern(14, 0)));
  ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == 1; }));
  poll_for(std::chrono::milliseconds(200));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find(log_prefix(1) + "dropped"), std::string::npos) << log;
  EXPECT_NE(log.find("refused by the test"), std::string::npos) << log;
  ASSERT_EQ(sink(1).records.size(), 1U);
  EXPECT_EQ(sink(1).records[0].first, 0);
}

TEST_P(NetmodContract, APeerWithoutAUsableCardIsReportedLostAndOnlyIt) {
  start(4);
  board[{2, card_key()}] = "not:a card at all";
  board.erase({3, card_key()});
  const auto bytes = pattern(100, 1);
  const iovec part{const_cast<std::byte *>(bytes.data()), bytes.size()};
  EXPECT_EQ(net(0).send(2, {&part, 1}), send_status::retry);
  EXPECT_EQ(net(0).send(3, {&part, 1}), send_status::retry);
  ASSERT_TRUE(poll_until([&] { return sink(0).lost.size() == 2; }));
  // Each once, saying why.
  poll_for(std::chrono::milliseconds(100));
  ASSERT_EQ(sink(0).lost.size(), 2U);
  for (const auto &[peer, why] : sink(0).lost) {
    EXPECT_TRUE(peer == 2 || peer == 3) << peer;
    EXPECT_NE(why.find("card"), std::string::npos) << why;
  }
  // A lost peer takes no more records; the others still do.
  EXPECT_EQ(net(0).send(2, {&part, 1}), send_status::retry);
  ASSERT_TRUE(send_record(0, 1, bytes));
  ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == 1; }));
  EXPECT_TRUE(sink(1).lost.empty());
}

// A netmod that can read a peer's memory reads it; one that cannot exposes
// nothing and starts no read, and the device sends the data as records.
TEST_P(NetmodContract, AnRmaReadBringsTheExposedBufferOrIsDeclined) {
  start(2);
  const auto data = pattern(3 << 20, 9);
  remote_region region;
  std::vector<std::byte> into(data.size());
  if (!net(0).rma_expose(data.data(), data.size(), region, rma_access::read)) {
    EXPECT_EQ(net(1).rma_read(0, region, into.data(), into.size(), 77), send_status::retry);
    poll_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(sink(1).reads.empty());
    return;
  }
  ASSERT_EQ(net(1).rma_read(0, region, into.data(), into.size(), 77), send_status::done);
  ASSERT_TRUE(poll_until([&] { return sink(1).reads.size() == 1; }));
  EXPECT_EQ(sink(1).reads[0], std::make_pair(std::uint64_t{77}, std::string()));
  EXPECT_TRUE(into == data);
  // A part of the exposed buffer.
  remote_region tail;
  ASSERT_TRUE(net(0).rma_expose(data.data() + 1000, 5000, tail, rma_access::read));
  std::vector<std::byte> part(5000);
  ASSERT_EQ(net(1).rma_read(0, tail, part.data(), part.size(), 78), send_status::done);
  ASSERT_TRUE(poll_until([&] { return sink(1).reads.size() == 2; }));
  EXPECT_EQ(sink(1).reads[1].first, 78U);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), data.begin() + 1000));
  net(0).rma_conceal(tail);
  net(0).rma_conceal(region);
}

// A netmod that cannot write a peer's memory exposes none for writing and
// starts no write; one that can completes the write where it was asked.
TEST_P(NetmodContract, AnRmaWriteLandsInTheWindowOrIsDeclined) {
  start(2);
  std::vector<std::byte> window(64 * 1024, std::byte{0});
  const auto data = pattern(20000, 3);
  remote_region region;
  if (!net(0).rma_expose(window.data(), window.size(), region, rma_access::read_write)) {
    EXPECT_EQ(net(1).rma_write(0, region, data.data(), data.size(), 5), send_status::retry);
    std::vector<std::byte> into(100);
    EXPECT_EQ(net(1).rma_window_read(0, region, into.data(), into.size(), 6), send_status::retry);
    poll_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(sink(1).windows.empty());
    return;
  }
  ASSERT_EQ(net(1).rma_write(0, region, data.data(), data.size(), 5), send_status::done);
  ASSERT_TRUE(poll_until([&] { return sink(1).windows.size() == 1; }));
  EXPECT_EQ(sink(1).windows[0], std::make_pair(std::uint64_t{5}, std::string()));
  EXPECT_TRUE(std::equal(data.begin(), data.end(), window.begin()));
  net(0).rma_conceal(region);
}

// MPI_THREAD_MULTIPLE (netmod.hpp, send_concurrent): two threads of rank 0
// write to peers 1 and 2 while the main thread polls every rank and sends
// rank 0's records to peer 3 through send(). The receivers are not polled
// for the first 200 ms, so that the sockets fill and records go out in
// pieces (TCP's pending bytes, flushed by rank 0's poll while the threads
// write). Every record arrives whole and in its sender's order.
TEST_P(NetmodContract, ConcurrentSendsToOtherPeersArriveWholeAndInOrder) {
  const scoped_env ofi_too("IRIS_OFI_CONCURRENT_SENDS", "1");  // off by default
  config c = conf();
  c.concurrent_sends = true;
  netmod_ranks::start(GetParam().netmod, 4, c);
  const auto probe = pattern(10, 0);
  const iovec probe_part{const_cast<std::byte *>(probe.data()), probe.size()};
  if (!net(0).concurrent_sends()) {
    EXPECT_EQ(net(0).send_concurrent(1, {&probe_part, 1}), send_status::retry);
    GTEST_SKIP() << GetParam().netmod << " has no send_concurrent";
  }
  // Nothing open yet: it answers retry and dials nothing.
  EXPECT_EQ(net(0).send_concurrent(1, {&probe_part, 1}), send_status::retry);
  poll_for(std::chrono::milliseconds(50));
  EXPECT_EQ(net(0).send_concurrent(1, {&probe_part, 1}), send_status::retry);
  EXPECT_TRUE(sink(1).records.empty());
  for (int peer = 1; peer <= 3; ++peer) ASSERT_TRUE(send_record(0, peer, probe));
  ASSERT_TRUE(poll_until([&] {
    return sink(1).records.size() == 1 && sink(2).records.size() == 1 &&
           sink(3).records.size() == 1;
  }));

  constexpr unsigned per_peer = 150;
  std::vector<std::vector<std::byte>> records[4];
  std::mt19937 rng(7);
  for (int peer = 1; peer <= 3; ++peer) {
    for (unsigned i = 0; i < per_peer; ++i) {
      const std::size_t length = i % 4 == 0 ? max_record - rng() % 64 : 1 + rng() % 20000;
      records[peer].push_back(pattern(length, i * 3 + static_cast<unsigned>(peer)));
    }
  }
  std::atomic<bool> failed{false};
  auto writer = [&](int peer) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (const auto &bytes : records[peer]) {
      const iovec part{const_cast<std::byte *>(bytes.data()), bytes.size()};
      while (net(0).send_concurrent(peer, {&part, 1}) != send_status::done) {
        if (std::chrono::steady_clock::now() > give_up) {
          failed = true;
          return;
        }
        std::this_thread::yield();
      }
    }
  };
  std::thread to1(writer, 1);
  std::thread to2(writer, 2);
  const auto quiet_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::size_t next3 = 0;
  while (std::chrono::steady_clock::now() < give_up && !failed) {
    if (next3 < per_peer) {
      const auto &bytes = records[3][next3];
      const iovec part{const_cast<std::byte *>(bytes.data()), bytes.size()};
      if (net(0).send(3, {&part, 1}) == send_status::done) ++next3;
    }
    (void)net(0).poll(sink(0));
    if (std::chrono::steady_clock::now() < quiet_until) continue;
    for (int r = 1; r <= 3; ++r) (void)net(r).poll(sink(r));
    if (next3 == per_peer && sink(1).records.size() == per_peer + 1 &&
        sink(2).records.size() == per_peer + 1 && sink(3).records.size() == per_peer + 1) {
      break;
    }
  }
  to1.join();
  to2.join();
  ASSERT_FALSE(failed) << "a thread's records were not taken within 20 s";
  for (int peer = 1; peer <= 3; ++peer) {
    ASSERT_EQ(sink(peer).records.size(), per_peer + 1) << "peer " << peer;
    for (unsigned i = 0; i < per_peer; ++i) {
      EXPECT_EQ(sink(peer).records[i + 1].first, 0);
      EXPECT_EQ(sink(peer).records[i + 1].second, records[peer][i])
          << "peer " << peer << ", record " << i;
    }
    EXPECT_TRUE(sink(peer).lost.empty()) << "peer " << peer;
  }
  EXPECT_TRUE(sink(0).lost.empty());
  if (std::string_view(GetParam().netmod) == "tcp") {
    // The pieces the test is after: records the kernel took only part of.
    const std::string counted = net(0).statistics();
    EXPECT_EQ(counted.find("partial writes 0 "), std::string::npos) << counted;
  }
}

// MULTIPLE's aside passes (poll_aside): a record numbered `seq` in its
// first four bytes, the rest a pattern of it.
std::vector<std::byte> numbered(std::size_t length, std::uint32_t seq) {
  std::vector<std::byte> v = pattern(length, seq);
  std::memcpy(v.data(), &seq, sizeof(seq));
  return v;
}

std::uint32_t number_of(std::span<const std::byte> head) {
  std::uint32_t seq = 0;
  std::memcpy(&seq, head.data(), sizeof(seq));
  return seq;
}

// Both sinks of one rank: records from each peer kept in the order they
// came, by poll or by an aside pass. The lists are plain: a netmod that let
// two threads hand over one peer's records at once is a race for
// ThreadSanitizer, and out of order for the checks.
struct both_sinks final : record_sink, aside_sink {
  explicit both_sinks(int peers) : got(static_cast<std::size_t>(peers)) {}
  std::vector<std::vector<std::vector<std::byte>>> got;  // by peer
  std::atomic<std::size_t> by_poll{0};
  std::atomic<std::size_t> by_aside{0};
  std::uint32_t refuse_every = 5;  // an aside pass refuses the records numbered k * this
  void keep(int peer, std::span<const std::byte> head, std::span<const std::byte> body) {
    std::vector<std::byte> whole(head.begin(), head.end());
    whole.insert(whole.end(), body.begin(), body.end());
    got[static_cast<std::size_t>(peer)].push_back(std::move(whole));
  }
  const char *record_arrived(int peer, std::span<const std::byte> head,
                             std::span<const std::byte> body) override {
    keep(peer, head, body);
    by_poll.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  bool record_taken(int peer, std::span<const std::byte> head,
                    std::span<const std::byte> body) override {
    if (number_of(head) % refuse_every == 0) return false;
    keep(peer, head, body);
    by_aside.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  std::byte *body_place(int, std::span<const std::byte>, std::size_t) override { return nullptr; }
  std::vector<std::pair<int, std::string>> lost;
  void peer_lost(int peer, const char *why) override { lost.emplace_back(peer, why); }
  void read_done(std::uint64_t, const char *) override {}
};

class NetmodAside : public NetmodContract {
 protected:
  void SetUp() override {
    NetmodContract::SetUp();
    if (IsSkipped()) return;
    if (std::string_view(GetParam().netmod) != "tcp") {
      GTEST_SKIP() << GetParam().netmod << " has no poll_aside: poll reads everything";
    }
    config c = conf();
    c.concurrent_sends = true;
    netmod_ranks::start(GetParam().netmod, 3, c);
    // Rank 1 hears from both others: two connections, read through epoll.
    ASSERT_TRUE(send_record(0, 1, numbered(8, 1)));
    ASSERT_TRUE(send_record(2, 1, numbered(8, 1)));
    ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == 2; }));
  }
};

// An aside pass hands records on until the sink refuses one; that one and
// all after it are poll's, in order, though the socket has nothing more to
// say (they were read already).
TEST_P(NetmodAside, ARefusedRecordAndTheRestAreLeftToPollInOrder) {
  both_sinks at1(3);
  at1.refuse_every = 4;
  EXPECT_EQ(net(1).poll_aside(at1), 0);  // asks for aside passes
  (void)net(1).poll(at1);                // turns them on
  std::vector<std::vector<std::byte>> sent;
  for (std::uint32_t seq = 1; seq <= 10; ++seq) {
    sent.push_back(numbered(100 + seq, seq));
    const iovec part{sent.back().data(), sent.back().size()};
    ASSERT_EQ(net(0).send(1, {&part, 1}), send_status::done);
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (at1.by_aside < 3 && std::chrono::steady_clock::now() < give_up) {
    (void)net(1).poll_aside(at1);
  }
  ASSERT_EQ(at1.by_aside.load(), 3u);  // 1, 2, 3; then 4 is refused
  for (int i = 0; i < 100; ++i) EXPECT_EQ(net(1).poll_aside(at1), 0);
  EXPECT_EQ(at1.got[0].size(), 3u);
  ASSERT_TRUE(poll_until([&] {
    (void)net(1).poll(at1);
    return at1.got[0].size() == sent.size();
  }));
  for (std::size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(at1.got[0][i], sent[i]) << i;
  EXPECT_EQ(at1.by_poll.load(), 7u);
  EXPECT_TRUE(at1.got[2].empty());
  EXPECT_TRUE(at1.lost.empty());
}

// A peer that dies while aside passes read its connection: the pass that
// meets the end leaves it, and poll reports the loss once, in one line,
// after every record that came before it.
TEST_P(NetmodAside, APeersEndThatAnAsidePassMeetsIsReportedByPoll) {
  both_sinks at1(3);
  EXPECT_EQ(net(1).poll_aside(at1), 0);
  (void)net(1).poll(at1);
  for (std::uint32_t seq = 1; seq <= 3; ++seq) ASSERT_TRUE(send_record(0, 1, numbered(64, seq)));
  ranks[0].reset();  // its sockets close without a goodbye
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (at1.by_aside < 3 && std::chrono::steady_clock::now() < give_up) {
    (void)net(1).poll_aside(at1);
  }
  ASSERT_EQ(at1.by_aside.load(), 3u);
  for (int i = 0; i < 100; ++i) (void)net(1).poll_aside(at1);  // they meet the end
  EXPECT_TRUE(at1.lost.empty()) << "an aside pass reported a loss";
  ASSERT_TRUE(poll_until([&] {
    (void)net(1).poll(at1);
    return !at1.lost.empty();
  }));
  for (int i = 0; i < 100; ++i) (void)net(1).poll(at1);
  ASSERT_EQ(at1.lost.size(), 1u);
  EXPECT_EQ(at1.lost[0].first, 0);
  EXPECT_NE(at1.lost[0].second.find("without a goodbye"), std::string::npos) << at1.lost[0].second;
  EXPECT_EQ(at1.got[0].size(), 3u);
  EXPECT_EQ(at1.by_poll.load(), 0u);
}

// Seeded: two threads run aside passes while the poller polls now and
// then and two peers send records of every size. Each record arrives
// once, in its sender's order, and both ways are used.
TEST_P(NetmodAside, AsidePassesBesidePollDeliverEachRecordOnceInOrder) {
  both_sinks at1(3);
  constexpr std::uint32_t per_peer = 400;
  std::vector<std::vector<std::byte>> sent[3];
  std::mt19937 rng(11);
  for (int peer : {0, 2}) {
    for (std::uint32_t seq = 1; seq <= per_peer; ++seq) {
      const std::size_t length =
          seq % 16 == 0 ? max_record - rng() % 64 : 4 + rng() % (seq % 3 == 0 ? 30000 : 300);
      sent[peer].push_back(numbered(length, seq));
    }
  }
  std::atomic<bool> done{false};
  auto aside = [&] {
    while (!done.load(std::memory_order_relaxed)) {
      if (net(1).poll_aside(at1) == 0) std::this_thread::yield();
    }
  };
  std::thread a(aside);
  std::thread b(aside);
  std::size_t next[3] = {0, 0, 0};
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (unsigned round = 0; std::chrono::steady_clock::now() < give_up; ++round) {
    for (int peer : {0, 2}) {
      if (next[peer] < per_peer) {
        const auto &bytes = sent[peer][next[peer]];
        const iovec part{const_cast<std::byte *>(bytes.data()), bytes.size()};
        if (net(peer).send(1, {&part, 1}) == send_status::done) ++next[peer];
      }
      (void)net(peer).poll(sink(peer));  // a record's end the kernel did not take yet
    }
    if (round % 8 == 0) (void)net(1).poll(at1);
    if (at1.by_poll + at1.by_aside == 2 * per_peer) break;
    std::this_thread::yield();
  }
  done = true;
  a.join();
  b.join();
  for (int peer : {0, 2}) {
    const auto &got = at1.got[static_cast<std::size_t>(peer)];
    ASSERT_EQ(got.size(), per_peer) << "from " << peer;
    for (std::uint32_t i = 0; i < per_peer; ++i) {
      ASSERT_EQ(got[i], sent[peer][i]) << "from " << peer << ", record " << i + 1;
    }
  }
  EXPECT_TRUE(at1.lost.empty());
  EXPECT_GT(at1.by_aside.load(), 0u);
  EXPECT_GE(at1.by_poll.load(), 2 * per_peer / at1.refuse_every);  // the refused ones at least
}

INSTANTIATE_TEST_SUITE_P(Netmods, NetmodAside, ::testing::ValuesIn(cases), case_name);

// Each rank finalizes once its peers are done too: a goodbye is not a loss,
// and both ends close well within the 10 s a netmod waits for goodbyes.
TEST_P(NetmodContract, FinalizeSaysGoodbyeAndIsBounded) {
  if (std::string(GetParam().provider) == "shm") {
    // libfabric 1.17's shm provider reads the region of a peer in the same
    // process through that peer's own endpoint: one rank closing while
    // another still polls crashes it (about one run in two here). Ranks
    // are processes, where this cannot happen; the MPI jobs finalize over
    // shm (ofi_shm_starved).
    GTEST_SKIP() << "shm: ranks in one process cannot finalize one after the other";
  }
  start(3);
  ASSERT_TRUE(send_record(0, 1, pattern(10, 0)));
  ASSERT_TRUE(send_record(1, 0, pattern(10, 1)));
  ASSERT_TRUE(
      poll_until([&] { return sink(1).records.size() == 1 && sink(0).records.size() == 1; }));
  const auto start_time = std::chrono::steady_clock::now();
  std::thread leaving([&] { net(0).finalize(); });
  const auto end = start_time + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < end) (void)net(1).poll(sink(1));
  EXPECT_TRUE(sink(1).lost.empty());
  net(1).finalize();
  leaving.join();
  const auto took = std::chrono::steady_clock::now() - start_time;
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_TRUE(sink(0).lost.empty());
  EXPECT_TRUE(sink(1).lost.empty());
  // A rank that exchanged nothing has nobody to wait for.
  const auto lone = std::chrono::steady_clock::now();
  net(2).finalize();
  EXPECT_LT(std::chrono::steady_clock::now() - lone, std::chrono::seconds(1));
}

INSTANTIATE_TEST_SUITE_P(Netmods, NetmodContract, ::testing::ValuesIn(cases), case_name);

// Each netmod declares its own settings (IRIS_<NAME>_*): the device prints
// them with its own, help and all, and declares none of them itself.
TEST(NetmodSettings, EachNetmodsOwnArePrintedWithTheDevices) {
  const std::string printed = device::tunables_describe();
  const std::vector<device::tunable> own = netmods_tunables();
  std::vector<std::string> names;
  for (const device::tunable &t : own) {
    names.emplace_back(t.name);
    EXPECT_NE(printed.find(std::string(t.name) + " = "), std::string::npos) << t.name;
    EXPECT_NE(printed.find(t.help), std::string::npos) << t.name;
    bool of_a_built_netmod = false;
    for (const netmod_case &c : cases) {
      std::string prefix = "IRIS_" + std::string(c.netmod) + "_";
      for (char &ch : prefix) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      of_a_built_netmod =
          of_a_built_netmod || (built(c.netmod) && names.back().rfind(prefix, 0) == 0);
    }
    EXPECT_TRUE(of_a_built_netmod) << t.name;
  }
  const auto declared = [&](const char *name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  EXPECT_EQ(declared("IRIS_TCP_IF"), built("tcp"));
  EXPECT_EQ(declared("IRIS_TCP_PORT"), built("tcp"));
  EXPECT_EQ(declared("IRIS_TCP_CONNECT_TIMEOUT"), built("tcp"));
  EXPECT_EQ(declared("IRIS_OFI_PROVIDER"), built("ofi"));
  EXPECT_EQ(declared("IRIS_OFI_LIBRARY"), built("ofi"));
  // In the table once: the device does not declare them too.
  for (const std::string &name : names) {
    EXPECT_EQ(std::count_if(device::tunables().begin(), device::tunables().end(),
                            [&](const device::tunable &t) { return name == t.name; }),
              1)
        << name;
  }
}

TEST(NetmodRegistry, AnUnknownNameListsTheBuiltOnes) {
  EXPECT_NE(netmod_create("")->name(), "");
  try {
    (void)netmod_create("carrier-pigeon");
    FAIL() << "no error";
  } catch (const error &e) {
    const std::string why = e.what();
    EXPECT_EQ(why.rfind("IRIS_NETMOD=carrier-pigeon is not a netmod of this build (built: " +
                            std::string(netmods_built()) +
                            ") nor a loadable module: no libiris-netmod-carrier-pigeon.so in ",
                        0),
              0u)
        << why;
    EXPECT_NE(why.find(" (IRIS_NETMOD_PATH adds folders)"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace iris::netmod
