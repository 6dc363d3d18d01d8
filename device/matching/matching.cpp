#include "device/matching/matching.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>

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
    if (made == nullptr) return nullptr;
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
  if (waiting != 0 || !posted_wild.empty()) return false;
  for (const auto &bin : posted) {
    if (!bin.empty()) return false;
  }
  return true;
}

bool matcher::withdraw(request *r) {
  context_queues *q = find_queues(r->key.context);
  if (q == nullptr) return false;
  const hold held = lock(*q);
  intrusive_queue<request> &list = q->posted_list(r->key);
  if (r->next == nullptr && r->prev == nullptr && list.front() != r) return false;
  list.remove(r);
  return true;
}

unexpected_msg *matcher::oldest(context_queues &q, const match_key &pattern) {
  const auto matches = [&](const unexpected_msg &m) { return key_matches(pattern, m.key); };
  if (!context_queues::wildcard(pattern)) {
    return scan(q, q.unexpected[context_queues::bin_of(pattern.source, pattern.tag)], matches);
  }
  unexpected_msg *best = nullptr;
  for (const auto &bin : q.unexpected) {
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
  q.unexpected[context_queues::bin_of(key.source, key.tag)].push_back(m);
  ++q.waiting;
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
    for (auto &bin : q.unexpected) {
      while (unexpected_msg *m = bin.pop_front()) release(m);
    }
    q.waiting = 0;
  });
}

}  // namespace iris::device
