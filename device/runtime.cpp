// MPI_Init and MPI_Finalize: find the job through pmi/, set up the node's
// shared-memory segment, one VC per peer, and the predefined communicators.
#include "device/runtime.hpp"

#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "device/errors.hpp"
#include "include/mpi.h"

namespace iris::device {

runtime *rt = nullptr;

namespace {

struct node_layout {
  std::vector<int> local_ranks;  // world ranks on this node, ascending
  int local_index = 0;           // this process's place in local_ranks
};

node_layout layout_of(const pmi::client &pmi) {
  node_layout layout;
  const int node = pmi.node_of(pmi.rank());
  for (int r = 0; r < pmi.size(); ++r) {
    if (pmi.node_of(r) != node) continue;
    if (r == pmi.rank()) layout.local_index = static_cast<int>(layout.local_ranks.size());
    layout.local_ranks.push_back(r);
  }
  return layout;
}

int online_cores() {
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

// A word each process publishes the address of, so that a peer can check at
// start-up whether the kernel lets it read this process's memory (CMA).
const std::uint64_t cma_probe_word = 0x49726973434d4121ULL;  // "IrisCMA!"

void cma_card_put(pmi::client &pmi) {
  char card[64];
  std::snprintf(card, sizeof(card), "%llx:%llx", static_cast<unsigned long long>(getpid()),
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(&cma_probe_word)));
  pmi.put("iris.cma", card);
}

// Reads the probe word of local peer `peer`. False when the kernel refuses
// (containers, Yama ptrace policy): rendezvous then uses the pipeline.
bool cma_permitted(pmi::client &pmi, int peer) {
  unsigned long long pid = 0;
  unsigned long long address = 0;
  const std::string card = pmi.get(peer, "iris.cma");
  if (std::sscanf(card.c_str(), "%llx:%llx", &pid, &address) != 2) return false;
  std::uint64_t word = 0;
  iovec local{&word, sizeof(word)};
  iovec remote{reinterpret_cast<void *>(address), sizeof(word)};
  return process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0) ==
             static_cast<ssize_t>(sizeof(word)) &&
         word == cma_probe_word;
}

// Creates (local index 0) or attaches the node's segment. The PMI fence
// between create and attach orders them.
void shm_setup(runtime &r, const node_layout &layout) {
  const int local_size = static_cast<int>(layout.local_ranks.size());
  const bool shared = r.config.use_shm && local_size > 1;
  const shm::segment_shape shape{local_size, r.config.shm_ring_size};
  const std::string name =
      "/" + pmi::shm_name_prefix(r.pmi->job_id()) + "node" + std::to_string(r.pmi->node_of(r.rank));
  try {
    if (layout.local_index == 0 && shared) r.segment = shm::segment::create(name, shape);
    if (shared) cma_card_put(*r.pmi);
    r.pmi->commit();
    r.pmi->fence();
    if (layout.local_index != 0 && shared) r.segment = shm::segment::attach(name, shape);
  } catch (const std::exception &e) {
    fatal("MPI_Init", "%s", e.what());
  }
  if (!r.segment) return;
  r.segment->mark_attached();
  bool cma = false;
  try {
    const int probe_peer =
        layout.local_ranks[static_cast<std::size_t>((layout.local_index + 1) % local_size)];
    cma = cma_permitted(*r.pmi, probe_peer);
  } catch (const std::exception &) {
    cma = false;  // no card: use the pipeline
  }
  for (int i = 0; i < local_size; ++i) {
    if (i == layout.local_index) continue;
    const int peer = layout.local_ranks[static_cast<std::size_t>(i)];
    vc &v = r.vcs[static_cast<std::size_t>(peer)];
    v.via = transport::shm;
    v.tx = r.segment->sender(layout.local_index, i);
    v.fragment = r.config.shm_fragment_size;
    v.credits = v.window = r.config.eager_window;
    v.eager_limit = r.config.eager_limit;
    v.cma_usable = cma;
    r.inboxes.push_back(inbox{peer, r.segment->receiver(i, layout.local_index)});
  }
}

}  // namespace

