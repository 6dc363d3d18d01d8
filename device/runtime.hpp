// The state of one MPI process between MPI_Init and MPI_Finalize, and the
// device operations the C bindings call. Only the thread that initialised
// MPI (or, under MPI_THREAD_SERIALIZED, one thread at a time) may call them.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/comm.hpp"
#include "device/match.hpp"
#include "device/packet.hpp"
#include "device/request.hpp"
#include "device/tunables.hpp"
#include "netmods/netmod.hpp"
#include "pmi/pmi.hpp"
#include "shm/segment.hpp"

namespace iris::device {

enum class transport : std::uint8_t { self, shm, net };

// A virtual connection: everything this process keeps about one peer.
struct vc {
  int world_rank = 0;
  transport via = transport::self;
  shm::ring_sender tx;                    // via == shm
  std::size_t fragment = 0;               // largest rendezvous data payload to this peer
  std::size_t eager_limit = 0;            // largest eager message to this peer
  int window = 0;                         // eager credit units this peer grants in all
  bool cma_usable = false;                // this peer's memory can be read (CMA)
  int credits = 0;                        // eager credit units we may still spend at it
  int owed = 0;                           // units we owe it (its eager messages we consumed)
  intrusive_queue<request> send_queue;    // message packets waiting, in send order
  intrusive_queue<request> stream_queue;  // rendezvous sends streaming data
  std::vector<packet_header> backlog;     // control packets that found the ring full
  bool on_sending_list = false;
  bool has_pending() const {
    return !send_queue.empty() || !stream_queue.empty() || !backlog.empty();
  }
};

// A ring this process drains: the one its local peer `from` writes into.
struct inbox {
  int from = 0;  // world rank
  shm::ring_receiver rx;
};

// Counters for IRIS_STATS=1, printed at MPI_Finalize.
struct statistics {
  std::uint64_t eager = 0;
  std::uint64_t eager_sync = 0;
  std::uint64_t rendezvous = 0;           // sent
  std::uint64_t rendezvous_cma = 0;       // received by reading the sender's memory
  std::uint64_t rendezvous_rma = 0;       // received by the netmod's RMA read
  std::uint64_t rendezvous_pipeline = 0;  // received through the ring
  std::uint64_t credit_stalls = 0;        // eager-sized sends that went by rendezvous
  std::uint64_t credit_packets = 0;
  std::size_t unexpected_depth = 0;
  std::size_t unexpected_depth_peak = 0;
  std::size_t unexpected_bytes = 0;  // eager data held for peers (not self)
  std::size_t unexpected_bytes_peak = 0;
};

struct runtime {
  std::unique_ptr<pmi::client> pmi;
  settings config{};
  int rank = 0;
  int size = 1;
  int pid = 0;  // getpid() is a system call: every RTS names it
  int spin_limit = 2000;
  std::vector<vc> vcs;
  std::vector<inbox> inboxes;
  std::vector<vc *> sending;  // VCs with something to push
  int pipeline_receives = 0;  // rendezvous receives streaming through rings
  int rendezvous_sends = 0;   // rendezvous sends not yet complete
  bool polling = false;       // inside progress_poll (which a send may call)
  std::optional<shm::segment> segment;
  std::unique_ptr<netmod::netmod> net;  // when some peer is reached through a netmod
  intrusive_queue<request> posted;
  intrusive_queue<unexpected_msg> unexpected;
  statistics stats;
  request_pool requests;
  pool<unexpected_msg> unexpected_pool;
  std::vector<std::unique_ptr<communicator>> comms;        // indexed by handle & 0x0fffffff
  std::vector<std::unique_ptr<communicator>> freed_comms;  // kept for pending operations
  std::vector<std::unique_ptr<group>> groups;              // indexed by handle & 0x0fffffff
  std::uint32_t next_context = first_free_context;
  int thread_level = 0;
  std::string processor_name;
};

// The process's runtime, or nullptr outside MPI_Init..MPI_Finalize.
extern runtime *rt;

// MPI_Init's work. Returns MPI_SUCCESS or prints why and ends the job.
// What the netmod is told at init, from the tunables.
netmod::config netmod_config(const settings &s);

int runtime_init(int required_thread_level);
int runtime_finalize();

// The communicator named by `handle`, or nullptr.
communicator *comm_lookup(int handle);
// The communicator whose point-to-point context is `context`, or nullptr.
communicator *comm_of_context(std::uint32_t context);

// One pass of the progress engine. Returns how many events it handled.
int progress_poll();

// Gives the core away for a moment; called by a rank that has waited long.
void progress_yield();

// Polls until done() holds, spinning first and then yielding the core.
template <typename Done>
void progress_until(Done done) {
  int idle = 0;
  while (!done()) {
    if (progress_poll() > 0) {
      idle = 0;
    } else if (++idle > rt->spin_limit) {
      progress_yield();
    }
  }
}

enum class send_mode : std::uint8_t { standard, synchronous };

// Sends `bytes` from `data` to rank `dest` of `comm`. Returns nullptr when the
// message is already on its way and the buffer may be reused (only when
// `need_request` is false), else a request that completes when it may. A
// synchronous send completes only once matched.
// `use`, when given, is a (restarted persistent) request to use instead of
// allocating one.
request *send_start(const communicator &comm, std::uint32_t context, const void *data,
                    std::size_t bytes, int dest, int tag, send_mode mode = send_mode::standard,
                    bool need_request = false, request *use = nullptr);

// A send is over: its state becomes done and it completes.
void send_done(request &r);

// Marks `r` complete (while a cancel is pending, that waits for the answer);
// a request the user freed is released here.
void request_complete(request &r);

// MPI_Cancel: withdraws an unmatched receive at once; asks the receiver to
// withdraw an unmatched send. Either way the request completes, cancelled or
// not.
void request_cancel(request &r);
const char *cancel_on_request(vc &from, const packet_header &h);
const char *cancel_on_reply(vc &from, const packet_header &h);

// MPI_Mprobe: removes the oldest matching unexpected message and claims it
// for a later MPI_Mrecv. nullptr when there is none.
unexpected_msg *message_claim(std::uint32_t context, int source, int tag);
// The claimed message named by an MPI_Message handle, or nullptr.
unexpected_msg *message_from_handle(int handle);
int message_handle(const unexpected_msg &m);
// MPI_Mrecv: a receive of a claimed message; frees the message.
request *recv_claimed(const communicator &comm, unexpected_msg *m, void *data,
                      std::size_t capacity);
// Posts a receive; the returned request completes when a message matched.
request *recv_start(const communicator &comm, std::uint32_t context, void *data,
                    std::size_t capacity, int source, int tag, request *use = nullptr);
// The oldest unexpected message matching the pattern, or nullptr.
const unexpected_msg *probe_find(std::uint32_t context, int source, int tag);

// Blocks until every rank of `comm` has called it (dissemination barrier on
// the collective context).
void barrier(const communicator &comm);

// Waits for `r` to complete and releases it.
void request_wait_release(request *r);

// Pushes what `to` has waiting (control packets first, then message packets
// in order, then rendezvous data) while its transport takes it. Returns how
// many packets went out.
int send_push(vc &to);

// Sends a control packet (cts, fin, credit, sync_ack) to `to`: at once when
// the transport has room, else ahead of everything else queued for it.
void control_send(vc &to, packet_header h);

// Hands a packet that arrived from `from` to the device. Returns nullptr, or
// why the packet was refused (it is then dropped).
const char *packet_deliver(vc &from, const packet_header &h, const std::byte *payload,
                           std::size_t length);

// Rendezvous: a receive `r` has matched an RTS of `from`.
void rendezvous_matched(request &r, vc &from, std::uint64_t sender_request,
                        const rts_payload &where);
// The netmod's RMA read for receive `receiver_request` ended (why: nullptr,
// or what failed: then the data is asked for as packets).
void rendezvous_read_done(std::uint64_t receiver_request, const char *why);
const char *rendezvous_on_cts(vc &from, const packet_header &h);
const char *rendezvous_on_data(vc &from, const packet_header &h, const std::byte *payload);
// Where the `payload` bytes of data packet `h` from `from` belong, if it is
// one that rendezvous_on_data would take; else nullptr.
std::byte *rendezvous_data_place(const vc &from, const packet_header &h, std::size_t payload);
// Pushes data fragments of `to`'s streaming sends. Returns packets sent.
int rendezvous_push(vc &to);

// Completes a send request waiting for fin or sync_ack.
const char *send_on_done(vc &from, const packet_header &h);

// Frees every unexpected message (at MPI_Finalize).
void unexpected_release_all();
// Frees one unexpected message, keeping the statistics.
void unexpected_free(unexpected_msg *m);
// Counts a consumed eager message of `length` bytes from `from` towards the
// credits owed to it.
void credit_return(vc &from, std::size_t length);

// Marks `to` as having something to push in progress_poll.
void sending_list_add(vc &to);

// Writes one packet into `to`'s ring, with any credits owed to it. Returns
// false when the ring has no room now.
bool packet_write(vc &to, packet_header h, const void *payload, std::size_t bytes);

}  // namespace iris::device
