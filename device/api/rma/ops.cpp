// One-sided operations at the origin: put, get and the accumulates, the
// lock steps and completion.
//
// An op finds its target's bytes as (address in the target's process,
// length) segments of the target datatype (dtype_segments). Where the
// target's memory is mapped here the op copies or updates it itself
// (atomics.hpp); elsewhere a put or get is an am_put or am_get per
// segment, and an accumulate one message to the target's handler
// (handlers.cpp) carrying the segments and the origin's packed data, which
// the target applies and answers (with the old values, for the fetching
// kinds). To a target whose memory the netmod's RMA reaches (ofi), a put
// or get segment of at least IRIS_WINDOW_RMA_MIN bytes is that RMA's write
// or read instead: no message, and nothing for the target to do.
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "device/am/am.hpp"
#include "device/api/rma/atomics.hpp"
#include "device/api/rma/messages.hpp"
#include "device/datatypes/op.hpp"
#include "device/protocols/recovery.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"

using namespace iris;

namespace iris::api::rma {

namespace {

// A free fetch slot of `w` for a message to `rank`, whose reply it counts
// in the rank's `replies` unless it is a request in a batch (the batch's
// own slot counts that one reply).
std::uint32_t fetch_slot(window &w, int rank, bool counted = true) {
  std::size_t i = w.fetches.size();
  if (w.free_fetches.empty()) {
    w.fetches.emplace_back();
  } else {
    i = w.free_fetches.back();
    w.free_fetches.pop_back();
  }
  fetch &f = w.fetches[i];  // as new: fetch_free resets what it gives back
  f.used = true;
  f.target = rank;
  if (counted) ++w.targets[static_cast<std::size_t>(rank)].replies;
  w.taken_fetches.push_back(static_cast<std::uint32_t>(i));
  return static_cast<std::uint32_t>(i);
}

// A batch takes ops whose body is at most batch_op_max bytes (a larger one
// goes alone, as am_put and am_get move it best), up to batch_max in all,
// there and back.
// Over tcp, 64 puts of 4 KiB in one batch move 2.9x as fast as 64 am_puts,
// gets 1.45x (bench/results/2026-11-30-issue38-batched-4k.md).
constexpr std::size_t batch_op_max = 4096, batch_max = std::size_t{256} << 10;
// While an epoch's lock is not asked yet (target::lazy), ops of up to
// lazy_op_max join the batch too: lock, op and release are then one round
// trip, where an op going alone waits for the lock's answer first. Epochs
// of one put or get over tcp: 8 KiB 30-33 -> 13-16 us, 32 KiB 34-35 ->
// 22-25; at 64 KiB the copies through the batch cost more (42-51 -> 56-62).
constexpr std::size_t lazy_op_max = 32 * 1024;

// Writes (`write`) or reads one segment of `a`'s target, `bytes` at
// `address`, from or into `local` by its transport's RMA. False: not so
// (smaller than IRIS_WINDOW_RMA_MIN, which then travels in a batch or as
// am_put or am_get, not exposed, or the transport could not start it).
bool by_rma(access &a, bool write, std::uint64_t address, std::byte *local, std::size_t bytes) {
  target &t = *a.t;
  if (!t.remote || bytes < device::rt->config.window_rma_min) return false;
  device::vc &v = device::rt->vcs[static_cast<std::size_t>(t.world)];
  const std::uint64_t region[2] = {t.region[0] + (address - t.base), t.region[1]};
  const device::xfer x = write ? v.via->window_write(v, region, local, bytes, t.rma)
                               : v.via->window_read(v, region, local, bytes, t.rma);
  if (x != device::xfer::in_progress) return false;
  ++t.unsettled;  // completion waits for it
  return true;
}

// Sends batch `b` (kept until completion) to rank; its answer comes to the
// fetch slot returned (counted in the rank's replies).
std::uint32_t batch_post(window &w, int rank, const std::vector<std::byte> &b) {
  request_head h{};
  h.kind = message_kind::batch;
  h.token = fetch_slot(w, rank);
  w.fetches[h.token].batch = true;
  device::am_request(route_to(w, rank), request_handler_id(), &h, sizeof h, b.data(), b.size(),
                     nullptr);
  return h.token;
}

// Sends rank's batch, kept until completion (batch_post).
std::uint32_t batch_send(window &w, int rank) {
  target &t = w.targets[static_cast<std::size_t>(rank)];
  w.keep.emplace_back(rank, std::move(t.batch));
  t.batch.clear();
  t.batched = 0;
  t.answer = 0;
  ++t.unsettled;  // completion waits for the answer and unpacks what came back
  return batch_post(w, rank, w.keep.back().second);
}

// Whether an op whose body has `bytes` joins the batch of `a`'s target
// (its answer brings `answer` bytes back: a batch's answer counts in
// batch_max too).
// One that does not fit sends what waits first: at once where the lock is
// held, and after the lock's answer where it was not asked yet (the op
// must not run without it).
bool lazy_takes(access &a, std::size_t bytes, std::size_t answer) {
  target &t = *a.t;
  if (!t.batching) return false;
  if (bytes <= (t.lazy ? lazy_op_max : batch_op_max) &&
      t.batch.size() + t.answer + bytes <= batch_max) {
    t.answer += answer;
    return true;
  }
  if (t.lazy) {
    batch_settle(*a.w, a.rank, false, true);  // the lock first, even with no op waiting
  } else if (t.batched > 0) {
    batch_send(*a.w, a.rank);
  }
  return bytes <= batch_op_max;
}

// Adds request `h` to `a`'s target's lazy batch.
void lazy_add(access &a, const request_head &h, const std::vector<std::byte> &body) {
  batch_add(a.t->batch, h, body.data(), body.size());
  ++a.t->batched;
  ++a.t->unsettled;  // completion sends it
}

// Sends a request to rank's handler; its body is kept until completion.
void request_send(window &w, int rank, const request_head &h, std::vector<std::byte> body) {
  ++w.targets[static_cast<std::size_t>(rank)].unsettled;
  w.keep.emplace_back(rank, std::move(body));
  const std::vector<std::byte> &b = w.keep.back().second;
  device::am_request(route_to(w, rank), request_handler_id(), &h, sizeof h, b.data(), b.size(),
                     nullptr);
}

// A batch of one op, where the lock is held, goes as that op alone: a put
// or get of one run as am_put or am_get (no handler, no answer to build),
// an accumulate or compare-and-swap as its own request (no batch to
// unwrap). One message and its answer either way, and these are the
// lighter. False: it was not one.
bool batch_lone(window &w, int rank) {
  target &t = w.targets[static_cast<std::size_t>(rank)];
  request_head h;
  std::uint64_t length = 0;
  constexpr std::size_t body_at = sizeof h + sizeof length;
  if (t.batched != 1 || t.lazy || t.batch.size() < body_at) return false;
  std::memcpy(&h, t.batch.data(), sizeof h);
  std::memcpy(&length, t.batch.data() + sizeof h, sizeof length);
  const std::byte *body = t.batch.data() + body_at;
  if (h.kind == message_kind::accumulate || h.kind == message_kind::compare_swap) {
    // A lone request takes a slot counted in the replies (its answer says
    // how it went).
    if (h.token == no_token) {
      h.token = fetch_slot(w, rank);
    } else {
      ++t.replies;
    }
    request_send(w, rank, h, std::vector<std::byte>(body, body + length));
  } else {
    std::uint64_t pair[2];
    if (h.segments != 1 || length < sizeof pair) return false;
    std::memcpy(pair, body, sizeof pair);
    if (h.kind == message_kind::put) {
      // The first am_put since a completion asks for an ack (window::acks).
      w.keep.emplace_back(rank, std::move(t.batch));
      device::am_put(route_to(w, rank), w.keep.back().second.data() + body_at + sizeof pair,
                     pair[1], pair[0], 0, nullptr, t.am_ops ? nullptr : w.acks);
    } else {
      // Into the origin buffer when it is one run (the slot is free
      // again), else into the fetch slot the get took, unpacked at
      // completion.
      fetch &f = w.fetches[h.token];
      void *into = nullptr;
      if (device::dtype_contiguous(f.type, f.count)) {
        into = f.result;
        fetch_free(w, h.token);
      } else {
        f.staging.resize(pair[1]);
        f.replied = true;
        into = f.staging.data();
      }
      device::am_get(route_to(w, rank), into, pair[1], pair[0], 0, nullptr);
      t.am_gets = true;
    }
    t.am_ops = true;
  }
  t.batch.clear();
  t.batched = 0;
  t.answer = 0;
  return true;
}

// Calls f(address, bytes) for each contiguous piece of the target's bytes
// of `count` elements of `t` at `address`, in packed order: once, with no
// allocation, when they lie in one run.
template <typename F>
void each_segment(std::uint64_t address, int count, const device::dtype &t, F &&f) {
  const std::size_t total = static_cast<std::size_t>(count) * t.packed_size;
  if (total == 0) return;
  if (device::dtype_contiguous(t, count)) {
    f(address, total);
    return;
  }
  iovec iov[64];
  std::size_t first = 0;
  while (first < total) {
    std::size_t used = 0;
    const std::size_t moved = device::dtype_segments(static_cast<std::uintptr_t>(address), count, t,
                                                     first, total - first, iov, 64, used);
    for (std::size_t i = 0; i < used; ++i) {
      f(reinterpret_cast<std::uintptr_t>(iov[i].iov_base), iov[i].iov_len);
    }
    if (moved == 0) break;
    first += moved;
  }
}

// The same pieces as a list (an accumulate sends them to the target).
std::vector<std::pair<std::uint64_t, std::size_t>> segments_of(std::uint64_t address, int count,
                                                               const device::dtype &t) {
  std::vector<std::pair<std::uint64_t, std::size_t>> out;
  each_segment(address, count, t,
               [&](std::uint64_t at, std::size_t bytes) { out.emplace_back(at, bytes); });
  return out;
}

// A request's body: the (address, bytes) table of `segs`, then room for
// `data` bytes.
std::vector<std::byte> body_of(const segment_list &segs, std::size_t data) {
  std::vector<std::byte> body(segs.size() * 2 * sizeof(std::uint64_t) + data);
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const std::uint64_t pair[2] = {segs[i].first, segs[i].second};
    std::memcpy(body.data() + i * sizeof pair, pair, sizeof pair);
  }
  return body;
}

// Adds request `h` to `a`'s target's lazy batch, its body written in
// place: the (address, bytes) pairs of the target's `count` elements at
// `a.address`, then `data` bytes, left for the caller to write where the
// result points.
std::byte *lazy_request(access &a, request_head h, int count, std::size_t data) {
  std::vector<std::byte> &b = a.t->batch;
  const std::size_t start = b.size();
  std::uint64_t length = 0;
  b.resize(start + sizeof h + sizeof length);
  each_segment(a.address, count, *a.target_type, [&](std::uint64_t address, std::size_t bytes) {
    const std::uint64_t pair[2] = {address, bytes};
    const std::size_t end = b.size();
    b.resize(end + sizeof pair);
    std::memcpy(b.data() + end, pair, sizeof pair);
    ++h.segments;
  });
  b.resize(b.size() + data);
  length = b.size() - start - sizeof h - sizeof length;
  std::memcpy(b.data() + start, &h, sizeof h);
  std::memcpy(b.data() + start + sizeof h, &length, sizeof length);
  ++a.t->batched;
  ++a.t->unsettled;  // completion sends it
  return b.data() + (b.size() - data);
}

}  // namespace