netmod::config netmod_config(const settings &s) {
  netmod::config c;
  c.max_record = sizeof(packet_header) +
                 std::max({s.net_eager_limit, s.net_fragment_size, sizeof(rts_payload)});
  c.record_head = sizeof(packet_header);
  return c;
}

namespace {

// Peers on other nodes (every peer, with IRIS_SHM=0) are reached through
// the netmod, created only when there is one: it puts its business card
// before shm_setup's fence.
void net_setup(runtime &r) {
  const int node = r.pmi->node_of(r.rank);
  bool remote = false;
  for (int peer = 0; peer < r.size; ++peer) {
    remote = remote || (peer != r.rank && (!r.config.use_shm || r.pmi->node_of(peer) != node));
  }
  if (!remote) return;
  const netmod::config c = netmod_config(r.config);
  try {
    r.net = netmod::netmod_create(r.config.netmod);
    r.net->init(*r.pmi, c);
  } catch (const std::exception &e) {
    fatal("MPI_Init", "%s", e.what());
  }
  for (int peer = 0; peer < r.size; ++peer) {
    if (peer == r.rank || (r.config.use_shm && r.pmi->node_of(peer) == node)) continue;
    vc &v = r.vcs[static_cast<std::size_t>(peer)];
    v.via = transport::net;
    v.credits = v.window = r.config.net_eager_window;
    v.eager_limit = r.config.net_eager_limit;
    v.fragment = r.config.net_fragment_size;
  }
}

void comms_setup(runtime &r) {
  r.comms.resize(3);
  auto world = std::make_unique<communicator>();
  world->handle = MPI_COMM_WORLD;
  world->context = world_context;
  world->rank = r.rank;
  world->size = r.size;
  for (int i = 0; i < r.size; ++i) world->world_rank.push_back(i);
  world->errhandler = MPI_ERRORS_ARE_FATAL;
  world->name = "MPI_COMM_WORLD";
  auto self = std::make_unique<communicator>();
  self->handle = MPI_COMM_SELF;
  self->context = self_context;
  self->rank = 0;
  self->size = 1;
  self->world_rank.push_back(r.rank);
  self->errhandler = MPI_ERRORS_ARE_FATAL;
  self->name = "MPI_COMM_SELF";
  r.comms[1] = std::move(world);
  r.comms[2] = std::move(self);
}

void describe(const runtime &r, const node_layout &layout) {
  std::fprintf(stderr,
               "iris: rank %d of %d: pmi %s, job %.*s, node %d with %zu local ranks (index %d), "
               "shm ring %zu B, fragment %zu B, eager limit %zu B, window %d B, cma %s, "
               "spin %d\n",
               r.rank, r.size, std::string(r.pmi->backend()).c_str(),
               static_cast<int>(r.pmi->job_id().size()), r.pmi->job_id().data(),
               r.pmi->node_of(r.rank), layout.local_ranks.size(), layout.local_index,
               r.config.shm_ring_size, r.config.shm_fragment_size, r.config.eager_limit,
               r.config.eager_window * static_cast<int>(credit_unit),
               std::any_of(r.vcs.begin(), r.vcs.end(), [](const vc &v) { return v.cma_usable; })
                   ? "permitted"
                   : "refused or unused",
               r.spin_limit);
  if (r.net) std::fprintf(stderr, "iris: rank %d: netmod %s\n", r.rank, r.net->describe().c_str());
}

void stats_print(const runtime &r) {
  const statistics &s = r.stats;
  std::fprintf(
      stderr,
      "iris: rank %d stats: sent eager %llu, eager-sync %llu, rendezvous %llu "
      "(credit stalls %llu); received rendezvous by cma %llu, by rma %llu, by pipeline %llu; "
      "credit packets %llu; unexpected peak %zu messages, %zu bytes\n",
      r.rank, static_cast<unsigned long long>(s.eager),
      static_cast<unsigned long long>(s.eager_sync), static_cast<unsigned long long>(s.rendezvous),
      static_cast<unsigned long long>(s.credit_stalls),
      static_cast<unsigned long long>(s.rendezvous_cma),
      static_cast<unsigned long long>(s.rendezvous_rma),
      static_cast<unsigned long long>(s.rendezvous_pipeline),
      static_cast<unsigned long long>(s.credit_packets), s.unexpected_depth_peak,
      s.unexpected_bytes_peak);
  if (r.net) {
    const std::string counted = r.net->statistics();
    if (!counted.empty())
      std::fprintf(stderr, "iris: rank %d netmod stats: %s\n", r.rank, counted.c_str());
  }
}

}  // namespace

