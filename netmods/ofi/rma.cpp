// RMA: a sender's buffer registered for peers to read, or a window's for
// them to write too (registrations cached and reused for the same buffer and
// access, the least recently used one dropped when unused), and reads and
// writes started, retried while the provider says -FI_EAGAIN, and reported
// to the device when done (a rendezvous read by read_done, a window's
// operation by window_done).
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <string>

#include "netmods/ofi/ofi_netmod.hpp"

namespace iris::netmod::ofi {

bool ofi_netmod::rma_expose(const void *buffer, std::size_t length, remote_region &region,
                            rma_access access) {
  if (!rma_ || length == 0 || (access == rma_access::read_write && !rma_writes_)) return false;
  const auto *base = static_cast<const std::byte *>(buffer);
  registration *r = nullptr;
  for (registration &c : cache_) {
    if (c.base <= base && base + length <= c.base + c.length &&
        (c.access == access || access == rma_access::read)) {
      r = &c;
      break;
    }
  }
  if (r == nullptr) r = register_region(base, length, access);
  if (r == nullptr) return false;
  ++r->uses;
  r->last_use = ++clock_;
  region.key = r->key;
  region.address = virtual_addresses_ ? reinterpret_cast<std::uint64_t>(base)
                                      : static_cast<std::uint64_t>(base - r->base);
  return true;
}

void ofi_netmod::rma_conceal(const remote_region &region) {
  for (registration &c : cache_) {
    if (c.key == region.key && c.uses > 0) {
      --c.uses;
      return;
    }
  }
}

send_status ofi_netmod::rma_read(int peer, const remote_region &region, void *to,
                                 std::size_t length, std::uint64_t cookie) {
  return start_rma(operation::kind::read, peer, region, static_cast<std::byte *>(to), length,
                   cookie);
}

send_status ofi_netmod::rma_window_read(int peer, const remote_region &region, void *to,
                                        std::size_t length, std::uint64_t cookie) {
  return start_rma(operation::kind::window_read, peer, region, static_cast<std::byte *>(to), length,
                   cookie);
}

send_status ofi_netmod::rma_write(int peer, const remote_region &region, const void *from,
                                  std::size_t length, std::uint64_t cookie) {
  if (!rma_writes_) return send_status::retry;
  return start_rma(operation::kind::window_write, peer, region,
                   const_cast<std::byte *>(static_cast<const std::byte *>(from)), length, cookie);
}

// One read or write, from the pool the rendezvous reads share.
send_status ofi_netmod::start_rma(operation::kind what, int peer, const remote_region &region,
                                  std::byte *buffer, std::size_t length, std::uint64_t cookie) {
  fi_addr_t from = FI_ADDR_NOTAVAIL;
  if (!rma_ || length > max_message_ || free_reads_ == nullptr || !address_of(peer, from)) {
    return send_status::retry;
  }
  operation *o = free_reads_;
  o->what = what;
  o->peer = peer;
  o->cookie = cookie;
  o->buffer = buffer;
  o->length = length;
  o->from = from;
  o->region = region;
  const ssize_t rc = start_operation(*o);
  // -FI_EAGAIN (the provider still connects, or is full): polls retry it.
  if (rc == -FI_EAGAIN) {
    unstarted_reads_.push_back(o);
  } else if (rc != 0) {
    return send_status::retry;  // the data comes as packets
  }
  free_reads_ = o->next_free;
  ++reads_busy_;
  return send_status::done;
}

// Starts `o` (a read, or a window's write) with the provider.
ssize_t ofi_netmod::start_operation(operation &o) {
  const lock_if guard(domain_lock_, conf_.concurrent_sends);
  if (o.what != operation::kind::window_write) {
    return fi_read(ep_, o.buffer, o.length, nullptr, o.from, o.region.address, o.region.key, &o);
  }
  // Complete only once the bytes are in the target's memory: the device
  // then tells the target (a lock's release, a PSCW notice) or lets the
  // program read them there.
  iovec piece{o.buffer, o.length};
  fi_rma_iov there{o.region.address, o.length, o.region.key};
  fi_msg_rma msg{};
  msg.msg_iov = &piece;
  msg.iov_count = 1;
  msg.addr = o.from;
  msg.rma_iov = &there;
  msg.rma_iov_count = 1;
  msg.context = &o;
  return fi_writemsg(ep_, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION);
}

// Reads the provider could not start yet; one that fails for good is
// reported, and the device asks for the data as packets.
int ofi_netmod::retry_reads(record_sink &sink) {
  int started = 0;
  std::erase_if(unstarted_reads_, [&](operation *o) {
    const ssize_t rc = start_operation(*o);
    if (rc == -FI_EAGAIN) return false;
    ++started;
    if (rc != 0) {
      read_error_ = std::string(o->what == operation::kind::window_write ? "starting a write to"
                                                                         : "starting a read of") +
                    " rank " + std::to_string(o->peer) +
                    "'s memory failed: " + fi_text(*lib_, static_cast<int>(rc));
      rma_finished(*o, sink, read_error_.c_str());
    }
    return true;
  });
  return started;
}

// A read or write ended (`why`: nullptr, or how it failed): its slot is
// free again and the device hears of it.
void ofi_netmod::rma_finished(operation &o, record_sink &sink, const char *why) {
  const operation::kind what = o.what;
  const std::uint64_t cookie = o.cookie;
  release_read(o);
  if (what == operation::kind::read) {
    sink.read_done(cookie, why);
  } else {
    sink.window_done(cookie, why);
  }
}

void ofi_netmod::release_read(operation &o) {
  o.next_free = free_reads_;
  free_reads_ = &o;
  --reads_busy_;
}

registration *ofi_netmod::register_region(const std::byte *base, std::size_t length,
                                          rma_access access) {
  if (cache_.size() >= registration_cache) {
    // Forget the least recently used registration nobody reads now.
    auto victim = cache_.end();
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->uses == 0 && (victim == cache_.end() || it->last_use < victim->last_use)) {
        victim = it;
      }
    }
    if (victim != cache_.end()) {
      const lock_if guard(domain_lock_, conf_.concurrent_sends);
      fi_close(&victim->mr->fid);
      cache_.erase(victim);
    } else if (access == rma_access::read) {
      return nullptr;  // all in use: this one goes by packets
    }
    // A window's memory is registered whatever the cache holds: it stays
    // in use until the window is freed.
  }
  fid_mr *mr = nullptr;
  const std::uint64_t requested = provider_keys_ ? 0 : ++next_key_;
  const lock_if guard(domain_lock_, conf_.concurrent_sends);
  const std::uint64_t allowed =
      access == rma_access::read_write ? FI_REMOTE_READ | FI_REMOTE_WRITE : FI_REMOTE_READ;
  if (fi_mr_reg(domain_, base, length, allowed, 0, requested, 0, &mr, nullptr) != 0) {
    return nullptr;
  }
  cache_.push_back(registration{base, length, mr, fi_mr_key(mr), access, 0, 0});
  return &cache_.back();
}

}  // namespace iris::netmod::ofi
