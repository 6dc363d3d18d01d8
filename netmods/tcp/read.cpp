// Frames in: what epoll says is ready, whole records handed to the device,
// and long bodies read straight into the place the device names.
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "netmods/tcp/tcp_netmod.hpp"

namespace iris::netmod::tcp {

// Epoll says connection `index` is ready. `sink` is null at finalize, when
// records are read and dropped.
int tcp_netmod::ready(int index, std::uint32_t events, record_sink *sink) {
  if (static_cast<std::size_t>(index) >= conns_.size()) return 0;
  connection &c = conn(index);
  switch (c.st) {
    case connection::state::dialing:
      // Only a writable socket has finished connecting (an event meant
      // for an earlier connection in this slot says nothing).
      return (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0 ? dial_connected(index) : 0;
    case connection::state::awaiting_ack:
      return ack_ready(index);
    case connection::state::awaiting_hello:
      return hello_ready(index, sink);
    case connection::state::open: {
      if ((events & EPOLLOUT) != 0) flush(index);  // if a frame is going out
      if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) == 0) return 1;
      const read_hold hold(c, reading_locked_);
      if (c.st != connection::state::open) return 1;  // the flush lost it
      if (c.read_done) {
        // The peer, past its goodbye, gave up waiting for this rank's.
        release(index);
        return 1;
      }
      return frames_ready(index, sink);
    }
    case connection::state::free:
      return 0;
  }
  return 0;
}

