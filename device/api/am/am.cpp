// Active-message bindings (MPIX_, include/iris/am.h): argument checks, then
// device/am/. What the origin can check is refused here with its class; what
// only the target knows (its exposed memory, its counters) is refused there
// and reported by the MPIX_Am_fence that covers the operation.
#include <cinttypes>

#include "device/am/am.hpp"
#include "device/am/counter.hpp"
#include "device/am/exposure.hpp"
#include "device/api/check.hpp"
#include "device/protocols/recovery.hpp"
#include "device/runtime/progress.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

// The target rank and the route to it; MPI_PROC_NULL gives `none`.
int route_checks(const char *call, MPI_Comm handle, int target, communicator *&c,
                 device::am_route &to, bool &none) {
  if (int err = api::check_intracomm(call, handle, c)) return err;
  none = target == MPI_PROC_NULL;
  if (none) return MPI_SUCCESS;
  if (target < 0 || target >= c->size) {
    return device::error_raise(c, call, MPI_ERR_RANK, "target rank %d out of range (size %d)",
                               target, c->size);
  }
  to = {c->world_rank[static_cast<std::size_t>(target)], c->handle, c->context, c->rank};
  if (device::rt->troubled && device::recovery_failed(to.target_world)) [[unlikely]] {
    return device::error_raise(c, call, MPIX_ERR_PROC_FAILED, "target rank %d died", target);
  }
  return MPI_SUCCESS;
}

// A counter of this process: null (none) or alive.
int counter_check(const char *call, const communicator *c, MPIX_Counter counter, const char *what) {
  if (counter == MPIX_COUNTER_NULL || device::counter_valid(counter)) return MPI_SUCCESS;
  return device::error_raise(c, call, MPI_ERR_ARG, "%s %p is not a counter of this process", what,
                             static_cast<void *>(counter));
}

// A target counter's address as MPIX_Counter_address gives them (0: none).
// The target checks it against its live counters; here only its shape.
int target_counter_check(const char *call, const communicator *c, MPI_Aint address) {
  if (address == 0) return MPI_SUCCESS;
  if (address < 4096 || address % alignof(iris_counter) != 0) {
    return device::error_raise(c, call, MPI_ERR_ARG,
                               "target counter address %#" PRIxPTR
                               " cannot name a counter (use what MPIX_Counter_address gave "
                               "at the target, or 0 for none)",
                               static_cast<std::uintptr_t>(address));
  }
  return MPI_SUCCESS;
}

int length_check(const char *call, const communicator *c, const void *buf, MPI_Aint bytes,
                 const char *what) {
  if (bytes < 0) {
    return device::error_raise(c, call, MPI_ERR_COUNT, "negative %s length %td", what, bytes);
  }
  if (buf == nullptr && bytes > 0) {
    return device::error_raise(c, call, MPI_ERR_BUFFER, "NULL %s with length %td", what, bytes);
  }
  return MPI_SUCCESS;
}

// The common put or get at full speed, checked as the full path checks it:
// an intracommunicator the fast sends know, a target in it, lengths and
// counters that pass, no target counter, and a region the last op to that
// target landed in (am_mapped_hit). false: nothing was done.
bool mapped_fast(MPI_Comm handle, int target, bool write, const void *local, MPI_Aint bytes,
                 MPI_Aint address, MPI_Aint target_counter, MPIX_Counter origin_counter,
                 MPIX_Counter completion_counter) {
  const device::runtime *r = device::rt;
  if (r == nullptr || r->troubled || target_counter != 0 || bytes < 0 ||
      (local == nullptr && bytes > 0)) {
    return false;
  }
  const communicator *c = device::comm_lookup_published(*r, handle);
  if (c == nullptr || static_cast<unsigned>(target) >= static_cast<unsigned>(c->size)) return false;
  if ((origin_counter != MPIX_COUNTER_NULL && !device::counter_valid(origin_counter)) ||
      (completion_counter != MPIX_COUNTER_NULL && !device::counter_valid(completion_counter))) {
    return false;
  }
  if (!device::am_mapped_hit(c->world_rank[static_cast<std::size_t>(target)], write,
                             const_cast<void *>(local), static_cast<std::size_t>(bytes),
                             static_cast<std::uint64_t>(address))) {
    return false;
  }
  device::counter_bump(origin_counter);
  device::counter_bump(completion_counter);
  return true;
}

// An op to MPI_PROC_NULL: complete at once.
int nothing(MPIX_Counter origin_counter, MPIX_Counter completion_counter) {
  device::counter_bump(origin_counter);
  device::counter_bump(completion_counter);
  return MPI_SUCCESS;
}

}  // namespace

int MPIX_Am_register(MPIX_Am_header_fn *fn, int *handler) {
  const device::api_guard guard;
  const char *call = "MPIX_Am_register";
  if (int err = api::check_initialized(call)) return err;
  if (fn == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "NULL header handler");
  }
  if (int err = api::check_not_null(call, nullptr, handler, "handler")) return err;
  if (int err = device::am_register(fn, handler)) {
    return device::error_raise(nullptr, call, err, "too many handlers");
  }
  device::am_progress_wanted();  // last: a progress thread may poll from here
  return MPI_SUCCESS;
}

