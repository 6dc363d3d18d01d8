// IRIS_NETMOD=auto: the netmod each pair of nodes takes, measured at
// MPI_Init between the fences.
//
// The first rank of each node (its leader) measures, with the leader of
// every other node, each netmod both offer and that reaches: the best of
// 11 round trips of an 8-byte message, then the best of 3 streams of four
// 64 KiB records, each answered by one ack (after one stream to warm up).
// These are raw netmod records, sent before any packet moves, so the
// protocols never see them. A pair of leaders measures its netmods one
// after the other, and each leader takes its pairs in one order (by the
// two ranks), so that every pair finds both leaders at it.
//
// The lower leader of a pair keeps the netmod whose 8-byte time plus
// 64 KiB time is the lower (a later one of its list must be faster by
// more than 10%), and puts its verdict as its card
// `iris.probe.<higher leader>` ("tcp:tcp/4.2/20.4,ofi/10.7/31.0": the
// netmod kept, then each one's figures) before the second fence. A netmod
// whose probe fails (nothing heard for 30 s, the peer lost) is left out
// of the verdict.
#include "device/transports/probe.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "device/base/text.hpp"
#include "device/core/packet.hpp"
#include "device/runtime/runtime.hpp"
#include "device/transports/net.hpp"
#include "pmi/pmi.hpp"

namespace iris::device {
namespace {

std::string verdict_key(int high_leader) {
  return "iris.probe." + std::to_string(high_leader);
}

enum class probe_kind : std::uint8_t { ping = 1, pong, bulk, bulk_ack, done };

struct probe_head {
  char magic[4];
  probe_kind kind;
  std::uint8_t unused[3];
  std::uint32_t seq;
};
constexpr char probe_magic[4] = {'I', 'R', 'P', 'B'};

constexpr int warm_rounds = 3;
constexpr int timed_rounds = 11;
constexpr int bulk_records = 4;
constexpr int timed_streams = 3;
constexpr std::size_t stream_bytes = 64 * 1024;
// An 8-byte message: a packet header and its payload, as the device sends.
constexpr std::size_t small_record = sizeof(packet_header) + 8;
// A link that hears nothing from its peer for this long gives up on that
// netmod (the pair keeps another).
constexpr auto probe_silence = std::chrono::seconds(30);
// A later netmod of the list is kept only when it is faster by more than
// this share, so that two about equal do not change places run to run.
constexpr double probe_margin = 0.9;

using probe_clock = std::chrono::steady_clock;

struct arrival {
  int peer;
  probe_kind kind;
  std::uint32_t seq;
};

// What a netmod hands up while its leader probes: probe records, kept
// until the phase they belong to reads them. A rank past the second fence
// may already send the device's packets to a leader still waiting at it:
// those, and the peers lost meanwhile, go to the net transport when the
// probe ends (net_transport::hold), which hands them on first.
class probe_sink final : public netmod::record_sink {
 public:
  struct held {
    int peer;
    std::vector<std::byte> head;
    std::vector<std::byte> body;
  };
  std::deque<arrival> arrived;
  std::vector<held> others;
  std::vector<std::pair<int, std::string>> losses;

  const char *record_arrived(int peer, std::span<const std::byte> head,
                             std::span<const std::byte> body) override {
    probe_head h{};
    if (head.size() >= sizeof h) std::memcpy(&h, head.data(), sizeof h);
    if (head.size() >= sizeof h && std::memcmp(h.magic, probe_magic, sizeof h.magic) == 0) {
      arrived.push_back({peer, h.kind, h.seq});
    } else {
      others.push_back({peer, {head.begin(), head.end()}, {body.begin(), body.end()}});
    }
    return nullptr;
  }
  std::byte *body_place(int, std::span<const std::byte>, std::size_t) override { return nullptr; }
  void peer_lost(int peer, const char *why) override { losses.emplace_back(peer, why); }
  void read_done(std::uint64_t, const char *) override {}

  bool lost(int peer) const {
    return std::any_of(losses.begin(), losses.end(),
                       [&](const auto &l) { return l.first == peer; });
  }
};

// A probe of one netmod that could not finish: the pair keeps another.
class probe_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One netmod between this leader and another, for one phase.
class probe_link {
 public:
  probe_link(net_transport &net, probe_sink &sink, int peer, std::size_t bulk)
      : net_(net.netmod_itself()),
        sink_(sink),
        peer_(peer),
        name_(net.netmod_name()),
        buffer_(sizeof(packet_header) + bulk),
        heard_(probe_clock::now()) {}

