// Elements updated atomically, wherever the update runs (an origin on the
// target's node, on its mapping; the target's handler, for the others): see
// atomics.hpp.
#include "device/api/rma/atomics.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>

#include "device/datatypes/op.hpp"

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

// f(zero) with a zero of the unsigned type of `elem` bytes: 1, 2, 4, or
// else 8 (cpu_atomic's sizes).
template <typename F>
bool as_word(std::size_t elem, F f) {
  switch (elem) {
    case 1:
      return f(std::uint8_t{});
    case 2:
      return f(std::uint16_t{});
    case 4:
      return f(std::uint32_t{});
    default:
      return f(std::uint64_t{});
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

// run_apply's loop: `update(element, operand)` gives the element's old
// value, kept only when `Fetch`.
template <typename U, bool Fetch, typename Update>
void run_each(U *a, const std::byte *in, std::byte *old, std::size_t n, Update update) {
  for (std::size_t k = 0; k < n; ++k) {
    U v;
    std::memcpy(&v, in + k * sizeof(U), sizeof(U));
    if constexpr (Fetch) {
      const U prev = update(a + k, v);
      std::memcpy(old + k * sizeof(U), &prev, sizeof(U));
    } else {
      update(a + k, v);
    }
  }
}

template <typename U>
bool run_apply_as(std::byte *at, const std::byte *in, std::byte *old, std::size_t n, int op,
                  int basic, bool by_words = true);

// run_apply's elements narrower than 8 bytes under MPI_SUM, MPI_BAND,
// MPI_BOR or MPI_BXOR (integers), by aligned 8-byte words: one atomic step
// updates every element of a word, each whole; a sum adds lane by lane
// with no carry between lanes. The elements before the first word and
// after the last go one by one.
template <typename U>
void run_by_words(std::byte *at, const std::byte *in, std::byte *old, std::size_t n, int op,
                  int basic) {
  constexpr std::size_t per = 8 / sizeof(U);
  constexpr std::uint64_t high = sizeof(U) == 1   ? 0x8080808080808080ULL
                                 : sizeof(U) == 2 ? 0x8000800080008000ULL
                                                  : 0x8000000080000000ULL;
  const std::size_t lead =
      std::min(n, (8 - reinterpret_cast<std::uintptr_t>(at) % 8) % 8 / sizeof(U));
  const std::size_t words = (n - lead) / per;
  const std::size_t first = lead * sizeof(U), tail = lead + words * per;
  run_apply_as<U>(at, in, old, lead, op, basic, false);
  auto *w = reinterpret_cast<std::uint64_t *>(at + first);
  for (std::size_t k = 0; k < words; ++k) {
    std::uint64_t v, prev;
    std::memcpy(&v, in + first + 8 * k, 8);
    switch (op) {
      case MPI_SUM:
        prev = __atomic_load_n(w + k, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(w + k, &prev,
                                            ((prev & ~high) + (v & ~high)) ^ ((prev ^ v) & high),
                                            true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        }
        break;
      case MPI_BAND:
        prev = __atomic_fetch_and(w + k, v, __ATOMIC_ACQ_REL);
        break;
      case MPI_BOR:
        prev = __atomic_fetch_or(w + k, v, __ATOMIC_ACQ_REL);
        break;
      default:
        prev = __atomic_fetch_xor(w + k, v, __ATOMIC_ACQ_REL);
        break;
    }
    if (old != nullptr) std::memcpy(old + first + 8 * k, &prev, 8);
  }
  const std::size_t past = tail * sizeof(U);
  run_apply_as<U>(at + past, in + past, old != nullptr ? old + past : nullptr, n - tail, op, basic,
                  false);
}

template <typename U>
bool run_apply_as(std::byte *at, const std::byte *in, std::byte *old, std::size_t n, int op,
                  int basic, bool by_words) {
  if constexpr (sizeof(U) < 8) {
    if (by_words && n >= 2 * 8 / sizeof(U) && integer_type(basic) &&
        (op == MPI_SUM || op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR)) {
      run_by_words<U>(at, in, old, n, op, basic);
      return true;
    }
  }
  auto *a = reinterpret_cast<U *>(at);
  auto go = [&](auto update) {
    if (old != nullptr) {
      run_each<U, true>(a, in, old, n, update);
    } else {
      run_each<U, false>(a, in, old, n, update);
    }
    return true;
  };
  if (op == MPI_NO_OP) {
    return old == nullptr || go([](U *p, U) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); });
  }
  if (op == MPI_REPLACE && old == nullptr) {
    // A store of an aligned element is atomic: no locked instruction.
    return go([](U *p, U v) {
      __atomic_store_n(p, v, __ATOMIC_RELEASE);
      return v;
    });
  }
  if (op == MPI_REPLACE) {
    return go([](U *p, U v) { return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL); });
  }
  if (!integer_type(basic)) return false;
  switch (op) {
    case MPI_SUM:
      return go([](U *p, U v) { return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); });
    case MPI_BAND:
      return go([](U *p, U v) { return __atomic_fetch_and(p, v, __ATOMIC_ACQ_REL); });
    case MPI_BOR:
      return go([](U *p, U v) { return __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL); });
    case MPI_BXOR:
      return go([](U *p, U v) { return __atomic_fetch_xor(p, v, __ATOMIC_ACQ_REL); });
    default:
      return false;
  }
}

