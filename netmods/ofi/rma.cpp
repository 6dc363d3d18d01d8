// RMA: a sender's buffer registered for peers to read (registrations cached
// and reused for the same buffer, the least recently used one dropped when
// unused), and reads started, retried while the provider says -FI_EAGAIN,
// and reported to the device when done.
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <string>

#include "netmods/ofi/ofi_netmod.hpp"

namespace iris::netmod::ofi {

bool ofi_netmod::rma_expose(const void *buffer, std::size_t length, remote_region &region) {
  if (!rma_ || length == 0) return false;
  const auto *base = static_cast<const std::byte *>(buffer);
  registration *r = nullptr;
  for (registration &c : cache_) {
    if (c.base <= base && base + length <= c.base + c.length) {
      r = &c;
      break;
    }
  }
  if (r == nullptr) r = register_region(base, length);
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
  fi_addr_t from = FI_ADDR_NOTAVAIL;
  if (!rma_ || length > max_message_ || free_reads_ == nullptr || !address_of(peer, from)) {
    return send_status::retry;
  }
  operation *o = free_reads_;
  o->peer = peer;
  o->cookie = cookie;
  o->buffer = static_cast<std::byte *>(to);
  o->length = length;
  o->from = from;
  o->region = region;
  const ssize_t rc = start_read(*o);
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

ssize_t ofi_netmod::start_read(operation &o) {
  const lock_if guard(domain_lock_, conf_.concurrent_sends);
  return fi_read(ep_, o.buffer, o.length, nullptr, o.from, o.region.address, o.region.key, &o);
}

// Reads the provider could not start yet; one that fails for good is
// reported, and the device asks for the data as packets.
int ofi_netmod::retry_reads(record_sink &sink) {
  int started = 0;
  std::erase_if(unstarted_reads_, [&](operation *o) {
    const ssize_t rc = start_read(*o);
    if (rc == -FI_EAGAIN) return false;
    ++started;
    if (rc != 0) {
      release_read(*o);
      read_error_ = "starting a read of its memory failed: " + fi_text(*lib_, static_cast<int>(rc));
      sink.read_done(o->cookie, read_error_.c_str());
    }
    return true;
  });
  return started;
}

void ofi_netmod::release_read(operation &o) {
  o.next_free = free_reads_;
  free_reads_ = &o;
  --reads_busy_;
}

registration *ofi_netmod::register_region(const std::byte *base, std::size_t length) {
  if (cache_.size() >= registration_cache) {
    // Forget the least recently used registration nobody reads now.
    auto victim = cache_.end();
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->uses == 0 && (victim == cache_.end() || it->last_use < victim->last_use)) {
        victim = it;
      }
    }
    if (victim == cache_.end()) return nullptr;  // all in use: this one goes by packets
    const lock_if guard(domain_lock_, conf_.concurrent_sends);
    fi_close(&victim->mr->fid);
    cache_.erase(victim);
  }
  fid_mr *mr = nullptr;
  const std::uint64_t requested = provider_keys_ ? 0 : ++next_key_;
  const lock_if guard(domain_lock_, conf_.concurrent_sends);
  if (fi_mr_reg(domain_, base, length, FI_REMOTE_READ, 0, requested, 0, &mr, nullptr) != 0) {
    return nullptr;
  }
  cache_.push_back(registration{base, length, mr, fi_mr_key(mr), 0, 0});
  return &cache_.back();
}

}  // namespace iris::netmod::ofi
