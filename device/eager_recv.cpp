// The receiving half of the eager protocol, and the receive side of matching:
// a packet either meets a posted receive and goes straight into its buffer,
// or waits on the unexpected queue until a receive takes it.
#include <cstdlib>
#include <cstring>

#include "device/errors.hpp"
#include "device/runtime.hpp"
#include "include/mpi.h"

namespace iris::device {
namespace {

// A receive has met a message of `length` bytes with envelope `key`.
void recv_matched(request &r, const match_key &key, std::size_t length) {
  r.status_source = key.source;
  r.status_tag = key.tag;
  r.status_bytes = std::min(length, r.bytes);
  r.status_error = length > r.bytes ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
}

// Copies the part of a message at `offset` that fits the receive buffer;
// bytes past the buffer's end are dropped (the status says truncated).
void recv_copy(request &r, std::size_t offset, const std::byte *data, std::size_t n) {
  if (offset >= r.bytes) return;
  std::memcpy(r.buffer + offset, data, std::min(n, r.bytes - offset));
}

unexpected_msg *unexpected_new(const match_key &key, std::size_t length, int from) {
  unexpected_msg *m = rt->unexpected_pool.allocate();
  m->key = key;
  m->length = length;
  m->from = from;
  if (length <= unexpected_msg::inline_capacity) {
    m->data = m->inline_data;
  } else {
    m->data = static_cast<std::byte *>(std::malloc(length));
    if (m->data == nullptr) {
      fatal("progress", "out of memory holding an unexpected message of %zu bytes from rank %d",
            length, from);
    }
  }
  return m;
}

void unexpected_free(unexpected_msg *m) {
  if (m->data != m->inline_data) std::free(m->data);
  rt->unexpected_pool.release(m);
}

const char *deliver_first(vc &from, const packet_header &h, const std::byte *payload,
                          std::size_t length) {
  if (from.into != nullptr || from.held != nullptr) {
    return "a message began before the previous one from the same peer ended";
  }
  const match_key key{h.context, h.source, h.tag};
  if (request *r = match_oldest(rt->posted, key)) {
    recv_matched(*r, key, h.length);
    recv_copy(*r, 0, payload, length);
    if (length == h.length) {
      r->complete = true;
    } else {
      from.into = r;
      from.expect_offset = length;
    }
    return nullptr;
  }
  unexpected_msg *m = unexpected_new(key, h.length, from.world_rank);
  if (length != 0) std::memcpy(m->data, payload, length);
  m->arrived = length;
  rt->unexpected.push_back(m);
  if (length != h.length) {
    from.held = m;
    from.expect_offset = length;
  }
  return nullptr;
}

const char *deliver_more(vc &from, const packet_header &h, const std::byte *payload,
                         std::size_t length) {
  if ((from.into == nullptr && from.held == nullptr) || h.offset != from.expect_offset) {
    return "a fragment arrived out of sequence";
  }
  if (from.into != nullptr) {
    recv_copy(*from.into, h.offset, payload, length);
  } else {
    std::memcpy(from.held->data + h.offset, payload, length);
    from.held->arrived += length;
  }
  from.expect_offset += length;
  if (from.expect_offset == h.length) {
    if (from.into != nullptr) from.into->complete = true;
    from.into = nullptr;
    from.held = nullptr;
  }
  return nullptr;
}

// A receive takes an unexpected message. When the message is still arriving,
// the receive takes its place, so that the rest goes straight to the buffer.
void recv_take(request &r, unexpected_msg *m) {
  recv_matched(r, m->key, m->length);
  if (m->arrived != 0) recv_copy(r, 0, m->data, m->arrived);
  if (m->arrived == m->length) {
    r.complete = true;
  } else {
    vc &from = rt->vcs[static_cast<std::size_t>(m->from)];
    from.held = nullptr;
    from.into = &r;
  }
  unexpected_free(m);
}

}  // namespace

const char *packet_deliver(vc &from, const packet_header &h, const std::byte *payload,
                           std::size_t length) {
  if (const char *why = packet_check(h, length, rt->size)) return why;
  if (h.type == packet_type::eager_more) return deliver_more(from, h, payload, length);
  return deliver_first(from, h, payload, length);
}

request *recv_start(const communicator &comm, std::uint32_t context, void *data,
                    std::size_t capacity, int source, int tag) {
  request *r = rt->requests.allocate(request_kind::recv, &comm);
  r->key = match_key{context, source, tag};
  r->buffer = static_cast<std::byte *>(data);
  r->bytes = capacity;
  if (unexpected_msg *m = take_oldest_for_pattern(rt->unexpected, r->key)) {
    recv_take(*r, m);
  } else {
    rt->posted.push_back(r);
  }
  return r;
}

const unexpected_msg *probe_find(std::uint32_t context, int source, int tag) {
  return find_oldest_for_pattern(rt->unexpected, match_key{context, source, tag});
}

}  // namespace iris::device