// ---- The bindings' common part ----

int begin(const char *call, MPI_Win win, int rank, MPI_Aint disp, const void *origin,
          int origin_count, MPI_Datatype origin_type, int target_count, MPI_Datatype target_type,
          access &a) {
  if (int err = check_window(call, win, a.w)) return err;
  window &w = *a.w;
  if (rank == MPI_PROC_NULL) {
    a.none = true;
    return MPI_SUCCESS;
  }
  if (rank < 0 || rank >= w.comm->size) {
    return raise(w, call, MPI_ERR_RANK, "target rank %d out of range (window of %d ranks)", rank,
                 w.comm->size);
  }
  a.rank = rank;
  a.t = &w.targets[static_cast<std::size_t>(rank)];
  if (!w.fence_open && !w.lock_all && a.t->lock == 0 && !a.t->started) {
    return raise(w, call, MPI_ERR_RMA_SYNC,
                 "no access epoch to rank %d is open (MPI_Win_fence, MPI_Win_start, "
                 "MPI_Win_lock or MPI_Win_lock_all first)",
                 rank);
  }
  if (origin_count < 0 || target_count < 0) {
    return raise(w, call, MPI_ERR_COUNT, "negative count");
  }
  a.origin_type = device::dtype_lookup(origin_type);
  a.target_type = device::dtype_lookup(target_type);
  if (a.origin_type == nullptr || a.target_type == nullptr || !a.origin_type->committed ||
      !a.target_type->committed) {
    return raise(w, call, MPI_ERR_TYPE, "invalid or uncommitted datatype");
  }
  if (origin == nullptr && origin_count > 0 && a.origin_type->true_lb == 0 &&
      a.origin_type->size > 0) {
    return raise(w, call, MPI_ERR_BUFFER, "NULL origin buffer with count %d", origin_count);
  }
  if (static_cast<std::size_t>(origin_count) * a.origin_type->size !=
      static_cast<std::size_t>(target_count) * a.target_type->size) {
    return raise(w, call, MPI_ERR_TYPE, "the origin's %zu bytes and the target's %zu bytes differ",
                 static_cast<std::size_t>(origin_count) * a.origin_type->size,
                 static_cast<std::size_t>(target_count) * a.target_type->size);
  }
  if (w.flavor == MPI_WIN_FLAVOR_DYNAMIC) {
    a.address = static_cast<std::uint64_t>(disp);
    return MPI_SUCCESS;
  }
  if (disp < 0) return raise(w, call, MPI_ERR_DISP, "negative displacement %td", disp);
  a.address =
      a.t->base + static_cast<std::uint64_t>(disp) * static_cast<std::uint64_t>(a.t->disp_unit);
  if (target_count == 0 || a.target_type->size == 0) return MPI_SUCCESS;
  // The span the target data covers, from its first to its last byte.
  const device::dtype &tt = *a.target_type;
  const std::int64_t last = static_cast<std::int64_t>(target_count - 1) * tt.extent;
  const std::int64_t low = std::min<std::int64_t>(0, last) + tt.true_lb;
  const std::int64_t high = std::max<std::int64_t>(0, last) + tt.true_lb + tt.true_extent;
  const auto start = static_cast<std::int64_t>(static_cast<std::uint64_t>(disp) *
                                               static_cast<std::uint64_t>(a.t->disp_unit));
  if (start + low < 0 || start + high > static_cast<std::int64_t>(a.t->size)) {
    return raise(w, call, MPI_ERR_RMA_RANGE,
                 "bytes [%lld, %lld) of rank %d's window, which has %llu",
                 static_cast<long long>(start + low), static_cast<long long>(start + high), rank,
                 static_cast<unsigned long long>(a.t->size));
  }
  return MPI_SUCCESS;
}

