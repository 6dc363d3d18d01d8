// The TCP netmod in one process: two or three netmods (ranks) over loopback
// (netmod_fixture.hpp), and raw sockets playing the strangers. Also the wire format's pure
// functions.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "netmods/netmod.hpp"
#include "netmods/tcp/wire.hpp"
#include "pmi/pmi.hpp"
#include "test/unit/netmod_fixture.hpp"

namespace iris::netmod {
namespace {

using namespace iris::netmod::fixture;

class TcpNetmod : public netmod_ranks {
 protected:
  void start(int n) { netmod_ranks::start("tcp", n); }

  const scoped_env timeout{"IRIS_TCP_CONNECT_TIMEOUT", "300"};

  tcp::card card_of(int rank) { return *tcp::card_parse(board.at({rank, "iris.tcp"})); }
};

TEST_F(TcpNetmod, LongBodiesAreReadStraightIntoTheirPlace) {
  start(2);
  ranks[1]->sink.place.resize(max_record);
  std::vector<std::vector<std::byte>> sent;
  for (unsigned i = 0; i < 6; ++i) {
    // Long ones are placed; short ones, and every head, come from the
    // netmod's buffer.
    sent.push_back(pattern(i % 2 == 0 ? max_record : 100, i));
    ASSERT_TRUE(send_record(0, 1, sent.back()));
    ASSERT_TRUE(poll_until([&] { return ranks[1]->sink.records.size() == i + 1; }));
    const std::byte *body = ranks[1]->sink.bodies.back();
    EXPECT_EQ(body == ranks[1]->sink.place.data(), i % 2 == 0) << "record " << i;
    EXPECT_EQ(ranks[1]->sink.records.back().second, sent.back()) << "record " << i;
  }
}

// The number that follows `label` in `text`, or -1.
long long counted(const std::string &text, const std::string &label) {
  const std::size_t at = text.find(label);
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + label.size()));
}

TEST_F(TcpNetmod, InARowOfLongRecordsOnlyTheFirstBodyPassesThroughTheReadBuffer) {
  start(2);
  ranks[1]->sink.place.resize(max_record);
  constexpr unsigned rows = 16;
  std::vector<std::vector<std::byte>> sent;
  for (unsigned i = 0; i < rows; ++i) {
    sent.push_back(pattern(max_record, i));
    ASSERT_TRUE(send_record(0, 1, sent.back())) << "record " << i;
  }
  ASSERT_TRUE(poll_until([&] { return ranks[1]->sink.records.size() == rows; }));
  for (unsigned i = 0; i < rows; ++i) {
    EXPECT_EQ(ranks[1]->sink.records[i].second, sent[i]) << "record " << i;
  }
  // After a placed body the netmod reads the next record's head alone, so
  // the next body goes to its place whole. Reading a full chunk instead
  // moves about 64 KiB of every body through the buffer (1 MiB here).
  const std::string stats = net(1).statistics();
  const long long placed = counted(stats, "read in place ");
  const long long moved = counted(stats, "moved from the read buffer ");
  ASSERT_GE(placed, 0) << stats;
  ASSERT_GE(moved, 0) << stats;
  EXPECT_EQ(static_cast<std::size_t>(placed + moved), rows * (max_record - record_head)) << stats;
  EXPECT_LE(moved, 2 * 64 * 1024) << stats;
}

// Established connections whose local end is one of `ports` (the accepting
// end of each connection to those listeners), from /proc/net/tcp.
int accepted_connections(const std::vector<std::uint16_t> &ports) {
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the heading
  int count = 0;
  while (std::getline(table, line)) {
    unsigned local_port = 0;
    unsigned state = 0;
    // "  0: 0100007F:8A3B 0100007F:D2F0 01 ..."
    if (std::sscanf(line.c_str(), " %*d: %*8x:%4x %*8x:%*4x %2x", &local_port, &state) != 2)
      continue;
    for (std::uint16_t port : ports) count += state == 0x01 && local_port == port ? 1 : 0;
  }
  return count;
}

