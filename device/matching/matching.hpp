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
// Within a context, receives and messages sit in bins by (source, tag),
// as many as the queues need, so that a search compares about one entry
// however deep the queues are, and threads that share a communicator but
// not a tag do not walk each other's entries either; receives with a
// wildcard sit in a list of their own, and sequence numbers keep the
// oldest-first order across bins (context_queues). A context's queues are
// made the first time it is used and recycled when its communicator is
// freed with all empty (forget()); the table of them is a hash on the
// context id, the last one used cached in front of it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "device/base/pool.hpp"
#include "device/base/threading.hpp"
#include "device/core/match.hpp"
#include "device/core/request.hpp"

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

// The queues of one context id. Receives that name both source and tag,
// and all messages, sit in bins by (source, tag); receives with a wildcard
// in one list. Every entry carries the sequence number of its post or
// arrival in this context, so that a search over several of them still
// takes the oldest (order only counts within one context).
//
// Under MPI_THREAD_MULTIPLE (matcher::share) every search and change of
// these queues runs under `lock`, so that a receive posted without the call
// lock (recv_unlocked: take_or_post) and the call lock's holder (arrivals,
// probes, cancels) can meet here; the park-or-match of an arriving message
// is one step under it. Below MULTIPLE nobody takes it.
struct context_queues {
  // Bins start at 32 and double while the bins hold more than two entries
  // each (receives that name both source and tag, and messages), up to
  // 2^15; they halve again once they hold fewer than one entry in eight, so
  // a search takes about one comparison however deep the queues are, and a
  // wildcard's walk over the bins costs no more than a list's would.
  static constexpr unsigned initial_shift = 5;
  static constexpr unsigned max_shift = 15;
  static std::size_t bin_of(std::int32_t source, std::int32_t tag, unsigned shift = initial_shift) {
    const std::uint64_t both =
        (std::uint64_t{static_cast<std::uint32_t>(source)} << 32) | static_cast<std::uint32_t>(tag);
    return (both * 0x9e3779b97f4a7c15ULL) >> (64 - shift);
  }
  static bool wildcard(const match_key &pattern) {
    return pattern.source == any_source || pattern.tag == any_tag;
  }
  std::size_t bins() const { return std::size_t{1} << shift; }
  std::size_t bin(std::int32_t source, std::int32_t tag) const {
    return bin_of(source, tag, shift);
  }
  intrusive_queue<request> &posted_list(const match_key &pattern) {
    return wildcard(pattern) ? posted_wild : posted[bin(pattern.source, pattern.tag)];
  }
  // A receive goes into its list.
  void post(request *r) {
    r->match_seq = ++sequence;
    if (wildcard(r->key)) {
      posted_wild.push_back(r);
      return;
    }
    posted[bin(r->key.source, r->key.tag)].push_back(r);
    ++exact;
    added();
  }
  // The entries in the bins changed: they may need more bins, or fewer.
  void added() {
    if (exact + waiting > (std::size_t{2} << shift) && shift < max_shift) [[unlikely]] {
      grow();
    }
  }
  void removed() {
    if (shift > initial_shift && exact + waiting < bins() / 8) [[unlikely]] {
      shrink();
    }
  }
  // Room for the first bins; false when memory is exhausted.
  bool reserve();
  bool empty() const;
  // Adds `n` to one of the counters below, under the lock: a relaxed load
  // and store, plain moves, that a reader of the statistics may meet.
  static void count(std::atomic<std::uint64_t> &counter, std::uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  std::uint32_t context = 0;
  context_queues *chain = nullptr;         // the next in its hash bucket, or in the free list
  std::size_t waiting = 0;                 // unexpected messages in all bins
  std::size_t exact = 0;                   // receives in the bins (no wildcard)
  unsigned shift = initial_shift;          // 1 << shift bins in use
  unsigned room = 0;                       // 1 << room bins allocated
  std::uint64_t sequence = 0;              // of the last post or arrival here
  std::atomic<std::uint64_t> compared{0};  // entries compared with a key
  std::atomic<std::uint64_t> unlocked{0};  // receives matched without the call lock
  std::atomic<std::uint64_t> aside{0};     // messages delivered without the call lock
  std::atomic<std::uint64_t> rendezvous_aside{0};  // rendezvous answered without it
  std::atomic<std::uint64_t> rebinned{0};          // times the bins doubled or halved
  spin_lock lock;                                  // MULTIPLE only
  intrusive_queue<request> posted_wild;
  std::unique_ptr<intrusive_queue<request>[]> posted;
  std::unique_ptr<intrusive_queue<unexpected_msg>[]> unexpected;

 private:
  void grow();
  void shrink();
};

class matcher {
 public:
  matcher();
  matcher(const matcher &) = delete;
  matcher &operator=(const matcher &) = delete;
  ~matcher();

  // MPI_THREAD_MULTIPLE: from now on each context's queues are searched and
  // changed under their lock (context_queues). Set once at init.
  // Queues are published by context for threads polling without the call
  // lock (published()).
  void share();