namespace {
// Where segment [address, +bytes) of the target is mapped here, or nullptr.
std::byte *mapped(const access &a, std::uint64_t address, std::size_t bytes) {
  if (a.w->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
    if (a.rank == a.w->comm->rank) {
      return inside(*a.w, address, bytes)
                 ? reinterpret_cast<std::byte *>(static_cast<std::uintptr_t>(address))
                 : nullptr;
    }
    return device::am_mapped(a.t->world, address, bytes);
  }
  if (a.t->mapped == nullptr) return nullptr;
  return a.t->mapped + (address - a.t->base);
}
}  // namespace

int put(access &a, const void *origin, int origin_count) {
  window &w = *a.w;
  const std::size_t total = static_cast<std::size_t>(origin_count) * a.origin_type->packed_size;
  if (total == 0) return MPI_SUCCESS;
  const int count = static_cast<int>(total / std::max<std::size_t>(1, a.target_type->packed_size));
  if (lazy_takes(a, total, 0)) {
    request_head h{};
    h.kind = message_kind::put;
    h.token = no_token;
    device::dtype_pack_range(origin, origin_count, *a.origin_type, 0, total,
                             lazy_request(a, h, count, total));
    return MPI_SUCCESS;
  }
  const std::byte *src = static_cast<const std::byte *>(origin);
  if (!device::dtype_contiguous(*a.origin_type, origin_count)) {
    std::vector<std::byte> packed(total);
    device::dtype_pack_range(origin, origin_count, *a.origin_type, 0, total, packed.data());
    w.keep.emplace_back(a.rank, std::move(packed));
    src = w.keep.back().second.data();
    ++a.t->unsettled;
  }
  std::size_t off = 0;
  std::uint64_t unattached = 0;
  bool refused = false;
  each_segment(a.address, count, *a.target_type, [&](std::uint64_t address, std::size_t bytes) {
    if (refused) return;
    if (std::byte *there = mapped(a, address, bytes)) {
      std::memcpy(there, src + off, bytes);
    } else if (a.w->flavor == MPI_WIN_FLAVOR_DYNAMIC && a.rank == w.comm->rank) {
      refused = true;
      unattached = address;
    } else if (by_rma(a, true, address, const_cast<std::byte *>(src + off), bytes)) {
      // done at completion
    } else {
      // The first since the last completion asks for an ack: a lone put's
      // flush then waits for it alone; after more, the flush sends one
      // fence step behind them all.
      device::am_put(route_to(w, a.rank), src + off, bytes, address, 0, nullptr,
                     a.t->am_ops ? nullptr : w.acks);
      ++a.t->unsettled;
      a.t->am_ops = true;
    }
    off += bytes;
  });
  if (refused) {
    return raise(w, "MPI_Put", MPI_ERR_RMA_RANGE, "address %#llx is not attached here",
                 static_cast<unsigned long long>(unattached));
  }
  return MPI_SUCCESS;
}

