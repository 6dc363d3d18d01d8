// IRIS_NETMOD=auto: the netmod each pair of nodes takes, measured at
// MPI_Init between the fences.
//
// The first rank of each node (its leader) measures, with the leader of
// every other node, each netmod both offer and that reaches: the best of
// 11 round trips of an 8-byte message, then the best of 3 streams of four
// 64 KiB records, each answered by one ack (after one stream to warm up). These are raw netmod
// records, sent before any packet moves, so the protocols never see them. A pair of leaders
// measures its netmods one after the other, and each leader takes its pairs in one order (by the
// two ranks), so that every pair finds both leaders at it. The lower
// leader of a pair keeps the netmod whose 8-byte time plus 64 KiB time is
// the lower (the earlier of its list on a tie), and puts its verdict as
// its card `iris.probe.<higher leader>` ("tcp=tcp/4.2/20.4,ofi/10.7/31.0":
// the netmod kept, then each one's figures) before the second fence.
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
constexpr std::size_t bulk_bytes = 64 * 1024;
// An 8-byte message: a packet header and its payload, as the device sends.
constexpr std::size_t small_record = sizeof(packet_header) + 8;
constexpr auto probe_limit = std::chrono::seconds(30);

using probe_clock = std::chrono::steady_clock;

struct arrival {
  int peer;
  probe_kind kind;
  std::uint32_t seq;
};

// What a netmod hands up while the leaders probe: probe records, kept
// until the phase they belong to reads them.
class probe_sink final : public netmod::record_sink {
 public:
  std::deque<arrival> arrived;
  std::string lost;

  const char *record_arrived(int peer, std::span<const std::byte> head,
                             std::span<const std::byte> body) override {
    (void)body;
    probe_head h{};
    if (head.size() < sizeof h) return "a record that is not a probe's, before MPI_Init ended";
    std::memcpy(&h, head.data(), sizeof h);
    if (std::memcmp(h.magic, probe_magic, sizeof h.magic) != 0) {
      return "a record that is not a probe's, before MPI_Init ended";
    }
    arrived.push_back({peer, h.kind, h.seq});
    return nullptr;
  }
  std::byte *body_place(int, std::span<const std::byte>, std::size_t) override { return nullptr; }
  void peer_lost(int peer, const char *why) override {
    if (lost.empty()) lost = "lost rank " + std::to_string(peer) + ": " + why;
  }
  void read_done(std::uint64_t, const char *) override {}
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
        deadline_(probe_clock::now() + probe_limit) {}

  void send(probe_kind kind, std::uint32_t seq, std::size_t bytes) {
    probe_head h{};
    std::memcpy(h.magic, probe_magic, sizeof h.magic);
    h.kind = kind;
    h.seq = seq;
    std::memcpy(buffer_.data(), &h, sizeof h);
    const iovec part{buffer_.data(), bytes};
    while (net_.send(peer_, std::span(&part, 1)) == netmod::send_status::retry) progress();
  }