  // Holds a context's lock while it lives, if the matcher is shared.
  using hold = lock_if;
  [[nodiscard]] hold lock(context_queues &q) const { return hold(q.lock, shared_); }

  // The queues of `context`, made if it has none; nullptr when out of
  // memory. The table is the call lock's: a thread without it reaches its
  // queues through its communicator (communicator::queues).
  context_queues *queues_of(std::uint32_t context) {
    context_queues *q = find_queues(context);
    return q != nullptr ? q : make_queues(context);
  }

  // With `q` held (lock()): an arriving message with envelope `message`
  // takes the oldest posted receive of `q` that matches it (removed), or
  // nullptr.
  [[gnu::always_inline]] request *match_posted(context_queues &q, const match_key &message) {
    return match_posted_if(q, message, [](const request &) { return true; });
  }
  // The same, but the oldest match is taken only if `accept` holds for it;
  // else nothing is removed and the result is nullptr (a thread polling
  // without the call lock leaves the message to it: message_arrived_aside).
  template <typename Accept>
  [[gnu::always_inline]] request *match_posted_if(context_queues &q, const match_key &message,
                                                  Accept accept) {
    auto &bin = q.posted[q.bin(message.source, message.tag)];
    request *exact = scan(q, bin, [&](const request &r) {
      return r.key.source == message.source && r.key.tag == message.tag;
    });
    request *wild = q.posted_wild.empty() ? nullptr : scan(q, q.posted_wild, [&](const request &r) {
      return key_matches(r.key, message);
    });
    if (wild != nullptr && (exact == nullptr || wild->match_seq < exact->match_seq)) {
      if (!accept(*wild)) return nullptr;
      q.posted_wild.remove(wild);
      return wild;
    }
    if (exact == nullptr || !accept(*exact)) return nullptr;
    bin.remove(exact);
    --q.exact;
    q.removed();
    return exact;
  }
  // Without the call lock (MULTIPLE): the queues last made for `context`,
  // or for another context that shares its slot, or nullptr. The caller
  // checks `context` under the queues' lock (make_queues writes it there;
  // queues are never freed before MPI_Finalize).
  context_queues *published(std::uint32_t context) const {
    return published_[context & (published_slots - 1)].load(std::memory_order_acquire);
  }
  // With `q` held: makes an entry in `q` for a message no receive wanted,
  // with room for its `length` eager bytes (the caller copies them before
  // letting go of `q`); nullptr when memory is exhausted. `held` counts its
  // bytes as eager data held for a peer (what credits bound). Call lock.
  unexpected_msg *park(context_queues &q, const match_key &key, packet_type type,
                       std::size_t length, int from, bool held);
  // From any thread, `q` not held: the oldest unexpected message of `q` that
  // the receive `r` matches, removed (the caller delivers it); or nullptr,
  // and `r` is posted. One step under `q`'s lock, so that no message arrives
  // between the two. `unlocked`: the caller does not hold the call lock
  // (counted: unlocked_receives()).
  unexpected_msg *take_or_post(context_queues &q, request *r, bool unlocked = false) {
    const hold held = lock(q);
    if (unlocked) context_queues::count(q.unlocked, 1);
    unexpected_msg *hit = q.waiting != 0 ? oldest(q, r->key) : nullptr;
    if (hit != nullptr) {
      unpark(q, hit);
    } else {
      q.post(r);
    }
    return hit;
  }