int get(access &a, void *origin, int origin_count) {
  window &w = *a.w;
  const std::size_t total = static_cast<std::size_t>(origin_count) * a.origin_type->packed_size;
  if (total == 0) return MPI_SUCCESS;
  const int target_count =
      static_cast<int>(total / std::max<std::size_t>(1, a.target_type->packed_size));
  if (lazy_takes(a, total, total)) {
    // The bytes come back in the batch's reply to a fetch slot, unpacked
    // into the origin buffer at completion.
    request_head h{};
    h.kind = message_kind::get;
    h.token = fetch_slot(w, a.rank, false);
    fetch &f = w.fetches[h.token];
    f.result = origin;
    f.count = origin_count;
    f.type = *a.origin_type;
    lazy_request(a, h, target_count, 0);
    return MPI_SUCCESS;
  }
  const bool direct = device::dtype_contiguous(*a.origin_type, origin_count);
  std::vector<std::byte> staging;
  if (!direct) staging.resize(total);
  std::byte *dst = direct ? static_cast<std::byte *>(origin) : staging.data();
  std::size_t off = 0;
  bool all_copied = true, refused = false;
  std::uint64_t unattached = 0;
  each_segment(a.address, target_count, *a.target_type,
               [&](std::uint64_t address, std::size_t bytes) {
                 if (refused) return;
                 if (std::byte *there = mapped(a, address, bytes)) {
                   std::memcpy(dst + off, there, bytes);
                 } else if (a.w->flavor == MPI_WIN_FLAVOR_DYNAMIC && a.rank == w.comm->rank) {
                   refused = true;
                   unattached = address;
                 } else if (by_rma(a, false, address, dst + off, bytes)) {
                   all_copied = false;
                 } else {
                   device::am_get(route_to(w, a.rank), dst + off, bytes, address, 0, nullptr);
                   ++a.t->unsettled;
                   a.t->am_ops = true;
                   a.t->am_gets = true;
                   all_copied = false;
                 }
                 off += bytes;
               });
  if (refused) {
    return raise(w, "MPI_Get", MPI_ERR_RMA_RANGE, "address %#llx is not attached here",
                 static_cast<unsigned long long>(unattached));
  }
  if (!direct) {
    if (all_copied) {
      device::dtype_unpack_range(staging.data(), 0, total, origin, origin_count, *a.origin_type);
    } else {
      w.unpacks.push_back({std::move(staging), origin, origin_count, *a.origin_type, a.rank});
    }
  }
  return MPI_SUCCESS;
}

