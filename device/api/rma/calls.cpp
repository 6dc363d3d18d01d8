// The bindings of one-sided operations (put, get, the accumulates) and of
// synchronization (fence, locks, flushes).
#include <sched.h>

#include <atomic>
#include <cstring>

#include "device/api/rma/atomics.hpp"
#include "device/api/types/envelope.hpp"
#include "device/base/handle.hpp"
#include "device/datatypes/op.hpp"
#include "device/runtime/progress.hpp"

using namespace iris;
using namespace iris::api::rma;
namespace rma = iris::api::rma;

namespace {

// The predefined type a datatype is made of (accumulates need one), or
// MPI_DATATYPE_NULL.
MPI_Datatype basic_of(MPI_Datatype type) {
  for (int depth = 0; depth < 64; ++depth) {
    const device::dtype *t = device::dtype_lookup(type);
    if (t == nullptr) return MPI_DATATYPE_NULL;
    if (t->predefined) return type;
    const api::envelope *e = api::envelope_of(type);
    if (e == nullptr || e->types.empty()) return MPI_DATATYPE_NULL;
    type = e->types[0];
  }
  return MPI_DATATYPE_NULL;
}

// The op and the basic type an accumulate applies.
int accumulate_checks(const char *call, const rma::access &a, MPI_Op op, MPI_Datatype origin_type,
                      MPI_Datatype target_type, MPI_Datatype &basic) {
  const window &w = *a.w;
  if (!device::op_valid(op) || device::handle_index(op) > device::handle_index(MPI_NO_OP)) {
    return raise(w, call, MPI_ERR_OP,
                 "op 0x%x is not a predefined operation (accumulates take those, MPI_REPLACE and "
                 "MPI_NO_OP)",
                 static_cast<unsigned>(op));
  }
  basic = basic_of(target_type);
  const MPI_Datatype from = basic_of(origin_type);
  if (basic == MPI_DATATYPE_NULL || (from != basic && op != MPI_NO_OP)) {
    return raise(w, call, MPI_ERR_TYPE,
                 "the origin and target datatypes are not made of one same predefined type");
  }
  // MPI_CHAR holds small integers in accumulates, as MPICH lets it (MPI's
  // reductions name only the signed and unsigned chars): a signed char on
  // every ABI Iris runs on.
  if (basic == MPI_CHAR) basic = MPI_SIGNED_CHAR;
  // MPI_BYTE, which MPI's reductions give the bitwise ops only, is an
  // unsigned char to every op in accumulates, as Open MPI and MPICH take it
  // there (MPICH 4.0.2's test rma/large_acc_flush_local sums bytes).
  if (basic == MPI_BYTE) basic = MPI_UNSIGNED_CHAR;
  if (op != MPI_REPLACE && op != MPI_NO_OP) {
    if (const char *why = device::op_type_mismatch(op, basic)) {
      return raise(w, call, MPI_ERR_OP, "%s cannot combine this datatype: it is defined on %s",
                   device::op_name(op), why);
    }
  }
  return MPI_SUCCESS;
}

int sync_error(window &w, const char *call, int err, const std::string &why) {
  if (err == MPI_SUCCESS) return MPI_SUCCESS;
  return raise(w, call, err, "%s", why.c_str());
}

// Every rank of the window, in order, one lock step (releases are always
// granted). A rank of the window known dead while a lock is not granted
// ends the wait (failure_of): the shared locks taken are given back.
int lock_all_targets(window &w, std::int64_t step) {
  for (int r = 0; r < w.comm->size; ++r) {
    if (int err = rma::lock_until_granted(w, r, step)) {
      for (int back = 0; back < r; ++back) lock_step(w, back, release_shared);
      return err;
    }
  }
  return MPI_SUCCESS;
}

// The common case of MPI_Put and MPI_Get, checked and done in one step:
// the same predefined type without holes on both sides, in a window whose
// target is mapped here, inside an epoch to it, within its memory. Where
// it lies: nullptr for anything else, which takes the checking path.
std::byte *mapped_run(MPI_Win win, int rank, MPI_Aint disp, const void *origin, int origin_count,
                      MPI_Datatype origin_type, int target_count, MPI_Datatype target_type,
                      std::size_t &bytes) {
  window *w = lookup(win);
  if (w == nullptr || w->flavor == MPI_WIN_FLAVOR_DYNAMIC || rank < 0 || rank >= w->comm->size ||
      origin_type != target_type || origin_count != target_count || origin_count <= 0 ||
      origin == nullptr || disp < 0) {
    return nullptr;
  }
  const target &t = w->targets[static_cast<std::size_t>(rank)];
  if (t.mapped == nullptr || !(w->fence_open || w->lock_all || t.lock != 0 || t.started)) {
    return nullptr;
  }
  const device::dtype *d = device::dtype_lookup(origin_type);
  if (d == nullptr || !d->predefined || d->extent != static_cast<std::int64_t>(d->size) ||
      d->true_lb != 0) {
    return nullptr;
  }
  std::uint64_t start = 0;
  bytes = static_cast<std::size_t>(origin_count) * d->size;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(disp),
                             static_cast<std::uint64_t>(t.disp_unit), &start) ||
      start > t.size || bytes > t.size - start) {
    return nullptr;
  }
  return t.mapped + start;
}