int runtime_init(int required_thread_level) {
  auto r = std::make_unique<runtime>();
  try {
    r->config = settings_load();
    shm::check_ring_capacity(r->config.shm_ring_size);
    r->pmi = pmi::client_open();
  } catch (const std::exception &e) {
    fatal("MPI_Init", "%s", e.what());
  }
  // One eager message and one rendezvous fragment must each fit one record.
  const std::size_t record_payload =
      shm::max_record_payload(r->config.shm_ring_size) - sizeof(packet_header);
  r->config.shm_fragment_size = std::min(r->config.shm_fragment_size, record_payload);
  r->config.eager_limit = std::min(r->config.eager_limit, record_payload);
  r->rank = r->pmi->rank();
  r->size = r->pmi->size();
  r->pid = static_cast<int>(getpid());
  r->thread_level = std::min(required_thread_level, MPI_THREAD_SERIALIZED);
  r->vcs.resize(static_cast<std::size_t>(r->size));
  r->sending.reserve(static_cast<std::size_t>(r->size));
  for (int i = 0; i < r->size; ++i) r->vcs[static_cast<std::size_t>(i)].world_rank = i;
  vc &self = r->vcs[static_cast<std::size_t>(r->rank)];
  self.eager_limit = r->config.eager_limit;
  self.window = r->config.eager_window;
  const node_layout layout = layout_of(*r->pmi);
  rt = r.get();  // errors from here on name the rank
  net_setup(*r);
  shm_setup(*r, layout);
  comms_setup(*r);
  // More ranks than cores: a waiting rank must give its core away soon.
  const bool oversubscribed = static_cast<int>(layout.local_ranks.size()) > online_cores();
  r->spin_limit = r->config.spin_count >= 0 ? r->config.spin_count : oversubscribed ? 20 : 2000;
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  gethostname(host, sizeof(host) - 1);
  r->processor_name = host;
  if (r->config.debug) describe(*r, layout);
  r.release();
  return MPI_SUCCESS;
}

int runtime_finalize() {
  // Every send must reach its peer's ring before this process may leave, and
  // no peer may still be sending to it: MPI_Finalize is collective.
  progress_until([] { return rt->sending.empty(); });
  barrier(*comm_lookup(MPI_COMM_WORLD));
  // The barrier's own last packets may still be queued.
  progress_until([] { return rt->sending.empty(); });
  if (rt->net) rt->net->finalize();
  try {
    rt->pmi->finalize();
  } catch (const std::exception &e) {
    fatal("MPI_Finalize", "%s", e.what());
  }
  if (rt->config.stats) stats_print(*rt);
  // Messages nobody received: erroneous but legal to leave behind.
  unexpected_release_all();
  delete rt;
  rt = nullptr;
  return MPI_SUCCESS;
}

communicator *comm_lookup(int handle) {
  const auto bits = static_cast<std::uint32_t>(handle);
  if ((bits >> 28) != 1 || rt == nullptr) return nullptr;
  const std::size_t index = bits & 0x0fffffffU;
  if (index == 0 || index >= rt->comms.size()) return nullptr;
  return rt->comms[index].get();
}

communicator *comm_of_context(std::uint32_t context) {
  for (const auto &c : rt->comms) {
    if (c && c->context == context) return c.get();
  }
  return nullptr;
}

}  // namespace iris::device
