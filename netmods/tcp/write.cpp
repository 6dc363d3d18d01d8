// Frames out. A send writes the frame with one sendmsg. What the kernel does
// not take at once is copied into the connection's pending buffer (reserved
// when the connection opened: no allocation on the data path) and written
// out by later polls; meanwhile further sends to that peer answer retry, so
// the device keeps them queued, in order.
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "netmods/tcp/tcp_netmod.hpp"

namespace iris::netmod::tcp {

send_status tcp_netmod::send(int peer, std::span<const iovec> parts) {
  peer_link &p = peers_[static_cast<std::size_t>(peer)];
  if (p.send_conn < 0 && !choose_send_conn(peer)) return send_status::retry;
  connection &c = conn(p.send_conn);
  if (c.st != connection::state::open || c.has_pending()) return send_status::retry;
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
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return send_status::retry;
    lose(p.send_conn, "writing to it failed: " + errno_text(errno));
    return send_status::retry;
  }
  const auto written = static_cast<std::size_t>(n);
  if (written == frame_prefix + total) return send_status::done;
  keep_unwritten(c, iov, count, written);
  ++counts_.partial_writes;
  counts_.bytes_kept += frame_prefix + total - written;
  watch(c, p.send_conn, events_for(c));
  return send_status::done;
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

// Writes more of the pending frame. True when it is all out.
bool tcp_netmod::flush(int index) {
  connection &c = conn(index);
  while (c.has_pending()) {
    const ssize_t n = ::send(c.fd, c.pending.data() + c.pending_done,
                             c.pending.size() - c.pending_done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
      lose(index, "writing to it failed: " + errno_text(errno));
      return false;
    }
    c.pending_done += static_cast<std::size_t>(n);
  }
  c.pending.clear();
  c.pending_done = 0;
  watch(c, index, events_for(c));
  return true;
}

}  // namespace iris::netmod::tcp
