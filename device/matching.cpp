#include "device/matching.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>

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

bool matcher::withdraw(request *r) {
  if (r->next == nullptr && r->prev == nullptr && posted_.front() != r) return false;
  posted_.remove(r);
  return true;
}

unexpected_msg *matcher::park(const match_key &key, packet_type type, std::size_t length, int from,
                              bool held) {
  unexpected_msg *m = messages_.allocate();
  m->key = key;
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
  unexpected_.push_back(m);
  counts_.depth_peak = std::max(counts_.depth_peak, ++counts_.depth);
  if (held) counts_.bytes_peak = std::max(counts_.bytes_peak, counts_.bytes += length);
  return m;
}

void matcher::release(unexpected_msg *m) {
  --counts_.depth;
  if (m->held) counts_.bytes -= m->length;
  if (m->data != m->inline_data) buffers_.release(m->data, m->length);
  m->claimed = false;
  messages_.release(m);
}

void matcher::release_all() {
  while (unexpected_msg *m = unexpected_.pop_front()) release(m);
}

}  // namespace iris::device
