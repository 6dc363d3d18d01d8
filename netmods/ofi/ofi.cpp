// The OFI netmod: Iris records over a libfabric reliable-datagram endpoint
// (FI_EP_RDM). Every record is one FI_MSG message with a 16-byte prefix:
// the receiver's token (a random number it publishes only through the
// process manager, so that a stranger cannot know it), the source rank and
// a sequence number. The device keeps its own matching. Receives land in pre-posted buffers; sends
// are injected when the provider's inject size allows, else copied into a send buffer, so that the
// caller may reuse its own at once. One completion queue, polled by the progress engine, reports
// all of it.
//
// Rendezvous data is read by the receiver (fi_read) from the sender's
// registered buffer when the provider has FI_RMA; registrations are cached
// and reused for the same buffer.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "netmods/ofi/library.hpp"
#include "netmods/ofi/ofi.hpp"
#include "netmods/ofi/sequence.hpp"
#include "pmi/pmi.hpp"

namespace iris::netmod::ofi {
namespace {

constexpr const char *card_key = "iris.ofi";
constexpr std::uint32_t api_version = FI_VERSION(1, 11);
constexpr std::size_t buffer_bytes = 16 << 20;  // per direction, split into record buffers
constexpr std::size_t max_buffers = 32;
constexpr std::size_t min_buffers = 2;
constexpr std::size_t max_reads = 64;           // RMA reads in flight
constexpr std::size_t queue_depth = 128;        // asked of the provider, each way
constexpr std::size_t registration_cache = 64;  // memory registrations kept for reuse
constexpr std::size_t cq_batch = 16;
constexpr auto flush_wait = std::chrono::seconds(10);

// What precedes every record on the wire.
struct wire_prefix {
  std::uint64_t token;  // the receiver's
  std::int32_t source;
  std::uint32_t seq;  // per (source, destination) pair, from 0
};
static_assert(sizeof(wire_prefix) == 16);

// One operation libfabric holds. Its fi_context2 comes first, so the
// completion's op_context is the operation itself.
struct operation {
  enum class kind : std::uint8_t { recv, send, read };
  fi_context2 context{};
  kind what = kind::recv;
  int peer = -1;
  std::uint64_t cookie = 0;     // read: the device's
  std::byte *buffer = nullptr;  // recv, send: the record buffer; read: the destination
  std::size_t length = 0;       // read
  fi_addr_t from = FI_ADDR_NOTAVAIL;
  remote_region region{};
  operation *next_free = nullptr;
};

struct registration {
  const std::byte *base = nullptr;
  std::size_t length = 0;
  fid_mr *mr = nullptr;
  std::uint64_t key = 0;
  int uses = 0;
  std::uint64_t last_use = 0;
};

std::string fi_text(const library &lib, int rc) {
  return lib.strerror(rc < 0 ? -rc : rc);
}

std::string hex_of(const std::byte *data, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned>(data[i]);
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

bool bytes_of(std::string_view hex, std::vector<std::byte> &out) {
  if (hex.empty() || hex.size() % 2 != 0) return false;
  out.clear();
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]);
    const int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<std::byte>(hi << 4 | lo));
  }
  return true;
}

// A business card: "token:address", both hex.
std::string card_format(std::uint64_t token, const std::string &address) {
  return hex_of(reinterpret_cast<const std::byte *>(&token), sizeof(token)) + ":" + address;
}

bool card_parse(std::string_view card, std::uint64_t &token, std::vector<std::byte> &address) {
  const std::size_t colon = card.find(':');
  std::vector<std::byte> t;
  if (colon == std::string_view::npos || !bytes_of(card.substr(0, colon), t) ||
      t.size() != sizeof(token)) {
    return false;
  }
  std::memcpy(&token, t.data(), sizeof(token));
  return bytes_of(card.substr(colon + 1), address);
}

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

class ofi_netmod final : public netmod {
 public:
  ~ofi_netmod() override { close_all(); }

  std::string_view name() const override { return "ofi"; }

  void init(pmi::client &pmi, const config &conf) override {
    pmi_ = &pmi;
    conf_ = conf;
    rank_ = pmi.rank();
    size_ = pmi.size();
    if (getrandom(&token_, sizeof(token_), 0) != static_cast<ssize_t>(sizeof(token_))) {
      throw error("ofi: cannot draw a random token: " + std::string(std::strerror(errno)));
    }
    lib_ = &load_library(conf.library);
    choose_provider();
    open_endpoint();
    make_buffers();
    peers_.assign(static_cast<std::size_t>(size_), peer_state{});
    for (peer_state &p : peers_) p.in = sequencer<operation *>(rx_ops_.size());
    for (operation &o : rx_ops_) repost(o);
    std::byte name[512];
    std::size_t length = sizeof(name);
    if (const int rc = fi_getname(&ep_->fid, name, &length); rc != 0) {
      throw error("ofi: fi_getname on " + provider_ + " failed: " + fi_text(*lib_, rc));
    }
    address_ = hex_of(name, length);
    if (address_.size() > pmi::max_value_length) {
      throw error("ofi: " + provider_ + "'s endpoint address is " + std::to_string(length) +
                  " bytes, more than a business card holds");
    }
    pmi.put(card_key, card_format(token_, address_));
  }

