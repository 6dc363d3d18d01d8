// One-sided operations: put, get and the accumulates, and the target's
// side of those that go as messages (its handlers, run by its progress).
//
// An op finds its target's bytes as (address in the target's process,
// length) segments of the target datatype (dtype_segments). Where the
// target's memory is mapped here the op copies or updates it itself;
// elsewhere a put or get is an am_put or am_get per segment, and an
// accumulate one message to the target's handler carrying the segments and
// the origin's packed data, which the target applies and answers (with the
// old values, for the fetching kinds).
//
// Accumulates are atomic per element: an element of 1, 2, 4 or 8 bytes at
// an address aligned to its size is updated with a compare-and-swap loop;
// any other element under a striped lock of the target's control block
// chosen by its address. MPI requires the same basic type for every
// accumulate to a location, so a location always takes the same way,
// whoever updates it (an origin on the node, or the target's handler for
// the others).
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <deque>

#include "device/am/am.hpp"
#include "device/am/counter.hpp"
#include "device/am/exposure.hpp"
#include "device/api/rma/rma.hpp"
#include "device/datatypes/op.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"

using namespace iris;

namespace iris::api::rma {

namespace {

// ---- Elements, atomically ----

void stripe_lock(std::atomic<std::int64_t> &s) {
  int spins = 0;
  for (;;) {
    std::int64_t expected = 0;
    if (s.compare_exchange_weak(expected, 1, std::memory_order_acquire)) return;
    if (++spins > 64) sched_yield();
  }
}

// Whether `basic` is a C integer type (two's complement: MPI_SUM is the
// CPU's atomic add whatever the signedness).
bool integer_type(int basic) {
  switch (basic) {
    case MPI_CHAR:
    case MPI_SIGNED_CHAR:
    case MPI_UNSIGNED_CHAR:
    case MPI_SHORT:
    case MPI_UNSIGNED_SHORT:
    case MPI_INT:
    case MPI_UNSIGNED:
    case MPI_LONG:
    case MPI_UNSIGNED_LONG:
    case MPI_LONG_LONG:
    case MPI_UNSIGNED_LONG_LONG:
    case MPI_INT8_T:
    case MPI_INT16_T:
    case MPI_INT32_T:
    case MPI_INT64_T:
    case MPI_UINT8_T:
    case MPI_UINT16_T:
    case MPI_UINT32_T:
    case MPI_UINT64_T:
    case MPI_AINT:
    case MPI_OFFSET:
    case MPI_COUNT:
      return true;
    default:
      return false;
  }
}

template <typename U>
void cas_apply(std::byte *at, const std::byte *in, std::byte *old, int op, int basic,
               std::int64_t extent) {
  auto *a = reinterpret_cast<U *>(at);
  U cur = 0;
  if (op == MPI_NO_OP) {
    cur = __atomic_load_n(a, __ATOMIC_ACQUIRE);
  } else if ((op == MPI_SUM || op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) &&
             integer_type(basic)) {
    U v;
    std::memcpy(&v, in, sizeof(U));
    switch (op) {
      case MPI_SUM:
        cur = __atomic_fetch_add(a, v, __ATOMIC_ACQ_REL);
        break;
      case MPI_BAND:
        cur = __atomic_fetch_and(a, v, __ATOMIC_ACQ_REL);
        break;
      case MPI_BOR:
        cur = __atomic_fetch_or(a, v, __ATOMIC_ACQ_REL);
        break;
      default:
        cur = __atomic_fetch_xor(a, v, __ATOMIC_ACQ_REL);
        break;
    }
  } else if (op == MPI_REPLACE) {
    U next;
    std::memcpy(&next, in, sizeof(U));
    cur = __atomic_exchange_n(a, next, __ATOMIC_ACQ_REL);
  } else {
    cur = __atomic_load_n(a, __ATOMIC_RELAXED);
    for (;;) {
      U next;
      std::memcpy(&next, in, sizeof(U));
      device::op_apply(op, &cur, &next, 1, basic, extent);  // next = cur o in
      if (__atomic_compare_exchange_n(a, &cur, next, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        break;
      }
    }
  }
  if (old != nullptr) std::memcpy(old, &cur, sizeof(U));
}

// The striped lock of the element at `key`, its address in the target's
// process: every process that updates it picks the same stripe, wherever
// it maps the target's memory.
std::atomic<std::int64_t> &stripe_of(control *ctl, std::uint64_t key) {
  return ctl->stripe[(key / 16) % stripe_count];
}

// Element i of the stream at `at` (`key` in the target's process): target =
// target o in (old value to `old` when wanted), one element of `elem`
// bytes of type `basic`.
void apply_one(std::byte *at, std::uint64_t key, const std::byte *in, std::byte *old, int op,
               int basic, std::size_t elem, std::int64_t extent, control *ctl) {
  const auto address = reinterpret_cast<std::uintptr_t>(at);
  if ((elem == 1 || elem == 2 || elem == 4 || elem == 8) && address % elem == 0) {
    switch (elem) {
      case 1:
        return cas_apply<std::uint8_t>(at, in, old, op, basic, extent);
      case 2:
        return cas_apply<std::uint16_t>(at, in, old, op, basic, extent);
      case 4:
        return cas_apply<std::uint32_t>(at, in, old, op, basic, extent);
      default:
        return cas_apply<std::uint64_t>(at, in, old, op, basic, extent);
    }
  }
  std::atomic<std::int64_t> &s = stripe_of(ctl, key);
  stripe_lock(s);
  if (old != nullptr) std::memcpy(old, at, elem);
  if (op != MPI_NO_OP) {
    std::byte next[64];
    std::memcpy(next, in, elem);
    device::op_apply(op, at, next, 1, basic, extent);
    std::memcpy(at, next, elem);
  }
  s.store(0, std::memory_order_release);
}

// MPI_Compare_and_swap on one element: `result` gets the old value.
void compare_swap_one(std::byte *at, std::uint64_t key, const std::byte *origin,
                      const std::byte *compare, std::byte *result, std::size_t elem, control *ctl) {
  const auto address = reinterpret_cast<std::uintptr_t>(at);
  auto cas = [&](auto zero) {
    using U = decltype(zero);
    U expected, desired;
    std::memcpy(&expected, compare, sizeof(U));
    std::memcpy(&desired, origin, sizeof(U));
    __atomic_compare_exchange_n(reinterpret_cast<U *>(at), &expected, desired, false,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    std::memcpy(result, &expected, sizeof(U));
  };
  if (address % elem == 0 && (elem == 1 || elem == 2 || elem == 4 || elem == 8)) {
    if (elem == 1) return cas(std::uint8_t{});
    if (elem == 2) return cas(std::uint16_t{});
    if (elem == 4) return cas(std::uint32_t{});
    return cas(std::uint64_t{});
  }
  std::atomic<std::int64_t> &s = stripe_of(ctl, key);
  stripe_lock(s);
  std::memcpy(result, at, elem);
  if (std::memcmp(at, compare, elem) == 0) std::memcpy(at, origin, elem);
  s.store(0, std::memory_order_release);
}

// One element of a basic type with holes (MPI_SHORT_INT: a short, two
// bytes of padding, an int), whose fields lie at `at` in its memory layout
// and whose operand and old value travel packed: under its stripe, the old
// fields packed to `old`, then target = target o in, field by field.
void apply_holed(std::byte *at, std::uint64_t key, const std::byte *in, std::byte *old, int op,
                 int basic, const device::dtype &b, control *ctl) {
  std::byte theirs[64], packed[64];
  std::atomic<std::int64_t> &s = stripe_of(ctl, key);
  stripe_lock(s);
  if (old != nullptr) device::dtype_pack_range(at, 1, b, 0, b.size, old);
  if (op != MPI_NO_OP) {
    device::dtype_unpack_range(in, 0, b.size, theirs, 1, b);
    if (op != MPI_REPLACE) device::op_apply(op, at, theirs, 1, basic, b.extent);
    device::dtype_pack_range(theirs, 1, b, 0, b.size, packed);
    device::dtype_unpack_range(packed, 0, b.size, at, 1, b);
  }
  s.store(0, std::memory_order_release);
}

using segment_list = std::vector<std::pair<std::uint64_t, std::size_t>>;

// An accumulate (or compare-and-swap, `compare` not null) over the packed
// stream laid in `segs` (target addresses, bytes): element j of `elem`
// bytes of `basic` (`b`) takes operand + j*elem, its old value goes to
// old + j*elem when `old` is not null. `local(address)` is where a target
// address lies here. An element of a type with holes spans segments: it is
// found by its first byte and applied whole.
template <typename Local>
void apply_stream(const segment_list &segs, Local local, const std::byte *operand,
                  const std::byte *compare, std::byte *old, int op, int basic,
                  const device::dtype &b, control *ctl) {
  const std::size_t elem = b.size;
  std::size_t packed = 0;
  for (const auto &[address, bytes] : segs) {
    if (static_cast<std::int64_t>(elem) != b.extent) {
      for (std::size_t m = (packed + elem - 1) / elem * elem; m < packed + bytes; m += elem) {
        const std::uint64_t start = address + (m - packed);
        apply_holed(local(start, static_cast<std::size_t>(b.extent)), start, operand + m,
                    old != nullptr ? old + m : nullptr, op, basic, b, ctl);
      }
    } else {
      std::byte *at = local(address, bytes);
      for (std::size_t k = 0; k < bytes; k += elem) {
        if (compare != nullptr) {
          compare_swap_one(at + k, address + k, operand, compare, old + packed + k, elem, ctl);
        } else {
          apply_one(at + k, address + k, operand + packed + k,
                    old != nullptr ? old + packed + k : nullptr, op, basic, elem, b.extent, ctl);
        }
      }
    }
    packed += bytes;
  }
}

// ---- Passive-target locks on a control block ----

bool lock_apply(control &c, std::int64_t step) {
  switch (step) {
    case try_exclusive: {
      std::int64_t expected = 0;
      return c.lock.compare_exchange_strong(expected, exclusive_held, std::memory_order_acquire);
    }
    case try_shared: {
      std::int64_t v = c.lock.load(std::memory_order_relaxed);
      while (v >= 0) {
        if (c.lock.compare_exchange_weak(v, v + 1, std::memory_order_acquire)) return true;
      }
      return false;
    }
    case release_exclusive:
      c.lock.store(0, std::memory_order_release);
      return true;
    case release_shared:
      c.lock.fetch_sub(1, std::memory_order_release);
      return true;
    default:
      return false;
  }
}

// ---- Messages to the target's handlers ----

enum class message_kind : std::uint32_t { accumulate = 1, compare_swap, lock, post, done };

struct request_head {
  message_kind kind;
  std::int32_t op;
  std::int32_t basic;
  std::uint32_t elem;
  std::uint32_t token;
  std::uint32_t segments;  // (address, bytes) pairs ahead of the data
  std::int64_t extent;
  std::int64_t lock;       // a lock step
  std::uint32_t fetching;  // the old values go back
  std::uint32_t pad;
};

struct reply_head {
  std::uint32_t token;
  std::int32_t status;
  std::int64_t answer;
};

int request_handler = 0, reply_handler = 0;

// Reply bodies in flight: freed once their origin counter says sent.
std::deque<std::pair<iris_counter *, std::vector<std::byte>>> &replies_in_flight() {
  static std::deque<std::pair<iris_counter *, std::vector<std::byte>>> all;
  return all;
}
void replies_collect() {
  auto &all = replies_in_flight();
  while (!all.empty() && all.front().first->value.load(std::memory_order_acquire) > 0) {
    device::counter_free(all.front().first);
    all.pop_front();
  }
}

struct incoming {
  request_head head;
  int origin;
  std::vector<std::byte> data;
};

device::am_route route_to(const window &w, int rank) {
  return {w.targets[static_cast<std::size_t>(rank)].world, w.comm->handle, w.comm->context,
          w.comm->rank};
}

// Whether [address, address + bytes) lies in this rank's part of `w`.
bool inside(const window &w, std::uint64_t address, std::uint64_t bytes) {
  if (w.flavor == MPI_WIN_FLAVOR_DYNAMIC) {
    if (bytes == 0) return true;
    // In one attached region, or across adjacent ones.
    std::uint64_t last = 0;
    if (__builtin_add_overflow(address, bytes, &last)) return false;
    for (std::uint64_t at = address; at < last;) {
      std::uint64_t next = 0;
      for (const auto &[b, n] : w.attached) {
        if (at >= b && at - b < n) next = b + n;
      }
      if (next <= at) return false;
      at = next;
    }
    return true;
  }
  const auto base = reinterpret_cast<std::uintptr_t>(w.base);
  return address >= base && address - base <= static_cast<std::uint64_t>(w.size) &&
         bytes <= static_cast<std::uint64_t>(w.size) - (address - base);
}

void request_done(MPI_Comm comm, void *info) {
  std::unique_ptr<incoming> in(static_cast<incoming *>(info));
  replies_collect();
  window *w = of_comm(comm);
  if (w == nullptr) return;  // freed: the origin broke MPI's rules
  const request_head &h = in->head;
  if (h.kind == message_kind::post || h.kind == message_kind::done) {
    auto &from = h.kind == message_kind::post ? w->posts_from : w->completes_from;
    if (in->origin >= 0 && static_cast<std::size_t>(in->origin) < from.size()) {
      ++from[static_cast<std::size_t>(in->origin)];
    }
    return;  // no answer
  }
  reply_head answer{h.token, MPI_SUCCESS, 0};
  std::vector<std::byte> old;
  if (h.kind == message_kind::lock) {
    answer.answer = lock_apply(*w->ctl, h.lock) ? 1 : 0;
  } else {
    const std::size_t table = h.segments * 2 * sizeof(std::uint64_t);
    if (in->data.size() < table || h.elem == 0 || h.elem > 64) {
      answer.status = MPI_ERR_OTHER;
    } else {
      const auto *seg = reinterpret_cast<const std::uint64_t *>(in->data.data());
      const std::byte *operand = in->data.data() + table;
      const std::size_t operands = in->data.size() - table;
      const device::dtype *b = device::dtype_lookup(h.basic);
      std::size_t total = 0;
      segment_list segs;
      for (std::uint32_t i = 0; i < h.segments; ++i) {
        if (!inside(*w, seg[2 * i], seg[2 * i + 1])) answer.status = MPI_ERR_RMA_RANGE;
        segs.emplace_back(seg[2 * i], seg[2 * i + 1]);
        total += seg[2 * i + 1];
      }
      const std::size_t per = h.kind == message_kind::compare_swap ? 2 : 1;
      if (answer.status == MPI_SUCCESS &&
          (b == nullptr || !b->predefined || b->size != h.elem || b->extent > 64 ||
           total % h.elem != 0 || total * per != operands)) {
        answer.status = MPI_ERR_OTHER;
      }
      if (answer.status == MPI_SUCCESS) {
        if (h.fetching != 0 || h.kind == message_kind::compare_swap) old.resize(total);
        const bool cas = h.kind == message_kind::compare_swap;
        apply_stream(
            segs,
            [](std::uint64_t address, std::size_t) {
              return reinterpret_cast<std::byte *>(static_cast<std::uintptr_t>(address));
            },
            operand, cas ? operand + h.elem : nullptr, old.empty() ? nullptr : old.data(), h.op,
            h.basic, *b, w->ctl);
      }
    }
  }
  iris_counter *sent = device::counter_create();
  auto &flight = replies_in_flight();
  flight.emplace_back(sent, std::move(old));
  const std::vector<std::byte> &body = flight.back().second;
  device::am_send(route_to(*w, in->origin), reply_handler, &answer, sizeof answer, body.data(),
                  body.size(), 0, sent, nullptr);
}

void *request_arrived(MPI_Comm comm, int origin, const void *uhdr, int uhdr_len, MPI_Aint data_len,
                      MPIX_Am_completion_fn **completion, void **user_info) {
  (void)comm;
  auto *in = new incoming{};
  if (uhdr_len == sizeof(request_head)) std::memcpy(&in->head, uhdr, sizeof(request_head));
  in->origin = origin;
  in->data.resize(static_cast<std::size_t>(data_len));
  *completion = request_done;
  *user_info = in;
  return data_len > 0 ? in->data.data() : static_cast<void *>(in);
}

struct reply_arrival {
  window *w;
  std::uint32_t token;
  reply_head head;
};

void reply_done(MPI_Comm, void *info) {
  std::unique_ptr<reply_arrival> r(static_cast<reply_arrival *>(info));
  window &w = *r->w;
  if (r->token >= w.fetches.size()) return;
  fetch &f = w.fetches[r->token];
  f.replied = true;
  f.status = r->head.status;
  f.lock_answer = r->head.answer;
  --w.targets[static_cast<std::size_t>(f.target)].replies;
  if (f.free_on_reply) f = fetch{};
  if (f.status != MPI_SUCCESS && w.error == MPI_SUCCESS) {
    w.error = f.status;
    w.why = f.status == MPI_ERR_RMA_RANGE
                ? "an accumulate's target range lies outside the target's window"
                : "the target could not apply an accumulate";
  }
}

void *reply_arrived(MPI_Comm comm, int, const void *uhdr, int uhdr_len, MPI_Aint data_len,
                    MPIX_Am_completion_fn **completion, void **user_info) {
  window *w = of_comm(comm);
  if (w == nullptr || uhdr_len != sizeof(reply_head)) return nullptr;
  auto *r = new reply_arrival{w, 0, {}};
  std::memcpy(&r->head, uhdr, sizeof(reply_head));
  r->token = r->head.token;
  *completion = reply_done;
  *user_info = r;
  if (r->token >= w->fetches.size()) return nullptr;
  fetch &f = w->fetches[r->token];
  f.staging.resize(static_cast<std::size_t>(data_len));
  return data_len > 0 ? f.staging.data() : static_cast<void *>(r);
}

// A free fetch slot of `w` for a message to `rank`.
std::uint32_t fetch_slot(window &w, int rank) {
  std::size_t i = 0;
  while (i < w.fetches.size() && w.fetches[i].used) ++i;
  if (i == w.fetches.size()) w.fetches.emplace_back();
  fetch &f = w.fetches[i];
  f = fetch{};
  f.used = true;
  f.target = rank;
  ++w.targets[static_cast<std::size_t>(rank)].replies;
  return static_cast<std::uint32_t>(i);
}

// Sends a request to rank's handler; its body is kept until completion.
void request_send(window &w, int rank, const request_head &h, std::vector<std::byte> body) {
  ++w.targets[static_cast<std::size_t>(rank)].unsettled;
  w.keep.emplace_back(rank, std::move(body));
  const std::vector<std::byte> &b = w.keep.back().second;
  device::am_send(route_to(w, rank), request_handler, &h, sizeof h, b.data(), b.size(), 0, nullptr,
                  nullptr);
}

// ---- Origins ----

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

}  // namespace

void element_apply(std::byte *at, const void *in, void *old, int op, int basic, std::size_t elem) {
  const auto *operand = static_cast<const std::byte *>(in);
  auto *out = static_cast<std::byte *>(old);
  const auto extent = static_cast<std::int64_t>(elem);
  switch (elem) {
    case 1:
      return cas_apply<std::uint8_t>(at, operand, out, op, basic, extent);
    case 2:
      return cas_apply<std::uint16_t>(at, operand, out, op, basic, extent);
    case 4:
      return cas_apply<std::uint32_t>(at, operand, out, op, basic, extent);
    default:
      return cas_apply<std::uint64_t>(at, operand, out, op, basic, extent);
  }
}

void element_compare_swap(std::byte *at, const void *origin, const void *compare, void *result,
                          std::size_t elem) {
  // Aligned: compare_swap_one never reaches the stripes, whose block it
  // is not given.
  compare_swap_one(at, 0, static_cast<const std::byte *>(origin),
                   static_cast<const std::byte *>(compare), static_cast<std::byte *>(result), elem,
                   nullptr);
}

void replies_drain() {
  device::progress_until([] {
    for (const auto &[sent, body] : replies_in_flight()) {
      if (sent->value.load(std::memory_order_acquire) == 0) return false;
    }
    return true;
  });
  replies_collect();
}

void handlers_register() {
  static bool done = false;
  if (done) return;
  done = true;
  request_handler = device::am_register_internal(request_arrived);
  reply_handler = device::am_register_internal(reply_arrived);
}

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
  const std::byte *src = static_cast<const std::byte *>(origin);
  if (!device::dtype_contiguous(*a.origin_type, origin_count)) {
    std::vector<std::byte> packed(total);
    device::dtype_pack_range(origin, origin_count, *a.origin_type, 0, total, packed.data());
    w.keep.emplace_back(a.rank, std::move(packed));
    src = w.keep.back().second.data();
    ++a.t->unsettled;
  }
  const int target_count =
      static_cast<int>(total / std::max<std::size_t>(1, a.target_type->packed_size));
  std::size_t off = 0;
  std::uint64_t unattached = 0;
  bool refused = false;
  each_segment(
      a.address, target_count, *a.target_type, [&](std::uint64_t address, std::size_t bytes) {
        if (refused) return;
        if (std::byte *there = mapped(a, address, bytes)) {
          std::memcpy(there, src + off, bytes);
        } else if (a.w->flavor == MPI_WIN_FLAVOR_DYNAMIC && a.rank == w.comm->rank) {
          refused = true;
          unattached = address;
        } else {
          device::am_put(route_to(w, a.rank), src + off, bytes, address, 0, nullptr, nullptr);
          ++a.t->unsettled;
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
  const bool direct = device::dtype_contiguous(*a.origin_type, origin_count);
  std::vector<std::byte> staging;
  if (!direct) staging.resize(total);
  std::byte *dst = direct ? static_cast<std::byte *>(origin) : staging.data();
  const int target_count =
      static_cast<int>(total / std::max<std::size_t>(1, a.target_type->packed_size));
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
                 } else {
                   device::am_get(route_to(w, a.rank), dst + off, bytes, address, 0, nullptr);
                   ++a.t->unsettled;
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
  std::vector<std::byte> operands(compare != nullptr ? 2 * elem : total);
  if (op != MPI_NO_OP || compare != nullptr) {
    device::dtype_pack_range(origin, origin_count, *a.origin_type, 0, total, operands.data());
  }
  if (compare != nullptr) std::memcpy(operands.data() + elem, compare, elem);
  const auto segs = segments_of(a.address, target_count, *a.target_type);
  // Mapped: here, now.
  bool all_mapped = a.t->ctl != nullptr;
  for (const auto &[address, bytes] : segs) {
    if (!all_mapped) break;
    all_mapped = mapped(a, address, bytes) != nullptr;
  }
  if (all_mapped) {
    std::vector<std::byte> old(fetching ? data : 0);
    // Under an exclusive lock nobody else touches the target's memory: the
    // op runs over each piece at once.
    const bool alone = a.t->lock == MPI_LOCK_EXCLUSIVE || a.t->lock == -MPI_LOCK_EXCLUSIVE;
    if (alone && compare == nullptr && b->extent == static_cast<std::int64_t>(elem)) {
      std::size_t done = 0;
      for (const auto &[address, bytes] : segs) {
        std::byte *there = mapped(a, address, bytes);
        if (fetching) std::memcpy(old.data() + done, there, bytes);
        if (op != MPI_NO_OP && op != MPI_REPLACE) {
          device::op_apply(op, there, operands.data() + done, bytes / elem, basic, b->extent);
        }
        if (op != MPI_NO_OP) std::memcpy(there, operands.data() + done, bytes);
        done += bytes;
      }
      if (fetching) {
        device::dtype_unpack_range(old.data(), 0, old.size(), result, result_count, *result_type);
      }
      return MPI_SUCCESS;
    }
    apply_stream(
        segs, [&](std::uint64_t address, std::size_t bytes) { return mapped(a, address, bytes); },
        operands.data(), compare != nullptr ? operands.data() + elem : nullptr,
        fetching ? old.data() : nullptr, op, basic, *b, a.t->ctl);
    if (fetching) {
      device::dtype_unpack_range(old.data(), 0, old.size(), result, result_count, *result_type);
    }
    return MPI_SUCCESS;
  }
  if (w.flavor == MPI_WIN_FLAVOR_DYNAMIC && a.rank == w.comm->rank) {
    return raise(w, call, MPI_ERR_RMA_RANGE, "the target range is not attached here");
  }
  // To the target's handler.
  request_head h{};
  h.kind = compare != nullptr ? message_kind::compare_swap : message_kind::accumulate;
  h.op = op;
  h.basic = basic;
  h.elem = static_cast<std::uint32_t>(elem);
  h.segments = static_cast<std::uint32_t>(segs.size());
  h.extent = b->extent;
  h.fetching = fetching ? 1 : 0;
  h.token = fetch_slot(w, a.rank);
  fetch &f = w.fetches[h.token];
  if (fetching) {
    f.result = result;
    f.count = result_count;
    f.type = *result_type;
  }
  std::vector<std::byte> body(segs.size() * 2 * sizeof(std::uint64_t) + operands.size());
  auto *table = reinterpret_cast<std::uint64_t *>(body.data());
  for (std::size_t i = 0; i < segs.size(); ++i) {
    table[2 * i] = segs[i].first;
    table[2 * i + 1] = segs[i].second;
  }
  std::memcpy(body.data() + segs.size() * 2 * sizeof(std::uint64_t), operands.data(),
              operands.size());
  request_send(w, a.rank, h, std::move(body));
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
  device::am_send(route_to(w, rank), request_handler, &h, sizeof h, nullptr, 0, 0, nullptr,
                  nullptr);
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
  device::progress_until([&] { return w.fetches[token].replied; });
  const bool granted = w.fetches[token].lock_answer != 0;
  w.fetches[token].used = false;
  return granted;
}

int complete(window &w, int rank, std::string &why) {
  const int from = rank >= 0 ? rank : 0;
  const int to = rank >= 0 ? rank + 1 : w.comm->size;
  // Only copies and atomics on mappings since the last completion: they
  // are complete already.
  bool settled = w.error == MPI_SUCCESS;
  for (int r = from; r < to && settled; ++r) {
    settled = w.targets[static_cast<std::size_t>(r)].unsettled == 0;
  }
  if (settled) return MPI_SUCCESS;
  for (int r = from; r < to; ++r) w.targets[static_cast<std::size_t>(r)].unsettled = 0;
  device::progress_until([&] {
    for (int r = from; r < to; ++r) {
      if (w.targets[static_cast<std::size_t>(r)].replies > 0) return false;
    }
    return true;
  });
  int err = MPI_SUCCESS;
  const char *fence_why = nullptr;
  if (rank >= 0) {
    err = device::am_fence(w.targets[static_cast<std::size_t>(rank)].world, &fence_why);
  } else {
    err = device::am_fence(-1, &fence_why);
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
  for (fetch &f : w.fetches) {
    if (!f.used || !f.replied || (rank >= 0 && f.target != rank)) continue;
    if (f.result != nullptr && f.status == MPI_SUCCESS) {
      device::dtype_unpack_range(f.staging.data(), 0, f.staging.size(), f.result, f.count, f.type);
    }
    f = fetch{};
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
