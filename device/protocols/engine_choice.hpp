// Which rendezvous engine moves one peer's large messages faster on this
// machine now: single-copy reads (CMA) or the pipeline through the pair
// ring. Learned from the messages themselves, because the answer changes
// while a job runs: this VM moves between a fast state and a slow one
// within minutes (a 0-byte ping-pong of 0.09 us or of 0.3 us; most likely
// the two vCPUs on cores that share a cache, or not), and the pipeline
// streams 30-38 GB/s in the first and 2.3-7 in the second, where CMA keeps
// 12-13 in both (bench/results/, stop 26).
// The static rule (transports/shm.cpp, cma_chosen) names an engine for each message. Its engine is
// used until it has been timed; then the other gets a try of `try_messages` messages; from then on
// the faster of the two (the other by at least `margin`) carries the messages, and the slower gets
// a try once every `probe_ns` (the first time after a tenth of it), so a change of state is seen
// within that; a try's time replaces what was known of its engine. Rates are kept per size class
// (the engines' fixed costs weigh differently at 64 KiB and at 4 MiB): bytes per nanosecond, the
// engine in use as a moving average of its messages. And apart for each `flow`: messages alone (a
// ping-pong: what counts is one message's latency, handshake included), messages alone that follow
// another peer's (a fan-in: a gather's root reading its peers' blocks one after the other), streams
// one way, and streams both ways (this rank streaming rendezvous sends out too). Figures timed in
// bidirectional 2 MiB streams, where both engines move about half as much a direction, had one-way
// 4 MiB streams that followed read with CMA at 11-12 GB/s, where the pipeline moves 17-18; and
// which engine moves a message alone faster differs from machine to machine by 2x either way
// (bench/results/).
//
// The pipeline is timed in runs of messages (vc.hpp), CMA read by read. A
// few reads come out slow for reasons of their own (a cold page to pin,
// the other rank's copy on the same core: 4-16 GB/s among reads of 27-30
// on one machine here), so CMA's figure is the median of a group of
// `try_messages - 1` reads, never one read or their sum: with the sum a try
// of 0.71 (cold, untimed), 14.4, 26.5, 13.3, 26.6, 27.7, 27.2 and 27.3 GB/s
// came out at 20, within the margin of the pipeline's 16.7, and the
// pipeline kept streams that CMA moved at 24-25 GB/s against its 15
// (bench/results/, stop 30).
#pragma once

#include <time.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace iris::device {

// What a rendezvous message of one peer travels among (engine_choice keeps
// its figures apart for each).
enum class flow : int {
  alone = 0,      // nothing else streams in, nor out: a message alone,
                  // timed from the engine's choice to the receive's end
  one_way = 1,    // among other receives streaming in
  both_ways = 2,  // among others, while this rank streams rendezvous sends out
  fan_in = 3,     // alone from this peer, but just after another peer's: a
                  // rank several send to at once (a gather's root); timed as
                  // a message alone
};

// CLOCK_MONOTONIC in nanoseconds (the vDSO: no system call).
inline std::uint64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000U +
         static_cast<std::uint64_t>(t.tv_nsec);
}

// Whether a rendezvous message comes in a fan-in: one of the last two before it came from another
// peer, within fan_in_ns. A gather's root reads its peers' blocks in turn (though each alone, the
// one before ended when the next is chosen); a ping-pong has one peer. Counted in messages, not
// time: the gap from one gather to the next was 20-300 us at 64 KiB and 1 MiB on one machine, in
// runs minutes apart (bench/results/, 2026-12-02).
class fan_in_watch {
 public:
  static constexpr std::uint64_t fan_in_ns = 10'000'000;  // 10 ms

  // A message from `peer` (the transport's index) chosen at `now`.
  bool next(int peer, std::uint64_t now) {
    const bool fan_in = now - last_ns_ < fan_in_ns && ((last_[0] >= 0 && last_[0] != peer) ||
                                                       (last_[1] >= 0 && last_[1] != peer));
    last_[1] = last_[0];
    last_[0] = peer;
    last_ns_ = now;
    return fan_in;
  }