  void send(probe_kind kind, std::uint32_t seq, std::size_t bytes) {
    probe_head h{};
    std::memcpy(h.magic, probe_magic, sizeof h.magic);
    h.kind = kind;
    h.seq = seq;
    std::memcpy(buffer_.data(), &h, sizeof h);
    const iovec part{buffer_.data(), bytes};
    while (net_.send(peer_, std::span(&part, 1)) == netmod::send_status::retry) progress();
    heard_ = probe_clock::now();
  }

  // The next probe record of the peer, waiting for it.
  arrival next() {
    for (;;) {
      const auto at = std::find_if(sink_.arrived.begin(), sink_.arrived.end(),
                                   [&](const arrival &a) { return a.peer == peer_; });
      if (at != sink_.arrived.end()) {
        const arrival a = *at;
        sink_.arrived.erase(at);
        heard_ = probe_clock::now();
        return a;
      }
      progress();
    }
  }

  void expect(probe_kind kind, std::uint32_t seq) {
    const arrival a = next();
    if (a.kind != kind || a.seq != seq) fail("an answer out of order");
  }

  std::size_t bulk_record() const { return buffer_.size(); }
  std::size_t bulk_bytes() const { return buffer_.size() - sizeof(packet_header); }

 private:
  // Polls once; a poll that found nothing yields the CPU, as ranks that
  // wait do (the peer may share this core).
  void progress() {
    if (net_.poll(sink_) == 0) sched_yield();
    if (sink_.lost(peer_)) fail("the netmod lost the peer");
    if (probe_clock::now() - heard_ > probe_silence) fail("nothing heard for 30 s");
  }

  [[noreturn]] void fail(const std::string &why) const {
    throw probe_failure("the probe of " + std::string(name_) + " with rank " +
                        std::to_string(peer_) + " failed: " + why);
  }

