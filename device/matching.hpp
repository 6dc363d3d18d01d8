// The matching engine as one object: the posted receives and the unexpected
// messages of this process, with the memory unexpected eager data lives in.
// The rules of a match (context, source, tag, wildcards, oldest first) are
// in match.hpp; this object owns the queues, so that it can be tested alone
// and changed without touching protocols.
//
// The queues are kept per context id: a receive or a message only ever
// matches within its own context (wildcards cover source and tag, never the
// communicator), so MPI's order among the candidates of one match is the
// order of one context's queue, and a search never walks past the entries of
// other communicators. With one queue for the process, threads that each
// used their own communicator (MPICH's threads/perf/mt_pt2pt_msgrate) made
// every receive scan the other threads' unexpected messages: with 2 threads
// a rank and 2,000 messages unexpected the rate fell from 10 to 0.4 M msgs/s.
// A context's queues are made the first time it is used and recycled when
// its communicator is freed with both empty (forget()); the table of them
// is a hash on the context id, the last one used cached in front of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

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

// The two queues of one context id.
struct context_queues {
  std::uint32_t context = 0;
  context_queues *chain = nullptr;  // the next in its hash bucket, or in the free list
  intrusive_queue<request> posted;
  intrusive_queue<unexpected_msg> unexpected;
};

class matcher {
 public:
  matcher();
  matcher(const matcher &) = delete;
  matcher &operator=(const matcher &) = delete;
  ~matcher();

  // Receives: an arriving message with envelope `message` takes the oldest
  // posted receive that matches it (removed), or nullptr.
  request *match_posted(const match_key &message) {
    context_queues *q = find_queues(message.context);
    if (q == nullptr) return nullptr;
    request *hit = scan(q->posted, [&](const request &r) { return key_matches(r.key, message); });
    if (hit != nullptr) q->posted.remove(hit);
    return hit;
  }
  // Posts a receive; false when memory for a new context's queues is exhausted.
  bool post(request *r);
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
    context_queues *q = find_queues(pattern.context);
    if (q == nullptr) return nullptr;
    unexpected_msg *hit = scan(q->unexpected, pattern);
    if (hit != nullptr) q->unexpected.remove(hit);
    return hit;
  }
  const unexpected_msg *find(const match_key &pattern) {
    context_queues *q = find_queues(pattern.context);
    return q != nullptr ? scan(q->unexpected, pattern) : nullptr;
  }
  // The oldest message of any context for which pred holds (the contexts in
  // no particular order): a sender's cancel, which names no context.
  template <typename Pred>
  unexpected_msg *find_if(Pred pred) const {
    for (context_queues *bucket : table_) {
      for (context_queues *q = bucket; q != nullptr; q = q->chain) {
        if (unexpected_msg *m = q->unexpected.find(pred)) return m;
      }
    }
    return nullptr;
  }
  void remove(unexpected_msg *m) { find_queues(m->key.context)->unexpected.remove(m); }
  // Frees a message taken or removed from the queue.
  void release(unexpected_msg *m);
  // Frees every queued message (MPI_Finalize).
  void release_all();
  // The message with pool index `index`, or nullptr (message handles).
  unexpected_msg *at(std::uint32_t index) const { return messages_.at(index); }
  // A communicator on `context` was freed: its queues go back to the free
  // list if both are empty (a message that still comes makes them again).
  void forget(std::uint32_t context);
  // Contexts with queues now (a test's view of forget()).
  std::size_t contexts() const { return contexts_; }
  // Queue entries compared with a key so far, by every search: what
  // matching costs (IRIS_STATS; a test's view of it).
  std::uint64_t compared() const { return compared_; }

  struct counts {
    std::size_t depth = 0;
    std::size_t depth_peak = 0;
    std::size_t bytes = 0;  // eager data held for peers
    std::size_t bytes_peak = 0;
  };
  const counts &unexpected_counts() const { return counts_; }
  const data_pool &buffers() const { return buffers_; }

 private:
  // The queues of `context`, or nullptr if it has none.
  context_queues *find_queues(std::uint32_t context) {
    if (last_ != nullptr && last_->context == context) [[likely]] {
      return last_;
    }
    return find_slow(context);
  }
  context_queues *find_slow(std::uint32_t context);
  // The oldest entry of `queue` that pred holds for, counting the entries
  // compared.
  template <typename T, typename Pred>
  T *scan(const intrusive_queue<T> &queue, Pred pred) {
    for (T *e = queue.front(); e != nullptr; e = e->next) {
      ++compared_;
      if (pred(*e)) return e;
    }
    return nullptr;
  }
  // The oldest unexpected message that `pattern` matches.
  unexpected_msg *scan(const intrusive_queue<unexpected_msg> &queue, const match_key &pattern) {
    return scan(queue, [&](const unexpected_msg &m) { return key_matches(pattern, m.key); });
  }
  // The queues of `context`, made if it has none; nullptr when out of memory.
  context_queues *queues_of(std::uint32_t context);
  std::size_t bucket_of(std::uint32_t context) const {
    return (context * 0x9e3779b1U) >> (32 - table_shift_);
  }
  void rehash();

  static constexpr unsigned initial_shift = 6;
  unsigned table_shift_ = initial_shift;
  std::vector<context_queues *> table_;  // 1 << table_shift_ buckets
  std::size_t contexts_ = 0;
  context_queues *last_ = nullptr;  // the last found: traffic repeats a context
  context_queues *free_ = nullptr;  // forgotten, for the next new context
  std::vector<std::unique_ptr<context_queues>> owned_;
  std::uint64_t compared_ = 0;
  pool<unexpected_msg> messages_;
  data_pool buffers_;
  counts counts_;
};

}  // namespace iris::device