 private:
  int last_[2] = {-1, -1};  // the peers of the last message and of the one before
  std::uint64_t last_ns_ = 0;
};

class engine_choice {
 public:
  static constexpr std::uint64_t probe_ns = 100'000'000;       // 100 ms
  static constexpr std::uint64_t max_wait_ns = 16 * probe_ns;  // a message alone's longest
  static constexpr double margin = 1.25;
  static constexpr int try_messages = 8;  // a try of the slower engine

  // Whether a message of `bytes` is read with CMA, `rule_cma` being the static rule's answer, at
  // monotonic time `now` (ns), among `kind` of traffic. Both ways the pipeline's figure counts
  // half: it copies on both cores for each direction, CMA on one,
  // so both directions through the pipeline move about what one did alone.
  // Its tries beside the other direction's CMA reads timed it fast enough
  // to win without this, and bidirectional 2-4 MiB streams went back and
  // forth between 12-13 GB/s (pipeline) and 20-22 (CMA) from round to
  // round (bench/results/, stop 32).
  bool pick(std::size_t bytes, bool rule_cma, std::uint64_t now, flow kind) {
    const bool both_ways = kind == flow::both_ways;
    const int cls = size_class(bytes);
    rate *e = rates_[static_cast<int>(kind)][cls];
    int &trying = trying_[static_cast<int>(kind)][cls];
    if (trying > 0) {  // the rest of a try
      --trying;
      return e[1].probing;
    }
    const int rule = rule_cma ? 1 : 0;
    if (e[rule].per_ns == 0) return rule_cma;  // the rule's engine is timed first
    const double figure[2] = {both_ways ? e[0].per_ns / 2 : e[0].per_ns, e[1].per_ns};
    const int best = figure[1 - rule] > figure[rule] * margin ? 1 - rule : rule;
    rate &other = e[1 - best];
    // Both ways, the pipeline is not tried while its figure one way, halved,
    // could not beat CMA's: each try sent 8 messages through it at about half
    // CMA's rate, 56 of 1280 in bidirectional 1 MiB streams that then moved
    // 0.93 of what CMA alone did (bench/results/, stop 32).
    const double one_way = rates_[static_cast<int>(flow::one_way)][cls][0].per_ns;
    if (both_ways && best == 1 && one_way != 0 && one_way / 2 <= e[1].per_ns * margin) {
      return true;
    }
    // In a stream an engine timed once is tried again sooner: a first try
    // may meet cold caches (a send buffer still in the sender's cache, read
    // across dies). A message alone waits `other.wait` (probe_ns at first):
    // there each try costs a ping-pong 8 round trips at the slower engine's
    // pace, 2-3x the faster's (bench/results/), so an engine that stays far
    // slower is tried half as often each time, down to once every
    // max_wait_ns, and a closer one every probe_ns.
    const bool alone = kind == flow::alone || kind == flow::fan_in;
    if (kind == flow::fan_in && other.at == 0) {
      // In a fan-in both engines' copies fall on the receiver's core, and
      // the pipeline's handshakes need each sender scheduled: its first try
      // waits probe_ns, so a short run (a benchmark of 30 gathers) is not
      // spent learning (bench/results/, 2026-12-02).
      other.at = now;
    }
    const std::uint64_t wait = alone ? other.wait : other.samples < 2 ? probe_ns / 10 : probe_ns;
    if (now - other.at >= wait) {
      if (alone) {
        const bool far = other.samples > 0 && figure[best] > figure[1 - best] * 2 * margin;
        other.wait = far ? std::min(2 * other.wait, max_wait_ns) : probe_ns;
      }
      other.at = now;  // not tried again for a while, even if no time comes back
      other.probing = true;
      other.try_seen = 0;
      other.try_timed = other.try_ns = 0;
      other.grouped = 0;
      e[best].probing = false;
      trying = try_messages - 1;
      return best == 0;
    }
    return best == 1;
  }

