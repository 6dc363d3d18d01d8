// Which provider: whether to start at all under IRIS_NETMOD=auto, the hints
// every provider must satisfy (RMA asked first, then messages alone), what
// the chosen one allows, and when none fits, one line naming each provider
// libfabric has here and what it lacks.
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include "netmods/ofi/ofi_netmod.hpp"

namespace iris::netmod::ofi {

namespace {

// The hints every provider must satisfy; `caps` says whether RMA is asked.
fi_info *hints_for(const library &lib, const std::string &provider, std::uint64_t caps) {
  fi_info *hints = lib.dupinfo(nullptr);
  if (hints == nullptr) throw error("ofi: fi_allocinfo failed: out of memory");
  hints->caps = caps;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  // Queue depths for what Iris keeps in flight: providers size their own
  // buffer pools from these, and their defaults cost tens of MiB a rank.
  hints->tx_attr->size = queue_depth;
  hints->rx_attr->size = queue_depth;
  if (!provider.empty()) hints->fabric_attr->prov_name = strdup(provider.c_str());
  return hints;
}

fi_info *getinfo(const library &lib, const std::string &provider, std::uint64_t caps) {
  fi_info *hints = hints_for(lib, provider, caps);
  fi_info *found = nullptr;
  const int rc = lib.getinfo(api_version, nullptr, nullptr, 0, hints, &found);
  lib.freeinfo(hints);
  return rc == 0 ? found : nullptr;
}

// Why no provider fits: each provider libfabric has here, and what it lacks.
std::string why_none(const library &lib, const std::string &provider) {
  fi_info *all = nullptr;
  if (lib.getinfo(api_version, nullptr, nullptr, 0, nullptr, &all) != 0 || all == nullptr) {
    return "libfabric found no provider at all on this host" +
           std::string(provider.empty() ? "" : " (IRIS_OFI_PROVIDER=" + provider + ")");
  }
  // A provider has many entries (one per domain and endpoint type): its
  // entry that came closest says why.
  std::map<std::string, std::pair<int, std::string>> verdicts;
  bool named_found = false;
  for (const fi_info *i = all; i != nullptr; i = i->next) {
    const std::string name = i->fabric_attr->prov_name != nullptr ? i->fabric_attr->prov_name : "?";
    int closeness = 0;
    std::string why;
    if (!provider.empty() && name != provider) {
      why = "not the provider IRIS_OFI_PROVIDER names";
    } else if (i->ep_attr->type != FI_EP_RDM) {
      closeness = 1;
      why = "no reliable-datagram endpoint (FI_EP_RDM)";
    } else if ((i->caps & FI_MSG) == 0) {
      closeness = 2;
      why = "no messages (FI_MSG)";
    } else if ((i->domain_attr->mr_mode & (FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_RAW)) != 0) {
      closeness = 3;
      why = "needs local, endpoint-bound or raw memory registration, which Iris does not do";
    } else if ((i->mode & ~(FI_CONTEXT | FI_CONTEXT2)) != 0) {
      closeness = 3;
      why = "needs an operating mode Iris does not provide";
    } else {
      closeness = 4;
      why = "refused Iris's request (FI_EP_RDM, FI_MSG, FI_THREAD_DOMAIN)";
    }
    named_found = named_found || name == provider;
    auto [it, fresh] = verdicts.try_emplace(name, closeness, why);
    if (!fresh && closeness > it->second.first) it->second = {closeness, why};
  }
  lib.freeinfo(all);
  std::string found;
  for (const auto &[name, verdict] : verdicts) {
    found += (found.empty() ? "" : "; ") + name;
    if (provider.empty() || named_found) found += ": " + verdict.second;
  }
  if (!provider.empty() && !named_found) {
    return "IRIS_OFI_PROVIDER=" + provider +
           " is not a provider libfabric has here (found: " + found + ")";
  }
  return "no libfabric provider fits" +
         std::string(provider.empty() ? "" : " (IRIS_OFI_PROVIDER=" + provider + ")") + ": " +
         found;
}

// A device that a libfabric provider drives, or empty: an RDMA device
// (verbs, efa, usnic, psm3), HPE Slingshot's cxi, Omni-Path's hfi1.
std::string fabric_device() {
  std::error_code ec;
  for (const char *dir : {"/sys/class/infiniband", "/sys/class/cxi"}) {
    for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
      return entry.path().string();
    }
  }
  for (const auto &entry : std::filesystem::directory_iterator("/dev", ec)) {
    if (entry.path().filename().string().starts_with("hfi1_")) return entry.path().string();
  }
  return {};
}

}  // namespace

// Under IRIS_NETMOD=auto, on a host with no fabric device, only providers
// over sockets (tcp;ofi_rxm, udp;ofi_rxd, shm) fit, and none beats the tcp
// netmod; yet libfabric's start alone costs each rank about 0.5 s here
// (README.md). So ofi declines, unless a provider is named.
void ofi_netmod::decline_without_fabric(const config &conf) const {
  if (!conf.among_others || !settings_.provider.empty()) return;
  if (const char *named = std::getenv("FI_PROVIDER"); named != nullptr && *named != '\0') return;
  if (!fabric_device().empty()) return;
  throw error(
      "ofi: no fabric device here (nothing in /sys/class/infiniband or /sys/class/cxi, no "
      "/dev/hfi1_*), so IRIS_NETMOD=auto leaves ofi out: its start would cost each rank about "
      "0.5 s for what tcp carries as fast (IRIS_OFI_PROVIDER or FI_PROVIDER offers it anyway)");
}

void ofi_netmod::choose_provider() {
  // RMA first: then rendezvous reads the sender's memory, and one-sided
  // windows' puts and gets go without the target's help.
  info_ = getinfo(*lib_, settings_.provider,
                  FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE);
  rma_writes_ = info_ != nullptr;
  if (info_ == nullptr) {
    info_ = getinfo(*lib_, settings_.provider, FI_MSG | FI_RMA | FI_READ | FI_REMOTE_READ);
  }
  rma_ = info_ != nullptr;
  if (info_ == nullptr) info_ = getinfo(*lib_, settings_.provider, FI_MSG);
  if (info_ == nullptr) throw error("ofi: " + why_none(*lib_, settings_.provider));
  provider_ = info_->fabric_attr->prov_name;
  domain_name_ = info_->domain_attr->name != nullptr ? info_->domain_attr->name : "?";
  virtual_addresses_ = (info_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
  provider_keys_ = (info_->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
  max_message_ = info_->ep_attr->max_msg_size;
  const std::size_t inject = std::min<std::size_t>(info_->tx_attr->inject_size, 4096);
  inject_buffer_.assign(inject, std::byte{0});
  if (max_message_ < conf_.max_record + sizeof(wire_prefix)) {
    throw error("ofi: " + provider_ + " carries messages of at most " +
                std::to_string(max_message_) + " bytes, and Iris's records need " +
                std::to_string(conf_.max_record + sizeof(wire_prefix)) +
                " (lower IRIS_NET_FRAGMENT_SIZE and IRIS_NET_EAGER_LIMIT)");
  }
}

// What choose_provider() settled on, for describe() and preview().
std::string ofi_netmod::choice() const {
  return "ofi: provider " + provider_ + ", domain " + domain_name_ + ", rendezvous by " +
         (rma_ ? "RMA read" : "packets") + ", windows by " +
         (rma_writes_ ? "RMA" : "active messages");
}

}  // namespace iris::netmod::ofi
