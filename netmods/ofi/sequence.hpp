// Per-sender sequence numbers. A provider matches one sender's messages to
// the posted receive buffers in order, but may complete them out of order:
// a long message (the provider's own rendezvous) completes after short
// ones sent behind it. A record that completes early waits, in its receive
// buffer, until the ones before it have been handed over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace iris::netmod::ofi {

// `Item` names a record (the receive buffer holding it).
template <typename Item>
class sequencer {
 public:
  enum class verdict {
    delivered,  // it was the next: handed over, with any held ones it freed
    held,       // early: kept until its turn (the caller keeps its buffer)
    stale,      // already seen, or too far ahead to be genuine: dropped
    full,       // early, and `max_held` records already wait: dropped
  };

  explicit sequencer(std::size_t max_held) : max_held_(max_held) { held_.reserve(max_held); }

  // Takes record `seq`; `deliver(item)` is called for each record now in
  // turn, in order.
  template <typename Deliver>
  verdict accept(std::uint32_t seq, Item item, Deliver &&deliver) {
    const std::uint32_t ahead = seq - next_;  // wraps: 2^32 records later is the same number
    if (ahead == 0) {
      deliver(item);
      ++next_;
      while (!held_.empty()) {
        auto it = held_.begin();
        while (it != held_.end() && it->first != next_) ++it;
        if (it == held_.end()) break;
        const Item early = it->second;
        *it = held_.back();
        held_.pop_back();
        deliver(early);
        ++next_;
      }
      return verdict::delivered;
    }
    if (ahead > (std::uint32_t{1} << 30)) return verdict::stale;
    for (const auto &h : held_) {
      if (h.first == seq) return verdict::stale;
    }
    if (held_.size() >= max_held_) return verdict::full;
    held_.emplace_back(seq, item);  // capacity reserved: no allocation
    return verdict::held;
  }

  std::size_t held() const { return held_.size(); }
  std::uint32_t next() const { return next_; }

 private:
  std::size_t max_held_;
  std::uint32_t next_ = 0;
  std::vector<std::pair<std::uint32_t, Item>> held_;
};

}  // namespace iris::netmod::ofi