// The common case of the accumulates: at most `few` bytes of a predefined
// type of 1, 2, 4 or 8 bytes, aligned to it, in a mapped target
// (mapped_run's conditions), and a predefined op that combines the type,
// MPI_REPLACE or MPI_NO_OP: applied here by the CPU's atomics, as
// accumulate() would. `data` is the operands (or where mapped_run's checks
// look, for MPI_NO_OP); `result` gets the old values unless nullptr. Whether
// it was done: false for anything else, which takes the checking path.
bool mapped_atomics(MPI_Win win, int rank, MPI_Aint disp, const void *data, int count,
                    MPI_Datatype type, MPI_Op op, void *result) {
  constexpr std::size_t few = 64;
  std::size_t bytes = 0;
  std::byte *at = mapped_run(win, rank, disp, data, count, type, count, type, bytes);
  if (at == nullptr || bytes > few) return false;
  const std::size_t elem = bytes / static_cast<std::size_t>(count);
  if (!cpu_atomic(at, elem)) return false;
  // The CPU's own atomics on integers (MPI_CHAR among them, as accumulates
  // take it) need no lookup of the op's kernels.
  const bool native =
      (op == MPI_SUM || op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) && integer_type(type);
  if (!native && op != MPI_REPLACE && op != MPI_NO_OP &&
      (!device::op_valid(op) || device::handle_index(op) > device::handle_index(MPI_NO_OP) ||
       type == MPI_CHAR || device::op_type_mismatch(op, type) != nullptr)) {
    return false;
  }
  const auto *in = static_cast<const std::byte *>(data);
  auto *old = static_cast<std::byte *>(result);
  for (std::size_t k = 0; k < bytes; k += elem) {
    element_apply(at + k, in + k, old != nullptr ? old + k : nullptr, op, type, elem);
  }
  return true;
}

}  // namespace

extern "C" {

int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
            MPI_Win win) {
  const device::api_guard guard;
  std::size_t bytes = 0;
  if (std::byte *there = mapped_run(win, target_rank, target_disp, origin_addr, origin_count,
                                    origin_datatype, target_count, target_datatype, bytes)) {
    std::memcpy(there, origin_addr, bytes);
    return MPI_SUCCESS;
  }
  rma::access a;
  if (int err = begin("MPI_Put", win, target_rank, target_disp, origin_addr, origin_count,
                      origin_datatype, target_count, target_datatype, a)) {
    return err;
  }
  if (a.none) return MPI_SUCCESS;
  return put(a, origin_addr, origin_count);
}

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) {
  const device::api_guard guard;
  std::size_t bytes = 0;
  if (std::byte *there = mapped_run(win, target_rank, target_disp, origin_addr, origin_count,
                                    origin_datatype, target_count, target_datatype, bytes)) {
    std::memcpy(origin_addr, there, bytes);
    return MPI_SUCCESS;
  }
  rma::access a;
  if (int err = begin("MPI_Get", win, target_rank, target_disp, origin_addr, origin_count,
                      origin_datatype, target_count, target_datatype, a)) {
    return err;
  }
  if (a.none) return MPI_SUCCESS;
  return get(a, origin_addr, origin_count);
}

