#include "device/protocols/rendezvous.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "device/base/stream_copy.hpp"
#include "device/base/threading.hpp"
#include "device/datatypes/dtype.hpp"
#include "device/protocols/engine_choice.hpp"
#include "device/protocols/recovery.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/runtime.hpp"
#include "include/mpi.h"

namespace iris::device {
namespace {

void reply(vc &to, packet_type type, std::uint64_t sender_request, std::uint64_t receiver_request,
           std::size_t length) {
  packet_header h{};
  h.type = type;
  h.sender_request = sender_request;
  h.receiver_request = receiver_request;
  h.length = length;
  control_send(to, h);
}

// MPI_THREAD_MULTIPLE: whether receive `r` takes `bytes` from `from` as
// data packets that any reader of `from`'s records may deliver: an aside
// receive (plain bytes, waited for with request_done) over a transport
// that allows it. Never below MULTIPLE (no receive is aside).
bool streams_aside(const request &r, const vc &from, std::size_t bytes) {
  return r.aside && bytes != 0 && from.via->pipelines_aside(from, bytes);
}

// The data comes as data packets: CTS. An aside receive that joins
// `from.streaming_aside` is neither counted among the pipeline's receives
// nor timed: its packets may be delivered without the call lock.
void ask_for_data(request &r, vc &from) {
  const std::size_t want = r.status_bytes;
  ++rt->stats.rendezvous_pipeline;
  r.expected = want;
  r.progress = 0;
  if (!streams_aside(r, from, want) || !from.streaming_aside.add(&r)) {
    ++rt->pipeline_receives;
    r.piped = true;
  }
  reply(from, packet_type::cts, r.peer_request, request_id(r), want);
}

// Whether a single-copy read of type `t` through the transport of `v` moves
// enough per iovec (its mean contiguous block) to beat packing and
// unpacking (the transport's minimum block, measured in bench/results/).
bool blocks_large(const dtype &t, const vc &v) {
  const std::size_t runs = dtype_runs(t);
  return runs != 0 && t.packed_size / runs >= v.via->scattered_min_block();
}

}  // namespace

rts_payload rendezvous_rts_payload(vc &to, request &r) {
  rts_payload where{};
  if (!r.typed_stream) {
    to.via->expose(to, r, where);
    return where;
  }
  // A streamed typed send has no packed buffer to read. When its blocks are
  // large, it describes its layout in its scratch fragment (not touched
  // until the receiver answers) for a receiver that reads scattered data;
  // otherwise it names nothing and the receiver asks for data packets.
  if (!blocks_large(*r.unpack_type, to)) return where;
  const std::size_t described = dtype_describe(*r.unpack_type, r.unpack_count,
                                               static_cast<std::byte *>(r.scratch), to.fragment);
  if (described != 0) to.via->expose_layout(to, where, r.unpack_to, r.scratch, described);
  return where;
}

const char *rendezvous_on_rts(vc &from, const packet_header &h, const std::byte *payload) {
  return message_arrived(from, h, payload);
}

namespace {

// One side of a scattered read: `count` elements of `type` from `origin`
// (an address in this process or the sender's), or, with no type, `origin`
// and the bytes after it.
struct read_side {
  std::uintptr_t origin = 0;
  int count = 0;
  const dtype *type = nullptr;

  // The iovecs of the bytes [first, first + n), at most max_read_iovecs;
  // returns the bytes they cover.
  std::size_t segments(std::size_t first, std::size_t n, iovec *out, std::size_t &used) const {
    if (type == nullptr) {
      out[0] = {reinterpret_cast<void *>(origin + first), n};
      used = 1;
      return n;
    }
    return dtype_segments(origin, count, *type, first, n, out, max_read_iovecs, used);
  }
};

// The pieces of a scattered read of `bytes`: each as many bytes as both
// sides' next max_read_iovecs blocks cover, so memory stays bounded by two
// iovec arrays whatever the message.
class layout_plan final : public read_plan {
 public:
  layout_plan(read_side local, read_side remote, std::size_t bytes)
      : local_(local), remote_(remote), bytes_(bytes), lv_(max_read_iovecs), rv_(max_read_iovecs) {}