// For every epoll instance this process holds, how many descriptors it
// watches (the "tfd:" lines of its /proc/self/fdinfo entry), by fd.
std::map<int, int> epoll_watch_counts() {
  std::map<int, int> counts;
  for (int fd = 0; fd < 1024; ++fd) {
    char link[64] = {};
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (::readlink(path.c_str(), link, sizeof link - 1) <= 0) continue;
    if (std::string(link) != "anon_inode:[eventpoll]") continue;
    std::ifstream info("/proc/self/fdinfo/" + std::to_string(fd));
    std::string line;
    int watched = 0;
    while (std::getline(info, line)) watched += line.rfind("tfd:", 0) == 0 ? 1 : 0;
    counts[fd] = watched;
  }
  return counts;
}

// The watch counts of the epoll instances `before` did not have, in order.
std::vector<int> new_epoll_watch_counts(const std::map<int, int> &before) {
  std::vector<int> counts;
  for (const auto &[fd, watched] : epoll_watch_counts()) {
    if (before.count(fd) == 0) counts.push_back(watched);
  }
  return counts;
}

TEST_F(TcpNetmod, TheOnlyConnectionIsReadWithoutEpollAndGoesBackWhenAnotherOpens) {
  const std::map<int, int> before = epoll_watch_counts();
  start(3);
  ASSERT_EQ(new_epoll_watch_counts(before), (std::vector<int>{1, 1, 1}));  // the listeners
  const auto a = pattern(100, 1);
  ASSERT_TRUE(send_record(0, 1, a));
  ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == 1; }));
  for (int i = 0; i < 4; ++i) poll_all();
  // Ranks 0 and 1 each have one connection and read it directly: out of the
  // epoll set, so a segment's arrival wakes no epoll on the sender's CPU.
  EXPECT_EQ(new_epoll_watch_counts(before), (std::vector<int>{1, 1, 1}));

  // A second connection at rank 1: both of its connections go through epoll.
  const auto b = pattern(200, 2);
  ASSERT_TRUE(send_record(2, 1, b));
  ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == 2; }));
  for (int i = 0; i < 4; ++i) poll_all();
  EXPECT_EQ(new_epoll_watch_counts(before), (std::vector<int>{1, 3, 1}));
  // ... and what rank 0 sends on its former solo connection still arrives.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(send_record(0, 1, a));
    ASSERT_TRUE(send_record(2, 1, b));
  }
  ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == 8; }));
  for (std::size_t i = 2; i < 8; ++i) {
    EXPECT_EQ(sink(1).records[i].second, sink(1).records[i].first == 0 ? a : b) << "record " << i;
  }
}

TEST_F(TcpNetmod, EveryPollReadsTheOnlyConnection) {
  start(2);
  const auto a = pattern(100, 1);
  ASSERT_TRUE(send_record(0, 1, a));
  ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == 1; }));
  for (int i = 0; i < 4; ++i) poll_all();
  // One record at a time, then one poll of the receiver. The poll that
  // looks at epoll (every 16th) must read the connection too, although the
  // connection is not in the epoll set: 64 polls include 4 such.
  int missed = 0;
  for (std::size_t i = 0; i < 64; ++i) {
    ASSERT_TRUE(send_record(0, 1, a));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // loopback has delivered it
    (void)net(1).poll(sink(1));
    if (sink(1).records.size() < i + 2) ++missed;
    ASSERT_TRUE(poll_until([&] { return sink(1).records.size() == i + 2; }));
  }
  EXPECT_LT(missed, 4);
}

TEST_F(TcpNetmod, TwoRanksDiallingEachOtherAtOnceShareOneConnection) {
  start(2);
  const auto a = pattern(100, 1);
  const auto b = pattern(200, 2);
  const iovec pa{const_cast<std::byte *>(a.data()), a.size()};
  const iovec pb{const_cast<std::byte *>(b.data()), b.size()};
  // Both dial before either polls, so each hello meets the other's dial.
  EXPECT_EQ(ranks[0]->net->send(1, {&pa, 1}), send_status::retry);
  EXPECT_EQ(ranks[1]->net->send(0, {&pb, 1}), send_status::retry);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(send_record(0, 1, a));
    ASSERT_TRUE(send_record(1, 0, b));
  }
  ASSERT_TRUE(poll_until(
      [&] { return ranks[0]->sink.records.size() == 3 && ranks[1]->sink.records.size() == 3; }));
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ranks[1]->sink.records[i].second, a) << "record " << i;
    EXPECT_EQ(ranks[0]->sink.records[i].second, b) << "record " << i;
  }
  // Rank 1's dial was refused and closed; rank 0's carries both ways.
  const std::vector<std::uint16_t> ports = {card_of(0).port, card_of(1).port};
  ASSERT_TRUE(poll_until([&] { return accepted_connections(ports) <= 1; }))
      << accepted_connections(ports) << " connections between two ranks";
  EXPECT_EQ(accepted_connections(ports), 1);
  EXPECT_TRUE(ranks[0]->sink.lost.empty());
  EXPECT_TRUE(ranks[1]->sink.lost.empty());
}