// Reads what the socket has and hands every whole frame on. Frames an
// aside pass read and left (`left`) are handed on first, without a read.
int tcp_netmod::frames_ready(int index, record_sink *sink) {
  connection &c = conn(index);
  if (c.place != nullptr) return body_ready(index, sink);
  if (c.left) {
    c.left = false;
  } else {
    // Rendezvous data comes as a row of long records: after one, read only
    // the next one's head, so that all of its body goes to its place rather
    // than partly through `in`.
    const std::size_t want = c.head_first && c.filled == 0
                                 ? frame_prefix + conf_.record_head
                                 : std::min(c.in.size() - c.filled, read_chunk);
    const ssize_t n = ::recv(c.fd, c.in.data() + c.filled, want, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    c.head_first = false;
    if (n <= 0) {
      ended(index, n == 0 ? c.end_error : errno);
      return 1;
    }
    c.filled += static_cast<std::size_t>(n);
  }
  int records = 0;
  std::size_t at = 0;
  for (;;) {
    const std::byte *start = c.in.data() + at;
    const std::size_t have = c.filled - at;
    const frame f = frame_parse(start, have, conf_.max_record);
    if (f.what == frame::kind::partial) {
      if (sink != nullptr && try_place(index, *sink, f, start, have)) at = c.filled;
      break;
    }
    if (f.what == frame::kind::too_long) {
      drop(index, "a frame of " + std::to_string(f.record_length) + " bytes (at most " +
                      std::to_string(conf_.max_record) + ")");
      return records + 1;
    }
    if (f.what == frame::kind::goodbye) {
      c.goodbye = true;
      c.filled = 0;
      if (finalizing_) release(index);
      return records + 1;
    }
    const std::byte *record = start + frame_prefix;
    const std::size_t head = std::min(conf_.record_head, f.record_length);
    if (sink != nullptr &&
        !deliver(index, *sink, {record, head}, {record + head, f.record_length - head})) {
      return records + 1;
    }
    at += frame_prefix + f.record_length;
    ++records;
  }
  if (at > 0) {
    std::memmove(c.in.data(), c.in.data() + at, c.filled - at);
    c.filled -= at;
  }
  return records;
}

// The connection's stream ended (`err` 0: closed, else the error).
void tcp_netmod::ended(int index, int err) {
  connection &c = conn(index);
  if (finalizing_) {
    release(index);
  } else if (c.goodbye && err == 0) {
    // A clean end of the peer's side. It waits for this rank's goodbye,
    // so keep the socket, for writing only, until MPI_Finalize.
    const lock_if guard(c.out, conf_.concurrent_sends);
    c.read_done = true;
    watch(c, index, events_for(c));
  } else {
    lose(index, err == 0 ? "it closed its connection without a goodbye (it died?)"
                         : "its connection failed: " + errno_text(err));
  }
}

// Hands one record to the device. False when the device refused it: the
// connection is dropped then.
bool tcp_netmod::deliver(int index, record_sink &sink, std::span<const std::byte> head,
                         std::span<const std::byte> body) {
  if (const char *why = sink.record_arrived(conn(index).peer, head, body)) {
    drop(index, std::string("a bad packet: ") + why);
    return false;
  }
  return true;
}

// A long record whose head is here and whose body is not: asks the device
// where the body goes and, when it says, moves there what of it is here.
// True when the record is being placed (every byte read so far is its).
bool tcp_netmod::try_place(int index, record_sink &sink, const frame &f, const std::byte *start,
                           std::size_t have) {
  connection &c = conn(index);
  const std::size_t head = conf_.record_head;
  if (f.record_length < head + min_placed_body || have < frame_prefix + head) return false;
  const std::size_t body = f.record_length - head;
  std::byte *place = sink.body_place(c.peer, {start + frame_prefix, head}, body);
  if (place == nullptr) return false;
  std::memcpy(c.head.data(), start + frame_prefix, head);
  const std::size_t here = have - frame_prefix - head;  // less than body: the frame is partial
  std::memcpy(place, start + frame_prefix + head, here);
  counts_.body_bytes_moved += here;
  c.place = place;
  c.place_need = body;
  c.place_got = here;
  return true;
}

// Reads more of a placed body, and delivers the record once it is whole.
// Reads of at most read_chunk: over loopback, one recv into a large cold
// buffer holds the socket long enough to stall the sender (4 MiB
// ping-pong 1265 -> 720 us with 64 KiB reads; bench/results/).
int tcp_netmod::body_ready(int index, record_sink *sink) {
  connection &c = conn(index);
  const ssize_t n =
      ::recv(c.fd, c.place + c.place_got, std::min(c.place_need - c.place_got, read_chunk), 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
  if (n <= 0) {
    ended(index, n == 0 ? c.end_error : errno);
    return 1;
  }
  c.place_got += static_cast<std::size_t>(n);
  counts_.body_bytes_placed += static_cast<std::size_t>(n);
  if (c.place_got < c.place_need) return 1;
  const std::byte *body = c.place;
  c.place = nullptr;
  c.head_first = true;
  if (sink != nullptr) (void)deliver(index, *sink, c.head, {body, c.place_need});
  return 1;
}

// poll, after an aside pass left whole frames in a connection's `in`:
// epoll does not say so when the socket itself has nothing more.
int tcp_netmod::frames_left(record_sink &sink) {
  int handled = 0;
  for (peer_link &p : peers_) {
    connection *c = p.reading.get();
    if (c == nullptr) continue;
    const read_hold hold(*c, true);
    if (c->left && p.reading.get() == c) handled += frames_ready(c->index, &sink);
  }
  return handled;
}

// MULTIPLE, without the call lock (tcp_netmod.hpp, at the top): each
// published connection whose read side is free, one read each, its plain
// records handed to the sink until it refuses one.
int tcp_netmod::poll_aside(aside_sink &sink) {
  if (polling_.load(std::memory_order_relaxed) || !aside_.on_or_ask()) return 0;
  int taken = 0;
  // Within what peer_add published: peers_ never moves (reserved), but a
  // dynamic peer may be joining it under the call lock meanwhile.
  const std::size_t published = peers_published_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < published; ++i) {
    peer_link &p = peers_.data()[i];
    connection *c = p.reading.get();
    if (c == nullptr || !c->in_lock.try_lock()) continue;
    if (p.reading.get() == c) taken += frames_aside(*c, sink);  // else released meanwhile
    c->in_lock.unlock();
  }
  return taken;
}

// One read of open connection `c`, its read side held. Anything but a
// plain record (an end, an error, a goodbye, a frame too long, a body to
// place, a record the sink refuses) stops it and is left to poll.
int tcp_netmod::frames_aside(connection &c, aside_sink &sink) {
  if (c.left || c.place != nullptr || c.head_first || c.read_done || c.goodbye ||
      c.end_error != 0) {
    return 0;
  }
  if (c.filled > 0) {
    // Only a partial frame is here (poll hands on every whole one): when
    // it is long, its body is poll's to place.
    const frame f = frame_parse(c.in.data(), c.filled, conf_.max_record);
    if (f.what != frame::kind::partial || f.record_length >= conf_.record_head + min_placed_body) {
      return 0;
    }
  }
  const ssize_t n =
      ::recv(c.fd, c.in.data() + c.filled, std::min(c.in.size() - c.filled, read_chunk), 0);
  if (n <= 0) {
    // The end stays for poll's read (a closed stream reads 0 again; an
    // error only once, so it is kept).
    if (n < 0 && errno != EAGAIN && errno != EINTR) c.end_error = errno;
    return 0;
  }
  c.filled += static_cast<std::size_t>(n);
  int taken = 0;
  std::size_t at = 0;
  bool stopped = false;
  for (;;) {
    const std::byte *start = c.in.data() + at;
    const frame f = frame_parse(start, c.filled - at, conf_.max_record);
    if (f.what == frame::kind::partial) break;
    const std::byte *record = start + frame_prefix;
    const std::size_t head = std::min(conf_.record_head, f.record_length);
    if (f.what != frame::kind::record ||
        !sink.record_taken(c.peer, {record, head}, {record + head, f.record_length - head})) {
      stopped = true;
      break;
    }
    at += frame_prefix + f.record_length;
    ++taken;
  }
  if (at > 0) {
    std::memmove(c.in.data(), c.in.data() + at, c.filled - at);
    c.filled -= at;
  }
  if (stopped) {
    c.left = true;
    left_.store(true, std::memory_order_release);
  }
  return taken;
}

}  // namespace iris::netmod::tcp