// The striped lock of the element at `key`, its address in the target's
// process: every process that updates it picks the same stripe, wherever
// it maps the target's memory.
std::atomic<std::int64_t> &stripe_of(control *ctl, std::uint64_t key) {
  return ctl->stripe[(key / 16) % stripe_count];
}

}  // namespace

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

// Element i of the stream at `at` (`key` in the target's process): target =
// target o in (old value to `old` when wanted), one element of `elem`
// bytes of type `basic`.
void apply_one(std::byte *at, std::uint64_t key, const std::byte *in, std::byte *old, int op,
               int basic, std::size_t elem, std::int64_t extent, control *ctl) {
  if (cpu_atomic(at, elem)) return element_apply(at, in, old, op, basic, elem);
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
  auto cas = [&](auto zero) {
    using U = decltype(zero);
    U expected, desired;
    std::memcpy(&expected, compare, sizeof(U));
    std::memcpy(&desired, origin, sizeof(U));
    __atomic_compare_exchange_n(reinterpret_cast<U *>(at), &expected, desired, false,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    std::memcpy(result, &expected, sizeof(U));
  };
  if (cpu_atomic(at, elem)) {
    as_word(elem, [&](auto zero) {
      cas(zero);
      return true;
    });
    return;
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

void element_apply(std::byte *at, const void *in, void *old, int op, int basic, std::size_t elem) {
  const auto *operand = static_cast<const std::byte *>(in);
  auto *out = static_cast<std::byte *>(old);
  const auto extent = static_cast<std::int64_t>(elem);
  as_word(elem, [&](auto zero) {
    cas_apply<decltype(zero)>(at, operand, out, op, basic, extent);
    return true;
  });
}

bool run_apply(std::byte *at, const std::byte *in, std::byte *old, std::size_t n, int op, int basic,
               std::size_t elem) {
  return as_word(
      elem, [&](auto zero) { return run_apply_as<decltype(zero)>(at, in, old, n, op, basic); });
}

void element_compare_swap(std::byte *at, const void *origin, const void *compare, void *result,
                          std::size_t elem) {
  // Aligned: compare_swap_one never reaches the stripes, whose block it
  // is not given.
  compare_swap_one(at, 0, static_cast<const std::byte *>(origin),
                   static_cast<const std::byte *>(compare), static_cast<std::byte *>(result), elem,
                   nullptr);
}

}  // namespace iris::api::rma