  // `timed` bytes of a message of `bytes` moved in `ns` with CMA (`cma`) or the pipeline, among
  // `kind` of traffic (as pick). A stream's pipeline run starts its clock at a first data packet
  // (not counted); a message alone, at the engine's choice.
  void measured(std::size_t bytes, std::size_t timed, bool cma, std::uint64_t ns, std::uint64_t now,
                flow kind) {
    if (ns == 0) ns = 1;
    rate &r = rates_[static_cast<int>(kind)][size_class(bytes)][cma ? 1 : 0];
    r.at = now;
    const double sample = static_cast<double>(timed) / static_cast<double>(ns);
    if (cma || kind == flow::alone || kind == flow::fan_in) {
      // A try of CMA is try_messages reads, timed but for the first (cold:
      // a lone read of 64 KiB took 30-100 us here, 5 in a stream). Tried or
      // in use, its reads count in groups, by their median (above). So do
      // messages alone through the pipeline, each timed on its own: one
      // that met a descheduled rank took 100x its peers, and as a moving
      // average handed a ping-pong to CMA, 2.3x slower, until the
      // pipeline's next try.
      if (r.probing && ++r.try_seen == 1) return;
      r.group[r.grouped++] = sample;
      if (r.grouped < group_reads) return;
      std::nth_element(r.group, r.group + group_reads / 2, r.group + group_reads);
      adopt(r, r.group[group_reads / 2]);
      r.grouped = 0;
      return;
    }
    if (r.probing) {
      // A try of a stream's pipeline is timed as one run (vc.hpp).
      r.try_timed += timed;
      r.try_ns += ns;
      adopt(r, static_cast<double>(r.try_timed) / static_cast<double>(r.try_ns));
      return;
    }
    adopt(r, sample);
  }

  // The learned rate of one engine for messages of `bytes` (0: not timed).
  double rate_of(std::size_t bytes, bool cma, flow kind) const {
    return rates_[static_cast<int>(kind)][size_class(bytes)][cma ? 1 : 0].per_ns;
  }

 private:
  static constexpr int group_reads =
      try_messages - 1;  // CMA reads (or messages alone) a figure counts

  struct rate {
    double per_ns = 0;     // bytes per nanosecond; 0 until timed
    std::uint64_t at = 0;  // when last timed or tried
    int samples = 0;
    std::uint64_t wait = probe_ns;  // a message alone: from one try to the next
    // Being tried as the slower engine: what the try has timed so far.
    bool probing = false;
    int try_seen = 0;
    std::uint64_t try_timed = 0;
    std::uint64_t try_ns = 0;
    double group[group_reads] = {};  // CMA: the rates of the group's reads so far
    int grouped = 0;
  };

  // A try's figure replaces what was known of its engine (the machine may
  // have changed since); the engine in use keeps a moving average.
  static void adopt(rate &r, double figure) {
    if (r.probing || r.per_ns == 0) {
      r.per_ns = figure;
    } else {
      r.per_ns = 0.75 * r.per_ns + 0.25 * figure;
    }
    r.probing = false;
    ++r.samples;
  }
  // Below 64 KiB, below 128 KiB, below 512 KiB, below 2 MiB, and from
  // 2 MiB. Messages of one fragment (32 KiB) apart from those of two or
  // more: the pipeline's handshake weighs most on them.
  static constexpr int classes = 5;
  static int size_class(std::size_t bytes) {
    const int width = static_cast<int>(std::bit_width(bytes | 1));
    return width <= 16 ? 0 : width <= 17 ? 1 : width <= 19 ? 2 : width <= 21 ? 3 : 4;
  }
  static constexpr int flows = 4;
  rate rates_[flows][classes][2];    // [flow][size class][pipeline, CMA]
  int trying_[flows][classes] = {};  // messages of a try still to come
};

}  // namespace iris::device
