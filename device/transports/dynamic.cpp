#include "device/transports/dynamic.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "device/am/am.hpp"
#include "device/base/threading.hpp"
#include "device/runtime/runtime.hpp"
#include "device/transports/net.hpp"

namespace iris::device {

std::uint64_t job_hash_here() {
  return netmod::job_hash(rt->pmi->job_id());
}

void log_note(const std::string &what) {
  std::fprintf(stderr, "iris: rank %d: dynamic processes: %s\n", rt->rank, what.c_str());
}

namespace {

// Polls `net` from now on. Under MULTIPLE other threads walk the polled
// list in aside passes without the call lock: it was reserved at setup
// (transports_connect), so it does not move, and they walk only what
// polled_aside says, stored once the entry is there.
void poll_from_now(net_transport *net) {
  rt->polled.push_back(net);
  rt->polled_aside.store(rt->polled.size(), std::memory_order_release);
}

}  // namespace

net_transport *net_for_others(std::string &why) {
  // The first open netmod that reaches other jobs (tcp; not ofi yet), polled
  // from now on if no peer of the world had made it so.
  net_transport *open = nullptr;
  for (const auto &t : rt->transports) {
    auto *net = dynamic_cast<net_transport *>(t.get());
    if (net == nullptr) continue;
    if (open == nullptr) open = net;
    if (net->dynamic_card().empty()) continue;
    if (std::find(rt->polled.begin(), rt->polled.end(), net) == rt->polled.end()) {
      if (am_started()) {
        why =
            "this process's netmod for other jobs reaches no rank of its own job, and cannot be "
            "polled from now on while the progress thread runs";
        return nullptr;
      }
      poll_from_now(net);
    }
    return net;
  }
  if (open != nullptr) return open;  // its empty card is refused with a clear line
  if (rt->transport_config.net.dynamic_peers == 0) {
    why = "IRIS_DYNAMIC_PEERS is 0";
    return nullptr;
  }
  if (am_started()) {
    why = "this process has no netmod open, and none can be opened while the progress thread runs";
    return nullptr;
  }
  try {
    // The world's peers are all on this node: no netmod is open yet.
    // Each netmod of the list in turn, until one reaches other jobs.
    std::unique_ptr<net_transport> net;
    std::string failures;
    for (const std::string &name : rt->transport_config.net.netmods) {
      try {
        net = std::make_unique<net_transport>(*rt, name);
      } catch (const std::exception &e) {  // a netmod's, a setting's or the launcher's
        failures += std::string("; ") + e.what();
        continue;
      }
      if (!net->dynamic_card().empty()) break;
      net->finalize();
      net.reset();
      failures += "; " + name + " cannot reach other jobs";
    }
    if (!net) {
      why = "no netmod of IRIS_NETMOD reaches processes of other jobs" + failures;
      return nullptr;
    }
    net_transport *made = net.get();
    rt->transports.push_back(std::move(net));
    poll_from_now(made);
    // The sleeping wait was chosen for the transports of MPI_Init, whose
    // arrivals ring the bell: the netmod's do not.
    rt->sleeper = nullptr;
    return made;
  } catch (const std::exception &e) {
    why = e.what();
    return nullptr;
  }
}

void process_id(int vc, std::uint64_t &job, int &rank) {
  job = job_hash_here();
  rank = vc;
  if (vc < rt->size) return;
  for (const auto &[key, index] : rt->foreign) {
    if (index == vc) {
      job = key.first;
      rank = key.second;
      return;
    }
  }
}

int known_peer(std::uint64_t job, int rank) {
  if (job == job_hash_here()) return rank >= 0 && rank < rt->size ? rank : -1;
  const auto found = rt->foreign.find({job, rank});
  return found != rt->foreign.end() ? found->second : -1;
}

int peer_of(std::uint64_t job, int rank, std::string_view card, std::string &why) {
  if (job == job_hash_here()) {
    if (rank < 0 || rank >= rt->size) {
      why = "rank " + std::to_string(rank) + " is not in this job of " + std::to_string(rt->size);
      return -1;
    }
    return rank;
  }
  net_transport *net = net_for_others(why);
  if (net == nullptr) return -1;
  const auto key = std::make_pair(job, rank);
  if (const auto found = rt->foreign.find(key); found != rt->foreign.end()) {
    vc &v = rt->vcs[static_cast<std::size_t>(found->second)];
    if (!card.empty() && !net->peer_add(v, job, rank, card)) {
      why = "the netmod cannot read the card of a process of another job";
      return -1;
    }
    return found->second;
  }
  if (rt->vcs.size() == rt->vcs.capacity()) {
    why = "this process already knows IRIS_DYNAMIC_PEERS (" +
          std::to_string(rt->transport_config.net.dynamic_peers) + ") processes of other jobs";
    return -1;
  }
  const int index = static_cast<int>(rt->vcs.size());
  rt->vcs.emplace_back();  // within the capacity reserved at MPI_Init: no VC moves
  vc &v = rt->vcs.back();
  v.world_rank = index;
  if (!net->peer_add(v, job, rank, card)) {
    rt->vcs.pop_back();
    why = card.empty() ? "the netmod cannot take a process of another job"
                       : "the netmod cannot read the card of a process of another job";
    return -1;
  }
  rt->foreign.emplace(key, index);
  rt->others.store(index + 1 - rt->size, std::memory_order_relaxed);
  return index;
}

}  // namespace iris::device
