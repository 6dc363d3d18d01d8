// Recovery after a rank dies: the device half of ULFM (MPIX_Comm_revoke,
// _shrink, _agree, _ack_failed), on with IRIS_RECOVERY=1 (mpiexec
// --enable-recovery sets it). Without it a lost peer ends the job, as
// before.
//
// A death is reported by the launcher (a PMIx event, on its own thread), by
// a netmod that lost the peer, or by the shm transports' watch of the node's
// processes (transports/liveness.hpp) (recovery_report); the next progress pass
// makes it known here. Then every operation that involves the dead rank
// ends with MPIX_ERR_PROC_FAILED: sends to it and receives from it (posted,
// queued, half-way through a rendezvous), and every operation on the
// collective context of a communicator that holds it, so that no collective
// waits for a rank that left it early, and every active-message op to it
// (am_peer_failed). A pending receive from
// MPI_ANY_SOURCE on such a communicator is not ended: the completion calls
// answer MPIX_ERR_PROC_FAILED_PENDING for it until the failure is
// acknowledged (recovery_blocks). New operations are refused the same way
// (recovery_refusal). Packets still arriving from a dead rank are dropped.
//
// A revocation (comm_revoke) travels as a recovery packet to every member,
// each forwarding it once to all the others (so that it arrives even if
// the revoker dies half-way); every pending and later operation on the
// communicator then ends with MPIX_ERR_REVOKED. One exception: a
// rendezvous send whose receiver may be reading its buffer through a
// netmod's RMA ends once the receiver answers (a FIN for every RTS of a
// revoked communicator, and when a read under way ends), since the
// program may free the buffer as soon as the send returns.
//
// An agreement (recovery_agree: MPIX_Comm_agree, and MPIX_Comm_shrink's
// set of failed ranks and new context id) is fault tolerant: every rank
// sends its contribution to the lowest rank it does not know to be dead
// (the coordinator), which combines those of every rank alive and sends
// the decision to all. When the coordinator dies, the next one asks every
// rank (a query): a rank that already has the decision gives it, so that
// all that return get the same one; the others contribute again. A rank
// keeps its last decision per communicator to answer late queries. The
// launcher's reports are taken as the truth (no rank is suspected that did
// not die), which is what makes the coordinator well defined.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "device/core/comm.hpp"
#include "device/core/packet.hpp"
#include "device/core/request.hpp"
#include "device/core/vc.hpp"

namespace iris::device {

class transport;

// Readies recovery at MPI_Init; polled by the progress engine when
// rt->config.recovery is set, or once a revocation or agreement has begun
// (they work without it too, with no failures to meet). recovery_stop at
// MPI_Finalize.
void recovery_start();
void recovery_stop();
// The transport whose bell this rank sleeps on (rt->sleeper), rung by a
// report from another thread; nullptr: none.
void recovery_sleeper(transport *t);
// No recovery packet waits for room (MPI_Finalize drains them first).
bool recovery_idle();
// Any thread: world rank `w` died (`why`, for IRIS_DEBUG). Known here at
// the next progress pass.
void recovery_report(int w, const char *why);
// Whether world rank `w` is known dead here.
bool recovery_failed(int w);
// Whether a member of `comm` is known dead here (a wait on all of them,
// such as a one-sided epoch's, might never end).
bool recovery_comm_failed(const communicator &comm);

// Call lock, rt->troubled set: the error class (MPIX_ERR_PROC_FAILED,
// MPIX_ERR_REVOKED) an operation on `context` of `comm` with `peer` (a rank
// of comm, or any_source) must end with at once, or 0.
int recovery_refusal(const communicator &comm, std::uint32_t context, int peer);
// Call lock, rt->troubled set: whether packet `h` of `from` is an RTS on a
// context revoked here; it is answered (a FIN ends its send) and dropped.
bool recovery_refuses(vc &from, const packet_header &h);
// Whether `comm` (or the communicator it is a level of) is revoked.
bool recovery_revoked(const communicator &comm);
// Ends the pending request `r` with `error_class`: withdrawn from the
// queue it waits in, its rendezvous forgotten. At once, unless a transport
// may still move bytes into or out of its buffer (a receive whose read or
// placed packet is under way; a revoked send its receiver may read, above):
// then once that ends.
void recovery_fail(request &r, int error_class);
// A pending receive from any source whose communicator has a failure not
// acknowledged (MPIX_ERR_PROC_FAILED_PENDING).
bool recovery_blocks(const request &r);

// The ranks of `c` known dead here, ascending; and of those, the ones
// acknowledged (comm_ack).
std::vector<int> comm_failed_ranks(const communicator &c);
std::vector<int> comm_acked_ranks(const communicator &c);
// MPIX_Comm_ack_failed: acknowledges every failure known now; returns how
// many of c's ranks that covers.
int comm_ack(communicator &c);
// MPIX_Comm_revoke.
void comm_revoke(communicator &c);
// A communicator just made here, or just given its context (MPI_Comm_idup):
// revoked now when a revocation of its context came before it (a member
// that made it first revoked it at once).
void recovery_comm_made(communicator &c);

// What an agreement combines: a flag (bitwise AND), a context id (maximum)
// and the ranks of the communicator known dead (union, as bits). Over an
// intercommunicator (recovery_union) each group's flag is ANDed apart:
// `flag` the first group's, `second_flag` the second's.
struct agreement {
  std::uint32_t flag = ~0U;
  std::uint32_t second_flag = ~0U;
  std::uint32_t context = 0;
  std::vector<std::uint64_t> failed;  // bit r: rank r of the communicator

  bool has_failed(int r) const {
    return ((failed[static_cast<std::size_t>(r) / 64] >> (r % 64)) & 1U) != 0;
  }
  // Sets the bit of every rank of `c` known dead here (sized to c).
  void add_failed(const communicator &c);
};
// What an agreement on `c` runs over: `c` itself, or for an
// intercommunicator both its groups as one communicator, in the order
// MPI_Intercomm_merge gives them when both pass the same `high` (the same
// at every member of both groups), on its point-to-point context. Made
// here at the first agreement on `c` (or the first packet of one), and
// kept: a context is never used twice. Its `acked` is c's.
communicator &recovery_union(communicator &c);
// Whether this process is in the first group of recovery_union(c).
bool recovery_first_group(const communicator &c);
// Where c's local group starts among the ranks of recovery_union(c) (0 for
// an intracommunicator); the remote group starts at the other end.
int recovery_local_start(const communicator &c);

// Collective over the survivors of `c`, revoked or not: `value` becomes
// the agreed one, the same at every rank that returns. False (nothing
// done) while a nonblocking agreement on `c` is under way here: one at a
// time per communicator.
bool recovery_agree(communicator &c, agreement &value);
// The same without waiting (MPIX_Comm_iagree, _ishrink): the progress
// engine takes its steps (recovery_poll); `done` says when `value` holds
// the decision. nullptr (nothing done) while another is under way on `c`.
struct agreement_run {
  communicator *comm = nullptr;
  agreement value;
  int coordinator = -1;
  bool done = false;
};
std::shared_ptr<agreement_run> agreement_start(communicator &c, const agreement &value);

// The handler of recovery packets.
const char *recovery_on_packet(vc &from, const packet_header &h, const std::byte *payload);

}  // namespace iris::device
