// The OFI netmod's entry points (ofi_netmod.hpp has the class and the map of
// its files): init, finalize, and what it says about itself.
#include "netmods/ofi/ofi.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <sched.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "netmods/ofi/ofi_netmod.hpp"
#include "pmi/pmi.hpp"

namespace iris::netmod::ofi {

std::string fi_text(const library &lib, int rc) {
  return lib.strerror(rc < 0 ? -rc : rc);
}

void ofi_netmod::init(pmi::client &pmi, const config &conf) {
  join(pmi, conf);
  settings_ = settings_load();
  decline_without_fabric(conf);
  if (getrandom(&token_, sizeof(token_), 0) != static_cast<ssize_t>(sizeof(token_))) {
    throw error("ofi: cannot draw a random token: " + std::string(std::strerror(errno)));
  }
  lib_ = &load_library(settings_.library);
  choose_provider();
  open_endpoint();
  make_buffers();
  peers_.assign(static_cast<std::size_t>(size_), peer_state{});
  losses_.resize(static_cast<std::size_t>(size_));
  for (peer_state &p : peers_) p.in = sequencer<operation *>(rx_ops_.size());
  for (operation &o : rx_ops_) repost(o);
  std::byte name[512];
  std::size_t length = sizeof(name);
  if (const int rc = fi_getname(&ep_->fid, name, &length); rc != 0) {
    throw error("ofi: fi_getname on " + provider_ + " failed: " + fi_text(*lib_, rc));
  }
  address_ = hex_encode({name, length});
  if (address_.size() > pmi::max_value_length) {
    throw error("ofi: " + provider_ + "'s endpoint address is " + std::to_string(length) +
                " bytes, more than a business card holds");
  }
  pmi.put(card_key, card_format(token_, address_));
}

// A provider may hold sent messages in its own buffers after reporting
// them sent, and loses them when the endpoint closes. So each rank says
// goodbye (an empty record, in sequence, reported done only once it is
// delivered) to every peer it exchanged records with, and closes once
// each goodbye is delivered and each of those peers has said goodbye too.
void ofi_netmod::finalize() {
  finalizing_ = true;
  quiet_sink quiet;
  const auto deadline = std::chrono::steady_clock::now() + flush_wait;
  auto in_time = [&] { return std::chrono::steady_clock::now() < deadline; };
  // A peer this rank exchanged records with, and has not lost.
  auto involved = [&](std::size_t i) {
    const peer_state &p = peers_[i];
    return !losses_.lost(static_cast<int>(i)) && (p.sent_any || p.heard);
  };
  auto waiting = [&] {
    if (tx_busy_ > 0 || reads_busy_ > 0) return true;
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      if (involved(i) && (!peers_[i].said_goodbye || !peers_[i].goodbye)) return true;
    }
    return false;
  };
  while (waiting() && in_time()) {
    // A peer first heard from now is owed a goodbye too.
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      peer_state &p = peers_[i];
      if (involved(i) && !p.said_goodbye) p.said_goodbye = say_goodbye(static_cast<int>(i));
    }
    if (poll(quiet) == 0) sched_yield();
  }
  if (waiting()) {
    std::string silent;
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      if (involved(i) && !peers_[i].goodbye) silent += " " + std::to_string(i);
    }
    log("finalize: no goodbye after " + std::to_string(flush_wait.count()) + " s from rank(s)" +
        (silent.empty() ? " (none: own sends still in flight)" : silent) + "; closing anyway");
  }
  close_all();
}

std::string ofi_netmod::describe() const {
  return choice() + ", inject " + std::to_string(inject_buffer_.size()) + " B, " +
         std::to_string(rx_ops_.size()) + " receive buffers of " + std::to_string(slot_bytes_) +
         " B, address " + address_;
}

std::string ofi_netmod::preview(const config &conf) {
  conf_ = conf;
  settings_ = settings_load();
  decline_without_fabric(conf);
  lib_ = &load_library(settings_.library);
  choose_provider();
  return choice() + ", libfabric from " +
         (settings_.library.empty() ? std::string(default_library) : settings_.library);
}

void ofi_netmod::close_all() {
  for (registration &r : cache_) fi_close(&r.mr->fid);
  cache_.clear();
  if (ep_ != nullptr) fi_close(&ep_->fid);
  if (av_ != nullptr) fi_close(&av_->fid);
  if (cq_ != nullptr) fi_close(&cq_->fid);
  if (domain_ != nullptr) fi_close(&domain_->fid);
  if (fabric_ != nullptr) fi_close(&fabric_->fid);
  if (info_ != nullptr) lib_->freeinfo(info_);
  ep_ = nullptr;
  av_ = nullptr;
  cq_ = nullptr;
  wait_fd_ = -1;
  domain_ = nullptr;
  fabric_ = nullptr;
  info_ = nullptr;
}

std::unique_ptr<netmod> create() {
  return std::make_unique<ofi_netmod>();
}

}  // namespace iris::netmod::ofi
