#include "device/protocols/recv.hpp"

#include <algorithm>
#include <cstring>

#include "device/base/handle.hpp"
#include "device/datatypes/dtype.hpp"
#include "device/protocols/credit.hpp"
#include "device/protocols/eager.hpp"
#include "device/protocols/recovery.hpp"
#include "device/protocols/rendezvous.hpp"
#include "device/runtime/errors.hpp"
#include "device/runtime/runtime.hpp"
#include "include/mpi.h"

namespace iris::device {
namespace {

// A receive's status once it took a message of `length` bytes with `key`.
inline void status_of(request &r, const match_key &key, std::size_t length) {
  r.status_source = key.source;
  r.status_tag = key.tag;
  r.status_bytes = std::min(length, r.bytes);
  r.status_error = length > r.bytes ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
}

// A receive takes a message: its bytes (eager) or its RTS (rendezvous).
void message_into(request &r, vc &from, const match_key &key, packet_type type, std::size_t length,
                  std::uint64_t sender_request, const std::byte *data, const rts_payload &where) {
  status_of(r, key, length);
  // A typed receive whose message ends part-way through one of its basic
  // elements: the type signatures differ (what arrived is still delivered).
  if (r.unpack_type != nullptr && r.status_error == MPI_SUCCESS) [[unlikely]] {
    if (dtype_elements(*r.unpack_type, length) < 0) r.status_error = MPI_ERR_TYPE;
  }
  if (type == packet_type::rts) {
    rendezvous_matched(r, from, sender_request, where);
  } else {
    eager_matched(r, from, type, length, sender_request, data);
  }
}

void message_into(request &r, const unexpected_msg &m) {
  message_into(r, rt->vcs[static_cast<std::size_t>(m.from)], m.key, m.type, m.length,
               m.sender_request, m.data, m.rts);
}

// A receive that takes an RTS of a revoked communicator, answered already:
// it ends with MPIX_ERR_REVOKED, and nothing is read.
void revoked_take(request &r, unexpected_msg *m) {
  rt->matching.release(m);
  r.status_error = MPI_ERR_REVOKED;
  r.status_bytes = 0;
  request_complete(r);
}

}  // namespace

const char *message_arrived(vc &from, const packet_header &h, const std::byte *payload) {
  const match_key key{h.context, h.source, h.tag};
  context_queues *q = rt->matching.queues_of(h.context);
  if (q == nullptr) [[unlikely]] {
    fatal("progress", "out of memory for the receive queues of context %u", h.context);
  }
  rts_payload where{};
  if (h.type == packet_type::rts) std::memcpy(&where, payload, sizeof(where));
  request *r = nullptr;
  {
    // Match or park in one step: a receive posted without the call lock
    // (take_or_post) sees either the message or its own post matched.
    const matcher::hold held = rt->matching.lock(*q);
    r = rt->matching.match_posted(*q, key);
    if (r == nullptr) {
      // Eager bytes held for a peer are what its credits bound; messages to
      // oneself are the program's own buffering.
      const bool kept = h.type != packet_type::rts && from.flow_controlled;
      unexpected_msg *m = rt->matching.park(*q, key, h.type, h.length, from.world_rank, kept);
      if (m == nullptr) {
        fatal("progress", "out of memory holding an unexpected message of %zu bytes from rank %d",
              static_cast<std::size_t>(h.length), from.world_rank);
      }
      m->sender_request = h.sender_request;
      m->rts = where;
      if (h.type != packet_type::rts && h.length != 0) std::memcpy(m->data, payload, h.length);
      return nullptr;
    }
  }
  message_into(*r, from, key, h.type, h.length, h.sender_request, payload, where);
  return nullptr;
}

bool message_arrived_aside(vc &from, const packet_header &h, const std::byte *payload) {
  context_queues *q = rt->matching.published(h.context);
  if (q == nullptr) return false;
  const match_key key{h.context, h.source, h.tag};
  {
    const matcher::hold held = rt->matching.lock(*q);
    if (q->context != h.context) return false;  // another context's, or recycled
    // Only the oldest match, and only if it is a receive its poster waits
    // for with request_done and has not freed (request_mark_freed marks it
    // under this lock).
    request *r = rt->matching.match_posted_if(
        *q, key, [](const request &posted) { return posted.aside && !posted.freed; });
    if (r == nullptr) return false;
    status_of(*r, key, h.length);
    if (r->status_bytes != 0) std::memcpy(r->buffer, payload, r->status_bytes);
    context_queues::count(q->aside, 1);
    request_complete(*r);  // the last touch: its waiter may recycle it at once
  }
  credit_return_aside(from, h.length);
  return true;
}

bool rendezvous_rts_aside(vc &from, const packet_header &h) {
  // A receive of nothing is answered with a FIN, which the call lock's poll
  // sends.
  if (h.length == 0 || !from.via->pipelines_aside(from, h.length)) return false;
  context_queues *q = rt->matching.published(h.context);
  if (q == nullptr) return false;
  const match_key key{h.context, h.source, h.tag};
  request *r = nullptr;
  {
    const matcher::hold held = rt->matching.lock(*q);
    if (q->context != h.context) return false;  // another context's, or recycled
    r = rt->matching.match_posted_if(*q, key, [](const request &posted) {
      return posted.aside && !posted.freed && posted.bytes != 0;
    });
    if (r == nullptr) return false;
    status_of(*r, key, h.length);
    r->peer = from.world_rank;
    r->peer_request = h.sender_request;
    r->expected = r->status_bytes;
    r->progress = 0;
    context_queues::count(q->rendezvous_aside, 1);
  }
  // Not complete until its data is in, so nobody releases it meanwhile (a
  // free marks it, and its last packet is then the call lock's poll's).
  rendezvous_answer_aside(*r, from);
  return true;
}

bool request_mark_freed(request &r) {
  if (r.stream_aside) {
    // An aside send's last packet may go out without the call lock; its
    // pusher reads `freed` under the VC's lock (rendezvous_push_aside).
    const vc_guard guard(rt->vcs[static_cast<std::size_t>(r.peer)]);
    r.freed = true;
    return request_done(r);
  }
  context_queues *q = r.aside ? rt->matching.queues_of(r.key.context) : nullptr;
  if (q == nullptr) {
    r.freed = true;
    return r.complete;
  }
  const matcher::hold held = rt->matching.lock(*q);
  r.freed = true;
  return request_done(r);
}

request *recv_start(const communicator &comm, std::uint32_t context, void *data,
                    std::size_t capacity, int source, int tag, request *use) {
  request *r = use != nullptr ? use : rt->requests.allocate(request_kind::recv, &comm);
  r->key = match_key{context, source, tag};
  r->buffer = static_cast<std::byte *>(data);
  r->bytes = capacity;
  context_queues *q = rt->matching.queues_of(context);
  if (q == nullptr) [[unlikely]] {
    fatal("MPI_Irecv", "out of memory for the receive queues of context %u", context);
  }
  if (unexpected_msg *m = rt->matching.take_or_post(*q, r)) {
    if (rt->troubled && m->type == packet_type::rts && recovery_revoked(comm)) [[unlikely]] {
      // Its sender ended that send when it met the revocation (before this
      // receive was posted, or at once), or holds it until answered.
      rendezvous_refuse(rt->vcs[static_cast<std::size_t>(m->from)], m->sender_request);
      revoked_take(*r, m);
      return r;
    }
    recv_taken(*r, m);
  } else if (rt->troubled) [[unlikely]] {
    // A message its sender sent before it died still matches; anything
    // else a failure or a revocation ends (recovery.hpp).
    if (const int refusal = recovery_refusal(comm, context, source)) recovery_fail(*r, refusal);
  }
  return r;
}

void recv_taken(request &r, unexpected_msg *m) {
  message_into(r, *m);
  rt->matching.release(m);
}

unexpected_msg *message_claim(std::uint32_t context, int source, int tag) {
  unexpected_msg *m = rt->matching.take(match_key{context, source, tag});
  if (m != nullptr) m->claimed = true;
  return m;
}

unexpected_msg *message_from_handle(int handle) {
  if (!handle_is(handle, handle_kind::message) || handle_index(handle) == 0) return nullptr;
  unexpected_msg *m = rt->matching.at(handle_index(handle) - 1);
  return m != nullptr && m->claimed ? m : nullptr;
}

int message_handle(const unexpected_msg &m) {
  return handle_make(handle_kind::message, m.index + 1);
}

request *recv_claimed(const communicator &comm, unexpected_msg *m, void *data, std::size_t capacity,
                      request *use) {
  request *r = use != nullptr ? use : rt->requests.allocate(request_kind::recv, &comm);
  r->key = m->key;
  r->buffer = static_cast<std::byte *>(data);
  r->bytes = capacity;
  if (m->refused) [[unlikely]] {
    revoked_take(*r, m);  // answered when its communicator was revoked
    return r;
  }
  recv_taken(*r, m);
  return r;
}

const unexpected_msg *probe_find(std::uint32_t context, int source, int tag) {
  return rt->matching.find(match_key{context, source, tag});
}

}  // namespace iris::device
