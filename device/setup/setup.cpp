// MPI_Init and MPI_Finalize of the device: find the job through pmi/, set
// up the transports (one VC per peer, each pointing at its transport) and the
// predefined communicators; at the end, drain, say IRIS_STATS and close.
#include "device/setup/setup.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "device/am/am.hpp"
#include "device/base/threading.hpp"
#include "device/collectives/collective.hpp"
#include "device/protocols/credit.hpp"
#include "device/protocols/recovery.hpp"
#include "device/protocols/recv_multiple.hpp"
#include "device/runtime/errors.hpp"
#include "device/runtime/progress.hpp"
#include "include/mpi.h"

namespace iris::device {

namespace {

int online_cores() {
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
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
  comm_publish(r, 1);
  comm_publish(r, 2);
}

void describe(const runtime &r) {
  std::fprintf(stderr,
               "iris: rank %d of %d: pmi %s, job %.*s, node %d, eager limit %zu B, window %d B, "
               "spin %d, %d ranks on this host\n",
               r.rank, r.size, std::string(r.pmi->backend()).c_str(),
               static_cast<int>(r.pmi->job_id().size()), r.pmi->job_id().data(),
               r.pmi->node_of(r.rank), r.config.eager_limit,
               r.config.eager_window * static_cast<int>(credit_unit), r.spin_limit, r.host_ranks);
  for (const auto &t : r.transports) {
    const std::string line = t->describe();
    if (!line.empty()) std::fprintf(stderr, "iris: rank %d: %s\n", r.rank, line.c_str());
  }
}

void stats_print(runtime &r) {
  const statistics s = stats_total(r);
  const std::uint64_t unlocked = s.eager - r.stats.eager;  // MULTIPLE's sends without the call lock
  std::fprintf(
      stderr,
      "iris: rank %d stats: sent eager %llu (unlocked %llu), eager-sync %llu, rendezvous %llu "
      "(credit stalls %llu); received rendezvous by single-copy reads %llu (of scattered blocks "
      "%llu), by data packets %llu; "
      "credit packets %llu; unexpected peak %zu messages, %zu bytes; slept %llu times (%llu timed "
      "out); matching compared %llu queue entries (bins resized %llu times)\n",
      r.rank, static_cast<unsigned long long>(s.eager), static_cast<unsigned long long>(unlocked),
      static_cast<unsigned long long>(s.eager_sync), static_cast<unsigned long long>(s.rendezvous),
      static_cast<unsigned long long>(s.credit_stalls),
      static_cast<unsigned long long>(s.rendezvous_read),
      static_cast<unsigned long long>(s.rendezvous_scattered),
      static_cast<unsigned long long>(s.rendezvous_pipeline),
      static_cast<unsigned long long>(s.credit_packets), r.matching.unexpected_counts().depth_peak,
      r.matching.unexpected_counts().bytes_peak, static_cast<unsigned long long>(s.sleeps),
      static_cast<unsigned long long>(s.sleep_timeouts),
      static_cast<unsigned long long>(r.matching.compared()),
      static_cast<unsigned long long>(r.matching.rebinned()));
  if (const std::uint64_t receives = r.matching.unlocked_receives()) {
    std::fprintf(stderr,
                 "iris: rank %d stats: receives matched without the call lock %llu, messages "
                 "delivered without it %llu, rendezvous answered without it %llu, data packets "
                 "delivered without it %llu\n",
                 r.rank, static_cast<unsigned long long>(receives),
                 static_cast<unsigned long long>(r.matching.aside_deliveries()),
                 static_cast<unsigned long long>(r.matching.aside_rendezvous()),
                 static_cast<unsigned long long>(s.data_aside));
  }
  if (s.rendezvous_send_aside != 0) {
    std::fprintf(stderr,
                 "iris: rank %d stats: rendezvous sends that may stream without the call lock "
                 "%llu, data packets sent without it %llu\n",
                 r.rank, static_cast<unsigned long long>(s.rendezvous_send_aside),
                 static_cast<unsigned long long>(s.data_sent_aside));
  }
  for (const auto &t : r.transports) {
    const std::string counted = t->statistics();
    if (!counted.empty()) std::fprintf(stderr, "iris: rank %d %s\n", r.rank, counted.c_str());
  }
}

// The launcher's client of MPI's first start in this process. MPI may end
// and start again (MPI-4 sessions), but the launcher's connection opens only
// once: it stays open until the process exits, and each later start takes
// a client_restarted over it. Ended at exit (on_exit: the exit status).
std::unique_ptr<pmi::client> launcher;
int starts = 0;                 // runtime_init calls that opened or reused the client
bool launcher_left = false;     // finalized for good (MPI_Finalize ended MPI)
bool launcher_reports = false;  // recovery: the launcher reports deaths to this rank
pid_t launcher_pid = 0;         // the process that opened it (a forked child leaves it alone)

void launcher_close(int status, void *) {
  if (!launcher) return;
  if (::getpid() != launcher_pid) {
    // A forked child that exits: the connection is the parent's, and
    // PMIx_Finalize here would wait for ever for a progress thread that
    // fork did not copy. Left to the exit.
    (void)launcher.release();
    return;
  }
  if (launcher_left) return;
  // Under recovery a rank that exits while MPI runs has failed, whatever its
  // code: it leaves without finalizing the launcher, which then reports a
  // death and tells the survivors, who go on. (Finalized, the launcher would
  // take it for a rank that finished its part: "exited with code 3 after
  // finalizing", and the job's exit code.)
  if (rt != nullptr && rt->config.recovery && !launcher->singleton()) {
    (void)launcher.release();
    return;
  }
  // Exiting with 0 while MPI runs (no MPI_Finalize): the others may wait for
  // this rank for ever (MPI_Finalize's barrier), and the launcher would see
  // a rank that finished. The job ends, as Open MPI's does. A non-zero code
  // already ends the job.
  if (status == 0 && rt != nullptr && !launcher->singleton()) {
    fatal("exit",
          "the process exited with code 0 without calling MPI_Finalize; ending the job, "
          "whose other ranks could wait for it for ever");
  }
  try {
    launcher->finalize();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "iris: rank %d: leaving the launcher at exit: %s\n", launcher->rank(),
                 e.what());
  }
  launcher.reset();
}

std::unique_ptr<pmi::client> launcher_client() {
  if (launcher_left) {
    throw pmi::error(
        "MPI cannot start again in this process: MPI_Finalize ended it and left the launcher");
  }
  if (starts++ > 0) return pmi::client_restarted(*launcher, starts - 1);
  launcher = pmi::client_open();
  launcher_pid = ::getpid();
  ::on_exit(launcher_close, nullptr);
  return pmi::client_restarted(*launcher, 0);
}

}  // namespace