  netmod::netmod &net_;
  probe_sink &sink_;
  int peer_;
  std::string_view name_;
  std::vector<std::byte> buffer_;
  probe_clock::time_point heard_;  // the last record sent to or read from the peer
};

double microseconds(probe_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

probe_figures drive(probe_link &link) {
  for (std::uint32_t i = 0; i < warm_rounds; ++i) {
    link.send(probe_kind::ping, i, small_record);
    link.expect(probe_kind::pong, i);
  }
  // The best of the timed rounds: a rank descheduled on a shared core
  // only ever adds time.
  probe_figures f;
  f.small_us = std::numeric_limits<double>::max();
  f.large_us = std::numeric_limits<double>::max();
  for (std::uint32_t i = 0; i < timed_rounds; ++i) {
    const auto start = probe_clock::now();
    link.send(probe_kind::ping, warm_rounds + i, small_record);
    link.expect(probe_kind::pong, warm_rounds + i);
    f.small_us = std::min(f.small_us, microseconds(probe_clock::now() - start) / 2);
  }
  // Streams: the first warms the netmod's large path (set up on first use).
  for (std::uint32_t round = 0; round < 1 + timed_streams; ++round) {
    const auto start = probe_clock::now();
    for (std::uint32_t i = 0; i < bulk_records; ++i) {
      link.send(probe_kind::bulk, i, link.bulk_record());
    }
    link.expect(probe_kind::bulk_ack, round);
    if (round > 0) {  // per 64 KiB, also when IRIS_NET_FRAGMENT_SIZE makes records smaller
      const double per_record = microseconds(probe_clock::now() - start) / bulk_records;
      f.large_us = std::min(f.large_us, per_record * static_cast<double>(stream_bytes) /
                                            static_cast<double>(link.bulk_bytes()));
    }
  }
  link.send(probe_kind::done, 0, small_record);
  return f;
}

void answer(probe_link &link) {
  int bulks = 0;
  for (;;) {
    const arrival a = link.next();
    if (a.kind == probe_kind::ping) {
      link.send(probe_kind::pong, a.seq, small_record);
    } else if (a.kind == probe_kind::bulk) {
      if (++bulks % bulk_records == 0) {
        link.send(probe_kind::bulk_ack, static_cast<std::uint32_t>(bulks / bulk_records - 1),
                  small_record);
      }
    } else if (a.kind == probe_kind::done) {
      return;
    }
  }
}

// "tcp/4.2/20.4": a card holds no spaces.
std::string figures_card(std::string_view name, const probe_figures &f) {
  char text[96];
  std::snprintf(text, sizeof text, "%.*s/%.1f/%.1f", static_cast<int>(name.size()), name.data(),
                f.small_us, f.large_us);
  return text;
}

// "tcp 4.2 us + 20.4 us/64 KiB vs ofi ...", from figures_card's joined by
// commas.
std::string figures_text(std::string_view cards) {
  std::string text;
  for (const std::string_view card : split(cards, ',')) {
    const std::vector<std::string_view> figures = split(card, '/');
    if (figures.size() != 3) continue;
    text += (text.empty() ? "" : " vs ") + std::string(figures[0]) + " " + std::string(figures[1]) +
            " us + " + std::string(figures[2]) + " us/64 KiB";
  }
  return text;
}

}  // namespace

std::vector<int> node_leaders(const runtime &r) {
  std::vector<int> leader(static_cast<std::size_t>(r.size), -1);
  std::vector<int> first_of_node;
  for (int rank = 0; rank < r.size; ++rank) {
    const int node = r.pmi->node_of(rank);
    if (static_cast<std::size_t>(node) >= first_of_node.size()) {
      first_of_node.resize(static_cast<std::size_t>(node) + 1, -1);
    }
    int &first = first_of_node[static_cast<std::size_t>(node)];
    if (first < 0) first = rank;
    leader[static_cast<std::size_t>(rank)] = first;
  }
  return leader;
}

namespace {

// One pair of leaders, this one driving (`driving`) or answering: each
// netmod they share, in the lower's order. The driver returns the
// verdict card ("tcp:tcp/4.2/20.4,ofi/10.7/61.0"), or "-" when fewer than
// two netmods could be measured.
std::string probe_pair(runtime &r, int other, bool driving,
                       const std::vector<net_transport *> &shared, std::vector<probe_sink> &sinks,
                       std::vector<bool> &probed) {
  const std::size_t bulk =
      std::min(stream_bytes, netmod_config(r.transport_config).max_record - sizeof(packet_header));
  const net_transport *winner = nullptr;
  double best = 0;
  int measured = 0;
  std::string text;
  for (net_transport *n : shared) {
    const auto index =
        static_cast<std::size_t>(std::find_if(r.transports.begin(), r.transports.end(),
                                              [&](const auto &t) { return t.get() == n; }) -
                                 r.transports.begin());
    probed[index] = true;
    probe_link link(*n, sinks[index], other, bulk);
    try {
      if (!driving) {
        answer(link);
        continue;
      }
      const auto started = probe_clock::now();
      const probe_figures f = drive(link);
      if (r.config.debug) {
        std::fprintf(stderr, "iris: rank %d: probe of %s with rank %d took %.0f us\n", r.rank,
                     std::string(n->netmod_name()).c_str(), other,
                     microseconds(probe_clock::now() - started));
      }
      ++measured;
      text += (text.empty() ? "" : ",") + figures_card(n->netmod_name(), f);
      const double score = f.small_us + f.large_us;
      if (winner == nullptr || score < best * probe_margin) {
        winner = n;
        best = score;
      }
    } catch (const probe_failure &e) {
      // Left out of the verdict; a netmod that does not work will say so
      // at its first send if the pair comes to use it.
      if (r.config.debug) std::fprintf(stderr, "iris: rank %d: %s\n", r.rank, e.what());
    }
  }
  if (!driving) return {};
  if (measured < 2) return "-";
  if (r.config.debug) {
    std::fprintf(stderr, "iris: rank %d: probe with rank %d: %s; %s is faster\n", r.rank, other,
                 figures_text(text).c_str(), std::string(winner->netmod_name()).c_str());
  }
  return std::string(winner->netmod_name()) + ":" + text;
}

// This leader's part: every pair of leaders it belongs to, in one order
// for all (by the lower rank, then the higher): first its pairs with lower
// leaders, which drive them, then those it drives. `probed` marks the
// transports (by index) it used.
void probe_pairs(runtime &r, const std::vector<int> &leader, const candidates_of &candidates,
                 std::vector<probe_sink> &sinks, std::vector<bool> &probed) {
  for (int other = 0; other < r.size; ++other) {
    if (leader[static_cast<std::size_t>(other)] != other || other == r.rank) continue;
    const std::vector<net_transport *> shared = candidates(other);
    const bool driving = r.rank < other;
    if (shared.size() < 2) {
      if (driving) r.pmi->put(verdict_key(other), "-");  // nothing to measure
      continue;
    }
    const std::string verdict = probe_pair(r, other, driving, shared, sinks, probed);
    if (driving) r.pmi->put(verdict_key(other), verdict);
  }
}

// The second fence. A leader that probed keeps polling what it probed
// while another thread waits at the fence: a netmod whose progress is
// manual (ofi) may hold the leader's last record until it is polled again.
// Nothing but the fence calls the process manager meanwhile (netmod::poll
// never does).
void fence_polling(runtime &r, std::vector<probe_sink> &sinks, const std::vector<bool> &probed) {
  std::atomic<bool> fenced{false};
  std::exception_ptr failure;
  std::thread fence([&] {
    try {
      r.pmi->fence();
    } catch (...) {
      failure = std::current_exception();
    }
    fenced.store(true, std::memory_order_release);
  });
  std::exception_ptr polling_failure;
  try {
    while (!fenced.load(std::memory_order_acquire)) {
      int handled = 0;
      for (std::size_t i = 0; i < probed.size(); ++i) {
        if (!probed[i]) continue;
        auto &net = static_cast<net_transport &>(*r.transports[i]);
        handled += net.netmod_itself().poll(sinks[i]);
      }
      if (handled == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  } catch (...) {
    polling_failure = std::current_exception();  // the fence still ends: every rank comes to it
  }
  fence.join();
  if (failure) std::rethrow_exception(failure);
  if (polling_failure) std::rethrow_exception(polling_failure);
}

}  // namespace

void probe_leaders(runtime &r, const std::vector<int> &leader, const candidates_of &candidates) {
  const auto began = probe_clock::now();
  const bool leading = leader[static_cast<std::size_t>(r.rank)] == r.rank;
  std::vector<probe_sink> sinks(r.transports.size());
  std::vector<bool> probed(r.transports.size(), false);
  if (leading) probe_pairs(r, leader, candidates, sinks, probed);
  r.pmi->commit();
  if (std::find(probed.begin(), probed.end(), true) == probed.end()) {
    r.pmi->fence();
  } else {
    fence_polling(r, sinks, probed);
  }
  // What the device's peers sent (or lost) meanwhile, for the transports.
  for (std::size_t i = 0; i < sinks.size(); ++i) {
    if (sinks[i].others.empty() && sinks[i].losses.empty()) continue;
    auto &net = static_cast<net_transport &>(*r.transports[i]);
    if (r.config.debug) {
      std::fprintf(stderr,
                   "iris: rank %d: %zu records and %zu losses came by %s while the probe read "
                   "it; handed on\n",
                   r.rank, sinks[i].others.size(), sinks[i].losses.size(),
                   std::string(net.netmod_name()).c_str());
    }
    for (probe_sink::held &h : sinks[i].others) {
      net.hold(h.peer, std::move(h.head), std::move(h.body));
    }
    for (auto &[peer, why] : sinks[i].losses) net.hold_loss(peer, std::move(why));
  }
  if (r.config.debug && leading) {
    std::fprintf(stderr, "iris: rank %d: the probes and the fence after them took %.0f us\n",
                 r.rank, microseconds(probe_clock::now() - began));
  }
}

probe_verdict probe_verdict_of(runtime &r, int low_leader, int high_leader,
                               std::vector<std::pair<std::pair<int, int>, probe_verdict>> &cache) {
  const std::pair<int, int> pair{low_leader, high_leader};
  for (const auto &[key, verdict] : cache) {
    if (key == pair) return verdict;
  }
  probe_verdict verdict;
  const std::string card = r.pmi->get(low_leader, verdict_key(high_leader));
  const std::size_t colon = card.find(':');
  if (colon != std::string::npos) {
    verdict.netmod = card.substr(0, colon);
    verdict.text = figures_text(std::string_view(card).substr(colon + 1));
  }
  cache.emplace_back(pair, verdict);
  return verdict;
}

}  // namespace iris::device
