// The matching engine as one object: the posted receives and the unexpected
// messages of this process, with the memory unexpected eager data lives in.
// The rules of a match (context, source, tag, wildcards, oldest first) are
// in match.hpp; this object owns the two queues, so that it can be tested
// alone and replaced (hashing for deep queues) without touching protocols.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/match.hpp"
#include "device/pool.hpp"
#include "device/request.hpp"

namespace iris::device {

// Buffers for unexpected eager data longer than a message's inline bytes:
// free lists of power-of-two sizes from 256 B to 1 MiB. Credits bound what
// peers can leave unexpected, so once the lists have warmed up no arriving
// message allocates. Longer buffers (only messages to oneself, which are
// never flow-controlled, or a huge IRIS_*_EAGER_LIMIT) come from the heap.
class data_pool {
 public:
  data_pool() = default;
  data_pool(const data_pool &) = delete;
  data_pool &operator=(const data_pool &) = delete;
  ~data_pool();

  // nullptr when the heap is exhausted.
  std::byte *allocate(std::size_t bytes);
  void release(std::byte *buffer, std::size_t bytes);
  // Buffers obtained from the heap so far (a test's view of "no allocation").
  std::size_t heap_allocations() const { return heap_allocations_; }

 private:
  static constexpr unsigned min_shift = 8;   // 256 B
  static constexpr unsigned max_shift = 20;  // 1 MiB
  struct free_buffer {
    free_buffer *next;
  };
  static unsigned shift_of(std::size_t bytes);

  free_buffer *free_[max_shift - min_shift + 1] = {};
  std::size_t heap_allocations_ = 0;
};

class matcher {
 public:
  // Receives: an arriving message with envelope `message` takes the oldest
  // posted receive that matches it (removed), or nullptr.
  request *match_posted(const match_key &message) { return match_oldest(posted_, message); }
  void post(request *r) { posted_.push_back(r); }
  // Withdraws a posted receive (MPI_Cancel): false when it is not posted.
  bool withdraw(request *r);

  // Unexpected messages. park() makes an entry for a message no receive
  // wanted, with room for its `length` eager bytes (the caller copies them);
  // nullptr when memory is exhausted. `held` counts its bytes as eager data
  // held for a peer (what credits bound).
  unexpected_msg *park(const match_key &key, packet_type type, std::size_t length, int from,
                       bool held);
  // The oldest unexpected message `pattern` matches, removed; or nullptr.
  unexpected_msg *take(const match_key &pattern) {
    return take_oldest_for_pattern(unexpected_, pattern);
  }
  const unexpected_msg *find(const match_key &pattern) const {
    return find_oldest_for_pattern(unexpected_, pattern);
  }
  template <typename Pred>
  unexpected_msg *find_if(Pred pred) const {
    return unexpected_.find(pred);
  }
  void remove(unexpected_msg *m) { unexpected_.remove(m); }
  // Frees a message taken or removed from the queue.
  void release(unexpected_msg *m);
  // Frees every queued message (MPI_Finalize).
  void release_all();
  // The message with pool index `index`, or nullptr (message handles).
  unexpected_msg *at(std::uint32_t index) const { return messages_.at(index); }

  struct counts {
    std::size_t depth = 0;
    std::size_t depth_peak = 0;
    std::size_t bytes = 0;  // eager data held for peers
    std::size_t bytes_peak = 0;
  };
  const counts &unexpected_counts() const { return counts_; }
  const data_pool &buffers() const { return buffers_; }

 private:
  intrusive_queue<request> posted_;
  intrusive_queue<unexpected_msg> unexpected_;
  pool<unexpected_msg> messages_;
  data_pool buffers_;
  counts counts_;
};

}  // namespace iris::device