int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) {
  const device::api_guard guard;
  if (origin_datatype == target_datatype && origin_count == target_count &&
      mapped_atomics(win, target_rank, target_disp, origin_addr, origin_count, origin_datatype, op,
                     nullptr)) {
    return MPI_SUCCESS;
  }
  const char *call = "MPI_Accumulate";
  rma::access a;
  if (int err = begin(call, win, target_rank, target_disp, origin_addr, origin_count,
                      origin_datatype, target_count, target_datatype, a)) {
    return err;
  }
  // No data: nothing to combine, whatever the types (MPICH's badrma).
  if (a.none || static_cast<std::size_t>(target_count) * a.target_type->size == 0) {
    return MPI_SUCCESS;
  }
  MPI_Datatype basic = MPI_DATATYPE_NULL;
  if (int err = accumulate_checks(call, a, op, origin_datatype, target_datatype, basic)) return err;
  return accumulate(a, call, origin_addr, origin_count, op, basic, nullptr, 0, nullptr, nullptr);
}

int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                       void *result_addr, int result_count, MPI_Datatype result_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) {
  const device::api_guard guard;
  // MPI_NO_OP ignores the origin: its count and type may be anything.
  const bool no_op = op == MPI_NO_OP;
  if (result_datatype == target_datatype && result_count == target_count &&
      (no_op || (origin_datatype == target_datatype && origin_count == target_count)) &&
      mapped_atomics(win, target_rank, target_disp, no_op ? result_addr : origin_addr, target_count,
                     target_datatype, op, result_addr)) {
    return MPI_SUCCESS;
  }
  const char *call = "MPI_Get_accumulate";
  rma::access a;
  if (int err = begin(call, win, target_rank, target_disp, result_addr, result_count,
                      result_datatype, target_count, target_datatype, a)) {
    return err;
  }
  if (a.none || static_cast<std::size_t>(target_count) * a.target_type->size == 0) {
    return MPI_SUCCESS;
  }
  const device::dtype *result_type = a.origin_type;
  if (!no_op) {
    const device::dtype *o = device::dtype_lookup(origin_datatype);
    if (o == nullptr || !o->committed || origin_count < 0 ||
        static_cast<std::size_t>(origin_count) * o->size !=
            static_cast<std::size_t>(target_count) * a.target_type->size) {
      return raise(*a.w, call, MPI_ERR_TYPE,
                   "the origin data does not match the target's in size or is not committed");
    }
    a.origin_type = o;
  }
  MPI_Datatype basic = MPI_DATATYPE_NULL;
  if (int err = accumulate_checks(call, a, op, no_op ? target_datatype : origin_datatype,
                                  target_datatype, basic)) {
    return err;
  }
  if (no_op) {
    // The operands are never read: as many as the target has.
    a.origin_type = a.target_type;
    return accumulate(a, call, nullptr, target_count, op, basic, result_addr, result_count,
                      result_type, nullptr);
  }
  return accumulate(a, call, origin_addr, origin_count, op, basic, result_addr, result_count,
                    result_type, nullptr);
}

int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                     int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win) {
  const device::api_guard guard;
  if (mapped_atomics(win, target_rank, target_disp, op == MPI_NO_OP ? result_addr : origin_addr, 1,
                     datatype, op, result_addr)) {
    return MPI_SUCCESS;
  }
  return MPI_Get_accumulate(origin_addr, 1, datatype, result_addr, 1, datatype, target_rank,
                            target_disp, 1, datatype, op, win);
}