TEST_F(TcpNetmod, ASenderThatDiesIsReportedLost) {
  start(2);
  ASSERT_TRUE(send_record(0, 1, pattern(10, 0)));
  ASSERT_TRUE(poll_until([&] { return ranks[1]->sink.records.size() == 1; }));
  ranks[0].reset();  // its sockets close without a goodbye, as when it dies
  ASSERT_TRUE(poll_until([&] { return !ranks[1]->sink.lost.empty(); }));
  EXPECT_EQ(ranks[1]->sink.lost[0].first, 0);
  EXPECT_NE(ranks[1]->sink.lost[0].second.find("without a goodbye"), std::string::npos);
}

TEST_F(TcpNetmod, AReceiverThatDiesIsReportedLost) {
  start(2);
  ASSERT_TRUE(send_record(0, 1, pattern(10, 0)));
  ASSERT_TRUE(poll_until([&] { return ranks[1]->sink.records.size() == 1; }));
  ranks[1].reset();
  ASSERT_TRUE(poll_until([&] { return !ranks[0]->sink.lost.empty(); }));
  EXPECT_EQ(ranks[0]->sink.lost[0].first, 1);
}

TEST_F(TcpNetmod, AnUnreachablePeerIsAnErrorNamingEachAddress) {
  start(2);
  // Rank 1's card now names a port nobody listens on.
  tcp::card c = card_of(1);
  const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(probe, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(probe, reinterpret_cast<sockaddr *>(&a), &len);
  c.port = ntohs(a.sin_port);
  c.addresses = {"127.0.0.1"};
  board[{1, "iris.tcp"}] = tcp::card_format(c);
  const auto bytes = pattern(10, 0);
  const iovec part{const_cast<std::byte *>(bytes.data()), bytes.size()};
  EXPECT_EQ(ranks[0]->net->send(1, {&part, 1}), send_status::retry);
  ASSERT_TRUE(poll_until([&] { return !ranks[0]->sink.lost.empty(); }));
  ::close(probe);
  EXPECT_EQ(ranks[0]->sink.lost[0].first, 1);
  EXPECT_NE(ranks[0]->sink.lost[0].second.find("127.0.0.1:" + std::to_string(c.port)),
            std::string::npos)
      << ranks[0]->sink.lost[0].second;
  EXPECT_NE(ranks[0]->sink.lost[0].second.find("refused"), std::string::npos);
}

// A raw connection to rank `to`'s listener.
int dial(const tcp::card &c) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(c.port);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

tcp::hello genuine_hello(const tcp::card &c, int from, int to) {
  tcp::hello h{};
  std::memcpy(h.magic, tcp::hello_magic, sizeof h.magic);
  h.acceptor = c.tok;
  h.from = from;
  h.to = to;
  h.job = job_hash(test_job);
  return h;
}

TEST_F(TcpNetmod, StrangersAreDroppedWithOneLineEachAndTheJobGoesOn) {
  start(3);
  const tcp::card c = card_of(1);
  std::vector<int> fds;
  testing::internal::CaptureStderr();
  // Garbage bytes.
  fds.push_back(dial(c));
  const char junk[64] = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_EQ(::send(fds.back(), junk, sizeof junk, 0), static_cast<ssize_t>(sizeof junk));
  // A hello with the wrong token.
  tcp::hello h = genuine_hello(c, 0, 1);
  h.acceptor[0] ^= 1;
  fds.push_back(dial(c));
  ASSERT_EQ(::send(fds.back(), &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
  // A hello from another job.
  h = genuine_hello(c, 0, 1);
  h.job ^= 1;
  fds.push_back(dial(c));
  ASSERT_EQ(::send(fds.back(), &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
  // A hello claiming an impossible rank.
  h = genuine_hello(c, 7, 1);
  fds.push_back(dial(c));
  ASSERT_EQ(::send(fds.back(), &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
  // Half a hello, then gone.
  h = genuine_hello(c, 0, 1);
  int half = dial(c);
  ASSERT_EQ(::send(half, &h, 10, 0), 10);
  ::close(half);
  // Connected, then silent: dropped when its hello is overdue.
  fds.push_back(dial(c));
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  while (std::chrono::steady_clock::now() < end) poll_all();
  const std::string log = testing::internal::GetCapturedStderr();
  for (const char *why : {"not an Iris hello", "a hello with the wrong token",
                          "a hello from another job", "a hello from an impossible rank",
                          "closed in the middle of its hello", "sent no hello within 300 ms"}) {
    EXPECT_NE(log.find(std::string("iris: rank 1: tcp: dropped the connection from 127.0.0.1:")),
              std::string::npos);
    EXPECT_NE(log.find(why), std::string::npos) << "no line for: " << why << "\n" << log;
  }
  std::size_t lines = 0;
  for (char ch : log) lines += ch == '\n' ? 1 : 0;
  EXPECT_EQ(lines, 6U) << log;
  EXPECT_TRUE(ranks[1]->sink.records.empty());
  EXPECT_TRUE(ranks[1]->sink.lost.empty());
  // The job goes on: genuine ranks still reach rank 1.
  ASSERT_TRUE(send_record(0, 1, pattern(50, 3)));
  ASSERT_TRUE(send_record(2, 1, pattern(60, 4)));
  ASSERT_TRUE(poll_until([&] { return ranks[1]->sink.records.size() == 2; }));
  for (int fd : fds) ::close(fd);
}

// Past the hello (as a rank of the job with a bug would be): a frame longer
// than max_record, or a record the device refuses, costs the connection.
TEST_F(TcpNetmod, AnImpossibleFrameLengthDropsTheConnection) {
  start(3);
  const tcp::card c = card_of(1);
  const int fd = dial(c);
  const tcp::hello h = genuine_hello(c, 2, 1);
  ASSERT_EQ(::send(fd, &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
  char ack[8] = {};
  ASSERT_TRUE(poll_until([&] { return ::recv(fd, ack, sizeof ack, MSG_DONTWAIT) == 8; }));
  EXPECT_EQ(std::memcmp(ack, tcp::ack_magic, 8), 0);
  const std::uint32_t huge = max_record + 1;
  testing::internal::CaptureStderr();
  ASSERT_EQ(::send(fd, &huge, sizeof huge, 0), 4);
  char byte = 0;
  ASSERT_TRUE(poll_until([&] { return ::recv(fd, &byte, 1, MSG_DONTWAIT) == 0; }));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("dropped the connection from rank 2"), std::string::npos) << log;
  EXPECT_NE(log.find("a frame of 262145 bytes (at most 262144)"), std::string::npos) << log;
  EXPECT_TRUE(ranks[1]->sink.records.empty());
  ::close(fd);
  ASSERT_TRUE(send_record(0, 1, pattern(50, 3)));
  ASSERT_TRUE(poll_until([&] { return ranks[1]->sink.records.size() == 1; }));
}

// IRIS_TCP_* are read by the netmod when it starts (netmod_contract_test
// checks that they are printed with the device's).
TEST(TcpSettings, AMalformedOneStopsInitNamingIt) {
  cards board;
  for (const auto &[name, value] :
       {std::pair{"IRIS_TCP_PORT", "70000"}, std::pair{"IRIS_TCP_CONNECT_TIMEOUT", "soon"}}) {
    const scoped_env bad(name, value);
    try {
      (void)start_rank("tcp", 0, 2, board);
      ADD_FAILURE() << name << "=" << value << " was accepted";
    } catch (const error &e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string(name) + "=" + value + " is not", 0), 0U)
          << e.what();
    }
  }
  EXPECT_TRUE(board.empty());
}

TEST(TcpSettings, ThePortBaseIsReadAtInit) {
  cards board;
  // A free port below the usual ephemeral range: rank 1 listens on base + 1.
  for (int base = 20000; base < 30000; base += 97) {
    const scoped_env port("IRIS_TCP_PORT", std::to_string(base));
    try {
      (void)start_rank("tcp", 1, 2, board);
    } catch (const error &) {
      continue;  // in use
    }
    EXPECT_EQ(tcp::card_parse(board.at({1, "iris.tcp"}))->port, base + 1);
    return;
  }
  GTEST_SKIP() << "no free port found";
}

TEST(TcpWire, FramesAreParsedAndBounded) {
  std::byte buf[16] = {};
  const std::uint32_t five = 5;
  std::memcpy(buf, &five, 4);
  EXPECT_EQ(tcp::frame_parse(buf, 3, 100).what, tcp::frame::kind::partial);
  EXPECT_EQ(tcp::frame_parse(buf, 8, 100).what, tcp::frame::kind::partial);
  const tcp::frame f = tcp::frame_parse(buf, 9, 100);
  EXPECT_EQ(f.what, tcp::frame::kind::record);
  EXPECT_EQ(f.record_length, 5U);
  EXPECT_EQ(tcp::frame_parse(buf, 9, 4).what, tcp::frame::kind::too_long);
  const std::uint32_t zero = 0;
  std::memcpy(buf, &zero, 4);
  EXPECT_EQ(tcp::frame_parse(buf, 4, 100).what, tcp::frame::kind::goodbye);
}

TEST(TcpWire, CardsRoundTripAndGarbageIsRefused) {
  tcp::card c;
  for (std::size_t i = 0; i < c.tok.size(); ++i) c.tok[i] = static_cast<std::uint8_t>(i * 17);
  c.port = 4242;
  c.addresses = {"10.1.2.3", "127.0.0.1"};
  const auto back = tcp::card_parse(tcp::card_format(c));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->tok, c.tok);
  EXPECT_EQ(back->port, 4242);
  EXPECT_EQ(back->addresses, c.addresses);
  for (const char *bad :
       {"", "xyz", "00112233445566778899aabbccddeeff", "00112233445566778899aabbccddeeff:0:1.2.3.4",
        "00112233445566778899aabbccddeeff:70000:1.2.3.4",
        "00112233445566778899aabbccddeeff:80:", "zz112233445566778899aabbccddeeff:80:1.2.3.4"}) {
    EXPECT_FALSE(tcp::card_parse(bad).has_value()) << bad;
  }
}

TEST(TcpWire, RoutesAreReadFromTheKernelsTableAndRoundTrip) {
  // /proc/net/route: a connected /24 and a route through a gateway; the
  // third is down and left out.
  const std::string table =
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "iris0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
      "iris1\t0000000A\t010200C0\t0003\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
      "iris2\t007133CB\t00000000\t0000\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
  const auto routes = tcp::routes_from_table(table);
  ASSERT_TRUE(routes.has_value());
  EXPECT_EQ(tcp::routes_format(*routes), "192.0.2.0/24,10.0.0.0/16");
  const auto back = tcp::routes_parse(tcp::routes_format(*routes));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(tcp::routes_format(*back), "192.0.2.0/24,10.0.0.0/16");
  // A default route reaches everything, and so does a table too long for a card.
  const std::string with_default =
      table + "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
  EXPECT_EQ(tcp::routes_format(*tcp::routes_from_table(with_default)), "0.0.0.0/0");
  std::string long_table = table.substr(0, table.find('\n') + 1);
  for (int i = 0; i < 17; ++i) {
    char line[96];
    std::snprintf(line, sizeof line,
                  "x%d\t0000%02X0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", i, i);
    long_table += line;
  }
  EXPECT_EQ(tcp::routes_format(*tcp::routes_from_table(long_table)), "0.0.0.0/0");
  for (const char *bad : {"", "Iface\nx 1\n", "garbage"}) {
    EXPECT_FALSE(tcp::routes_from_table(bad).has_value()) << bad;
  }
  // A host with no interface up but loopback has no routes.
  EXPECT_EQ(tcp::routes_format({}), "none");
  const auto none = tcp::routes_parse("none");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
  // An unreachable default (RTF_REJECT) leads nowhere.
  const std::string rejecting =
      table + "eth0\t00000000\t00000000\t0201\t0\t0\t0\t00000000\t0\t0\t0\n";
  EXPECT_EQ(tcp::routes_format(*tcp::routes_from_table(rejecting)), "192.0.2.0/24,10.0.0.0/16");
  for (const char *bad : {"", "1.2.3.4", "1.2.3.4/33", "1.2.3/8", "1.2.3.4/8,", "1.2.3.4/x"}) {
    EXPECT_FALSE(tcp::routes_parse(bad).has_value()) << bad;
  }
}

TEST(TcpWire, ACardIsReachedWhenARouteLeadsToOneOfItsAddresses) {
  const auto routes = *tcp::routes_parse("192.0.2.0/24,10.0.0.0/16");
  EXPECT_TRUE(tcp::routes_reach(routes, {"198.51.100.7", "10.0.9.9"}));
  EXPECT_FALSE(tcp::routes_reach(routes, {"198.51.100.7"}));
  // Loopback beside other addresses is the peer's own host's.
  EXPECT_FALSE(tcp::routes_reach(routes, {"198.51.100.7", "127.0.0.1"}));
  // A card of loopback alone is taken at its word.
  EXPECT_TRUE(tcp::routes_reach(routes, {"127.0.0.1"}));
  EXPECT_TRUE(tcp::routes_reach(*tcp::routes_parse("0.0.0.0/0"), {"198.51.100.7"}));
  EXPECT_TRUE(tcp::routes_reach({}, {"127.0.0.1"}));
  EXPECT_FALSE(tcp::routes_reach({}, {"198.51.100.7"}));
}

TEST(TcpWire, HelloCheckNamesWhatIsWrong) {
  tcp::token mine{};
  mine[3] = 9;
  tcp::hello h{};
  std::memcpy(h.magic, tcp::hello_magic, 8);
  h.acceptor = mine;
  h.from = 0;
  h.to = 1;
  h.job = 77;
  EXPECT_EQ(tcp::hello_check(h, mine, 77, 1, 4), nullptr);
  EXPECT_STREQ(tcp::hello_check(h, mine, 78, 1, 4), "a hello from another job");
  EXPECT_STREQ(tcp::hello_check(h, mine, 77, 2, 4), "a hello meant for another rank");
  h.from = 1;
  EXPECT_STREQ(tcp::hello_check(h, mine, 77, 1, 4), "a hello from an impossible rank");
  h.from = 4;
  EXPECT_STREQ(tcp::hello_check(h, mine, 77, 1, 4), "a hello from an impossible rank");
  h.from = 0;
  h.acceptor[3] = 8;
  EXPECT_STREQ(tcp::hello_check(h, mine, 77, 1, 4), "a hello with the wrong token");
  h.magic[0] = 'X';
  EXPECT_STREQ(tcp::hello_check(h, mine, 77, 1, 4), "not an Iris hello");
}

// A hello from another job (a process that read this rank's card in an MPI
// port name): any job and any rank there, but this rank's token and number.
TEST(TcpWire, ForeignHelloCheck) {
  tcp::token mine{};
  mine[0] = 5;
  tcp::hello h{};
  std::memcpy(h.magic, tcp::hello_magic, 8);
  h.acceptor = mine;
  h.from = 40;  // past this job's size: its rank in its own job
  h.to = 1;
  h.job = 99;
  EXPECT_EQ(tcp::hello_check_foreign(h, mine, 1), nullptr);
  EXPECT_STREQ(tcp::hello_check_foreign(h, mine, 2), "a hello meant for another rank");
  h.from = -1;
  EXPECT_STREQ(tcp::hello_check_foreign(h, mine, 1), "a hello from an impossible rank");
  h.from = 0;
  h.acceptor[0] = 6;
  EXPECT_STREQ(tcp::hello_check_foreign(h, mine, 1), "a hello with the wrong token");
  h.acceptor = mine;
  h.magic[7] = '9';
  EXPECT_STREQ(tcp::hello_check_foreign(h, mine, 1), "not an Iris hello");
}

}  // namespace
}  // namespace iris::netmod
