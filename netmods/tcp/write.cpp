// Frames out. A send writes the frame with one sendmsg. What the kernel does
// not take at once is copied into the connection's pending buffer (reserved
// when the connection opened: no allocation on the data path) and written
// out by later polls; meanwhile further sends to that peer answer retry, so
// the device keeps them queued, in order. Under MULTIPLE the write side of
// a connection is under its `out` lock (tcp_netmod.hpp, at the top).
#include <sys/epoll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "netmods/tcp/tcp_netmod.hpp"

namespace iris::netmod::tcp {

send_status tcp_netmod::send(int peer, std::span<const iovec> parts) {
  peer_link &p = peers_[static_cast<std::size_t>(peer)];
  if (p.send_conn < 0 && !choose_send_conn(peer)) return send_status::retry;
  const int index = p.send_conn;
  connection &c = conn(index);
  int err = 0;
  wrote w = wrote::busy;
  {
    const lock_if guard(c.out, conf_.concurrent_sends);
    w = write_frame(c, parts, err);
  }
  if (w == wrote::failed) lose(index, "writing to it failed: " + errno_text(err));
  return w == wrote::done ? send_status::done : send_status::retry;
}

// From any thread (tcp_netmod.hpp, at the top): only on a published
// connection, and only while it stays published, which its lock ensures.
send_status tcp_netmod::send_concurrent(int peer, std::span<const iovec> parts) {
  const published_connection &sending = peers_[static_cast<std::size_t>(peer)].sending;
  connection *c = sending.get();
  if (c == nullptr) return send_status::retry;
  const lock_if guard(c->out, true);
  if (sending.get() != c) return send_status::retry;  // released meanwhile
  int err = 0;
  // A failure is the peer's loss, which send() notes when the device
  // tries again through it.
  return write_frame(*c, parts, err) == wrote::done ? send_status::done : send_status::retry;
}

// Writes one frame on open connection `c`, whose write side the caller
// holds. busy: a frame is still going out (or `c` is not open): retry;
// failed: the socket said `err`.
tcp_netmod::wrote tcp_netmod::write_frame(connection &c, std::span<const iovec> parts, int &err) {
  if (c.st != connection::state::open || c.has_pending()) return wrote::busy;
  std::uint32_t prefix = 0;
  iovec iov[4];
  iov[0] = {&prefix, sizeof(prefix)};
  std::size_t count = 1;
  std::size_t total = 0;
  for (const iovec &part : parts) {
    if (part.iov_len == 0) continue;
    iov[count++] = part;
    total += part.iov_len;
  }
  prefix = static_cast<std::uint32_t>(total);
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = count;
  const ssize_t n = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return wrote::busy;
    err = errno;
    return wrote::failed;
  }
  const auto written = static_cast<std::size_t>(n);
  if (written == frame_prefix + total) return wrote::done;
  keep_unwritten(c, iov, count, written);
  counts_.partial_writes.fetch_add(1, std::memory_order_relaxed);
  counts_.bytes_kept.fetch_add(frame_prefix + total - written, std::memory_order_relaxed);
  watch(c, c.index, events_for(c));
  return wrote::done;
}

// Copies what sendmsg did not take of `iov` (its first `written` bytes went).
void tcp_netmod::keep_unwritten(connection &c, const iovec *iov, std::size_t count,
                                std::size_t written) {
  std::size_t rest = 0;
  for (std::size_t i = 0; i < count; ++i) rest += iov[i].iov_len;
  c.pending.resize(rest - written);  // within the capacity reserved by open()
  c.pending_done = 0;
  std::size_t at = 0;
  std::size_t skip = written;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t len = iov[i].iov_len;
    if (skip >= len) {
      skip -= len;
      continue;
    }
    std::memcpy(c.pending.data() + at, static_cast<const std::byte *>(iov[i].iov_base) + skip,
                len - skip);
    at += len - skip;
    skip = 0;
  }
}

// Writes more of the pending frame, if there is one. True when it is all
// out.
bool tcp_netmod::flush(int index) {
  connection &c = conn(index);
  int err = 0;
  {
    const lock_if guard(c.out, conf_.concurrent_sends);
    if (!c.has_pending()) return true;
    while (c.has_pending()) {
      const ssize_t n = ::send(c.fd, c.pending.data() + c.pending_done,
                               c.pending.size() - c.pending_done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
        err = errno;
        break;
      }
      c.pending_done += static_cast<std::size_t>(n);
    }
    if (err == 0) {
      c.pending.clear();
      c.pending_done = 0;
      watch(c, index, events_for(c));
      return true;
    }
  }
  lose(index, "writing to it failed: " + errno_text(err));  // takes the lock itself
  return false;
}

}  // namespace iris::netmod::tcp
