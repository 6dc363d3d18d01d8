// The matching engine: posted receives and unexpected messages, matched on
// (context, source, tag) with MPI_ANY_SOURCE and MPI_ANY_TAG.
//
// MPI's non-overtaking rule falls out of two facts: each transport delivers
// one sender's packets in order, and both queues are kept in arrival order
// and searched from the oldest entry. An incoming message takes the oldest
// posted receive that matches it; a new receive takes the oldest unexpected
// message it matches.
#pragma once

#include <cstddef>
#include <cstdint>

namespace iris::device {

inline constexpr std::int32_t any_source = -2;
inline constexpr std::int32_t any_tag = -1;

struct match_key {
  std::uint32_t context;
  std::int32_t source;  // rank in the communicator, or any_source in a pattern
  std::int32_t tag;     // or any_tag in a pattern
};

inline bool key_matches(const match_key &pattern, const match_key &message) {
  return pattern.context == message.context &&
         (pattern.source == any_source || pattern.source == message.source) &&
         (pattern.tag == any_tag || pattern.tag == message.tag);
}

// A doubly linked list threaded through T's own `next`/`prev` fields: no
// allocation to queue or dequeue, O(1) removal from the middle (cancel).
template <typename T>
class intrusive_queue {
 public:
  bool empty() const { return head_ == nullptr; }
  T *front() const { return head_; }
  std::size_t size() const { return size_; }

  void push_back(T *item) {
    item->next = nullptr;
    item->prev = tail_;
    (tail_ != nullptr ? tail_->next : head_) = item;
    tail_ = item;
    ++size_;
  }

  void remove(T *item) {
    (item->prev != nullptr ? item->prev->next : head_) = item->next;
    (item->next != nullptr ? item->next->prev : tail_) = item->prev;
    item->next = item->prev = nullptr;
    --size_;
  }

  T *pop_front() {
    T *item = head_;
    if (item != nullptr) remove(item);
    return item;
  }

  // The oldest item for which pred(item) holds, or nullptr.
  template <typename Pred>
  T *find(Pred pred) const {
    for (T *item = head_; item != nullptr; item = item->next) {
      if (pred(*item)) return item;
    }
    return nullptr;
  }

 private:
  T *head_ = nullptr;
  T *tail_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace iris::device