int MPIX_Amsend(int handler, const void *uhdr, int uhdr_len, const void *data, MPI_Aint data_len,
                int target, MPI_Comm comm, MPI_Aint target_counter, MPIX_Counter origin_counter,
                MPIX_Counter completion_counter) {
  const device::api_guard guard;
  const char *call = "MPIX_Amsend";
  communicator *c = nullptr;
  device::am_route to{};
  bool none = false;
  if (int err = route_checks(call, comm, target, c, to, none)) return err;
  if (handler < 0 || handler >= device::am_handlers()) {
    return device::error_raise(c, call, MPI_ERR_ARG,
                               "handler id %d is not registered (%d handlers; MPIX_Am_register "
                               "gives them)",
                               handler, device::am_handlers());
  }
  if (uhdr_len < 0 || uhdr_len > MPIX_AM_UHDR_MAX) {
    return device::error_raise(c, call, MPI_ERR_ARG,
                               "user header length %d outside 0..%d (MPIX_AM_UHDR_MAX)", uhdr_len,
                               MPIX_AM_UHDR_MAX);
  }
  if (uhdr == nullptr && uhdr_len > 0) {
    return device::error_raise(c, call, MPI_ERR_BUFFER, "NULL user header with length %d",
                               uhdr_len);
  }
  if (int err = length_check(call, c, data, data_len, "data")) return err;
  if (int err = target_counter_check(call, c, target_counter)) return err;
  if (int err = counter_check(call, c, origin_counter, "origin counter")) return err;
  if (int err = counter_check(call, c, completion_counter, "completion counter")) return err;
  if (none) return nothing(origin_counter, completion_counter);
  return device::am_send(to, handler, uhdr, uhdr_len, data, static_cast<std::size_t>(data_len),
                         static_cast<std::uint64_t>(target_counter), origin_counter,
                         completion_counter);
}

int MPIX_Put(const void *origin, MPI_Aint bytes, int target, MPI_Aint target_addr, MPI_Comm comm,
             MPI_Aint target_counter, MPIX_Counter origin_counter,
             MPIX_Counter completion_counter) {
  const device::api_guard guard;
  if (mapped_fast(comm, target, true, origin, bytes, target_addr, target_counter, origin_counter,
                  completion_counter)) [[likely]] {
    return MPI_SUCCESS;
  }
  const char *call = "MPIX_Put";
  communicator *c = nullptr;
  device::am_route to{};
  bool none = false;
  if (int err = route_checks(call, comm, target, c, to, none)) return err;
  if (int err = length_check(call, c, origin, bytes, "origin buffer")) return err;
  if (int err = target_counter_check(call, c, target_counter)) return err;
  if (int err = counter_check(call, c, origin_counter, "origin counter")) return err;
  if (int err = counter_check(call, c, completion_counter, "completion counter")) return err;
  if (none) return nothing(origin_counter, completion_counter);
  return device::am_put(
      to, origin, static_cast<std::size_t>(bytes), static_cast<std::uint64_t>(target_addr),
      static_cast<std::uint64_t>(target_counter), origin_counter, completion_counter);
}

int MPIX_Get(void *origin, MPI_Aint bytes, int target, MPI_Aint target_addr, MPI_Comm comm,
             MPI_Aint target_counter, MPIX_Counter origin_counter) {
  const device::api_guard guard;
  if (mapped_fast(comm, target, false, origin, bytes, target_addr, target_counter, origin_counter,
                  MPIX_COUNTER_NULL)) [[likely]] {
    return MPI_SUCCESS;
  }
  const char *call = "MPIX_Get";
  communicator *c = nullptr;
  device::am_route to{};
  bool none = false;
  if (int err = route_checks(call, comm, target, c, to, none)) return err;
  if (int err = length_check(call, c, origin, bytes, "origin buffer")) return err;
  if (int err = target_counter_check(call, c, target_counter)) return err;
  if (int err = counter_check(call, c, origin_counter, "origin counter")) return err;
  if (none) return nothing(origin_counter, MPIX_COUNTER_NULL);
  return device::am_get(to, origin, static_cast<std::size_t>(bytes),
                        static_cast<std::uint64_t>(target_addr),
                        static_cast<std::uint64_t>(target_counter), origin_counter);
}

int MPIX_Counter_create(MPIX_Counter *counter) {
  const device::api_guard guard;
  const char *call = "MPIX_Counter_create";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, counter, "counter")) return err;
  *counter = device::counter_create();
  return MPI_SUCCESS;
}