int runtime_init(int required_thread_level) {
  auto r = std::make_unique<runtime>();
  try {
    r->config = settings_load();
    r->transport_config = transport_settings_load();
    transports_settle(r->config, r->transport_config);
    r->pmi = launcher_client();
  } catch (const std::exception &e) {
    fatal("MPI_Init", "%s", e.what());
  }
  r->rank = r->pmi->rank();
  r->size = r->pmi->size();
  r->pid = static_cast<int>(getpid());
  r->thread_level = required_thread_level;
  // Chosen once, before the program can start threads that call MPI.
  threads_enabled = required_thread_level == MPI_THREAD_MULTIPLE;
  call_guard = threads_enabled ? call_guarding::locked : call_guarding::none;
  call_lock_entered = threads_enabled ? recv_taken_drain : nullptr;
  if (threads_enabled) r->matching.share();
  r->vcs.reserve(static_cast<std::size_t>(r->size) + r->transport_config.net.dynamic_peers);
  r->vcs.resize(static_cast<std::size_t>(r->size));
  r->sending.reserve(static_cast<std::size_t>(r->size));
  for (int i = 0; i < r->size; ++i) r->vcs[static_cast<std::size_t>(i)].world_rank = i;
  rt = r.get();  // errors from here on name the rank
  try {
    transports_open(*r);
    am_card_put();
    r->pmi->commit();
    r->pmi->fence();
    transports_connect(*r);
    r->polled_aside.store(r->polled.size(), std::memory_order_release);
  } catch (const std::exception &e) {
    fatal("MPI_Init", "%s", e.what());
  }
  // MULTIPLE: sends to peers whose transport allows it may run unlocked.
  for (vc &v : r->vcs) v.shared = threads_enabled && v.via != nullptr && v.via->concurrent_sends();
  comms_setup(*r);
  recovery_start();
  if (r->config.recovery) {
    // Collectives go by messages, whose requests a failure ends; the waits
    // on a node's shared segment could not tell (protocols/recovery.hpp).
    r->config.coll_shm = false;
    bool told = false;
    // IRIS_TEST_DEAF_TO_LAUNCHER=1 (tests): as under a launcher that tells
    // of no death (Hydra, srun), the node's own watch alone must tell.
    const char *deaf = std::getenv("IRIS_TEST_DEAF_TO_LAUNCHER");
    const bool ask = deaf == nullptr || deaf[0] != '1';
    try {
      if (ask) {
        told = r->pmi->watch_failures(
            [](int rank, void *) { recovery_report(rank, "the launcher reported its end"); },
            nullptr);
      }
    } catch (const std::exception &e) {
      fatal("MPI_Init", "IRIS_RECOVERY=1: %s", e.what());
    }
    // The processes on this node are watched whatever the launcher tells.
    for (const auto &t : r->transports) t->watch_peers();
    launcher_reports = told;
    if (!told && r->rank == 0) {
      std::fprintf(stderr,
                   "iris: rank 0: MPI_Init: IRIS_RECOVERY=1, but the launcher (%s) does not "
                   "report deaths: only a netmod's lost connection or, on this node, a peer's "
                   "process that ends will tell of one\n",
                   std::string(r->pmi->backend()).c_str());
    }
  }
  // More ranks than cores: a waiting rank must give its core away soon.
  int local_ranks = 0;
  for (int peer = 0; peer < r->size; ++peer) {
    local_ranks += r->pmi->node_of(peer) == r->pmi->node_of(r->rank) ? 1 : 0;
  }
  // Nodes simulated on one host (mpiexec --nodes) share its cores: the
  // launcher's count of this host's ranks says how many.
  r->host_ranks = std::max(local_ranks, r->pmi->host_ranks());
  const bool oversubscribed = r->host_ranks > online_cores();
  // Sleeping while idle: where every transport wakes this rank, and by
  // default only on a node with more ranks than cores (where a waiting
  // rank's yields take turns from those that work).
  const bool sleep_wanted = r->config.sleep > 0 || (r->config.sleep < 0 && oversubscribed);
  bool wakes = true;
  for (const auto &t : r->transports) wakes = wakes && t->wakes_sleepers();
  if (sleep_wanted && wakes) {
    for (const auto &t : r->transports) {
      if (t->holds_bell()) r->sleeper = t.get();
    }
  }
  // A waiting rank that will sleep soon may spin longer first: the ranks
  // that wait long get out of the way by sleeping, and a short wait (a
  // ping-pong beside them) stays a spin, not a sched_yield.
  recovery_sleeper(r->sleeper);
  const int oversubscribed_spin = r->sleeper != nullptr ? 200 : 20;
  r->spin_limit = r->config.spin_count >= 0 ? r->config.spin_count
                  : oversubscribed          ? oversubscribed_spin
                                            : 2000;
  r->shared_spin_limit = r->config.spin_count >= 0 ? r->config.spin_count
                         : oversubscribed          ? 2
                                                   : 2000;
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  gethostname(host, sizeof(host) - 1);
  r->processor_name = host;
  if (r->config.debug) describe(*r);
  r.release();
  return MPI_SUCCESS;
}

