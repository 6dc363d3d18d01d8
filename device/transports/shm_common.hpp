// What the two shm transports share (shm.cpp, the pair rings of a small
// node; shm_queue.cpp, the receive queues and pooled rings of a large one):
// CMA reads, the rendezvous engine's fixed rule, and MPIX_Stat_get's name
// for the messages read with CMA. Private to device/transports/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "device/core/transport.hpp"
#include "device/protocols/credit.hpp"
#include "device/protocols/dispatch.hpp"
#include "device/runtime/errors.hpp"

namespace iris::device {

// Rendezvous sends to one peer that take turns, a fragment each (vc.hpp):
// one-way 2-4 MiB streams through the pipeline went from 13.4 to 17-18
// GB/s with 4, and from distinct buffers, which come from memory anyway,
// stayed level. The netmods keep 1: over TCP, whose fragments are 512 KiB,
// 4 MiB streams were 10% slower with 4 (bench/results/).
constexpr std::size_t stream_width = 4;

// Who reads a ring or queue, chosen at compile time so that each reading
// rule is written once (device/threads.md):
// - plain: the poll below MULTIPLE;
// - shared: the call lock's poll under MULTIPLE, credits taken under each
//   VC's lock and what aside passes owe folded in (credit_fold);
// - aside: a thread without the call lock (poll_aside), the reader's lock
//   held. It hands on only what packet_deliver_aside takes and stops at the
//   first record it refuses or cannot read: that record and every one after
//   it stay for the call lock's poll, which reads and reports them.
enum class pass : std::uint8_t { plain, shared, aside };

// Hands one packet from local rank `world_rank` to the device as pass `P`
// does. True: it was taken, consume it and go on. A bad packet ends the job
// unless the pass is aside (false: the call lock's poll reports it).
template <pass P>
inline bool packet_hand_on(vc &from, const packet_header &h, const std::byte *payload,
                           std::size_t length, int world_rank) {
  if constexpr (P == pass::aside) {
    (void)world_rank;
    return packet_deliver_aside(from, h, payload, length);
  } else {
    const char *why = P == pass::shared ? packet_deliver_shared(from, h, payload, length)
                                        : packet_deliver(from, h, payload, length);
    if (why != nullptr) {
      fatal("progress", "bad packet from rank %d over shared memory: %s", world_rank, why);
    }
    return true;
  }
}

// MPIX_Stat_get's name for the messages an shm transport read with CMA.
bool cma_statistic(std::uint64_t messages, std::string_view name, std::uint64_t &value);
// Fills `where` for a reader of this process's memory at `base`, laid out
// as `layout` describes.
void name_layout(rts_payload &where, const void *base, const void *layout,
                 std::size_t layout_bytes);
// Reads every piece of `plan` from process `pid`; `cma` turns false (and
// the read is retried another way) when the kernel refuses one.
xfer cma_read_scattered(bool &cma, std::int64_t pid, read_plan &plan);
// Active messages' put and get by CMA (transport::peer_access) with local
// rank `world_rank`, whose pid its CMA card names, looked up at the first
// use (`pid`: 0 not yet, -1 none). retry when `cma` is off or the kernel
// refuses.
xfer cma_peer_access(bool cma, std::int64_t &pid, int world_rank, bool write, std::uint64_t address,
                     void *local, std::size_t bytes);
// The blocks of MPI_Alloc_mem (transport::block_alloc): this rank's names
// and the peers' blocks mapped here, unmapped when the transport ends.
class block_maps {
 public:
  block_maps() = default;
  block_maps(const block_maps &) = delete;
  block_maps &operator=(const block_maps &) = delete;
  ~block_maps();
  void *alloc(std::size_t bytes, std::uint64_t key);
  void unlink(std::uint64_t key);
  std::byte *peer(int world_rank, std::uint64_t key, std::size_t bytes);

 private:
  struct mapped {
    int rank;
    std::uint64_t key;
    std::byte *base;
    std::size_t bytes;
  };
  std::vector<mapped> peers_;
};

// Whether IRIS_RNDV_ENGINE's fixed rule reads a message of `bytes` with CMA.
bool cma_chosen(std::size_t bytes);

}  // namespace iris::device