  // The same by context id, under the call lock, each holding the context's
  // lock for its own step.
  request *match_posted(const match_key &message) {
    context_queues *q = find_queues(message.context);
    if (q == nullptr) return nullptr;
    const hold held = lock(*q);
    return match_posted(*q, message);
  }
  // Posts a receive; false when memory for a new context's queues is exhausted.
  bool post(request *r) {
    context_queues *q = queues_of(r->key.context);
    if (q == nullptr) [[unlikely]] {
      return false;
    }
    const hold held = lock(*q);
    q->post(r);
    return true;
  }
  unexpected_msg *park(const match_key &key, packet_type type, std::size_t length, int from,
                       bool held) {
    context_queues *q = queues_of(key.context);
    if (q == nullptr) return nullptr;
    const hold holding = lock(*q);
    return park(*q, key, type, length, from, held);
  }
  // Withdraws a posted receive (MPI_Cancel): false when it is not posted.
  bool withdraw(request *r);
  // The oldest unexpected message `pattern` matches, removed; or nullptr.
  unexpected_msg *take(const match_key &pattern) {
    context_queues *q = find_queues(pattern.context);
    if (q == nullptr) return nullptr;
    const hold held = lock(*q);
    if (q->waiting == 0) return nullptr;
    unexpected_msg *hit = oldest(*q, pattern);
    if (hit != nullptr) unpark(*q, hit);
    return hit;
  }
  // The oldest unexpected message `pattern` matches, left queued (a probe).
  // Call lock: a thread without it may take the message meanwhile, but not
  // release it (that is the call lock's), and changes none of the fields
  // a probe reads.
  const unexpected_msg *find(const match_key &pattern) {
    context_queues *q = find_queues(pattern.context);
    if (q == nullptr) return nullptr;
    const hold held = lock(*q);
    return q->waiting != 0 ? oldest(*q, pattern) : nullptr;
  }
  // The oldest message of any context for which pred holds (the contexts in
  // no particular order), removed; or nullptr: a sender's cancel, which
  // names no context.
  template <typename Pred>
  unexpected_msg *take_if(Pred pred) {
    unexpected_msg *found = nullptr;
    each_queues([&](context_queues &q) {
      if (found != nullptr) return;
      const hold held = lock(q);
      for (std::size_t b = 0; b < q.bins() && found == nullptr; ++b) {
        found = q.unexpected[b].find(pred);
      }
      if (found != nullptr) unpark(q, found);
    });
    return found;
  }
  // Frees a message taken from the queue. Call lock.
  void release(unexpected_msg *m);
  // Frees every queued message (MPI_Finalize).
  void release_all();
  // The message with pool index `index`, or nullptr (message handles).
  unexpected_msg *at(std::uint32_t index) const { return messages_.at(index); }
  // Calls fn on every message a probe claimed that no receive took yet
  // (a revocation: recovery.cpp).
  template <typename Fn>
  void each_claimed(Fn fn) const {
    for (std::uint32_t i = 0, n = messages_.made(); i < n; ++i) {
      unexpected_msg *m = messages_.at(i);
      if (m != nullptr && m->claimed) fn(*m);
    }
  }
  // A communicator on `context` was freed: its queues go back to the free
  // list if all are empty (a message that still comes makes them again).
  void forget(std::uint32_t context);
  // Contexts with queues now (a test's view of forget()).
  std::size_t contexts() const { return contexts_; }
  // Queue entries compared with a key so far, by every search: what
  // matching costs (IRIS_STATS; a test's view of it).
  std::uint64_t compared() const { return total(&context_queues::compared); }
  // Times a context's bins doubled or halved so far (IRIS_STATS).
  std::uint64_t rebinned() const { return total(&context_queues::rebinned); }
  // Receives matched without the call lock so far (IRIS_STATS).
  std::uint64_t unlocked_receives() const { return total(&context_queues::unlocked); }
  // Messages delivered by threads polling without the call lock so far
  // (IRIS_STATS).
  std::uint64_t aside_deliveries() const { return total(&context_queues::aside); }
  // Rendezvous messages answered by such threads (their data delivered by
  // whoever reads that peer's records) so far (IRIS_STATS).
  std::uint64_t aside_rendezvous() const { return total(&context_queues::rendezvous_aside); }

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
  // Calls f on every context's queues.
  template <typename F>
  void each_queues(F f) const {
    for (context_queues *bucket : table_) {
      for (context_queues *q = bucket; q != nullptr; q = q->chain) f(*q);
    }
  }
  // Takes the unexpected message `m` out of its bin of `q`.
  static void unpark(context_queues &q, unexpected_msg *m) {
    q.unexpected[q.bin(m->key.source, m->key.tag)].remove(m);
    --q.waiting;
    q.removed();
  }
  // The oldest entry of `queue`, one of `q`'s, that pred holds for,
  // counting the entries compared.
  template <typename T, typename Pred>
  static T *scan(context_queues &q, const intrusive_queue<T> &queue, Pred pred) {
    std::uint64_t n = 0;
    T *e = queue.front();
    for (; e != nullptr; e = e->next) {
      ++n;
      if (pred(*e)) break;
    }
    context_queues::count(q.compared, n);
    return e;
  }
  // The oldest unexpected message of `q` that `pattern` matches: in its bin,
  // or with a wildcard the oldest of each bin's first.
  static unexpected_msg *oldest(context_queues &q, const match_key &pattern);
  // The sum of one counter over every context's queues, made so far.
  std::uint64_t total(std::atomic<std::uint64_t> context_queues::*counter) const;
  // New queues for `context`, which has none; nullptr when out of memory.
  context_queues *make_queues(std::uint32_t context);
  void publish(context_queues &q);
  std::size_t bucket_of(std::uint32_t context) const {
    return (context * 0x9e3779b1U) >> (32 - table_shift_);
  }
  void rehash();

  static constexpr unsigned initial_shift = 6;
  static constexpr std::size_t published_slots = 1024;
  bool shared_ = false;
  // The queues of each context by its low bits, for threads without the
  // call lock (published()); written under the call lock, MULTIPLE only.
  std::unique_ptr<std::atomic<context_queues *>[]> published_;
  unsigned table_shift_ = initial_shift;
  std::vector<context_queues *> table_;  // 1 << table_shift_ buckets
  std::size_t contexts_ = 0;
  context_queues *last_ = nullptr;  // the last found: traffic repeats a context
  context_queues *free_ = nullptr;  // forgotten, for the next new context
  std::vector<std::unique_ptr<context_queues>> owned_;
  pool<unexpected_msg> messages_;
  data_pool buffers_;
  counts counts_;
};

}  // namespace iris::device
