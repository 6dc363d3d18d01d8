// MPI one-sided communication (include/iris/rma.h) over the active-message
// layer (device/am/). A window is what every rank exposed to the others:
// its memory, made MPIX_Expose'd, and a control block (the passive-target
// lock word and the striped locks of accumulates). Where a target's memory
// is mapped here (MPI_Win_allocate and MPI_Win_allocate_shared memory of a
// rank of this node), put, get and accumulates are copies and CPU atomics;
// elsewhere puts and gets are the netmod's RMA writes and reads where it
// has them (ofi), else am_put and am_get (CMA on one node, packets between
// nodes), and accumulates are messages to the target's own handler, run by
// its progress thread when it computes. README.md says more.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device/api/check.hpp"
#include "device/core/transport.hpp"

struct iris_counter;

namespace iris::api::rma {

// One per window per rank, 8 KiB (a mappable block's least is 4): the lock
// of passive-target epochs (>0: that many shared holders; exclusive_held;
// 0: free), the striped locks of accumulates on elements that no one CPU
// atomic updates (by the element's address), and the PSCW notices ranks
// that map it sent: posts[r] and completes[r], how many rank r (below
// notice_ranks) ever sent here.
inline constexpr std::int64_t exclusive_held = -1;
inline constexpr std::size_t stripe_count = 511;
inline constexpr std::size_t notice_ranks = 256;
struct control {
  std::atomic<std::int64_t> lock;
  std::atomic<std::int64_t> stripe[stripe_count];
  std::atomic<std::int64_t> posts[notice_ranks];
  std::atomic<std::int64_t> completes[notice_ranks];
};
static_assert(sizeof(control) == 8192);

// What this rank knows of one rank's part of a window.
struct target {
  int world = 0;                // its world rank
  std::uint64_t base = 0;       // where its memory lies in its process (0: none)
  std::uint64_t size = 0;       // bytes
  std::int64_t disp_unit = 1;   //
  std::uint64_t control = 0;    // where its control block lies in its process
  std::byte *mapped = nullptr;  // its memory as mapped here (itself: its own), else nullptr
  rma::control *ctl = nullptr;  // its control block as mapped here, else nullptr
  int lock = 0;                 // held here: 0, MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE
  bool started = false;         // in the group of this rank's MPI_Win_start epoch
  int replies = 0;              // accumulate replies still to come from it
  // Ops to it since its last completion that went as messages or left
  // buffers here: 0 means every one was a copy or an atomic on its mapping,
  // complete when it returned.
  int unsettled = 0;
  bool am_ops = false;   // am_put or am_get went to it since then: am_fence ends them
  bool am_gets = false;  // am_get did
  // Its memory as its transport's RMA names it (window_expose), when it
  // could expose it so: puts and gets of at least IRIS_WINDOW_RMA_MIN bytes to
  // it go by window_write and window_read, counted in `rma` until done.
  bool remote = false;
  std::uint64_t region[2] = {};
  device::transport::window_ops rma;
  // In a passive-target epoch to a rank whose control block is not mapped
  // here, its small ops wait in `batch` (messages.hpp) and go as one
  // message at the next completion to it (`batching`). After MPI_Win_lock
  // the lock step waits there too, ahead of them (`lazy`: nothing was
  // asked yet), and MPI_Win_unlock adds the release: a lock epoch is one
  // round trip.
  bool batching = false;
  bool lazy = false;
  std::vector<std::byte> batch;
  int batched = 0;         // ops in it
  std::size_t answer = 0;  // bytes its answer will bring back (gets, fetches)
};

// An accumulate sent to a target's handler whose reply is awaited: where
// the old values go (staging, then the result buffer at completion).
struct fetch {
  bool used = false;
  std::vector<std::byte> staging;
  void *result = nullptr;
  int count = 0;
  device::dtype type;  // the result's (a copy: the program may free its handle meanwhile)
  int target = 0;
  bool replied = false;
  int status = MPI_SUCCESS;
  std::int64_t lock_answer = 0;  // a lock step's: 1 granted, 0 not
  bool free_on_reply = false;    // a lock release's: nobody waits for its answer
  bool batch = false;            // a lazy lock's batch: its reply answers other slots too
};

struct window {
  int handle = 0;
  device::communicator *comm = nullptr;  // the window's own (context for its messages)
  int flavor = 0;
  void *base = nullptr;
  MPI_Aint size = 0;
  std::int64_t disp_unit = 1;
  int errhandler = MPI_ERRORS_ARE_FATAL;
  std::string name;
  std::vector<target> targets;  // by rank in comm
  control *ctl = nullptr;       // this rank's control block
  void *owned = nullptr;        // memory this window allocated (control, then data)
  bool owned_block = false;     // from am_alloc_mem (else aligned_alloc)
  // This rank's memory as exposed for RMA (window_expose) by `exposed_by`
  // (nullptr: not so).
  device::transport *exposed_by = nullptr;
  std::uint64_t region[2] = {};
  std::size_t owned_mapped = 0;  // an MPI_Win_allocate_shared segment of this many bytes
  // Whether another process maps this rank's memory (a dynamic window's:
  // always, as its attachments may be). When none does, every accumulate
  // to it runs in this process under the call lock, and may use plain
  // loads and stores (atomics.hpp: apply_whole).
  bool mapped_elsewhere = true;
  // Epochs: a fence epoch opened by the last fence (none after
  // MPI_MODE_NOSUCCEED), lock_all, and the locks held by target.
  bool fence_open = false;
  bool lock_all = false;
  int locks = 0;
  // Buffers that ops started here still read (packed origin data, message
  // bodies) until the next completion, and gets to unpack then.
  std::vector<std::pair<int, std::vector<std::byte>>> keep;  // (target, bytes)
  struct unpack {
    std::vector<std::byte> staging;
    void *origin;
    int count;
    device::dtype type;
    int target;
  };
  std::vector<unpack> unpacks;
  std::vector<fetch> fetches;               // by token
  std::vector<std::uint32_t> free_fetches;  // tokens of slots not in use
  // Tokens of the slots taken since a completion last looked at them
  // (some freed since, some twice): a completion visits these, not every
  // slot there ever was.
  std::vector<std::uint32_t> taken_fetches;
  // The completion counter of the first am_put to a target since its last
  // completion: that put asks for an ack, which the completion waits for
  // (am_fence) instead of sending a fence step after it (a lone put's
  // flush: one message and its ack, not two messages that may wake the
  // target twice).
  iris_counter *acks = nullptr;
  std::vector<std::pair<std::uintptr_t, std::size_t>> attached;  // dynamic windows
  // PSCW (pscw.cpp): the ranks of the access epoch MPI_Win_start opened and
  // of the exposure epoch MPI_Win_post opened, and the posts and completes
  // received and not taken, counted by the rank that sent them; of those
  // counted in this rank's control block, how many were seen.
  bool access_open = false, exposure_open = false;
  std::vector<int> access, exposure;
  std::vector<int> posts_from, completes_from;
  std::vector<std::int64_t> posts_seen, completes_seen;
  // The hints MPI_Win_get_info gives (window.cpp): Iris's defaults, and the
  // values the program gave for the keys it knows.
  std::vector<std::pair<std::string, std::string>> hints;
  // The first error an op reported since the last completion.
  int error = MPI_SUCCESS;
  std::string why;
};

// The window named by `handle` (nullptr: none).
window *lookup(MPI_Win handle);
// The window whose own communicator has handle `comm` (handlers' lookup).
window *of_comm(int comm);
// Checks MPI is initialised and `handle` names a window.
int check_window(const char *call, MPI_Win handle, window *&out);
// Raises `error_class` through the window's handler.
[[gnu::format(printf, 4, 5)]] int raise(const window &w, const char *call, int error_class,
                                        const char *format, ...);

// Whether every op to rank `rank` (-1: all) since the last completion was
// a copy or an atomic on a mapping, all complete when they returned, and
// none reported an error: then a completion has nothing to do.
inline bool settled(const window &w, int rank) {
  if (w.error != MPI_SUCCESS) return false;
  const std::size_t from = rank >= 0 ? static_cast<std::size_t>(rank) : 0;
  const std::size_t to = rank >= 0 ? from + 1 : w.targets.size();
  for (std::size_t r = from; r < to; ++r) {
    if (w.targets[r].unsettled != 0) return false;
  }
  return true;
}

// Completion of every op started here to rank `rank` of the window (-1:
// all): their bytes moved, accumulate replies in, gets unpacked. Returns
// the first error an op reported, with its reason in `why`. `notice`
// (MPI_Win_complete, one rank): a notice to the rank follows on the same
// channel, so puts that only went as packets need only have left here
// (am_sent), not their acks (the target handles the notice after them).
int complete(window &w, int rank, std::string &why, bool notice = false);
// Gives fetch slot `token` back (once: a slot not in use stays as it is).
void fetch_free(window &w, std::uint32_t token);

// An op's target, checked (ops.cpp): the window, the rank, its data's
// address in the target's process and the two datatypes; `none` for
// MPI_PROC_NULL.
struct access {
  window *w = nullptr;
  int rank = 0;
  target *t = nullptr;
  std::uint64_t address = 0;
  const device::dtype *origin_type = nullptr;
  const device::dtype *target_type = nullptr;
  bool none = false;
};
// The checks every op makes: window, rank, epoch, counts and datatypes
// (their sizes agree), the range within the target's window.
int begin(const char *call, MPI_Win win, int rank, MPI_Aint disp, const void *origin,
          int origin_count, MPI_Datatype origin_type, int target_count, MPI_Datatype target_type,
          access &a);
int put(access &a, const void *origin, int origin_count);
int get(access &a, void *origin, int origin_count);
// The accumulates: `op` over elements of the predefined type `basic`; the
// old values to `result` when it is not nullptr; compare-and-swap when
// `compare` is not nullptr (one element).
int accumulate(access &a, const char *call, const void *origin, int origin_count, int op, int basic,
               void *result, int result_count, const device::dtype *result_type,
               const void *compare);
// A passive-target lock step on rank's control block (ops.cpp: try_shared
// ... release_exclusive); whether it was granted.
enum lock_step : std::int64_t { try_shared = 1, try_exclusive, release_shared, release_exclusive };
bool lock_step(window &w, int rank, std::int64_t step);
// A passive-target epoch (or an MPI_Win_start one) to rank, whose control
// block is not mapped here: its ops batched from now; `lock_type` (0:
// none, MPI_MODE_NOCHECK, MPI_Win_lock_all, which took its locks already,
// or MPI_Win_start) a lazy lock's.
void batch_begin(window &w, int rank, int lock_type);
// Rank's batch, sent (with the lock's release when `release`: the epoch
// ends) and answered, the lock granted: the ops in it are done at the
// target. Nothing when nothing waits (an epoch without ops asks for
// nothing), unless `lock_now` (an op that goes alone needs the lock
// first). Whether the lock needs no release of its own any more.
bool batch_settle(window &w, int rank, bool release, bool lock_now = false);

// The device's handlers of one-sided messages (ops.cpp), registered once.
void handlers_register();
// A PSCW notice to rank `rank` of `w` (ops.cpp): its MPI_Win_start may go
// on (`post`), or this rank's access epoch to it ended (else). A store to
// its control block where this rank maps it, else a message to its handler.
void notify(window &w, int rank, bool post);
// MPI_Win_complete to rank, whose ops of the epoch all wait in its batch
// (MPI_Win_start began one) and return nothing: the batch goes with the
// complete notice at its end, answered by nobody, and its bytes have left
// here when this returns. False: not so (complete, then notify).
bool batch_complete(window &w, int rank);
// Whether a notice of the kind from every rank of `from` arrived; if so,
// one from each is taken.
bool take_notices(window &w, const std::vector<int> &from, bool post);
// take_notices until it holds. A rank that maps its peer's control block
// gets the notice as a store to shared memory, which rings no bell: this
// waits as the lock waits do (shared_wait_pass) and never sleeps. Returns
// failure_of(w) if that ends the wait first, else MPI_SUCCESS.
int notices_wait(window &w, const std::vector<int> &from, bool post);
// Recovery (IRIS_RECOVERY=1): MPI_ERR_PROC_FAILED once a rank of the
// window is known dead here, else MPI_SUCCESS (one load while nothing
// failed). Every wait of a one-sided call that another rank must end (a
// lock it holds, its notice, its replies) stops then instead of hanging.
int failure_of(const window &w);
// The text that goes with failure_of's error.
inline constexpr const char *failure_text =
    "a rank of the window died while this rank waited for it (MPIX_ERR_PROC_FAILED)";
// One pass of a wait for a store to shared memory (a lock another holds, a
// PSCW notice): progress (it may also come as a message to this rank's
// handler), then the core to the others when nothing came; never a sleep on
// the bell, which no such store rings.
void shared_wait_pass();
// lock_step until it is granted (shared_wait_pass between tries), or
// failure_of(w) says a rank of the window died: its error.
int lock_until_granted(window &w, int rank, std::int64_t step);

// A predefined window attribute (MPI_WIN_BASE ... MPI_WIN_MODEL, window.cpp):
// whether `keyval` is one, and its value into `*out`.
bool predefined_attr(window &w, int keyval, void **out);

// Waits until every reply this rank's handlers sent has left, and frees
// them (MPI_Finalize, before the transports close).
void replies_drain();

// Frees everything of the windows still open, and the replies in flight
// (MPI_Finalize).
void close_all();

}  // namespace iris::api::rma
