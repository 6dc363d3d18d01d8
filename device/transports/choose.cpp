// Which transport reaches which peer, chosen once at setup: oneself through
// self; ranks of this node through shm (unless IRIS_SHM=0 or it is alone:
// rings per pair on small nodes, receive queues and pooled rings on large);
// every other rank through net, the netmod adapter, one per netmod this rank
// offers.
//
// A netmod per peer (IRIS_NETMOD=ofi,tcp): each rank opens the netmods of
// its list that start here and puts them, in its order, as its offer card.
// A pair of ranks takes the first netmod of the lower rank's offer that the
// higher one offers too and that reaches (netmod::reaches: tcp's routes of
// both hosts lead to the other's card). Both ranks compute the same choice
// from the same cards, so a pair's records, RMA reads and windows always
// meet one netmod at both ends. IRIS_NETMOD=auto (the default of a build
// of several) offers every netmod built that starts here, and a pair of
// nodes takes the one their leaders measured faster (probe.cpp).
#include "device/core/transport.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "device/base/text.hpp"
#include "device/base/threading.hpp"
#include "device/runtime/runtime.hpp"
#include "device/transports/net.hpp"
#include "device/transports/probe.hpp"
#include "device/transports/self.hpp"
#include "device/transports/shm.hpp"

namespace iris::device {
namespace {

// The card of the netmods a rank offers, in its order ("ofi,tcp"), after
// "auto:" when it probes (IRIS_NETMOD=auto).
constexpr const char *offer_key = "iris.netmods";
constexpr std::string_view probing_mark = "auto:";

std::vector<std::string> split_names(std::string_view text) {
  std::vector<std::string> names;
  for (const std::string_view name : split(text, ',')) names.emplace_back(name);
  return names;
}

std::string join_names(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

// Opens the netmods of IRIS_NETMOD. One name: it must start. Of a list,
// those that cannot start here are left out of the offer (IRIS_DEBUG says
// why); at least one must start.
void nets_open(runtime &r) {
  const auto &names = r.transport_config.net.netmods;
  std::vector<std::string> offered;
  std::string failures;
  for (const std::string &name : names) {
    try {
      r.transports.push_back(std::make_unique<net_transport>(r, name));
      offered.push_back(name);
    } catch (const netmod::error &e) {
      if (names.size() == 1) throw;
      failures += std::string(failures.empty() ? "" : "; ") + e.what();
      if (r.config.debug) {
        std::fprintf(stderr, "iris: rank %d: netmod %s is not offered: %s\n", r.rank, name.c_str(),
                     e.what());
      }
    }
  }
  if (offered.empty()) {
    throw netmod::error(netmods_none_start(r.transport_config, failures));
  }
  r.pmi->put(offer_key,
             (r.transport_config.net.probe ? std::string(probing_mark) : "") + join_names(offered));
}

// The probe's fence is for every rank or none: each rank compares its
// setting with rank 0's (whose offer card says "auto:" when it probes).
// The rank that differs stops MPI_Init with one line, which ends the job.
void check_probing_agrees(runtime &r) {
  if (r.rank == 0) return;
  const bool first_probes = r.pmi->get(0, offer_key).starts_with(probing_mark);
  if (first_probes == r.transport_config.net.probe) return;
  const int prober = first_probes ? 0 : r.rank;
  throw std::runtime_error("rank " + std::to_string(prober) + " takes IRIS_NETMOD=auto and rank " +
                           std::to_string(first_probes ? r.rank : 0) +
                           " does not: auto must be every rank's setting or none's (an empty "
                           "IRIS_NETMOD is auto in a build of several netmods)");
}

// The netmods `peer` offers, in its order.
std::vector<std::string> offer_of(runtime &r, int peer) {
  std::string offer = r.pmi->get(peer, offer_key);
  if (offer.starts_with(probing_mark)) offer.erase(0, probing_mark.size());
  return split_names(offer);
}

// The netmods of the pair (this rank, `peer`) that both offer and that
// reach it, in the lower rank's order: all of them when `all`, else the
// first alone (each reaches() may read cards). `first` and `second` get
// the two offers, `unreached` why a shared netmod does not reach.
std::vector<net_transport *> pair_candidates(runtime &r, const std::vector<net_transport *> &nets,
                                             int peer, bool all, std::vector<std::string> &first,
                                             std::vector<std::string> &second,
                                             std::string &unreached) {
  std::vector<std::string> mine;
  for (const net_transport *n : nets) mine.emplace_back(n->netmod_name());
  const std::vector<std::string> theirs = offer_of(r, peer);
  const bool lower = r.rank < peer;
  first = lower ? mine : theirs;
  second = lower ? theirs : mine;
  std::vector<net_transport *> shared;
  for (const std::string &name : first) {
    if (std::find(second.begin(), second.end(), name) == second.end()) continue;
    net_transport *n = *std::find_if(
        nets.begin(), nets.end(), [&](const net_transport *t) { return t->netmod_name() == name; });
    std::string why_not;
    if (n->reaches(peer, why_not)) {
      shared.push_back(n);
      if (!all) break;
    } else {
      unreached += (unreached.empty() ? "" : "; ") + name + " does not reach it: " + why_not;
    }
  }
  return shared;
}

// The net transport of the pair (this rank, `peer`): the one the probe of
// their nodes kept (`verdict`, IRIS_NETMOD=auto), else the first netmod of
// the lower rank's offer that the other offers too and that reaches.
net_transport *net_for_peer(runtime &r, const std::vector<net_transport *> &nets, int peer,
                            const probe_verdict &verdict, std::string &why) {
  if (r.transport_config.net.netmods.size() == 1) {
    why = "the one netmod of IRIS_NETMOD";
    return nets.front();
  }
  // The others of the list did not start here (ofi declining under auto):
  // every pair with this rank takes this one or none. It reads only the
  // peer's offer, not the netmod's cards that reaches() reads (with them,
  // auto started 64 ranks on one host 0.36 s slower than one name); a
  // peer that lacks it stops MPI_Init below.
  if (nets.size() == 1) {
    const std::vector<std::string> theirs = offer_of(r, peer);
    if (std::find(theirs.begin(), theirs.end(), nets.front()->netmod_name()) != theirs.end()) {
      why = "the one netmod this rank offers";
      return nets.front();
    }
  }
  std::vector<std::string> first;
  std::vector<std::string> second;
  std::string unreached;
  const std::vector<net_transport *> shared =
      pair_candidates(r, nets, peer, !verdict.netmod.empty(), first, second, unreached);
  if (shared.empty()) {
    const std::string low = std::to_string(std::min(r.rank, peer));
    const std::string high = std::to_string(std::max(r.rank, peer));
    if (!unreached.empty()) {
      throw std::runtime_error("ranks " + low + " and " + high +
                               " share no netmod that reaches: " + unreached + " (IRIS_NETMOD)");
    }
    throw std::runtime_error("ranks " + low + " and " + high + " share no netmod: rank " + low +
                             " offers " + join_names(first) + ", rank " + high + " offers " +
                             join_names(second) + " (IRIS_NETMOD)");
  }
  net_transport *chosen = shared.front();
  why = "the first of the lower rank's offer that both offer";
  if (!unreached.empty()) why += " and that reaches";
  for (net_transport *n : shared) {
    if (!verdict.netmod.empty() && n->netmod_name() == verdict.netmod) {
      chosen = n;
      why = "probe: " + verdict.text;
    }
  }
  if (r.config.debug && !unreached.empty()) {
    std::fprintf(stderr, "iris: rank %d: peer %d: %s; %s does\n", r.rank, peer, unreached.c_str(),
                 std::string(chosen->netmod_name()).c_str());
  }
  return chosen;
}

}  // namespace

std::size_t dense_ring_size(int local_size) {
  constexpr std::size_t per_rank = std::size_t{8} << 20;
  constexpr std::size_t most = std::size_t{4} << 20;
  const std::size_t share = per_rank / static_cast<std::size_t>(std::max(local_size - 1, 1));
  std::size_t ring = shm_ring_floor;
  while (ring * 2 <= std::min(share, most)) ring *= 2;
  return ring;
}

void transports_settle(settings &device, transport_settings &s) {
  shm::check_ring_capacity(s.shm.ring_size);
  shm::check_node_shape({0, s.shm.queue_cells, s.shm.ring_size, s.shm.pool_size});
  // A record must fit a ring. (On large nodes it must fit a receive queue
  // too: shm_queue_transport caps the limits of its peers.)
  const std::size_t record_payload =
      shm::max_record_payload(s.shm.ring_size) - sizeof(packet_header);
  s.shm.fragment_size = std::min(s.shm.fragment_size, record_payload);
  device.eager_limit = std::min(device.eager_limit, record_payload);
}

void transports_open(runtime &r) {
  auto self = std::make_unique<self_transport>();
  vc &me = r.vcs[static_cast<std::size_t>(r.rank)];
  me.via = self.get();
  me.flow_controlled = false;
  me.eager_limit = r.config.eager_limit;
  me.window = r.config.eager_window;
  r.transports.push_back(std::move(self));

  const int node = r.pmi->node_of(r.rank);
  std::vector<int> local_ranks;
  int local_index = 0;
  bool remote = false;
  for (int peer = 0; peer < r.size; ++peer) {
    if (r.pmi->node_of(peer) == node) {
      if (peer == r.rank) local_index = static_cast<int>(local_ranks.size());
      local_ranks.push_back(peer);
    }
    remote = remote ||
             (peer != r.rank && (!r.transport_config.shm.enabled || r.pmi->node_of(peer) != node));
  }
  // The netmods put their cards first; then the node segment is created.
  if (remote) nets_open(r);
  // Few ranks: a ring per ordered pair, reserved at start-up; more: receive
  // queues and pooled pair rings (shm/README.md).
  const int local_size = static_cast<int>(local_ranks.size());
  const auto &node_memory = r.transport_config.shm;
  if (node_memory.enabled && local_size > 1 && local_size <= node_memory.dense_ranks) {
    // Settled against the floor, so a larger ring only gives more room.
    if (node_memory.ring_chosen) r.transport_config.shm.ring_size = dense_ring_size(local_size);
    // Under MULTIPLE the rings let threads send to different peers at once.
    if (threads_enabled) {
      r.transports.push_back(
          std::make_unique<shm_shared_transport>(r, std::move(local_ranks), local_index));
    } else {
      r.transports.push_back(
          std::make_unique<shm_transport>(r, std::move(local_ranks), local_index));
    }
  } else if (node_memory.enabled && local_size > 1) {
    if (threads_enabled) {
      r.transports.push_back(
          std::make_unique<shm_queue_shared_transport>(r, std::move(local_ranks), local_index));
    } else {
      r.transports.push_back(
          std::make_unique<shm_queue_transport>(r, std::move(local_ranks), local_index));
    }
  }
}

void transports_connect(runtime &r) {
  // Polled in this order: the rings (cheap to look at) before the netmods.
  // Self has nothing to poll. Room for a netmod that net_for_others polls
  // later too (each of IRIS_NETMOD's, or one opened then), so that `polled`
  // never moves under aside passes (MULTIPLE).
  r.polled.reserve(r.transports.size() + r.transport_config.net.netmods.size() + 1);
  std::vector<net_transport *> nets;
  for (const auto &t : r.transports) {
    if (auto *shm = dynamic_cast<shm_transport *>(t.get())) {
      shm->connect(r);
      r.polled.insert(r.polled.begin(), shm);
    } else if (auto *queues = dynamic_cast<shm_queue_transport *>(t.get())) {
      queues->connect(r);
      r.polled.insert(r.polled.begin(), queues);
    } else if (auto *net = dynamic_cast<net_transport *>(t.get())) {
      nets.push_back(net);
    }
  }
  if (nets.empty()) return;
  const int node = r.pmi->node_of(r.rank);
  // IRIS_NETMOD=auto: the leaders of the nodes measure, and every rank
  // fences again.
  std::vector<int> leader;
  std::vector<std::pair<std::pair<int, int>, probe_verdict>> verdicts;
  check_probing_agrees(r);
  if (r.transport_config.net.probe) {
    leader = node_leaders(r);
    probe_leaders(r, leader, [&](int peer) {
      std::vector<std::string> first;
      std::vector<std::string> second;
      std::string unreached;
      return pair_candidates(r, nets, peer, true, first, second, unreached);
    });
  }
  std::vector<bool> used(nets.size(), false);
  for (int peer = 0; peer < r.size; ++peer) {
    if (peer == r.rank || (r.transport_config.shm.enabled && r.pmi->node_of(peer) == node))
      continue;
    probe_verdict verdict;
    if (!leader.empty()) {
      const int a = leader[static_cast<std::size_t>(r.rank)];
      const int b = leader[static_cast<std::size_t>(peer)];
      if (a != b) verdict = probe_verdict_of(r, std::min(a, b), std::max(a, b), verdicts);
    }
    std::string why;
    net_transport *n = net_for_peer(r, nets, peer, verdict, why);
    n->take(r.vcs[static_cast<std::size_t>(peer)], std::move(why));
    used[static_cast<std::size_t>(std::find(nets.begin(), nets.end(), n) - nets.begin())] = true;
  }
  // A netmod no peer took is not polled: no rank of the world sends to it
  // (net_for_others polls it when processes of other jobs come through it).
  for (std::size_t i = 0; i < nets.size(); ++i) {
    if (used[i]) r.polled.push_back(nets[i]);
  }
}

}  // namespace iris::device