int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                         MPI_Datatype datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Win win) {
  const device::api_guard guard;
  std::size_t bytes = 0;
  if (std::byte *at =
          mapped_run(win, target_rank, target_disp, origin_addr, 1, datatype, 1, datatype, bytes);
      at != nullptr && compare_addr != nullptr && result_addr != nullptr && cpu_atomic(at, bytes)) {
    element_compare_swap(at, origin_addr, compare_addr, result_addr, bytes);
    return MPI_SUCCESS;
  }
  const char *call = "MPI_Compare_and_swap";
  rma::access a;
  if (int err =
          begin(call, win, target_rank, target_disp, origin_addr, 1, datatype, 1, datatype, a)) {
    return err;
  }
  if (a.none) return MPI_SUCCESS;
  if (!a.target_type->predefined) {
    return raise(*a.w, call, MPI_ERR_TYPE, "compare-and-swap takes a predefined datatype");
  }
  if (compare_addr == nullptr || result_addr == nullptr) {
    return raise(*a.w, call, MPI_ERR_BUFFER, "NULL compare or result buffer");
  }
  return accumulate(a, call, origin_addr, 1, MPI_REPLACE, datatype, result_addr, 1, a.target_type,
                    compare_addr);
}

int MPI_Win_fence(int assert, MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Win_fence";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (w->lock_all || w->locks > 0) {
    return raise(*w, call, MPI_ERR_RMA_SYNC, "a passive-target epoch is open (unlock first)");
  }
  std::string why;
  const int err = complete(*w, -1, why);
  // Every rank's ops into this one's memory are complete past the barrier.
  MPI_Barrier(w->comm->handle);
  w->fence_open = (assert &MPI_MODE_NOSUCCEED) == 0;
  return sync_error(*w, call, err, why);
}

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Win_lock";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE) {
    return raise(*w, call, MPI_ERR_LOCKTYPE,
                 "lock type %d is neither MPI_LOCK_SHARED nor "
                 "MPI_LOCK_EXCLUSIVE",
                 lock_type);
  }
  if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
  if (rank < 0 || rank >= w->comm->size) {
    return raise(*w, call, MPI_ERR_RANK, "rank %d out of range (window of %d ranks)", rank,
                 w->comm->size);
  }
  target &t = w->targets[static_cast<std::size_t>(rank)];
  if (t.lock != 0 || w->lock_all) {
    return raise(*w, call, MPI_ERR_RMA_SYNC, "rank %d is locked already by this process", rank);
  }
  const bool checked = (assert &MPI_MODE_NOCHECK) == 0;
  if (t.ctl == nullptr) {
    // Asked for with the epoch's first completion, in one message with its
    // ops (MPI 4.0, 12.5.3: MPI_Win_lock need not wait for the lock).
    batch_begin(*w, rank, checked ? lock_type : 0);
  } else if (checked) {
    const std::int64_t step = lock_type == MPI_LOCK_EXCLUSIVE ? try_exclusive : try_shared;
    if (int err = rma::lock_until_granted(*w, rank, step)) {
      return raise(*w, call, err, "%s", rma::failure_text);
    }
  }
  t.lock = (assert &MPI_MODE_NOCHECK) != 0 ? -lock_type : lock_type;
  ++w->locks;
  return MPI_SUCCESS;
}

int MPI_Win_unlock(int rank, MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Win_unlock";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
  if (rank < 0 || rank >= w->comm->size) {
    return raise(*w, call, MPI_ERR_RANK, "rank %d out of range (window of %d ranks)", rank,
                 w->comm->size);
  }
  target &t = w->targets[static_cast<std::size_t>(rank)];
  if (t.lock == 0) {
    return raise(*w, call, MPI_ERR_RMA_SYNC, "rank %d is not locked by this process", rank);
  }
  // A lazy lock: its step, ops and release in one message (or nothing).
  const bool released = batch_settle(*w, rank, true);
  std::string why;
  const int err = complete(*w, rank, why);
  if (t.lock > 0 && !released) {
    lock_step(*w, rank, t.lock == MPI_LOCK_EXCLUSIVE ? release_exclusive : release_shared);
  }
  t.lock = 0;
  --w->locks;
  return sync_error(*w, call, err, why);
}

