// Which rendezvous engine moves one peer's large messages faster on this
// machine now: single-copy reads (CMA) or the pipeline through the pair
// ring. Learned from the messages themselves, because the answer changes
// while a job runs: this VM moves between a fast state and a slow one
// within minutes (a 0-byte ping-pong of 0.09 us or of 0.3 us; most likely
// the two vCPUs on cores that share a cache, or not), and the pipeline
// streams 30-38 GB/s in the first and 2.3-7 in the second, where CMA keeps
// 12-13 in both (bench/README.md, stop 26).
//
// The static rule (transport_shm.cpp, cma_chosen) names an engine for each
// message. Its engine is used until it has been timed; then the other is
// tried once; from then on the faster of the two (the other by at least
// `margin`) carries the messages, and the slower is tried again once every
// `probe_ns`, so a change of state is seen within that. Rates are kept per
// size class (the engines' fixed costs weigh differently at 64 KiB and at
// 4 MiB) as a moving average of bytes per nanosecond.
#pragma once

#include <time.h>

#include <bit>
#include <cstddef>
#include <cstdint>

namespace iris::device {

// CLOCK_MONOTONIC in nanoseconds (the vDSO: no system call).
inline std::uint64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000U +
         static_cast<std::uint64_t>(t.tv_nsec);
}

class engine_choice {
 public:
  static constexpr std::uint64_t probe_ns = 100'000'000;  // 100 ms
  static constexpr double margin = 1.25;

  // Whether a message of `bytes` is read with CMA, `rule_cma` being the
  // static rule's answer, at monotonic time `now` (ns).
  bool pick(std::size_t bytes, bool rule_cma, std::uint64_t now) {
    rate *e = rates_[size_class(bytes)];
    const int rule = rule_cma ? 1 : 0;
    if (e[rule].per_ns == 0) return rule_cma;  // the rule's engine is timed first
    const int best = e[1 - rule].per_ns > e[rule].per_ns * margin ? 1 - rule : rule;
    rate &other = e[1 - best];
    if (now - other.at >= probe_ns) {
      other.at = now;  // not tried again for probe_ns, even if no time comes back
      return best == 0;
    }
    return best == 1;
  }

  // `timed` bytes of a message of `bytes` moved in `ns` with CMA (`cma`) or
  // the pipeline (whose first data packet starts the clock: not timed).
  void measured(std::size_t bytes, std::size_t timed, bool cma, std::uint64_t ns,
                std::uint64_t now) {
    if (ns == 0) ns = 1;
    rate &r = rates_[size_class(bytes)][cma ? 1 : 0];
    const double sample = static_cast<double>(timed) / static_cast<double>(ns);
    r.per_ns = r.per_ns == 0 ? sample : 0.75 * r.per_ns + 0.25 * sample;
    r.at = now;
  }

  // The learned rate of one engine for messages of `bytes` (0: not timed).
  double rate_of(std::size_t bytes, bool cma) const {
    return rates_[size_class(bytes)][cma ? 1 : 0].per_ns;
  }

 private:
  struct rate {
    double per_ns = 0;     // bytes per nanosecond; 0 until timed
    std::uint64_t at = 0;  // when last timed or tried
  };
  // Below 128 KiB, below 512 KiB, below 2 MiB, and from 2 MiB.
  static int size_class(std::size_t bytes) {
    const int width = static_cast<int>(std::bit_width(bytes | 1));
    return width <= 17 ? 0 : width <= 19 ? 1 : width <= 21 ? 2 : 3;
  }
  rate rates_[4][2];
};

}  // namespace iris::device