int runtime_finalize(bool may_start_again) {
  // Active messages: every op started here completes (its target acks),
  // then a barrier; replies that handlers started meanwhile complete in a
  // second round. Then the progress thread stops.
  if (am_started()) {
    for (int round = 0; round < 2; ++round) {
      am_quiesce();
      barrier(*comm_lookup(MPI_COMM_WORLD));
    }
    am_quiesce();
    am_close();
  }
  am_blocks_close();
  // Every send must reach its peer's transport before this process may leave, and
  // no peer may still be sending to it: MPI_Finalize is collective.
  progress_until([] { return rt->sending.empty(); });
  if (rt->config.recovery) {
    // Ranks may have died: an agreement over the survivors is the barrier.
    // Twice: a rank leaves the second only once every survivor has the
    // first's decision, so none still needs it to answer for the first
    // (its coordinator died having told only some; recovery.hpp).
    for (int round = 0; round < 2; ++round) {
      agreement all;
      (void)recovery_agree(*comm_lookup(MPI_COMM_WORLD), all);  // false: an iagree left running
    }
  } else {
    barrier(*comm_lookup(MPI_COMM_WORLD));
  }
  // The barrier's own last packets may still be queued (the agreement's
  // wait among recovery's own).
  progress_until([] { return rt->sending.empty() && recovery_idle(); });
  for (const auto &t : rt->transports) t->finalize();
  if (!may_start_again) {
    try {
      launcher->finalize();
    } catch (const std::exception &e) {
      fatal("MPI_Finalize", "%s", e.what());
    }
    launcher_left = true;
  }
  request_cache_drop();
  // No report of the launcher's thread may reach the runtime past here.
  if (launcher_reports) rt->pmi->watch_failures(nullptr, nullptr);
  launcher_reports = false;
  recovery_stop();
  if (rt->config.stats) stats_print(*rt);
  // Messages nobody received: erroneous but legal to leave behind.
  rt->matching.release_all();
  delete rt;
  rt = nullptr;
  return MPI_SUCCESS;
}

}  // namespace iris::device
