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
  fi_addr_t to = FI_ADDR_NOTAVAIL;
  if (!address_of(peer, to)) return send_status::retry;
  int rc = 0;
  {
    const lock_if guard(domain_lock_, conf_.concurrent_sends);
    rc = post_send(peer, to, parts);
  }
  if (rc != 0 && rc != -FI_EAGAIN) losses_.note(peer, "sending failed: " + fi_text(*lib_, rc));
  return rc == 0 ? send_status::done : send_status::retry;
}

// From any thread (ofi_netmod.hpp): only to a peer whose address send()
// has inserted. A failure is the peer's loss, which send() notes when the
// device tries again through it.
send_status ofi_netmod::send_concurrent(int peer, std::span<const iovec> parts) {
  const lock_if guard(domain_lock_, true);
  const fi_addr_t to = peers_[static_cast<std::size_t>(peer)].address;
  if (to == FI_ADDR_NOTAVAIL) return send_status::retry;
  int rc = post_send(peer, to, parts);
  // The provider is full: drive its progress here, keeping what completed
  // for the next poll, and try once more.
  if (rc == -FI_EAGAIN && progress_held()) rc = post_send(peer, to, parts);
  return rc == 0 ? send_status::done : send_status::retry;
}

// One fi_cq_read by a sender, with domain_lock_ held: the provider moves
// on (its progress is manual), send buffers that completed are free at
// once, and the other completions wait in stash_ for poll(), which takes
// them first. False when nothing completed or stash_ is full.
bool ofi_netmod::progress_held() {
  if (stashed_ == cq_batch) return false;
  fi_cq_msg_entry got[cq_batch];
  const ssize_t n = fi_cq_read(cq_, got, cq_batch - stashed_);
  if (n <= 0) return false;  // an error entry waits for poll()
  for (ssize_t i = 0; i < n; ++i) {
    auto *o = static_cast<operation *>(got[i].op_context);
    if (o->what == operation::kind::send) {
      release_tx_held(*o);
    } else {
      stash_[stashed_++] = got[i];
    }
  }
  return true;
}

// Hands one record to libfabric, with domain_lock_ held under MULTIPLE: 0,
// -FI_EAGAIN (no room: the device polls, then tries again) or an error.
int ofi_netmod::post_send(int peer, fi_addr_t to, std::span<const iovec> parts) {
  peer_state &p = peers_[static_cast<std::size_t>(peer)];
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
    if (o == nullptr) return -FI_EAGAIN;  // every send buffer is out: poll frees one
    gather(o->buffer);
    rc = static_cast<int>(fi_send(ep_, o->buffer, total, nullptr, to, o));
    if (rc == 0) {
      free_tx_ = o->next_free;
      o->peer = peer;
      ++tx_busy_;
    }
  }
  if (rc != 0) return rc;
  ++p.out_seq;
  p.sent_any = true;
  return 0;
}

// Sends `peer` the empty record, asking for completion once delivered.
bool ofi_netmod::say_goodbye(int peer) {
  peer_state &p = peers_[static_cast<std::size_t>(peer)];
  fi_addr_t to = FI_ADDR_NOTAVAIL;
  if (!address_of(peer, to)) return false;
  const lock_if guard(domain_lock_, conf_.concurrent_sends);
  operation *o = free_tx_;
  if (o == nullptr) return false;
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