// Accumulate, get-accumulate, fetch-and-op and compare-and-swap: `origin`
// packed (`compare` after it for compare-and-swap), the old values to
// `result` (count and type) when wanted.
int accumulate(access &a, const char *call, const void *origin, int origin_count, int op, int basic,
               void *result, int result_count, const device::dtype *result_type,
               const void *compare) {
  window &w = *a.w;
  const device::dtype *b = device::dtype_lookup(basic);
  const std::size_t elem = b->size;
  const std::size_t total = static_cast<std::size_t>(origin_count) * a.origin_type->packed_size;
  if (total == 0 && compare == nullptr) return MPI_SUCCESS;
  const std::size_t data = compare != nullptr ? elem : total;
  const int target_count =
      static_cast<int>(data / std::max<std::size_t>(1, a.target_type->packed_size));
  const bool fetching = result != nullptr;
  // A few elements in one run of a mapped target (fetch-and-op, compare-
  // and-swap, a short accumulate): applied here from the stack.
  constexpr std::size_t few = 64;
  if (a.t->ctl != nullptr && data <= few && b->extent == static_cast<std::int64_t>(elem) &&
      device::dtype_contiguous(*a.target_type, target_count)) {
    if (std::byte *there = mapped(a, a.address, data)) {
      std::byte in[2 * few], old[few];
      if (a.origin_type->predefined && (op != MPI_NO_OP || compare != nullptr)) {
        std::memcpy(in, origin, total);
      } else if (op != MPI_NO_OP || compare != nullptr) {
        device::dtype_pack_range(origin, origin_count, *a.origin_type, 0, total, in);
      }
      if (compare != nullptr) {
        std::memcpy(in + elem, compare, elem);
        compare_swap_one(there, a.address, in, in + elem, old, elem, a.t->ctl);
      } else {
        for (std::size_t k = 0; k < data; k += elem) {
          apply_one(there + k, a.address + k, in + k, fetching ? old + k : nullptr, op, basic, elem,
                    b->extent, a.t->ctl);
        }
      }
      if (fetching && result_type->predefined) {
        std::memcpy(result, old, data);
      } else if (fetching) {
        device::dtype_unpack_range(old, 0, data, result, result_count, *result_type);
      }
      return MPI_SUCCESS;
    }
  }
  const auto segs = segments_of(a.address, target_count, *a.target_type);
  bool all_mapped = a.t->ctl != nullptr;
  for (const auto &[address, bytes] : segs) {
    if (!all_mapped) break;
    all_mapped = mapped(a, address, bytes) != nullptr;
  }
  // The operands (the compare value after the origin's for compare-and-
  // swap): packed here for a mapped target, else straight into the body
  // of the message to the target's handler, after the pairs.
  const std::size_t operand_bytes = compare != nullptr ? 2 * elem : total;
  std::vector<std::byte> operands, body;
  if (all_mapped) {
    operands.resize(operand_bytes);
  } else {
    body = body_of(segs, operand_bytes);
  }
  std::byte *in = all_mapped ? operands.data() : body.data() + (body.size() - operand_bytes);
  if (op != MPI_NO_OP || compare != nullptr) {
    device::dtype_pack_range(origin, origin_count, *a.origin_type, 0, total, in);
  }
  if (compare != nullptr) std::memcpy(in + elem, compare, elem);
  // Mapped: here, now.
  if (all_mapped) {
    std::vector<std::byte> old(fetching ? data : 0);
    // Nobody else touches the target's memory under an exclusive lock, nor
    // this rank's own when no other process maps it (every accumulate to
    // it runs here, under the call lock): the op runs over each piece at
    // once.
    const bool alone = a.t->lock == MPI_LOCK_EXCLUSIVE || a.t->lock == -MPI_LOCK_EXCLUSIVE ||
                       (a.rank == w.comm->rank && !w.mapped_elsewhere);
    const auto local = [&](std::uint64_t address, std::size_t bytes) {
      return mapped(a, address, bytes);
    };
    if (alone && compare == nullptr && b->extent == static_cast<std::int64_t>(elem)) {
      apply_whole(segs, local, operands.data(), fetching ? old.data() : nullptr, op, basic, *b);
    } else {
      apply_stream(segs, local, operands.data(),
                   compare != nullptr ? operands.data() + elem : nullptr,
                   fetching ? old.data() : nullptr, op, basic, *b, a.t->ctl);
    }
    if (fetching) {
      device::dtype_unpack_range(old.data(), 0, old.size(), result, result_count, *result_type);
    }
    return MPI_SUCCESS;
  }
  if (w.flavor == MPI_WIN_FLAVOR_DYNAMIC && a.rank == w.comm->rank) {
    return raise(w, call, MPI_ERR_RMA_RANGE, "the target range is not attached here");
  }
  // To the target's handler: in the target's lazy batch, or alone.
  request_head h{};
  h.kind = compare != nullptr ? message_kind::compare_swap : message_kind::accumulate;
  h.op = op;
  h.basic = basic;
  h.elem = static_cast<std::uint32_t>(elem);
  h.segments = static_cast<std::uint32_t>(segs.size());
  h.extent = b->extent;
  h.fetching = fetching ? 1 : 0;
  const bool batched = lazy_takes(a, operand_bytes, fetching ? data : 0);
  // A lone request always takes a slot (its reply says how it went).
  h.token = fetching || !batched ? fetch_slot(w, a.rank, !batched) : no_token;
  if (fetching) {
    fetch &f = w.fetches[h.token];
    f.result = result;
    f.count = result_count;
    f.type = *result_type;
  }
  if (batched) {
    lazy_add(a, h, body);
  } else {
    request_send(w, a.rank, h, std::move(body));
  }
  return MPI_SUCCESS;
}