  // The next probe record of the peer, waiting for it.
  arrival next() {
    for (;;) {
      const auto at = std::find_if(sink_.arrived.begin(), sink_.arrived.end(),
                                   [&](const arrival &a) { return a.peer == peer_; });
      if (at != sink_.arrived.end()) {
        const arrival a = *at;
        sink_.arrived.erase(at);
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

 private:
  // Polls once; a poll that found nothing yields the CPU, as ranks that
  // wait do (the peer may share this core).
  void progress() {
    if (net_.poll(sink_) == 0) sched_yield();
    if (!sink_.lost.empty()) fail(sink_.lost);
    if (probe_clock::now() > deadline_) fail("no answer within 30 s");
  }

  [[noreturn]] void fail(const std::string &why) const {
    throw std::runtime_error("IRIS_NETMOD=auto: the probe of " + std::string(name_) +
                             " with rank " + std::to_string(peer_) + " failed: " + why);
  }

  netmod::netmod &net_;
  probe_sink &sink_;
  int peer_;
  std::string_view name_;
  std::vector<std::byte> buffer_;
  probe_clock::time_point deadline_;
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
    if (round > 0) {
      f.large_us = std::min(f.large_us, microseconds(probe_clock::now() - start) / bulk_records);
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
  while (!cards.empty()) {
    const std::size_t comma = cards.find(',');
    std::string_view card = cards.substr(0, comma);
    cards = comma == std::string_view::npos ? std::string_view{} : cards.substr(comma + 1);
    const std::size_t first = card.find('/');
    const std::size_t second = card.find('/', first + 1);
    if (first == std::string_view::npos || second == std::string_view::npos) continue;
    text += (text.empty() ? "" : " vs ") + std::string(card.substr(0, first)) + " " +
            std::string(card.substr(first + 1, second - first - 1)) + " us + " +
            std::string(card.substr(second + 1)) + " us/64 KiB";
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

// This leader's part: every pair it belongs to, in order. `probed` marks
// the transports (by index) it used.
void probe_pairs(runtime &r, const std::vector<int> &leader, const candidates_of &candidates,
                 std::vector<probe_sink> &sinks, std::vector<bool> &probed) {
  std::vector<int> others;
  for (int rank = 0; rank < r.size; ++rank) {
    if (leader[static_cast<std::size_t>(rank)] == rank && rank != r.rank) others.push_back(rank);
  }
  const std::size_t bulk =
      std::min(bulk_bytes, netmod_config(r.transport_config).max_record - sizeof(packet_header));
  // Pairs in order of (lower, higher) leader: this leader's pairs with
  // lower leaders first, then those it drives.
  for (const int other : others) {
    const std::vector<net_transport *> shared = candidates(other);
    const bool driving = r.rank < other;
    if (shared.size() < 2) {
      if (driving) r.pmi->put(verdict_key(other), "-");  // nothing to measure
      continue;
    }
    probe_figures best;
    const net_transport *winner = nullptr;
    std::string text;
    for (net_transport *n : shared) {
      const auto index =
          static_cast<std::size_t>(std::find_if(r.transports.begin(), r.transports.end(),
                                                [&](const auto &t) { return t.get() == n; }) -
                                   r.transports.begin());
      probed[index] = true;
      probe_link link(*n, sinks[index], other, bulk);
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
      text += (text.empty() ? "" : ",") + figures_card(n->netmod_name(), f);
      if (winner == nullptr || f.small_us + f.large_us < best.small_us + best.large_us) {
        winner = n;
        best = f;
      }
    }
    if (driving) {
      r.pmi->put(verdict_key(other), std::string(winner->netmod_name()) + "=" + text);
      if (r.config.debug) {
        std::fprintf(stderr, "iris: rank %d: probe with rank %d: %s; %s is faster\n", r.rank, other,
                     figures_text(text).c_str(), std::string(winner->netmod_name()).c_str());
      }
    }
  }
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
    // A netmod whose progress is manual (ofi) may hold this leader's last
    // record until it is polled again: the leader keeps polling what it
    // probed while another thread waits at the fence.
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
    while (!fenced.load(std::memory_order_acquire)) {
      int handled = 0;
      for (std::size_t i = 0; i < probed.size(); ++i) {
        if (!probed[i]) continue;
        auto &net = static_cast<net_transport &>(*r.transports[i]);
        handled += net.netmod_itself().poll(sinks[i]);
      }
      if (handled == 0) sched_yield();
    }
    fence.join();
    if (failure) std::rethrow_exception(failure);
  }
  if (r.config.debug && leading) {
    std::fprintf(stderr, "iris: rank %d: the probes and the fence after them took %.0f us\n",
                 r.rank, microseconds(probe_clock::now() - began));
  }
}

probe_verdict probe_verdict_of(runtime &r, int low_leader, int high_leader,
                               std::vector<std::pair<int, probe_verdict>> &cache) {
  const int pair = low_leader * r.size + high_leader;
  for (const auto &[key, verdict] : cache) {
    if (key == pair) return verdict;
  }
  probe_verdict verdict;
  const std::string card = r.pmi->get(low_leader, verdict_key(high_leader));
  const std::size_t equals = card.find('=');
  if (equals != std::string::npos) {
    verdict.netmod = card.substr(0, equals);
    verdict.text = figures_text(std::string_view(card).substr(equals + 1));
  }
  cache.emplace_back(pair, verdict);
  return verdict;
}

}  // namespace iris::device