  bool next(read_piece &piece) override {
    if (done_ == bytes_) return false;
    std::size_t nl = 0;
    std::size_t nr = 0;
    const std::size_t l = local_.segments(done_, bytes_ - done_, lv_.data(), nl);
    const std::size_t n = remote_.segments(done_, l, rv_.data(), nr);
    // The remote list may end first: cut the local one to match.
    std::size_t covered = 0;
    std::size_t keep = 0;
    while (covered < n) {
      lv_[keep].iov_len = std::min(lv_[keep].iov_len, n - covered);
      covered += lv_[keep++].iov_len;
    }
    piece = {lv_.data(), keep, rv_.data(), nr, n};
    done_ += n;
    return n != 0;
  }

 private:
  read_side local_;
  read_side remote_;
  std::size_t bytes_;
  std::size_t done_ = 0;
  std::vector<iovec> lv_;
  std::vector<iovec> rv_;
};

// The description of the sender's layout, read from the sender.
class description_plan final : public read_plan {
 public:
  description_plan(std::byte *to, std::uint64_t from, std::size_t bytes)
      : local_{to, bytes}, remote_{reinterpret_cast<void *>(from), bytes} {}
  bool next(read_piece &piece) override {
    if (given_) return false;
    given_ = true;
    piece = {&local_, 1, &remote_, 1, local_.iov_len};
    return true;
  }
  bool message() const override { return false; }

