// The progress engine: drains the shared-memory rings, at most poll_batch
// packets per peer per call so that no peer starves the others, then the
// netmod (one bounded pass), then pushes queued sends. Inbound traffic is always accepted, so a
// sender waiting for room can never block a receiver (no fetch deadlock).
#include <sched.h>

#include <cstring>
#include <span>
#include <string>

#include "device/errors.hpp"
#include "device/runtime.hpp"

namespace iris::device {
namespace {

int drain(inbox &in) {
  int handled = 0;
  for (; handled < rt->config.poll_batch; ++handled) {
    shm::record_view record{};
    const shm::peek_status status = in.rx.peek(record);
    if (status == shm::peek_status::empty) break;
    if (status == shm::peek_status::corrupt || record.length < sizeof(packet_header)) {
      fatal("progress", "corrupt record in the shared-memory ring from rank %d", in.from);
    }
    packet_header h;
    std::memcpy(&h, record.bytes, sizeof(h));
    const char *why = packet_deliver(rt->vcs[static_cast<std::size_t>(in.from)], h,
                                     record.bytes + sizeof(h), record.length - sizeof(h));
    if (why != nullptr) {
      fatal("progress", "bad packet from rank %d over shared memory: %s", in.from, why);
    }
    in.rx.consume();
  }
  return handled;
}

// Where the netmod hands the records it received: the same checks and the
// same delivery as the rings, but a bad record costs only its connection
// (the netmod logs it and drops it) instead of the job.
class net_sink final : public netmod::record_sink {
 public:
  const char *record_arrived(int peer, std::span<const std::byte> head,
                             std::span<const std::byte> body) override {
    vc &from = rt->vcs[static_cast<std::size_t>(peer)];
    if (from.via != transport::net) return "a record from a rank this rank reaches otherwise";
    if (head.size() != sizeof(packet_header)) return "a record shorter than a packet header";
    packet_header h;
    std::memcpy(&h, head.data(), sizeof(h));
    return packet_deliver(from, h, body.data(), body.size());
  }

  // Rendezvous data goes straight into the receive buffer.
  std::byte *body_place(int peer, std::span<const std::byte> head,
                        std::size_t body_length) override {
    const vc &from = rt->vcs[static_cast<std::size_t>(peer)];
    if (from.via != transport::net || head.size() != sizeof(packet_header)) return nullptr;
    packet_header h;
    std::memcpy(&h, head.data(), sizeof(h));
    return rendezvous_data_place(from, h, body_length);
  }

  void peer_lost(int peer, const char *why) override {
    fatal("progress", "lost rank %d (%s netmod): %s", peer, std::string(rt->net->name()).c_str(),
          why);
  }

  void read_done(std::uint64_t cookie, const char *why) override {
    rendezvous_read_done(cookie, why);
  }
};

net_sink sink;

int push_sends() {
  int pushed = 0;
  for (std::size_t i = 0; i < rt->sending.size();) {
    vc *v = rt->sending[i];
    pushed += send_push(*v);
    if (!v->has_pending()) {
      v->on_sending_list = false;
      rt->sending[i] = rt->sending.back();
      rt->sending.pop_back();
    } else {
      ++i;
    }
  }
  return pushed;
}

}  // namespace

int progress_poll() {
  rt->polling = true;
  int events = 0;
  for (inbox &in : rt->inboxes) events += drain(in);
  if (rt->net) events += rt->net->poll(sink);
  if (!rt->sending.empty()) events += push_sends();
  rt->polling = false;
  return events;
}

void progress_yield() {
  sched_yield();
}

}  // namespace iris::device
