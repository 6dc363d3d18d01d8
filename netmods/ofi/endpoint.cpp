// The endpoint and what it owns: fabric, domain, completion queue, address
// vector, endpoint; and the receive, send and read operations with their
// buffers, allocated once (no allocation on the data path).
#include <poll.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>

#include <algorithm>
#include <string>

#include "netmods/ofi/ofi_netmod.hpp"

namespace iris::netmod::ofi {

void ofi_netmod::check(int rc, const char *call) {
  if (rc != 0)
    throw error("ofi: " + std::string(call) + " on " + provider_ +
                " failed: " + fi_text(*lib_, rc));
}

void ofi_netmod::open_endpoint() {
  check(lib_->fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
  check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_MSG;
  cq_attr.size = 2 * max_buffers + max_reads + 64;
  // With a file descriptor to wait on, where the provider has one: the
  // device's progress thread sleeps in it (wait). Without, it naps.
  cq_attr.wait_obj = FI_WAIT_FD;
  if (fi_cq_open(domain_, &cq_attr, &cq_, nullptr) == 0) {
    if (fi_control(&cq_->fid, FI_GETWAIT, &wait_fd_) != 0) wait_fd_ = -1;
  } else {
    cq_ = nullptr;
    cq_attr.wait_obj = FI_WAIT_NONE;
    check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
  }
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  av_attr.count = static_cast<std::size_t>(size_);
  check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
  check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint");
  check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind (completion queue)");
  check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind (address vector)");
  check(fi_enable(ep_), "fi_enable");
}

// fi_trywait, under the caller's guard: no completion is waiting, and the
// provider will signal wait_fd_ for the next. Under MULTIPLE a sender may
// hold the domain meanwhile.
bool ofi_netmod::wait_arm() {
  if (wait_fd_ < 0) return false;
  const lock_if guard(domain_lock_, conf_.concurrent_sends);
  if (stashed_ != 0) return false;
  fid *cq = &cq_->fid;
  return fi_trywait(fabric_, &cq, 1) == FI_SUCCESS;
}

// Sleeps in poll(2) on the completion queue's wait object, armed by
// wait_arm; reads nothing of the netmod's but the descriptor.
bool ofi_netmod::wait(int timeout_ms) {
  if (wait_fd_ < 0) return false;
  pollfd fd{wait_fd_, POLLIN, 0};
  ::poll(&fd, 1, timeout_ms);
  return true;
}

// Receive and send buffers, each one record long, from one allocation.
void ofi_netmod::make_buffers() {
  slot_bytes_ = (conf_.max_record + sizeof(wire_prefix) + 63) / 64 * 64;
  const std::size_t count = std::clamp(buffer_bytes / slot_bytes_, min_buffers, max_buffers);
  const std::size_t rx = std::min<std::size_t>(count, info_->rx_attr->size);
  const std::size_t tx = std::min<std::size_t>(count, info_->tx_attr->size);
  // Not zeroed: pages are touched only as records use them.
  arena_.reset(new std::byte[(rx + tx) * slot_bytes_]);
  rx_ops_.resize(rx);
  unposted_.reserve(rx);
  tx_ops_.resize(tx);
  for (std::size_t i = 0; i < rx; ++i) {
    rx_ops_[i].what = operation::kind::recv;
    rx_ops_[i].buffer = arena_.get() + i * slot_bytes_;
  }
  for (std::size_t i = 0; i < tx; ++i) {
    tx_ops_[i].what = operation::kind::send;
    tx_ops_[i].buffer = arena_.get() + (rx + i) * slot_bytes_;
    release_tx(tx_ops_[i]);
  }
  tx_busy_ = 0;
  read_ops_.resize(max_reads);
  unstarted_reads_.reserve(max_reads);
  for (operation &o : read_ops_) {
    o.what = operation::kind::read;
    release_read(o);
  }
  reads_busy_ = 0;
}

bool ofi_netmod::post_recv(operation &o) {
  const lock_if guard(domain_lock_, conf_.concurrent_sends);
  return fi_recv(ep_, o.buffer, slot_bytes_, nullptr, FI_ADDR_UNSPEC, &o) == 0;
}

// -FI_EAGAIN (or worse): the next poll tries again. Room is reserved.
void ofi_netmod::repost(operation &o) {
  if (!post_recv(o)) unposted_.push_back(&o);
}

void ofi_netmod::release_tx(operation &o) {
  const lock_if guard(domain_lock_, conf_.concurrent_sends);
  release_tx_held(o);
}

// release_tx with domain_lock_ held (or not needed).
void ofi_netmod::release_tx_held(operation &o) {
  o.next_free = free_tx_;
  free_tx_ = &o;
  --tx_busy_;
}

}  // namespace iris::netmod::ofi
