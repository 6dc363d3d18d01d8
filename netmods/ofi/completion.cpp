// The completion queue, read by every poll: records in (checked, then handed
// to the device in each sender's order), sends and reads done, and the
// errors a completion reports.
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "netmods/ofi/ofi_netmod.hpp"

namespace iris::netmod::ofi {

int ofi_netmod::poll(record_sink &sink) {
  int handled = report_lost(sink);
  if (!unposted_.empty()) std::erase_if(unposted_, [&](operation *o) { return post_recv(*o); });
  if (!unstarted_reads_.empty()) handled += retry_reads(sink);
  fi_cq_msg_entry done[cq_batch];
  ssize_t n = 0;
  {
    // What senders read meanwhile comes first (send_concurrent).
    const lock_if guard(domain_lock_, conf_.concurrent_sends);
    const std::size_t early = stashed_;
    std::copy_n(stash_, early, done);
    stashed_ = 0;
    n = fi_cq_read(cq_, done + early, cq_batch - early);
    if (early > 0) n = static_cast<ssize_t>(early) + (n > 0 ? n : 0);
  }
  if (n == -FI_EAVAIL) return handled + completion_error(sink);
  if (n <= 0) return handled;
  for (ssize_t i = 0; i < n; ++i) {
    auto *o = static_cast<operation *>(done[i].op_context);
    switch (o->what) {
      case operation::kind::recv:
        record_in(*o, done[i].len, sink);
        break;
      case operation::kind::send:
        release_tx(*o);
        break;
      case operation::kind::read:
      case operation::kind::window_read:
      case operation::kind::window_write:
        rma_finished(*o, sink, nullptr);
        break;
    }
  }
  return handled + static_cast<int>(n);
}

// One arrived message: check its prefix, then hand the records now in
// turn to the device. Its buffer is posted again once handed over.
void ofi_netmod::record_in(operation &o, std::size_t length, record_sink &sink) {
  wire_prefix prefix{};
  if (length < sizeof(prefix)) {
    log("dropped a message of " + std::to_string(length) + " bytes: too short to be Iris's");
    repost(o);
    return;
  }
  std::memcpy(&prefix, o.buffer, sizeof(prefix));
  if (prefix.token != token_) {
    log("dropped a message without this rank's token: not from this job");
    repost(o);
    return;
  }
  if (prefix.source < 0 || prefix.source >= size_ || prefix.source == rank_) {
    log("dropped a message claiming to come from rank " + std::to_string(prefix.source) +
        ", which is impossible in a job of " + std::to_string(size_));
    repost(o);
    return;
  }
  const int from = prefix.source;
  peer_state &p = peers_[static_cast<std::size_t>(from)];
  if (losses_.lost(from)) {
    repost(o);
    return;
  }
  o.length = length;
  switch (p.in.accept(prefix.seq, &o, [&](operation *r) {
    const std::span<const std::byte> record(r->buffer + sizeof(prefix), r->length - sizeof(prefix));
    if (record.empty()) {
      p.goodbye = true;
      repost(*r);
      return;
    }
    p.heard = true;
    if (record.size() > conf_.max_record) {
      // The receive buffers are rounded up: a record may fit one and still
      // be longer than the device allows.
      log("dropped a record of " + std::to_string(record.size()) + " bytes from rank " +
          std::to_string(from) + " (at most " + std::to_string(conf_.max_record) + ")");
      repost(*r);
      return;
    }
    const std::size_t head = std::min(record.size(), conf_.record_head);
    if (const char *why = sink.record_arrived(from, record.first(head), record.subspan(head))) {
      log("dropped a record from rank " + std::to_string(from) + ": " + why);
    }
    repost(*r);
  })) {
    case sequencer<operation *>::verdict::delivered:
    case sequencer<operation *>::verdict::held:
      break;
    case sequencer<operation *>::verdict::stale:
      log("dropped a record from rank " + std::to_string(from) + " with sequence number " +
          std::to_string(prefix.seq) + " (expected " + std::to_string(p.in.next()) + ")");
      repost(o);
      break;
    case sequencer<operation *>::verdict::full:
      losses_.note(from,
                   "more of its records came out of order than this rank has receive buffers");
      repost(o);
      break;
  }
}

int ofi_netmod::completion_error(record_sink &sink) {
  fi_cq_err_entry err{};
  char provider_text[256] = {};
  const char *detail = nullptr;
  {
    const lock_if guard(domain_lock_, conf_.concurrent_sends);
    if (fi_cq_readerr(cq_, &err, 0) <= 0) return 0;
    detail = fi_cq_strerror(cq_, err.prov_errno, err.err_data, provider_text, sizeof provider_text);
  }
  const std::string why =
      fi_text(*lib_, err.err) +
      (detail != nullptr && *detail != '\0' ? std::string(" (") + detail + ")" : std::string());
  auto *o = static_cast<operation *>(err.op_context);
  if (o == nullptr) {
    log("completion error without an operation: " + why);
    return 1;
  }
  switch (o->what) {
    case operation::kind::recv:
      if (err.err == FI_ETRUNC) {
        log("dropped a message longer than any record (" + std::to_string(err.olen) +
            " bytes over)");
      } else if (err.err != FI_ECANCELED) {
        log("a receive failed: " + why);
      }
      if (!finalizing_) repost(*o);
      break;
    case operation::kind::send:
      release_tx(*o);
      losses_.note(o->peer, "a send to it failed: " + why);
      report_lost(sink);
      break;
    case operation::kind::read:
    case operation::kind::window_read:
    case operation::kind::window_write:
      read_error_ = (o->what == operation::kind::window_write ? "writing rank " : "reading rank ") +
                    std::to_string(o->peer) + "'s memory failed: " + why;
      rma_finished(*o, sink, read_error_.c_str());
      break;
  }
  return 1;
}

}  // namespace iris::netmod::ofi