int MPI_Win_lock_all(int assert, MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Win_lock_all";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (w->lock_all || w->locks > 0) {
    return raise(*w, call, MPI_ERR_RMA_SYNC, "a passive-target epoch is open already");
  }
  const bool checked = (assert &MPI_MODE_NOCHECK) == 0;
  if (checked) {
    if (int err = lock_all_targets(*w, try_shared)) {
      return raise(*w, call, err, "%s", rma::failure_text);
    }
  }
  w->lock_all = true;
  for (std::size_t r = 0; r < w->targets.size(); ++r) {
    target &t = w->targets[r];
    t.lock = checked ? MPI_LOCK_SHARED : -MPI_LOCK_SHARED;
    if (t.ctl == nullptr) batch_begin(*w, static_cast<int>(r), 0);  // small ops batched
  }
  return MPI_SUCCESS;
}

int MPI_Win_unlock_all(MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Win_unlock_all";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (!w->lock_all) {
    return raise(*w, call, MPI_ERR_RMA_SYNC, "no MPI_Win_lock_all epoch is open");
  }
  std::string why;
  const int err = complete(*w, -1, why);
  for (int r = 0; r < w->comm->size; ++r) batch_settle(*w, r, true);  // empty now: ends them
  if (w->targets.empty() || w->targets[0].lock > 0) (void)lock_all_targets(*w, release_shared);
  for (target &t : w->targets) t.lock = 0;
  w->lock_all = false;
  return sync_error(*w, call, err, why);
}

// A flush: every op to `rank` (every_rank: all) has completed at the
// target.
constexpr int every_rank = -1000;
static int flush(const char *call, MPI_Win win, int rank) {
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
  if (rank == every_rank)
    rank = -1;
  else if (rank < 0 || rank >= w->comm->size) {
    return raise(*w, call, MPI_ERR_RANK, "rank %d out of range (window of %d ranks)", rank,
                 w->comm->size);
  }
  if (!w->lock_all &&
      (rank >= 0 ? w->targets[static_cast<std::size_t>(rank)].lock == 0 : w->locks == 0)) {
    return raise(*w, call, MPI_ERR_RMA_SYNC, "no passive-target epoch is open%s",
                 rank >= 0 ? " to that rank" : "");
  }
  std::string why;
  const int err = complete(*w, rank, why);
  return sync_error(*w, call, err, why);
}

int MPI_Win_flush(int rank, MPI_Win win) {
  const device::api_guard guard;
  // In an open epoch to it with nothing to complete: no checks either.
  if (const window *w = lookup(win);
      w != nullptr && rank >= 0 && rank < w->comm->size && settled(*w, rank) &&
      (w->lock_all || w->targets[static_cast<std::size_t>(rank)].lock != 0)) {
    return MPI_SUCCESS;
  }
  return flush("MPI_Win_flush", win, rank);
}

int MPI_Win_flush_all(MPI_Win win) {
  const device::api_guard guard;
  return flush("MPI_Win_flush_all", win, every_rank);
}

// Local completion is not cheaper here than completion at the target.
int MPI_Win_flush_local(int rank, MPI_Win win) {
  const device::api_guard guard;
  return flush("MPI_Win_flush_local", win, rank);
}

int MPI_Win_flush_local_all(MPI_Win win) {
  const device::api_guard guard;
  return flush("MPI_Win_flush_local_all", win, every_rank);
}

int MPI_Win_sync(MPI_Win win) {
  const device::api_guard guard;
  window *w = nullptr;
  if (int err = check_window("MPI_Win_sync", win, w)) return err;
  // A full barrier between the program's loads and stores and the others'
  // (a locked read-modify-write: ThreadSanitizer does not model a bare
  // std::atomic_thread_fence).
  static std::atomic<int> sync_point{0};
  sync_point.fetch_add(0, std::memory_order_seq_cst);
  return MPI_SUCCESS;
}

}  // extern "C"