void notify(window &w, int rank, bool post) {
  if (rank == w.comm->rank) {
    ++(post ? w.posts_from : w.completes_from)[static_cast<std::size_t>(rank)];
    return;
  }
  const auto me = static_cast<std::size_t>(w.comm->rank);
  if (control *c = w.targets[static_cast<std::size_t>(rank)].ctl;
      c != nullptr && me < notice_ranks) {
    // Release: the target that sees it sees this rank's stores before it.
    (post ? c->posts : c->completes)[me].fetch_add(1, std::memory_order_release);
    return;
  }
  request_head h{};
  h.kind = post ? message_kind::post : message_kind::done;
  device::am_send(route_to(w, rank), request_handler_id(), &h, sizeof h, nullptr, 0, 0, nullptr,
                  nullptr);
}

bool batch_complete(window &w, int rank) {
  target &t = w.targets[static_cast<std::size_t>(rank)];
  if (!t.batching || t.lazy || t.batched == 0 || t.unsettled != t.batched || t.replies != 0 ||
      w.error != MPI_SUCCESS) {
    return false;
  }
  // Nothing in it may return anything (a get, a fetching accumulate).
  for (std::size_t at = 0; at < t.batch.size();) {
    request_head h;
    std::uint64_t length = 0;
    std::memcpy(&h, t.batch.data() + at, sizeof h);
    std::memcpy(&length, t.batch.data() + at + sizeof h, sizeof length);
    if (h.token != no_token) return false;
    at += sizeof h + sizeof length + length;
  }
  request_head done{};
  done.kind = message_kind::done;
  done.token = no_token;
  batch_add(t.batch, done, nullptr, 0);
  request_head h{};
  h.kind = message_kind::batch;
  h.token = no_token;  // no answer (a failure is answered, and reported later)
  w.keep.emplace_back(rank, std::move(t.batch));
  const std::vector<std::byte> &b = w.keep.back().second;
  device::am_request(route_to(w, rank), request_handler_id(), &h, sizeof h, b.data(), b.size(),
                     nullptr);
  t.batched = 0;
  t.answer = 0;
  t.batching = false;
  t.unsettled = 0;
  device::am_sent(t.world);
  // Its room serves the next batch.
  std::vector<std::byte> sent = std::move(w.keep.back().second);
  w.keep.pop_back();
  sent.clear();
  t.batch.swap(sent);
  return true;
}

