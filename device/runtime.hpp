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
#include "pmi/pmi.hpp"
#include "shm/segment.hpp"

namespace iris::device {

enum class transport : std::uint8_t { self, shm };

// A virtual connection: everything this process keeps about one peer.
struct vc {
  int world_rank = 0;
  transport via = transport::self;
  shm::ring_sender tx;                  // via == shm
  intrusive_queue<request> send_queue;  // sends waiting for room, oldest first
  bool on_sending_list = false;
  // The message from this peer whose fragments are still arriving: exactly
  // one of `into` (a posted receive) or `held` (an unexpected message).
  request *into = nullptr;
  unexpected_msg *held = nullptr;
  std::size_t expect_offset = 0;
};

// A ring this process drains: the one its local peer `from` writes into.
struct inbox {
  int from = 0;  // world rank
  shm::ring_receiver rx;
};

struct runtime {
  std::unique_ptr<pmi::client> pmi;
  settings config{};
  int rank = 0;
  int size = 1;
  int spin_limit = 2000;
  std::vector<vc> vcs;
  std::vector<inbox> inboxes;
  std::vector<vc *> sending;  // VCs with a non-empty send queue
  std::optional<shm::segment> segment;
  intrusive_queue<request> posted;
  intrusive_queue<unexpected_msg> unexpected;
  request_pool requests;
  pool<unexpected_msg> unexpected_pool;
  std::vector<std::unique_ptr<communicator>> comms;  // indexed by handle & 0x0fffffff
  int thread_level = 0;
  std::string processor_name;
};

// The process's runtime, or nullptr outside MPI_Init..MPI_Finalize.
extern runtime *rt;

// MPI_Init's work. Returns MPI_SUCCESS or prints why and ends the job.
int runtime_init(int required_thread_level);
int runtime_finalize();

// The communicator named by `handle`, or nullptr.
communicator *comm_lookup(int handle);

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

// Sends `bytes` from `data` to rank `dest` of `comm`. Returns nullptr when the
// message is already on its way (the buffer may be reused), else a request
// that completes when it is. `context` selects point-to-point or collective.
request *send_start(const communicator &comm, std::uint32_t context, const void *data,
                    std::size_t bytes, int dest, int tag);
// Posts a receive; the returned request completes when a message matched.
request *recv_start(const communicator &comm, std::uint32_t context, void *data,
                    std::size_t capacity, int source, int tag);
// The oldest unexpected message matching the pattern, or nullptr.
const unexpected_msg *probe_find(std::uint32_t context, int source, int tag);

// Pushes queued fragments to `to` while its transport takes them. Returns
// how many packets went out.
int send_push(vc &to);

// Blocks until every rank of `comm` has called it (dissemination barrier on
// the collective context).
void barrier(const communicator &comm);

// Waits for `r` to complete and releases it.
void request_wait_release(request *r);

// Hands a packet that arrived from world rank `from` to the device.
// Returns nullptr, or why the packet was refused (it is then dropped).
const char *packet_deliver(vc &from, const packet_header &h, const std::byte *payload,
                           std::size_t length);

}  // namespace iris::device