 private:
  iovec local_;
  iovec remote_;
  bool given_ = false;
};

// Whether `count` elements of `t` hold at least `bytes` packed bytes.
bool covers(const dtype &t, int count, std::size_t bytes) {
  std::size_t total = 0;
  return __builtin_mul_overflow(static_cast<std::size_t>(count), t.packed_size, &total) ||
         total >= bytes;
}

// A single-copy read where either side is non-contiguous (or named by a
// description): retry when the transport cannot read scattered data, a
// side's blocks are small, or the description is unsound.
xfer read_scattered(request &r, vc &from, const rts_payload &where, std::size_t want) {
  if (r.typed_stream && !blocks_large(*r.unpack_type, from)) return xfer::retry;
  if (!from.via->reads_scattered(from, want)) return xfer::retry;
  const read_side local =
      r.typed_stream
          ? read_side{reinterpret_cast<std::uintptr_t>(r.unpack_to), r.unpack_count, r.unpack_type}
          : read_side{reinterpret_cast<std::uintptr_t>(r.buffer), 0, nullptr};
  read_side remote{static_cast<std::uintptr_t>(where.address), 0, nullptr};
  dtype described;
  if (where.layout_bytes != 0) {
    // At most the fragment the sender describes it in.
    if (where.layout_bytes > from.fragment) return xfer::retry;
    std::vector<std::byte> text(where.layout_bytes);
    description_plan fetch(text.data(), where.layout, text.size());
    int count = 0;
    if (from.via->read_scattered(from, where, fetch) != xfer::done ||
        !dtype_read_description(text.data(), text.size(), described, count) ||
        !covers(described, count, want) || !blocks_large(described, from)) {
      return xfer::retry;
    }
    remote = {static_cast<std::uintptr_t>(where.address), count, &described};
  }
  layout_plan plan(local, remote, want);
  const xfer read = from.via->read_scattered(from, where, plan);
  if (read == xfer::done) ++rt->stats.rendezvous_scattered;
  return read;
}

}  // namespace

void rendezvous_matched(request &r, vc &from, std::uint64_t sender_request,
                        const rts_payload &where) {
  const std::size_t want = r.status_bytes;  // what fits the receive buffer
  r.peer = from.world_rank;
  r.peer_request = sender_request;
  // A single-copy read needs a sender that named its buffer; one of a
  // non-contiguous layout (either side) reads scattered blocks, when they
  // are large. Otherwise the data comes as packets.
  // An aside receive over such a transport streams too (streams_aside).
  const bool named = where.pid != 0 || where.address != 0 || where.rma != 0;
  const xfer read = want == 0                                ? xfer::done
                    : !named || streams_aside(r, from, want) ? xfer::retry
                    : r.typed_stream || where.layout_bytes != 0
                        ? read_scattered(r, from, where, want)
                        : from.via->read(from, where, r.buffer, want, request_id(r));
  switch (read) {
    case xfer::done:
      if (want != 0) ++rt->stats.rendezvous_read;
      request_complete(r);
      reply(from, packet_type::fin, sender_request, 0, 0);
      return;
    case xfer::in_progress:
      r.reading = true;
      return;  // rendezvous_read_done answers
    case xfer::retry:
      ask_for_data(r, from);
      return;
  }
}

void rendezvous_read_done(std::uint64_t receiver_request, const char *why) {
  request *r = rt->requests.from_id(receiver_request, request_kind::recv);
  if (r == nullptr || r->complete || r->peer < 0) return;  // cannot be: ours, started once
  r->reading = false;
  vc &from = rt->vcs[static_cast<std::size_t>(r->peer)];
  if (r->status_error == MPI_ERR_PROC_FAILED || r->status_error == MPI_ERR_REVOKED) [[unlikely]] {
    // A failure or revocation ended it while the read ran (recovery_fail).
    // A live sender may still hold its buffer for the read: the FIN ends it.
    const std::uint64_t sender_request = r->peer_request;  // `r` is its waiter's once complete
    request_complete(*r);
    rendezvous_refuse(from, sender_request);
    return;
  }
  if (why != nullptr) {
    ask_for_data(*r, from);  // the sender's data is still there
    return;
  }
  ++rt->stats.rendezvous_read;
  const std::uint64_t sender_request = r->peer_request;  // `r` is its waiter's once complete
  request_complete(*r);
  reply(from, packet_type::fin, sender_request, 0, 0);
}

void rendezvous_refuse(vc &from, std::uint64_t sender_request) {
  if (!recovery_failed(from.world_rank)) reply(from, packet_type::fin, sender_request, 0, 0);
}

const char *rendezvous_on_cts(vc &from, const packet_header &h, const std::byte *payload) {
  (void)payload;
  if (rendezvous_cts_aside(from, h)) return nullptr;
  request *s = send_awaiting(from, h.sender_request, send_state::wait_reply);
  if (s == nullptr) return "cts for a send that is not waiting for one";
  if (s->status_error == MPI_ERR_REVOKED) [[unlikely]] {
    send_done(*s);  // held for a read (recovery_fail); its receiver takes nothing now
    return nullptr;
  }
  s->expected = std::min<std::size_t>(h.length, s->bytes);
  s->peer_request = h.receiver_request;
  s->progress = 0;
  if (s->expected == 0) {
    send_done(*s);
    return nullptr;
  }
  s->state = send_state::streaming;
  from.stream_queue.push_back(s);
  sending_list_add(from);
  return nullptr;
}

const char *rendezvous_on_fin(vc &from, const packet_header &h, const std::byte *payload) {
  (void)payload;
  request *s = send_awaiting(from, h.sender_request, send_state::wait_reply);
  if (s == nullptr) return "fin for a send that is not waiting for one";
  send_done(*s);
  return nullptr;
}

namespace {

// The receive that data packet `h` continues, or nullptr.
request *data_receiver(const vc &from, const packet_header &h) {
  request *r = rt->requests.from_id(h.receiver_request, request_kind::recv);
  if (r == nullptr || r->complete || r->peer != from.world_rank || h.offset != r->progress ||
      h.length > r->expected - r->progress) {
    return nullptr;
  }
  return r;
}

}  // namespace

std::byte *rendezvous_data_place(const vc &from, const packet_header &h, std::size_t payload) {
  if (h.type != packet_type::data || h.length != payload) return nullptr;
  request *r = data_receiver(from, h);
  if (r == nullptr || r->typed_stream) return nullptr;
  r->placing = true;
  return r->buffer + h.offset;
}

namespace {

// The bytes of data packet `h` into receive `r` of plain bytes, unless a
// transport read them into place already. A message far larger than the
// cache goes around it (IRIS_NONTEMPORAL_MIN).
void data_copy(request &r, const packet_header &h, const std::byte *payload) {
  if (payload == r.buffer + h.offset) return;
  if (r.expected >= rt->config.nontemporal_min) {
    copy_streaming(r.buffer + h.offset, payload, h.length);
  } else {
    std::memcpy(r.buffer + h.offset, payload, h.length);
  }
}

// Receives whose CTS the call lock's holder sends.
handover_stack<&request::cts_next> ctss_owed;

// Aside sends whose last packet went out after the user freed them, for the
// call lock to finish and release.
handover_stack<&request::cts_next> sends_freed;

void rendezvous_cts_later(request &r) {
  ctss_owed.push(r);
}

}  // namespace

void rendezvous_answer_aside(request &r, vc &from) {
  // Full: the call lock's holder answers it as any other (ask_for_data).
  if (!from.streaming_aside.add(&r)) {
    rendezvous_cts_later(r);
    return;
  }
  packet_header h{};
  h.type = packet_type::cts;
  h.sender_request = r.peer_request;
  h.receiver_request = request_id(r);
  h.length = r.expected;
  {
    // send_held: what any thread may send (a netmod's send_concurrent).
    const vc_guard guard(from);
    if (from.via->send_held(from, h, {}) == xfer::done) return;
  }
  rendezvous_cts_later(r);
}

void rendezvous_cts_drain() {
  sends_freed.drain([](request &s) { send_done(s); });  // freed: released now
  ctss_owed.drain([](request &r) {
    vc &from = rt->vcs[static_cast<std::size_t>(r.peer)];
    // Its data may come before this returns, and be delivered by any reader.
    // (Counted in "rendezvous_aside" already.)
    if (from.streaming_aside.holds(r)) {
      reply(from, packet_type::cts, r.peer_request, request_id(r), r.expected);
    } else {
      ask_for_data(r, from);
    }
  });
}

bool rendezvous_cts_aside(vc &from, const packet_header &h) {
  if (h.length == 0 || from.sending_aside.empty()) return false;  // a send of nothing: send_done
  {
    const vc_guard guard(from);
    request *s = from.sending_aside.find(h.sender_request);
    if (s == nullptr || s->stream_cleared) return false;
    s->expected = std::min<std::size_t>(h.length, s->bytes);
    s->peer_request = h.receiver_request;
    s->progress = 0;
    s->stream_cleared = true;
  }
  rendezvous_push_aside(from);
  return true;
}

int rendezvous_push_aside(vc &to) {
  if (to.sending_aside.empty() || !to.send_lock.try_lock()) return 0;
  const bool counted = !call_lock_held();
  int packets = 0;
  while (request *s = to.sending_aside.find_if([](const request &r) { return r.stream_cleared; })) {
    while (s->progress != s->expected) {
      const std::size_t chunk = std::min(s->expected - s->progress, to.fragment);
      packet_header h{};
      h.type = packet_type::data;
      h.length = chunk;
      h.receiver_request = s->peer_request;
      h.offset = s->progress;
      const iovec part{s->buffer + s->progress, chunk};
      if (to.via->send_held(to, h, {&part, 1}) != xfer::done) break;
      ++packets;
      s->progress += chunk;
    }
    if (s->progress != s->expected) break;  // the transport is full: the next push goes on
    to.sending_aside.remove(s);
    if (s->freed) {
      sends_freed.push(*s);  // only the call lock may release it
    } else {
      // Its state stays wait_reply: the call lock's holder may still be
      // reading it after the RTS went (message_sent); once cleared, nothing
      // asks it again (request_cancel looks at stream_cleared first).
      request_complete(*s);  // the last touch: its waiter may finish it at once
    }
  }
  if (counted && packets != 0) to.aside_sent.add(packets);
  to.send_lock.unlock();
  return packets;
}

bool rendezvous_data_aside(vc &from, const packet_header &h, const std::byte *payload,
                           std::size_t length) {
  if (h.type != packet_type::data || h.flags != 0 || length != h.length || length == 0) {
    return false;
  }
  request *r = from.streaming_aside.find(h.receiver_request);  // one load when none
  if (r == nullptr || h.offset != r->progress || h.length > r->expected - r->progress) return false;
  data_copy(*r, h, payload);
  if (r->progress + h.length != r->expected) {
    r->progress += h.length;
    from.aside_data.add(1);
    return true;
  }
  // The last packet: completed under its context's lock, where
  // request_mark_freed marks a freed receive, which only the call lock may
  // release (its poll copies this packet again and does).
  context_queues *q = rt->matching.published(r->key.context);
  if (q == nullptr) return false;
  const matcher::hold held = rt->matching.lock(*q);
  if (q->context != r->key.context || r->freed) return false;
  r->progress = r->expected;
  from.streaming_aside.remove(r);
  from.aside_data.add(1);
  request_complete(*r);  // the last touch: its waiter may recycle it at once
  return true;
}

const char *rendezvous_on_data(vc &from, const packet_header &h, const std::byte *payload) {
  request *r = data_receiver(from, h);
  if (r == nullptr) return "data for no receive, or out of sequence";
  if (r->placing) [[unlikely]] {
    r->placing = false;
    if (r->status_error == MPI_ERR_PROC_FAILED || r->status_error == MPI_ERR_REVOKED) {
      request_complete(*r);  // ended while its body was placed (recovery_fail)
      return nullptr;
    }
  }
  // One an aside pass answered (MULTIPLE) is neither counted nor timed.
  if (from.streaming_aside.holds(*r)) [[unlikely]] {
    data_copy(*r, h, payload);
    r->progress += h.length;
    if (r->progress == r->expected) {
      from.streaming_aside.remove(r);
      request_complete(*r);
    }
    return nullptr;
  }
  // Contiguous messages that stream among others (or that the transport
  // asked to time) are timed in runs (vc.hpp), for a transport that learns
  // which engine is faster (engine_choice.hpp). Messages of one packet
  // too: a run of them is timed from its first packet (not counted) to
  // its last. Left out, a transport never timed its pipeline for them and
  // kept its rule's engine (one-way streams of 32 KiB, one fragment, here).
  // The bytes are counted packet by packet, not message by message: a
  // sender interleaves the fragments of its first few streams
  // (rendezvous_push), so when one message completes others are partly in.
  if (from.stream_started != 0) {
    from.stream_bytes += h.length;
  } else if (h.offset == 0 && !r->typed_stream &&
             (rt->pipeline_receives > 1 || from.time_next_stream) && from.via->times_streams()) {
    from.stream_started = monotonic_ns();  // the first packet is not counted
    from.stream_bytes = 0;
    from.time_next_stream = false;
  }
  if (r->typed_stream) {
    dtype_unpack_range(payload, h.offset, h.length, r->unpack_to, r->unpack_count, *r->unpack_type,
                       r->expected >= rt->config.nontemporal_min);
  } else {
    data_copy(*r, h, payload);
  }
  r->progress += h.length;
  if (r->progress == r->expected) {
    --rt->pipeline_receives;
    r->piped = false;
    if (from.alone_started != 0) {
      // A message alone (its transport chose the pipeline for it and
      // learns from its time): timed only if it stayed alone to its end.
      if (rt->pipeline_receives == 0 && from.stream_started == 0) {
        from.via->alone_timed(from, r->expected, monotonic_ns() - from.alone_started);
      }
      from.alone_started = 0;
    }
    if (from.stream_started != 0) {
      // The run ends when nothing else streams, or after 8 MiB: its rate
      // counts the gaps between its messages too (credits, handshakes).
      if (rt->pipeline_receives == 0 || from.stream_bytes >= (std::size_t{8} << 20)) {
        // A run of one message of one packet timed nothing.
        if (from.stream_bytes > 0) {
          from.via->stream_timed(from, r->expected, from.stream_bytes,
                                 monotonic_ns() - from.stream_started);
        }
        from.stream_started = 0;
      }
    }
    request_complete(*r);
  }
  return nullptr;
}

namespace {

// Packs the next fragment of a streamed typed send (its length is what the
// header says: the rest, up to a fragment), straight into the transport's
// record where it has one, else into the send's scratch fragment.
void pack_fragment(const void *context, std::byte *out) {
  const request &s = *static_cast<const request *>(context);
  const std::size_t chunk =
      std::min(s.expected - s.progress, rt->vcs[static_cast<std::size_t>(s.peer)].fragment);
  dtype_pack_range(s.unpack_to, s.unpack_count, *s.unpack_type, s.progress, chunk, out);
}

}  // namespace

// The sends streaming to one peer take turns, a fragment each, among the
// first `to.stream_width` of its queue (vc.hpp).
int rendezvous_push(vc &to) {
  int packets = 0;
  const std::size_t fragment = to.fragment;
  while (!to.stream_queue.empty()) {
    const std::size_t turns = std::min(to.stream_queue.size(), to.stream_width);
    if (to.stream_turn >= turns) to.stream_turn = 0;
    request *s = to.stream_queue.front();
    for (std::size_t i = 0; i < to.stream_turn; ++i) s = s->next;
    const std::size_t chunk = std::min(s->expected - s->progress, fragment);
    packet_header h{};
    h.type = packet_type::data;
    h.length = chunk;
    h.receiver_request = s->peer_request;
    h.offset = s->progress;
    // A typed send packs its fragment now (again after a retry).
    if (s->typed_stream ? !packet_write_filled(to, h, chunk, {pack_fragment, s},
                                               static_cast<std::byte *>(s->scratch))
                        : !packet_write(to, h, s->buffer + s->progress, chunk)) {
      break;
    }
    ++packets;
    s->progress += chunk;
    if (s->progress == s->expected) {
      to.stream_queue.remove(s);  // the next in line takes its turn
      send_done(*s);
    } else {
      ++to.stream_turn;
    }
  }
  return packets;
}

}  // namespace iris::device
