// The sending side: protocol choice, message packets in send order, control
// packets ahead of everything.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/core/comm.hpp"
#include "device/core/packet.hpp"
#include "device/core/request.hpp"
#include "device/core/transport.hpp"
#include "device/core/vc.hpp"
#include "device/protocols/credit.hpp"

namespace iris::device {

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

// MPI_THREAD_MULTIPLE, without the call lock: sends `bytes` from `data` to the
// shared VC `to` (vc.hpp; rank `dest` of `comm`) as one eager packet, under
// the VC's lock, when it can go out at once: nothing queued to `to` ahead of
// it, the credits there, room in the transport. `r`, when given, is a fresh
// send request (request_cache_take) that is then complete. Returns false,
// having sent nothing and left `r` unowned by anyone, otherwise: the caller
// sends it under the call lock as usual.
bool send_unlocked(vc &to, const communicator &comm, std::uint32_t context, const void *data,
                   std::size_t bytes, int tag, request *r);

// MULTIPLE, under the call lock: rendezvous send `r`, just returned by
// send_start to the MPI_Isend or MPI_Send binding, joins its VC's
// `sending_aside` when the transport allows it (rendezvous.hpp, "aside
// sends"), its data then going without the call lock. Only once its RTS is
// written and it is off every queue, so that no thread completes (and its
// waiter recycles) it while the call lock's holder still touches it; and
// only a user's send, never an extension's part (Isendrecv, partitioned,
// Bsend, collectives), whose owners read and free it under the call lock.
// Nothing otherwise.
void send_join_aside(request &r);

// The send named by wire id `id` that waits in `state` for an answer from
// `from`, or nullptr (a stale, forged or misdirected answer).
request *send_awaiting(const vc &from, std::uint64_t id, send_state state);

// A send is over: its state becomes done and it completes.
void send_done(request &r);

// Pushes what `to` has waiting (control packets first, then message packets
// in order, then rendezvous data) while its transport takes it. Returns how
// many packets went out.
int send_push(vc &to);

// Sends a control packet (cts, fin, credit, sync_ack, cancel) to `to`: at
// once when the transport has room, else ahead of everything else queued.
void control_send(vc &to, packet_header h);

// Marks `to` as having something to push in progress_poll.
void sending_list_add(vc &to);

// Writes one packet to `to` through its transport, with any credits owed to
// it. Returns false when the transport has no room now. Inline: where it is
// inlined the header is built once, in place.
inline bool packet_write(vc &to, packet_header h, const void *payload, std::size_t bytes) {
  const int give = credit_piggyback(to);
  h.credits = static_cast<std::uint16_t>(give);
  const iovec part{const_cast<void *>(payload), bytes};
  if (to.via->send(to, h, {&part, bytes != 0 ? 1U : 0U}) != xfer::done) return false;
  to.owed -= give;
  return true;
}
// The same, with a payload of `bytes` that `f` writes (transport.hpp); the
// transport may have it write into `staging`.
bool packet_write_filled(vc &to, packet_header h, std::size_t bytes, const payload_filler &f,
                         std::byte *staging);

}  // namespace iris::device
