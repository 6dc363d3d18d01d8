// Records out: each record is one message after its wire_prefix, injected
// when it fits the provider's inject size, else copied into a send buffer.
// And the goodbye of finalize, reported done only once delivered.
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <cstring>
#include <string>

#include "netmods/ofi/ofi_netmod.hpp"

namespace iris::netmod::ofi {

send_status ofi_netmod::send(int peer, std::span<const iovec> parts) {
  peer_state &p = peers_[static_cast<std::size_t>(peer)];
  fi_addr_t to = FI_ADDR_NOTAVAIL;
  if (!address_of(peer, to)) return send_status::retry;
  const wire_prefix prefix{p.token, rank_, p.out_seq};
  std::size_t total = sizeof(prefix);
  for (const iovec &part : parts) total += part.iov_len;
  auto gather = [&](std::byte *into) {
    std::memcpy(into, &prefix, sizeof(prefix));
    std::size_t at = sizeof(prefix);
    for (const iovec &part : parts) {
      if (part.iov_len != 0) std::memcpy(into + at, part.iov_base, part.iov_len);
      at += part.iov_len;
    }
  };
  int rc = 0;
  if (total <= inject_buffer_.size()) {
    gather(inject_buffer_.data());
    rc = static_cast<int>(fi_inject(ep_, inject_buffer_.data(), total, to));
  } else {
    operation *o = free_tx_;
    if (o == nullptr) return send_status::retry;  // every send buffer is out: poll frees one
    gather(o->buffer);
    rc = static_cast<int>(fi_send(ep_, o->buffer, total, nullptr, to, o));
    if (rc == 0) {
      free_tx_ = o->next_free;
      o->peer = peer;
      ++tx_busy_;
    }
  }
  if (rc == -FI_EAGAIN) return send_status::retry;  // the device polls, then tries again
  if (rc != 0) {
    losses_.note(peer, "sending failed: " + fi_text(*lib_, rc));
    return send_status::retry;
  }
  ++p.out_seq;
  p.sent_any = true;
  return send_status::done;
}

// Sends `peer` the empty record, asking for completion once delivered.
bool ofi_netmod::say_goodbye(int peer) {
  peer_state &p = peers_[static_cast<std::size_t>(peer)];
  fi_addr_t to = FI_ADDR_NOTAVAIL;
  operation *o = free_tx_;
  if (o == nullptr || !address_of(peer, to)) return false;
  const wire_prefix prefix{p.token, rank_, p.out_seq};
  std::memcpy(o->buffer, &prefix, sizeof(prefix));
  iovec part{o->buffer, sizeof(prefix)};
  fi_msg msg{};
  msg.msg_iov = &part;
  msg.iov_count = 1;
  msg.addr = to;
  msg.context = o;
  ssize_t rc = fi_sendmsg(ep_, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION);
  if (rc == -FI_EBADFLAGS || rc == -FI_ENOSYS) rc = fi_sendmsg(ep_, &msg, FI_COMPLETION);
  if (rc != 0) return false;
  free_tx_ = o->next_free;
  o->peer = peer;
  ++tx_busy_;
  ++p.out_seq;
  return true;
}

}  // namespace iris::netmod::ofi