  send_status send(int peer, std::span<const iovec> parts) override {
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
      lose(peer, "sending failed: " + fi_text(*lib_, rc));
      return send_status::retry;
    }
    ++p.out_seq;
    p.sent_any = true;
    return send_status::done;
  }

  int poll(record_sink &sink) override {
    int handled = report_lost(sink);
    if (!unposted_.empty()) std::erase_if(unposted_, [&](operation *o) { return post_recv(*o); });
    if (!unstarted_reads_.empty()) handled += retry_reads(sink);
    fi_cq_msg_entry done[cq_batch];
    const ssize_t n = fi_cq_read(cq_, done, cq_batch);
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
          release_read(*o);
          sink.read_done(o->cookie, nullptr);
          break;
      }
    }
    return handled + static_cast<int>(n);
  }

  // A provider may hold sent messages in its own buffers after reporting
  // them sent, and loses them when the endpoint closes. So each rank says
  // goodbye (an empty record, in sequence, reported done only once it is
  // delivered) to every peer it exchanged records with, and closes once
  // each goodbye is delivered and each of those peers has said goodbye too.
  void finalize() override {
    finalizing_ = true;
    quiet_sink quiet;
    const auto deadline = std::chrono::steady_clock::now() + flush_wait;
    auto in_time = [&] { return std::chrono::steady_clock::now() < deadline; };
    auto involved = [](const peer_state &p) { return !p.lost && (p.sent_any || p.heard); };
    auto waiting = [&] {
      if (tx_busy_ > 0 || reads_busy_ > 0) return true;
      return std::any_of(peers_.begin(), peers_.end(), [&](const peer_state &p) {
        return involved(p) && (!p.said_goodbye || !p.goodbye);
      });
    };
    while (waiting() && in_time()) {
      // A peer first heard from now is owed a goodbye too.
      for (std::size_t i = 0; i < peers_.size(); ++i) {
        peer_state &p = peers_[i];
        if (involved(p) && !p.said_goodbye) p.said_goodbye = say_goodbye(static_cast<int>(i));
      }
      if (poll(quiet) == 0) sched_yield();
    }
    if (waiting()) {
      std::string silent;
      for (std::size_t i = 0; i < peers_.size(); ++i) {
        const peer_state &p = peers_[i];
        if (involved(p) && !p.goodbye) silent += " " + std::to_string(i);
      }
      log("finalize: no goodbye after " + std::to_string(flush_wait.count()) + " s from rank(s)" +
          (silent.empty() ? " (none: own sends still in flight)" : silent) + "; closing anyway");
    }
    close_all();
  }

  std::string describe() const override {
    return choice() + ", inject " + std::to_string(inject_buffer_.size()) + " B, " +
           std::to_string(rx_ops_.size()) + " receive buffers of " + std::to_string(slot_bytes_) +
           " B, address " + address_;
  }

  std::string preview(const config &conf) override {
    conf_ = conf;
    lib_ = &load_library(conf.library);
    choose_provider();
    return choice() + ", libfabric from " +
           (conf.library.empty() ? std::string(default_library) : conf.library);
  }

  // What choose_provider() settled on, for describe() and preview().
  std::string choice() const {
    return "ofi: provider " + provider_ + ", domain " + domain_name_ + ", rendezvous by " +
           (rma_ ? "RMA read" : "packets");
  }

  bool rma_expose(const void *buffer, std::size_t length, remote_region &region) override {
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

  void rma_conceal(const remote_region &region) override {
    for (registration &c : cache_) {
      if (c.key == region.key && c.uses > 0) {
        --c.uses;
        return;
      }
    }
  }

  send_status rma_read(int peer, const remote_region &region, void *to, std::size_t length,
                       std::uint64_t cookie) override {
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

 private:
  struct peer_state {
    fi_addr_t address = FI_ADDR_NOTAVAIL;
    std::uint64_t token = 0;  // the peer's, which every record to it carries
    std::uint32_t out_seq = 0;
    sequencer<operation *> in{0};
    bool sent_any = false;  // this rank sent it a record
    bool heard = false;     // it sent this rank a record
    bool goodbye = false;   // it said goodbye: it sends nothing more
    bool said_goodbye = false;
    bool lost = false;
    bool reported = false;
    std::string lost_why;
  };

  // What records arriving during finalize go to: nothing needs them now.
  struct quiet_sink final : record_sink {
    const char *record_arrived(int, std::span<const std::byte>,
                               std::span<const std::byte>) override {
      return nullptr;
    }
    std::byte *body_place(int, std::span<const std::byte>, std::size_t) override { return nullptr; }
    void peer_lost(int, const char *) override {}
    void read_done(std::uint64_t, const char *) override {}
  };

  void choose_provider() {
    // RMA first: then rendezvous reads the sender's memory.
    info_ = getinfo(*lib_, conf_.provider, FI_MSG | FI_RMA | FI_READ | FI_REMOTE_READ);
    rma_ = info_ != nullptr;
    if (info_ == nullptr) info_ = getinfo(*lib_, conf_.provider, FI_MSG);
    if (info_ == nullptr) throw error("ofi: " + why_none(*lib_, conf_.provider));
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

  void check(int rc, const char *call) {
    if (rc != 0)
      throw error("ofi: " + std::string(call) + " on " + provider_ +
                  " failed: " + fi_text(*lib_, rc));
  }

  void open_endpoint() {
    check(lib_->fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
    check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_MSG;
    cq_attr.wait_obj = FI_WAIT_NONE;
    cq_attr.size = 2 * max_buffers + max_reads + 64;
    check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    av_attr.count = static_cast<std::size_t>(size_);
    check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
    check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint");
    check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind (completion queue)");
    check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind (address vector)");
    check(fi_enable(ep_), "fi_enable");
  }

  // Receive and send buffers, each one record long, from one allocation.
  void make_buffers() {
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

  // Sends `peer` the empty record, asking for completion once delivered.
  bool say_goodbye(int peer) {
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

  ssize_t start_read(operation &o) {
    return fi_read(ep_, o.buffer, o.length, nullptr, o.from, o.region.address, o.region.key, &o);
  }

  // Reads the provider could not start yet; one that fails for good is
  // reported, and the device asks for the data as packets.
  int retry_reads(record_sink &sink) {
    int started = 0;
    std::erase_if(unstarted_reads_, [&](operation *o) {
      const ssize_t rc = start_read(*o);
      if (rc == -FI_EAGAIN) return false;
      ++started;
      if (rc != 0) {
        release_read(*o);
        read_error_ =
            "starting a read of its memory failed: " + fi_text(*lib_, static_cast<int>(rc));
        sink.read_done(o->cookie, read_error_.c_str());
      }
      return true;
    });
    return started;
  }

  bool post_recv(operation &o) {
    return fi_recv(ep_, o.buffer, slot_bytes_, nullptr, FI_ADDR_UNSPEC, &o) == 0;
  }

  // -FI_EAGAIN (or worse): the next poll tries again. Room is reserved.
  void repost(operation &o) {
    if (!post_recv(o)) unposted_.push_back(&o);
  }

  void release_tx(operation &o) {
    o.next_free = free_tx_;
    free_tx_ = &o;
    --tx_busy_;
  }

  void release_read(operation &o) {
    o.next_free = free_reads_;
    free_reads_ = &o;
    --reads_busy_;
  }

  // One arrived message: check its prefix, then hand the records now in
  // turn to the device. Its buffer is posted again once handed over.
  void record_in(operation &o, std::size_t length, record_sink &sink) {
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
    if (p.lost) {
      repost(o);
      return;
    }
    o.length = length;
    switch (p.in.accept(prefix.seq, &o, [&](operation *r) {
      const std::span<const std::byte> record(r->buffer + sizeof(prefix),
                                              r->length - sizeof(prefix));
      if (record.empty()) {
        p.goodbye = true;
        repost(*r);
        return;
      }
      p.heard = true;
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
        lose(from, "more of its records came out of order than this rank has receive buffers");
        repost(o);
        break;
    }
  }

  int completion_error(record_sink &sink) {
    fi_cq_err_entry err{};
    if (fi_cq_readerr(cq_, &err, 0) <= 0) return 0;
    char provider_text[256] = {};
    const char *detail =
        fi_cq_strerror(cq_, err.prov_errno, err.err_data, provider_text, sizeof provider_text);
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
        lose(o->peer, "a send to it failed: " + why);
        report_lost(sink);
        break;
      case operation::kind::read:
        release_read(*o);
        read_error_ = "reading its memory failed: " + why;
        sink.read_done(o->cookie, read_error_.c_str());
        break;
    }
    return 1;
  }

  // The peer's address in the address vector, inserted from its card on
  // first use. False (and the peer lost) when its card is unusable.
  bool address_of(int peer, fi_addr_t &out) {
    peer_state &p = peers_[static_cast<std::size_t>(peer)];
    if (p.lost) return false;
    if (p.address != FI_ADDR_NOTAVAIL) {
      out = p.address;
      return true;
    }
    std::string card;
    try {
      card = pmi_->get(peer, card_key);
    } catch (const std::exception &e) {
      lose(peer, std::string("no ofi business card: ") + e.what());
      return false;
    }
    std::vector<std::byte> raw;
    if (!card_parse(card, p.token, raw)) {
      lose(peer,
           "its ofi business card is not 'token:address' in hex: '" + card.substr(0, 64) + "'");
      return false;
    }
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    const int inserted = fi_av_insert(av_, raw.data(), 1, &a, 0, nullptr);
    if (inserted != 1) {
      lose(peer, "fi_av_insert refused its address " + card.substr(0, 64) + ": " +
                     fi_text(*lib_, inserted < 0 ? inserted : -FI_EINVAL));
      return false;
    }
    p.address = out = a;
    return true;
  }

  registration *register_region(const std::byte *base, std::size_t length) {
    if (cache_.size() >= registration_cache) {
      // Forget the least recently used registration nobody reads now.
      auto victim = cache_.end();
      for (auto it = cache_.begin(); it != cache_.end(); ++it) {
        if (it->uses == 0 && (victim == cache_.end() || it->last_use < victim->last_use)) {
          victim = it;
        }
      }
      if (victim == cache_.end()) return nullptr;  // all in use: this one goes by packets
      fi_close(&victim->mr->fid);
      cache_.erase(victim);
    }
    fid_mr *mr = nullptr;
    const std::uint64_t requested = provider_keys_ ? 0 : ++next_key_;
    if (fi_mr_reg(domain_, base, length, FI_REMOTE_READ, 0, requested, 0, &mr, nullptr) != 0) {
      return nullptr;
    }
    cache_.push_back(registration{base, length, mr, fi_mr_key(mr), 0, 0});
    return &cache_.back();
  }

  void lose(int peer, const std::string &why) {
    peer_state &p = peers_[static_cast<std::size_t>(peer)];
    if (p.lost) return;
    p.lost = true;
    p.lost_why = why;
    ++unreported_;
  }

  int report_lost(record_sink &sink) {
    if (unreported_ == 0 || finalizing_) return 0;
    int told = 0;
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      peer_state &p = peers_[i];
      if (!p.lost || p.reported) continue;
      p.reported = true;
      --unreported_;
      ++told;
      sink.peer_lost(static_cast<int>(i), p.lost_why.c_str());
    }
    return told;
  }

  void log(const std::string &what) const {
    const std::string line = "iris: rank " + std::to_string(rank_) + ": ofi: " + what + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  }

  void close_all() {
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
    domain_ = nullptr;
    fabric_ = nullptr;
    info_ = nullptr;
  }

  const library *lib_ = nullptr;
  pmi::client *pmi_ = nullptr;
  config conf_;
  int rank_ = 0;
  int size_ = 1;
  std::uint64_t token_ = 0;
  fi_info *info_ = nullptr;
  fid_fabric *fabric_ = nullptr;
  fid_domain *domain_ = nullptr;
  fid_cq *cq_ = nullptr;
  fid_av *av_ = nullptr;
  fid_ep *ep_ = nullptr;
  std::string provider_;
  std::string domain_name_;
  std::string address_;
  bool rma_ = false;
  bool virtual_addresses_ = true;
  bool provider_keys_ = true;
  std::size_t max_message_ = 0;
  std::size_t slot_bytes_ = 0;
  std::vector<std::byte> inject_buffer_;
  std::unique_ptr<std::byte[]> arena_;
  std::vector<operation> rx_ops_;
  std::vector<operation> tx_ops_;
  std::vector<operation> read_ops_;
  std::vector<operation *> unposted_;         // receive buffers to post again
  std::vector<operation *> unstarted_reads_;  // reads the provider said -FI_EAGAIN to
  operation *free_tx_ = nullptr;
  operation *free_reads_ = nullptr;
  int tx_busy_ = 0;
  int reads_busy_ = 0;
  std::vector<peer_state> peers_;
  std::vector<registration> cache_;
  std::uint64_t clock_ = 0;
  std::uint64_t next_key_ = 0;
  std::string read_error_;
  int unreported_ = 0;
  bool finalizing_ = false;
};

}  // namespace

std::unique_ptr<netmod> create() {
  return std::make_unique<ofi_netmod>();
}

}  // namespace iris::netmod::ofi
