// The state of one MPI process between MPI_Init and MPI_Finalize, and the
// two calls that make and end it. One thread at a time touches it: the thread
// that initialised MPI, or under MPI_THREAD_SERIALIZED the caller, or under
// MPI_THREAD_MULTIPLE the thread holding the call lock (threading.hpp).
//
// The device's operations are declared by the file of each phase:
// send.hpp, recv.hpp, eager.hpp, credit.hpp, rendezvous.hpp, sync.hpp,
// cancel.hpp, matching.hpp, request.hpp, progress.hpp; transport.hpp is the
// contract below them. device.hpp gathers what the C bindings call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "device/base/handle.hpp"
#include "device/base/tunables.hpp"
#include "device/core/comm.hpp"
#include "device/core/request.hpp"
#include "device/core/transport.hpp"
#include "device/core/vc.hpp"
#include "device/matching/matching.hpp"
#include "pmi/pmi.hpp"

namespace iris::device {

// Counters for IRIS_STATS=1, printed at MPI_Finalize.
struct statistics {
  std::uint64_t eager = 0;
  std::uint64_t eager_sync = 0;
  std::uint64_t rendezvous = 0;  // sent
  // Received by the transport's single-copy read of the sender's memory (a
  // transport counts its own kinds: shm's CMA, a netmod's RMA).
  std::uint64_t rendezvous_read = 0;
  std::uint64_t rendezvous_scattered = 0;  // of those, non-contiguous: a scattered read
  std::uint64_t rendezvous_pipeline = 0;   // received as data packets after a CTS
  // MULTIPLE: of their packets, those delivered without the call lock
  // (vc::aside_data).
  std::uint64_t data_aside = 0;
  // MULTIPLE: rendezvous sends whose data may go without the call lock
  // (request::stream_aside), and their data packets that went without it
  // (vc::aside_sent).
  std::uint64_t rendezvous_send_aside = 0;
  std::uint64_t data_sent_aside = 0;
  std::uint64_t credit_stalls = 0;  // eager-sized sends that went by rendezvous
  std::uint64_t credit_packets = 0;
  std::uint64_t sleeps = 0;          // waits that slept on the bell (progress_idle)
  std::uint64_t sleep_timeouts = 0;  // of those, the ones that IRIS_SLEEP_TIMEOUT ended
  // The unexpected queue's depth and bytes: matching.unexpected_counts().
};

// The runtime's statistics with what each VC counts under its own lock
// (MULTIPLE's unlocked sends in `eager`, aside credit packets in
// `credit_packets`, aside data packets in `data_aside` and
// `data_sent_aside`), each VC's read
// under that lock, and the rendezvous aside passes answered in
// `rendezvous_pipeline`. Call lock.
struct runtime;
statistics stats_total(runtime &r);

// A new number for each runtime made in this process (unit tests make many).
std::uint64_t runtime_serial_next();

// How many communicator handles MULTIPLE's unlocked senders can look up.
inline constexpr std::size_t published_comm_limit = 1024;

// One step of a connection through an MPI port that arrived here and waits
// for the call that takes it (protocols/port.hpp).
struct port_message {
  port_step step;
  int port;
  int from;  // the VC it came from
  std::vector<std::byte> table;
};

// Recovery after a rank dies (IRIS_RECOVERY=1; protocols/recovery.hpp). A
// death is reported from any thread (the launcher's event, a netmod's poll):
// `reported` marks the rank and `notices` counts; the next progress pass
// makes it known here (`failed`, `order`).
struct recovery_state {
  std::unique_ptr<std::atomic<bool>[]> reported;  // by VC index
  std::atomic<int> notices{0};
  int seen = 0;          // notices the progress engine has handled
  bool outbox = false;   // recovery packets wait for room
  bool running = false;  // nonblocking agreements are under way
  // An ishrink is under way here (api/comm/recovery.cpp): messages on its
  // new context may come from a rank that left first (rt->agreeing keeps
  // them), and two at once could agree on the same context id.
  bool shrinking = false;
  std::vector<char> failed;  // by VC index: known dead here
  std::vector<int> order;    // their world ranks, in the order they became known
};

struct runtime {
  std::uint64_t serial = runtime_serial_next();  // tells a thread's request cache it is stale
  std::unique_ptr<pmi::client> pmi;
  settings config{};
  transport_settings transport_config{};
  int rank = 0;
  int size = 1;
  int pid = 0;  // getpid() is a system call: every RTS names it
  int spin_limit = 2000;
  // Polls before a rank waiting on shared memory (collectives/node.cpp)
  // yields: a few when the node has more ranks than cores, where the rank
  // it waits for may need this core.
  int shared_spin_limit = 2000;
  // Ranks of this job on this host, sharing its cores (nodes simulated on
  // one host count together): more than the cores means oversubscribed.
  int host_ranks = 1;
  transport *sleeper = nullptr;  // holds the bell this rank sleeps on when idle; nullptr: never
  // The world's ranks, then the processes of other jobs this one came to
  // know (MPI_Comm_connect/accept): reserved at init for all of them
  // (IRIS_DYNAMIC_PEERS), so that adding one moves no VC.
  std::vector<vc> vcs;
  // VCs of other jobs' processes, after the world's: grown under the call
  // lock, read by aside deliveries without it (MULTIPLE).
  std::atomic<int> others{0};
  // The bound of a message's source rank: a group of another job may be
  // larger than the world, but never than the processes known here.
  int source_bound() const { return size + others.load(std::memory_order_relaxed); }
  // The VC of each process of another job, by (job hash, rank there).
  std::map<std::pair<std::uint64_t, int>, int> foreign;
  std::vector<port_message> port_inbox;
  std::set<int> ports_open;  // MPI_Open_port's ports of this process, by number
  std::vector<std::unique_ptr<transport>> transports;  // those in use; own their state
  std::vector<transport *> polled;                     // those with anything to poll
  // How many of `polled` aside passes walk (MULTIPLE), stored with a
  // release once an entry is in (setup; dynamic.cpp's poll_from_now):
  // `polled` is reserved at setup so that a netmod polled later for other
  // jobs' processes moves none of it.
  std::atomic<std::size_t> polled_aside{0};
  std::vector<vc *> sending;  // VCs with something to push
  int pipeline_receives = 0;  // rendezvous receives streaming data packets
  int rendezvous_sends = 0;   // rendezvous sends not yet complete
  bool polling = false;       // inside progress_poll (which a send may call)
  int agreeing = 0;           // context_agree calls under way (see packet_deliver)
  matcher matching;
  statistics stats;
  request_pool requests;
  std::vector<std::unique_ptr<communicator>> comms;        // indexed by handle_index
  std::vector<std::unique_ptr<communicator>> freed_comms;  // kept for pending operations
  // The intracommunicators by handle slot, for comm_lookup_published: set
  // (release) once registered, cleared when freed, under the call lock.
  std::atomic<communicator *> published_comms[published_comm_limit]{};
  std::vector<std::unique_ptr<group>> groups;  // indexed by handle_index
  std::uint32_t next_context = first_free_context;
  // Above every block of the nonblocking range proposed or agreed here.
  std::uint32_t next_nonblocking_context = first_nonblocking_context;
  // MPI_THREAD_MULTIPLE only (comm.cpp): the values of agreements under way
  // in other threads, and every context agreed so far.
  std::vector<std::uint32_t> contexts_tentative;
  std::vector<std::uint32_t> contexts_agreed;
  int thread_level = 0;
  std::string processor_name;
  // A failure or a revocation is known here: the paths that skip checks
  // (the fast sends and receives, packet delivery) step aside for them,
  // and under MULTIPLE the paths without the call lock (which read it
  // while the lock's holder sets it) leave everything to the locked ones.
  std::atomic<bool> troubled{false};
  recovery_state recovery;
};

// The process's runtime, or nullptr outside MPI_Init..MPI_Finalize.
extern runtime *rt;

// The communicator named by `handle`, or nullptr.
communicator *comm_lookup(int handle);
// The same without the call lock (MPI_THREAD_MULTIPLE's unlocked sends):
// an intracommunicator among the first published_comm_limit slots, whose
// context, rank, size and world ranks never change once published; else
// nullptr (the caller takes the call lock and comm_lookup).
inline communicator *comm_lookup_published(const runtime &r, int handle) {
  const std::size_t index = handle_index(handle);
  if (!handle_is(handle, handle_kind::comm) || index >= published_comm_limit) return nullptr;
  return r.published_comms[index].load(std::memory_order_acquire);  // pairs with comm_publish
}
// Publishes the intracommunicator in `slot` (under the call lock).
void comm_publish(runtime &r, std::size_t slot);
// The communicator whose point-to-point context is `context`, or nullptr.
communicator *comm_of_context(std::uint32_t context);

}  // namespace iris::device