bool take_notices(window &w, const std::vector<int> &from, bool post) {
  auto &counts = post ? w.posts_from : w.completes_from;
  auto &seen = post ? w.posts_seen : w.completes_seen;
  for (const int r : from) {
    const auto i = static_cast<std::size_t>(r);
    if (counts[i] == 0 && i < seen.size()) {
      // Those the rank counted in this rank's control block.
      const std::int64_t now =
          (post ? w.ctl->posts : w.ctl->completes)[i].load(std::memory_order_acquire);
      counts[i] += static_cast<int>(now - seen[i]);
      seen[i] = now;
    }
    if (counts[i] == 0) return false;
  }
  for (const int r : from) --counts[static_cast<std::size_t>(r)];
  return true;
}

int notices_wait(window &w, const std::vector<int> &from, bool post) {
  while (!take_notices(w, from, post)) {
    if (int err = failure_of(w)) return err;
    shared_wait_pass();
  }
  return MPI_SUCCESS;
}

int failure_of(const window &w) {
  if (!device::rt->troubled) [[likely]] {
    return MPI_SUCCESS;
  }
  return device::recovery_comm_failed(*w.comm) ? MPI_ERR_PROC_FAILED : MPI_SUCCESS;
}

void shared_wait_pass() {
  if (device::progress_poll() == 0) sched_yield();
}

int lock_until_granted(window &w, int rank, std::int64_t step) {
  while (!lock_step(w, rank, step)) {
    if (int err = failure_of(w)) return err;
    shared_wait_pass();
  }
  return MPI_SUCCESS;
}

// A lock step on rank's control block: by its mapping, or by a message and
// its answer. Returns whether it was granted (releases always are).
bool lock_step(window &w, int rank, std::int64_t step) {
  target &t = w.targets[static_cast<std::size_t>(rank)];
  if (t.ctl != nullptr) return lock_apply(*t.ctl, step);
  request_head h{};
  h.kind = message_kind::lock;
  h.lock = step;
  h.token = fetch_slot(w, rank);
  request_send(w, rank, h, {});
  const std::uint32_t token = h.token;
  if (step == release_shared || step == release_exclusive) {
    // Granted always: not waited for. Its answer frees the slot; a later
    // step to the rank queues behind it, and completion waits for it.
    w.fetches[token].free_on_reply = true;
    return true;
  }
  // A dead target never answers: the caller's failure_of ends its wait.
  device::progress_until([&] { return w.fetches[token].replied || failure_of(w) != MPI_SUCCESS; });
  const bool granted = w.fetches[token].replied && w.fetches[token].lock_answer != 0;
  fetch_free(w, token);
  --t.unsettled;  // answered (or never will be): nothing of it is left for a completion
  return granted;
}

void batch_begin(window &w, int rank, int lock_type) {
  target &t = w.targets[static_cast<std::size_t>(rank)];
  t.batching = true;
  t.lazy = lock_type != 0;
  t.batch.clear();
  t.batched = 0;
  t.answer = 0;
  if (!t.lazy) return;
  request_head h{};
  h.kind = message_kind::lock;
  h.token = no_token;
  h.lock = lock_type == MPI_LOCK_EXCLUSIVE ? try_exclusive : try_shared;
  batch_add(t.batch, h, nullptr, 0);
}

bool batch_settle(window &w, int rank, bool release, bool lock_now) {
  target &t = w.targets[static_cast<std::size_t>(rank)];
  if (!t.batching) return false;
  const bool lazy = t.lazy;
  if (release) t.batching = false;
  if (t.batched == 0 && !(lazy && lock_now)) {
    // Nothing to complete: a lazy lock stays unasked (and is never asked
    // when the epoch ends so).
    if (release) {
      t.lazy = false;
      t.batch.clear();
    }
    return lazy;
  }
  const bool releases = release && t.lock > 0 && !w.lock_all;
  if (releases) {
    request_head r{};
    r.kind = message_kind::lock;
    r.token = no_token;
    r.lock = t.lock == MPI_LOCK_EXCLUSIVE ? release_exclusive : release_shared;
    batch_add(t.batch, r, nullptr, 0);
  }
  if (!lazy) {
    if (releases || !batch_lone(w, rank)) batch_send(w, rank);  // completion waits for its answer
    return releases;
  }
  // Until the lock is granted: a refused batch ran nothing and goes again;
  // until a rank of the window is known dead (its lock may never be given
  // back, or the target never answer): then the epoch's completion says so.
  std::uint32_t token = batch_send(w, rank);
  const std::size_t kept = w.keep.size() - 1;
  for (;;) {
    device::progress_until(
        [&] { return w.fetches[token].replied || failure_of(w) != MPI_SUCCESS; });
    const bool granted = w.fetches[token].replied && w.fetches[token].lock_answer != 0;
    fetch_free(w, token);
    if (granted) break;
    if (const int failed = failure_of(w)) {
      if (w.error == MPI_SUCCESS) {
        w.error = failed;
        w.why = failure_text;
      }
      break;
    }
    if (device::progress_poll() == 0) sched_yield();
    token = batch_post(w, rank, w.keep[kept].second);
  }
  t.lazy = false;
  t.batch.clear();
  t.batched = 0;
  t.answer = 0;
  return releases;
}

