#include "device/matching/matching.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>
#include <utility>

namespace iris::device {

data_pool::~data_pool() {
  for (free_buffer *&list : free_) {
    while (free_buffer *b = list) {
      list = b->next;
      std::free(b);
    }
  }
}

unsigned data_pool::shift_of(std::size_t bytes) {
  return std::max(min_shift, static_cast<unsigned>(std::bit_width(bytes - 1)));
}

std::byte *data_pool::allocate(std::size_t bytes) {
  const unsigned shift = shift_of(bytes);
  if (shift <= max_shift) {
    free_buffer *&list = free_[shift - min_shift];
    if (free_buffer *b = list) {
      list = b->next;
      return reinterpret_cast<std::byte *>(b);
    }
    bytes = std::size_t{1} << shift;
  }
  ++heap_allocations_;
  return static_cast<std::byte *>(std::malloc(bytes));
}

void data_pool::release(std::byte *buffer, std::size_t bytes) {
  const unsigned shift = shift_of(bytes);
  if (shift > max_shift) {
    std::free(buffer);
    return;
  }
  auto *b = reinterpret_cast<free_buffer *>(buffer);
  b->next = free_[shift - min_shift];
  free_[shift - min_shift] = b;
}

matcher::matcher() : table_(std::size_t{1} << initial_shift, nullptr) {}

void matcher::share() {
  shared_ = true;
  published_ = std::make_unique<std::atomic<context_queues *>[]>(published_slots);
  each_queues([&](context_queues &q) { publish(q); });
}

void matcher::publish(context_queues &q) {
  published_[q.context & (published_slots - 1)].store(&q, std::memory_order_release);
}

matcher::~matcher() = default;

context_queues *matcher::find_slow(std::uint32_t context) {
  for (context_queues *q = table_[bucket_of(context)]; q != nullptr; q = q->chain) {
    if (q->context == context) {
      last_ = q;
      return q;
    }
  }
  return nullptr;
}

context_queues *matcher::make_queues(std::uint32_t context) {
  context_queues *q = free_;
  if (q != nullptr) {
    free_ = q->chain;
  } else {
    auto made = std::unique_ptr<context_queues>(new (std::nothrow) context_queues);
    if (made == nullptr || !made->reserve()) return nullptr;
    q = made.get();
    owned_.push_back(std::move(made));
  }
  {
    // A thread without the call lock may hold an old pointer to these
    // queues (published()) and reads the context under their lock.
    const hold held = lock(*q);
    q->context = context;
  }
  if (shared_) publish(*q);
  if (++contexts_ > table_.size() * 2) rehash();
  context_queues *&bucket = table_[bucket_of(context)];
  q->chain = bucket;
  bucket = q;
  last_ = q;
  return q;
}

void matcher::rehash() {
  std::vector<context_queues *> old;
  old.swap(table_);
  ++table_shift_;
  table_.assign(std::size_t{1} << table_shift_, nullptr);
  for (context_queues *q : old) {
    while (q != nullptr) {
      context_queues *next = q->chain;
      context_queues *&bucket = table_[bucket_of(q->context)];
      q->chain = bucket;
      bucket = q;
      q = next;
    }
  }
}

void matcher::forget(std::uint32_t context) {
  context_queues **link = &table_[bucket_of(context)];
  while (*link != nullptr && (*link)->context != context) link = &(*link)->chain;
  context_queues *q = *link;
  if (q == nullptr) return;
  {
    // Unpublished first (comm_release): only an erroneous program could
    // still post on it without the call lock.
    const hold held = lock(*q);
    if (!q->empty()) return;
  }
  *link = q->chain;
  if (last_ == q) last_ = nullptr;
  if (shared_) {
    // Nothing is posted there: a thread that still finds it matches nothing.
    // A live context on the same slot, which these queues shadowed, takes it
    // back: else its messages were never delivered aside again.
    const std::size_t slot = context & (published_slots - 1);
    context_queues *mine = q;
    if (published_[slot].compare_exchange_strong(mine, nullptr, std::memory_order_relaxed)) {
      each_queues([&](context_queues &other) {
        if ((other.context & (published_slots - 1)) == slot) publish(other);
      });
    }
  }
  q->chain = free_;
  free_ = q;
  --contexts_;
}

bool context_queues::empty() const {
  return waiting == 0 && exact == 0 && posted_wild.empty();
}

namespace {

// Bins of `n` lists, or nullptr when memory is exhausted.
template <typename T>
std::unique_ptr<intrusive_queue<T>[]> bins_of(std::size_t n) {
  return std::unique_ptr<intrusive_queue<T>[]>(new (std::nothrow) intrusive_queue<T>[n]);
}

// Bin b's entries go to bins 2b and 2b + 1 of `to` (one more bit of the
// same hash), each keeping their order. `to` may hold the bins being split
// when split from the last to the first: then 2b and 2b + 1 were emptied
// before.
template <typename T>
void split(intrusive_queue<T> from, intrusive_queue<T> *to, unsigned shift) {
  while (T *e = from.pop_front()) {
    to[context_queues::bin_of(e->key.source, e->key.tag, shift)].push_back(e);
  }
}

// Bins 2b and 2b + 1 into bin b, oldest first (the entries' sequence
// numbers), when merged from the first to the last.
template <typename T>
void merge(intrusive_queue<T> *bins, std::size_t b) {
  intrusive_queue<T> low = std::exchange(bins[2 * b], {});
  intrusive_queue<T> high = std::exchange(bins[2 * b + 1], {});
  for (;;) {
    T *l = low.front();
    T *h = high.front();
    if (l == nullptr && h == nullptr) return;
    const bool from_low = h == nullptr || (l != nullptr && l->match_seq < h->match_seq);
    bins[b].push_back(from_low ? low.pop_front() : high.pop_front());
  }
}

}  // namespace

bool context_queues::reserve() {
  if (room >= initial_shift) return true;
  posted = bins_of<request>(bins());
  unexpected = bins_of<unexpected_msg>(bins());
  if (posted == nullptr || unexpected == nullptr) return false;
  room = initial_shift;
  return true;
}

void context_queues::grow() {
  const unsigned next = shift + 1;
  if (room < next) {
    // New bins, twice as many: none allocated on the way back down.
    auto more_posted = bins_of<request>(std::size_t{1} << next);
    auto more_unexpected = bins_of<unexpected_msg>(std::size_t{1} << next);
    if (more_posted == nullptr || more_unexpected == nullptr) return;  // fewer bins, same matches
    for (std::size_t b = 0; b < bins(); ++b) {
      split(std::exchange(posted[b], {}), more_posted.get(), next);
      split(std::exchange(unexpected[b], {}), more_unexpected.get(), next);
    }
    posted = std::move(more_posted);
    unexpected = std::move(more_unexpected);
    room = next;
  } else {
    for (std::size_t b = bins(); b-- > 0;) {
      split(std::exchange(posted[b], {}), posted.get(), next);
      split(std::exchange(unexpected[b], {}), unexpected.get(), next);
    }
  }
  shift = next;
  count(rebinned, 1);
}

void context_queues::shrink() {
  while (shift > initial_shift && exact + waiting < bins() / 8) {
    --shift;
    for (std::size_t b = 0; b < bins(); ++b) {
      merge(posted.get(), b);
      merge(unexpected.get(), b);
    }
    count(rebinned, 1);
  }
}

bool matcher::withdraw(request *r) {
  context_queues *q = find_queues(r->key.context);
  if (q == nullptr) return false;
  const hold held = lock(*q);
  intrusive_queue<request> &list = q->posted_list(r->key);
  if (r->next == nullptr && r->prev == nullptr && list.front() != r) return false;
  list.remove(r);
  if (!context_queues::wildcard(r->key)) {
    --q->exact;
    q->removed();
  }
  return true;
}

unexpected_msg *matcher::oldest(context_queues &q, const match_key &pattern) {
  const auto matches = [&](const unexpected_msg &m) { return key_matches(pattern, m.key); };
  if (!context_queues::wildcard(pattern)) {
    return scan(q, q.unexpected[q.bin(pattern.source, pattern.tag)], matches);
  }
  unexpected_msg *best = nullptr;
  for (std::size_t b = 0; b < q.bins(); ++b) {
    const auto &bin = q.unexpected[b];
    if (bin.empty()) continue;
    unexpected_msg *first = scan(q, bin, matches);
    if (first != nullptr && (best == nullptr || first->match_seq < best->match_seq)) best = first;
  }
  return best;
}

unexpected_msg *matcher::park(context_queues &q, const match_key &key, packet_type type,
                              std::size_t length, int from, bool held) {
  unexpected_msg *m = messages_.allocate();
  m->key = key;
  m->match_seq = ++q.sequence;
  m->type = type;
  m->length = length;
  m->from = from;
  m->held = held;
  m->data = m->inline_data;
  if (type != packet_type::rts && length > unexpected_msg::inline_capacity) {
    m->data = buffers_.allocate(length);
    if (m->data == nullptr) {
      messages_.release(m);
      return nullptr;
    }
  }
  q.unexpected[q.bin(key.source, key.tag)].push_back(m);
  ++q.waiting;
  q.added();
  counts_.depth_peak = std::max(counts_.depth_peak, ++counts_.depth);
  if (held) counts_.bytes_peak = std::max(counts_.bytes_peak, counts_.bytes += length);
  return m;
}

std::uint64_t matcher::total(std::atomic<std::uint64_t> context_queues::*counter) const {
  std::uint64_t n = 0;
  for (const auto &q : owned_) n += ((*q).*counter).load(std::memory_order_relaxed);
  return n;
}

void matcher::release(unexpected_msg *m) {
  --counts_.depth;
  if (m->held) counts_.bytes -= m->length;
  if (m->data != m->inline_data) buffers_.release(m->data, m->length);
  m->claimed = false;
  messages_.release(m);
}

void matcher::release_all() {
  each_queues([&](context_queues &q) {
    for (std::size_t b = 0; b < q.bins(); ++b) {
      while (unexpected_msg *m = q.unexpected[b].pop_front()) release(m);
    }
    q.waiting = 0;
  });
}

}  // namespace iris::device