int MPIX_Counter_free(MPIX_Counter *counter) {
  const device::api_guard guard;
  const char *call = "MPIX_Counter_free";
  if (int err = api::check_not_null(call, nullptr, counter, "counter")) return err;
  if (int err = counter_check(call, nullptr, *counter, "counter")) return err;
  if (*counter != MPIX_COUNTER_NULL) device::counter_free(*counter);
  *counter = MPIX_COUNTER_NULL;
  return MPI_SUCCESS;
}

namespace {

int live_counter(const char *call, MPIX_Counter counter) {
  if (counter == MPIX_COUNTER_NULL) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "MPIX_COUNTER_NULL is no counter");
  }
  return counter_check(call, nullptr, counter, "counter");
}

}  // namespace

// Without the call lock: an atomic load, from any thread, while another
// computes or polls (test/bindings_locked.py lets these two be).
int MPIX_Counter_get(MPIX_Counter counter, MPI_Count *value) {
  const char *call = "MPIX_Counter_get";
  if (int err = live_counter(call, counter)) return err;
  if (int err = api::check_not_null(call, nullptr, value, "value")) return err;
  *value = counter->value.load(std::memory_order_acquire);
  return MPI_SUCCESS;
}

int MPIX_Counter_set(MPIX_Counter counter, MPI_Count value) {
  const char *call = "MPIX_Counter_set";
  if (int err = live_counter(call, counter)) return err;
  counter->value.store(value, std::memory_order_release);
  counter->lost.store(false, std::memory_order_release);
  return MPI_SUCCESS;
}

int MPIX_Counter_wait(MPIX_Counter counter, MPI_Count value) {
  const device::api_guard guard;
  const char *call = "MPIX_Counter_wait";
  if (int err = api::check_initialized(call)) return err;
  if (int err = live_counter(call, counter)) return err;
  if (value < 0) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "negative value %lld", value);
  }
  bool taken = false;
  device::progress_until([&] {
    taken = device::counter_take(counter, value);
    return taken || counter->lost.load(std::memory_order_acquire);
  });
  if (taken) return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPIX_ERR_PROC_FAILED,
                             "counter %p is short of %lld: an operation it counts ended at a rank "
                             "that died",
                             static_cast<void *>(counter), value);
}

int MPIX_Counter_address(MPIX_Counter counter, MPI_Aint *address) {
  const device::api_guard guard;
  const char *call = "MPIX_Counter_address";
  if (int err = live_counter(call, counter)) return err;
  if (int err = api::check_not_null(call, nullptr, address, "address")) return err;
  *address = static_cast<MPI_Aint>(reinterpret_cast<std::uintptr_t>(counter));
  return MPI_SUCCESS;
}

int MPIX_Expose(void *base, MPI_Aint bytes) {
  const device::api_guard guard;
  const char *call = "MPIX_Expose";
  if (int err = api::check_initialized(call)) return err;
  if (int err = length_check(call, nullptr, base, bytes, "base")) return err;
  if (base == nullptr) {  // also for 0 bytes: a region is named by its base
    return device::error_raise(nullptr, call, MPI_ERR_BUFFER, "NULL base");
  }
  std::uint64_t block = 0, offset = 0, block_bytes = 0;
  device::am_block_of(base, static_cast<std::size_t>(bytes), block, offset, block_bytes);
  const int err =
      device::exposure_add(base, static_cast<std::size_t>(bytes), block, offset, block_bytes);
  if (err == MPI_ERR_NO_MEM) {
    return device::error_raise(nullptr, call, err, "%zu regions exposed already (the most)",
                               device::exposure_slots);
  }
  if (err != MPI_SUCCESS) {
    return device::error_raise(nullptr, call, err, "%p is exposed already", base);
  }
  device::am_exposures_changed();
  device::am_progress_wanted();  // last: a progress thread may poll from here
  return MPI_SUCCESS;
}

int MPIX_Conceal(void *base) {
  const device::api_guard guard;
  const char *call = "MPIX_Conceal";
  if (int err = api::check_initialized(call)) return err;
  if (device::exposure_remove(base) != MPI_SUCCESS) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG,
                               "%p is not the base of a region exposed by MPIX_Expose", base);
  }
  device::am_exposures_changed();
  return MPI_SUCCESS;
}

int MPIX_Am_fence(MPI_Comm comm, int target) {
  const device::api_guard guard;
  const char *call = "MPIX_Am_fence";
  communicator *c = nullptr;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (target == MPI_PROC_NULL) return MPI_SUCCESS;
  int world = -1;
  if (target != MPI_ANY_SOURCE) {
    if (target < 0 || target >= c->size) {
      return device::error_raise(c, call, MPI_ERR_RANK, "target rank %d out of range (size %d)",
                                 target, c->size);
    }
    world = c->world_rank[static_cast<std::size_t>(target)];
  }
  const char *why = nullptr;
  // MPI_ANY_SOURCE: every op of this process, to any rank of any comm.
  const int status = device::am_fence(world, &why);
  if (status == MPI_SUCCESS) return MPI_SUCCESS;
  return device::error_raise(c, call, status, "an operation was refused at %s", why);
}
