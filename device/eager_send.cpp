// The sending half of the eager protocol: a message goes as one packet when
// it fits one record, else as a first fragment and following fragments that
// the transport pipelines through its ring.
#include <algorithm>
#include <cstring>

#include "device/errors.hpp"
#include "device/runtime.hpp"

namespace iris::device {
namespace {

packet_header header_for(const match_key &key, std::size_t length) {
  packet_header h{};
  h.source = key.source;
  h.context = key.context;
  h.tag = key.tag;
  h.length = length;
  return h;
}

// Writes one packet (header + `bytes` of payload) into the peer's ring.
// Returns false when the ring has no room now.
bool write_packet(vc &to, const packet_header &h, const std::byte *payload, std::size_t bytes) {
  std::byte *slot = to.tx.reserve(sizeof(packet_header) + bytes);
  if (slot == nullptr) return false;
  std::memcpy(slot, &h, sizeof(h));
  if (bytes != 0) std::memcpy(slot + sizeof(h), payload, bytes);
  to.tx.commit();
  return true;
}

void sending_list_add(vc &to) {
  if (to.on_sending_list) return;
  to.on_sending_list = true;
  rt->sending.push_back(&to);  // capacity reserved at init: no allocation
}

}  // namespace

// Pushes as many fragments of the queued sends of `to` as its ring takes.
int send_push(vc &to) {
  int fragments = 0;
  const std::size_t fragment = rt->config.shm_fragment_size;
  while (request *r = to.send_queue.front()) {
    const std::size_t chunk = std::min(r->bytes - r->sent, fragment);
    packet_header h = header_for(r->key, r->bytes);
    h.type = r->sent != 0        ? packet_type::eager_more
             : chunk == r->bytes ? packet_type::eager
                                 : packet_type::eager_first;
    h.offset = r->sent;
    if (!write_packet(to, h, r->buffer + r->sent, chunk)) break;
    ++fragments;
    r->sent += chunk;
    if (r->sent == r->bytes) {
      to.send_queue.remove(r);
      r->complete = true;
    }
  }
  return fragments;
}

request *send_start(const communicator &comm, std::uint32_t context, const void *data,
                    std::size_t bytes, int dest, int tag) {
  vc &to = rt->vcs[static_cast<std::size_t>(comm.world_rank[static_cast<std::size_t>(dest)])];
  const match_key key{context, comm.rank, tag};
  const auto *payload = static_cast<const std::byte *>(data);
  if (to.via == transport::self) {
    packet_header h = header_for(key, bytes);
    h.type = packet_type::eager;
    if (const char *why = packet_deliver(to, h, payload, bytes)) {
      fatal("send to self", "refused its own packet: %s", why);
    }
    return nullptr;
  }
  // Fast path: nothing queued ahead of it and it fits one record.
  if (to.send_queue.empty() && bytes <= rt->config.shm_fragment_size) {
    packet_header h = header_for(key, bytes);
    h.type = packet_type::eager;
    if (write_packet(to, h, payload, bytes)) return nullptr;
  }
  request *r = rt->requests.allocate(request_kind::send, &comm);
  r->key = key;
  r->buffer = const_cast<std::byte *>(payload);  // only read on the send side
  r->bytes = bytes;
  r->peer = to.world_rank;
  to.send_queue.push_back(r);
  sending_list_add(to);
  send_push(to);
  return r;
}

}  // namespace iris::device