void fetch_free(window &w, std::uint32_t token) {
  if (!w.fetches[token].used) return;
  w.fetches[token] = fetch{};
  w.free_fetches.push_back(token);
}

int complete(window &w, int rank, std::string &why, bool notice) {
  const int from = rank >= 0 ? rank : 0;
  const int to = rank >= 0 ? rank + 1 : w.comm->size;
  for (int r = from; r < to; ++r) batch_settle(w, r, false);
  if (settled(w, rank)) return MPI_SUCCESS;
  for (int r = from; r < to; ++r) w.targets[static_cast<std::size_t>(r)].unsettled = 0;
  int failed = MPI_SUCCESS;
  device::progress_until([&] {
    for (int r = from; r < to; ++r) {
      const target &t = w.targets[static_cast<std::size_t>(r)];
      if (t.replies > 0 || t.rma.busy > 0) return (failed = failure_of(w)) != MPI_SUCCESS;
    }
    return true;
  });
  if (failed != MPI_SUCCESS) {
    why = failure_text;
    return failed;
  }
  for (int r = from; r < to; ++r) {
    target &t = w.targets[static_cast<std::size_t>(r)];
    if (t.rma.error.empty()) continue;
    if (w.error == MPI_SUCCESS) {
      w.error = MPI_ERR_OTHER;
      w.why = t.rma.error;
    }
    t.rma.error.clear();
  }
  // Requests to handlers are done when answered; puts and gets of the AM
  // layer when its fence says so.
  bool fence = false, gets = false;
  for (int r = from; r < to; ++r) {
    fence = fence || w.targets[static_cast<std::size_t>(r)].am_ops;
    gets = gets || w.targets[static_cast<std::size_t>(r)].am_gets;
  }
  int err = MPI_SUCCESS;
  const char *fence_why = nullptr;
  // A dynamic window's puts may be refused there: those are fenced, so that
  // the refusal is reported here.
  if (fence && notice && rank >= 0 && !gets && w.flavor != MPI_WIN_FLAVOR_DYNAMIC) {
    // Their fence comes with a later completion (am_ops stays).
    device::am_sent(w.targets[static_cast<std::size_t>(rank)].world);
    fence = false;
  } else {
    for (int r = from; r < to; ++r) {
      w.targets[static_cast<std::size_t>(r)].am_ops = false;
      w.targets[static_cast<std::size_t>(r)].am_gets = false;
    }
  }
  if (fence) {
    err = device::am_fence(rank >= 0 ? w.targets[static_cast<std::size_t>(rank)].world : -1,
                           &fence_why);
  }
  if (err != MPI_SUCCESS) {
    why = fence_why != nullptr ? fence_why : "an operation was refused at the target";
  }
  for (std::size_t i = 0; i < w.unpacks.size();) {
    auto &u = w.unpacks[i];
    if (rank >= 0 && u.target != rank) {
      ++i;
      continue;
    }
    device::dtype_unpack_range(u.staging.data(), 0, u.staging.size(), u.origin, u.count, u.type);
    w.unpacks.erase(w.unpacks.begin() + static_cast<std::ptrdiff_t>(i));
  }
  // The answered fetches to the ranks completed: their old values go to
  // the result buffers, and their slots are free again. A slot freed
  // elsewhere leaves the list too.
  std::erase_if(w.taken_fetches, [&](std::uint32_t token) {
    fetch &f = w.fetches[token];
    if (!f.used) return true;
    if (!f.replied || (rank >= 0 && f.target != rank)) return false;
    if (f.result != nullptr && f.status == MPI_SUCCESS) {
      device::dtype_unpack_range(f.staging.data(), 0, f.staging.size(), f.result, f.count, f.type);
    }
    fetch_free(w, token);
    return true;
  });
  // What was kept for the ranks completed goes; a sent batch's room serves
  // its target's next batch.
  for (auto &[r, bytes] : w.keep) {
    if (rank >= 0 && r != rank) continue;
    std::vector<std::byte> &next = w.targets[static_cast<std::size_t>(r)].batch;
    if (next.empty() && next.capacity() < bytes.capacity()) {
      bytes.clear();
      next.swap(bytes);
    }
  }
  std::erase_if(w.keep, [&](const auto &k) { return rank < 0 || k.first == rank; });
  replies_collect();
  if (err == MPI_SUCCESS && w.error != MPI_SUCCESS) {
    err = w.error;
    why = w.why;
  }
  w.error = MPI_SUCCESS;
  return err;
}

}  // namespace iris::api::rma
