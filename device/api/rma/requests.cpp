// The request-based operations (MPI_Rput, MPI_Rget, MPI_Raccumulate,
// MPI_Rget_accumulate) and the large-count (`_c`) forms of the one-sided
// calls.
//
// A request-based op is the op, then what its request's completion means,
// done before the call returns; MPI_Wait hands back the op's outcome.
// - MPI_Rput and MPI_Raccumulate: the origin buffer is free again (MPI's
//   meaning). Their data were copied or packed (into a batch, or a body
//   kept until completion), or went by am_put, whose leaving this process
//   the call waits for (am_sent). No round trip: a stream of them goes in
//   batches, and the next completion (flush, unlock) finds any refusal.
// - MPI_Rget and MPI_Rget_accumulate: their completion at the target,
//   which the request's first poll (MPI_Wait, MPI_Test) makes as
//   MPI_Win_flush to it does, unless a completion came since: a stream of
//   them waited for together costs one round trip. MPI_Test may so wait
//   for one flush. A dynamic window's still flush in the call.
// MPI allows request-based ops in passive-target epochs only.
#include <vector>

#include "device/am/am.hpp"
#include "device/api/rma/rma.hpp"
#include "device/api/types/bigcount.hpp"
#include "device/core/request.hpp"
#include "device/runtime/progress.hpp"
#include "device/runtime/runtime.hpp"

using namespace iris;
using namespace iris::api::rma;

namespace {

// A request-based op's request: ended when made, or (`pending`) ended by
// the next completion to its target, which its first poll makes unless
// one came since (MPI_Win_flush to that rank: it sends what waits in the
// batch and waits for the answers; with nothing left, it returns at once).
// A stream of them waited for together costs one flush. A failure there
// is raised through the window's handler, as a flush raises it.
struct rma_request final : device::request_ext {
  MPI_Win win = MPI_WIN_NULL;
  int rank = MPI_PROC_NULL;
  bool pending = false;
  void poll(device::request &r) override {
    if (pending) {
      pending = false;
      if (window *w = lookup(win); w != nullptr && rank < w->comm->size) {
        std::string why;
        if (int err = complete(*w, rank, why)) (void)raise(*w, "MPI_Wait", err, "%s", why.c_str());
      }
    }
    device::request_complete(r);
  }
  int finish(device::request &, void *status) override {
    api::status_empty(static_cast<MPI_Status *>(status));
    return MPI_SUCCESS;
  }
  int peek(device::request &r, void *status) override { return finish(r, status); }
  void cancel(device::request &) override {}
  bool free(device::request &) override { return true; }
  // From a list of this thread's that their deletes fill: a stream of
  // request-based ops allocates nothing once it runs.
  static void *operator new(std::size_t bytes);
  static void operator delete(void *p);
};

// The blocks of rma_requests deleted on this thread, to be taken again.
struct rma_request_blocks {
  std::vector<void *> free;
  ~rma_request_blocks() {
    for (void *p : free) ::operator delete(p);
  }
};
thread_local rma_request_blocks spare;

void *rma_request::operator new(std::size_t bytes) {
  if (bytes != sizeof(rma_request) || spare.free.empty()) return ::operator new(bytes);
  void *p = spare.free.back();
  spare.free.pop_back();
  return p;
}

void rma_request::operator delete(void *p) {
  if (p != nullptr) spare.free.push_back(p);
}

// The checks before a request-based op: `request` not NULL, a
// passive-target epoch to `rank` open.
int request_checks(const char *call, MPI_Win win, int rank, MPI_Request *request) {
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (request == nullptr) return raise(*w, call, MPI_ERR_ARG, "request is NULL");
  *request = MPI_REQUEST_NULL;
  if (rank == MPI_PROC_NULL || rank < 0 || rank >= w->comm->size) return MPI_SUCCESS;
  if (!w->lock_all && w->targets[static_cast<std::size_t>(rank)].lock == 0) {
    return raise(*w, call, MPI_ERR_RMA_SYNC,
                 "request-based operations need a passive-target epoch to rank %d "
                 "(MPI_Win_lock or MPI_Win_lock_all)",
                 rank);
  }
  return MPI_SUCCESS;
}

// After the op `started` returned: the request that reports it. `local`:
// it ends once its origin buffer is free; else once it completed at
// `rank`: at the first poll, where the target is not mapped here and ops
// wait (never for a dynamic window, whose target may refuse a range only
// it can check: that is raised here, by the call).
int request_end(const char *call, MPI_Win win, int rank, int started, bool local,
                MPI_Request *request) {
  if (started != MPI_SUCCESS) return started;
  window *w = lookup(win);
  auto *ext = new rma_request;
  if (rank != MPI_PROC_NULL && local) {
    const target &t = w->targets[static_cast<std::size_t>(rank)];
    device::am_sent(t.world);
    // A write by the netmod's RMA reads the origin buffer until it is done.
    if (t.rma.busy > 0) device::progress_until([&] { return t.rma.busy == 0; });
  } else if (rank != MPI_PROC_NULL && w->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
    ext->pending = !settled(*w, rank);
  } else if (rank != MPI_PROC_NULL) {
    std::string why;
    if (int err = complete(*w, rank, why)) {
      delete ext;
      return raise(*w, call, err, "%s", why.c_str());
    }
  }
  ext->win = win;
  ext->rank = rank;
  device::communicator *self = device::comm_lookup(MPI_COMM_SELF);
  device::request *r = device::rt->requests.allocate(device::request_kind::recv, self);
  r->ext = ext;
  if (!ext->pending) device::request_complete(*r);
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

// A request-based op: the checks, the op itself (`op()`, its return code),
// its completion (request_end) and the request that reports it.
template <typename Op>
int request_op(const char *call, MPI_Win win, int rank, bool local, MPI_Request *request, Op op) {
  if (int err = request_checks(call, win, rank, request)) return err;
  return request_end(call, win, rank, op(), local, request);
}

// A window's large-count displacement unit as an int (one past it is
// refused: no machine has one).
int unit_of(const char *call, MPI_Comm comm, MPI_Aint disp_unit, int &unit) {
  if (disp_unit > INT_MAX) {
    return device::error_raise(device::comm_lookup(comm), call, MPI_ERR_DISP,
                               "displacement unit %td is past 2^31-1", disp_unit);
  }
  unit = static_cast<int>(disp_unit);
  return MPI_SUCCESS;
}

// A large count as an int count of a type: `n` itself when it fits, else
// one element of a temporary type (freed with `big`).
int count_of(const char *call, MPI_Win win, MPI_Count n, MPI_Datatype type, api::big_count &big,
             int &count, MPI_Datatype &as) {
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (api::fits_int(n)) {
    count = static_cast<int>(n);
    as = type;
    return MPI_SUCCESS;
  }
  if (big.set(call, w->comm->handle, n, type) != MPI_SUCCESS) {
    return raise(*w, call, MPI_ERR_COUNT,
                 "a count of %lld elements past 2^31-1 needs a datatype whose data is one block",
                 static_cast<long long>(n));
  }
  count = big.count();
  as = big.type();
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
             MPI_Win win, MPI_Request *request) {
  const device::api_guard guard;
  return request_op("MPI_Rput", win, target_rank, true, request, [&] {
    return MPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                   target_count, target_datatype, win);
  });
}

int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
             MPI_Request *request) {
  const device::api_guard guard;
  return request_op("MPI_Rget", win, target_rank, false, request, [&] {
    return MPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                   target_count, target_datatype, win);
  });
}

int MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request) {
  const device::api_guard guard;
  return request_op("MPI_Raccumulate", win, target_rank, true, request, [&] {
    return MPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, op, win);
  });
}

int MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        void *result_addr, int result_count, MPI_Datatype result_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                        MPI_Request *request) {
  const device::api_guard guard;
  return request_op("MPI_Rget_accumulate", win, target_rank, false, request, [&] {
    return MPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                              result_datatype, target_rank, target_disp, target_count,
                              target_datatype, op, win);
  });
}

// ---- Large counts ----

int MPI_Put_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
              MPI_Datatype target_datatype, MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Put_c";
  api::big_count ob, tb;
  int oc = 0, tc = 0;
  MPI_Datatype ot = 0, tt = 0;
  if (int err = count_of(call, win, origin_count, origin_datatype, ob, oc, ot)) return err;
  if (int err = count_of(call, win, target_count, target_datatype, tb, tc, tt)) return err;
  return MPI_Put(origin_addr, oc, ot, target_rank, target_disp, tc, tt, win);
}

int MPI_Get_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
              MPI_Datatype target_datatype, MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Get_c";
  api::big_count ob, tb;
  int oc = 0, tc = 0;
  MPI_Datatype ot = 0, tt = 0;
  if (int err = count_of(call, win, origin_count, origin_datatype, ob, oc, ot)) return err;
  if (int err = count_of(call, win, target_count, target_datatype, tb, tc, tt)) return err;
  return MPI_Get(origin_addr, oc, ot, target_rank, target_disp, tc, tt, win);
}

int MPI_Accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                     MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Accumulate_c";
  api::big_count ob, tb;
  int oc = 0, tc = 0;
  MPI_Datatype ot = 0, tt = 0;
  if (int err = count_of(call, win, origin_count, origin_datatype, ob, oc, ot)) return err;
  if (int err = count_of(call, win, target_count, target_datatype, tb, tc, tt)) return err;
  return MPI_Accumulate(origin_addr, oc, ot, target_rank, target_disp, tc, tt, op, win);
}

int MPI_Get_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                         MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count,
                         MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                         MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Get_accumulate_c";
  api::big_count ob, rb, tb;
  int oc = 0, rc = 0, tc = 0;
  MPI_Datatype ot = 0, rt = 0, tt = 0;
  if (int err = count_of(call, win, origin_count, origin_datatype, ob, oc, ot)) return err;
  if (int err = count_of(call, win, result_count, result_datatype, rb, rc, rt)) return err;
  if (int err = count_of(call, win, target_count, target_datatype, tb, tc, tt)) return err;
  return MPI_Get_accumulate(origin_addr, oc, ot, result_addr, rc, rt, target_rank, target_disp, tc,
                            tt, op, win);
}

int MPI_Rput_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request) {
  const device::api_guard guard;
  return request_op("MPI_Rput_c", win, target_rank, true, request, [&] {
    return MPI_Put_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                     target_count, target_datatype, win);
  });
}

int MPI_Rget_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request) {
  const device::api_guard guard;
  return request_op("MPI_Rget_c", win, target_rank, false, request, [&] {
    return MPI_Get_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                     target_count, target_datatype, win);
  });
}

int MPI_Raccumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                      int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                      MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request) {
  const device::api_guard guard;
  return request_op("MPI_Raccumulate_c", win, target_rank, true, request, [&] {
    return MPI_Accumulate_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                            target_count, target_datatype, op, win);
  });
}

int MPI_Rget_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                          MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count,
                          MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                          MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                          MPI_Win win, MPI_Request *request) {
  const device::api_guard guard;
  return request_op("MPI_Rget_accumulate_c", win, target_rank, false, request, [&] {
    return MPI_Get_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr,
                                result_count, result_datatype, target_rank, target_disp,
                                target_count, target_datatype, op, win);
  });
}

// The windows' large-count creation (unit_of).
int MPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                     MPI_Win *win) {
  const device::api_guard guard;
  int unit = 0;
  if (int err = unit_of("MPI_Win_create_c", comm, disp_unit, unit)) return err;
  return MPI_Win_create(base, size, unit, info, comm, win);
}

int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                       void *baseptr, MPI_Win *win) {
  const device::api_guard guard;
  int unit = 0;
  if (int err = unit_of("MPI_Win_allocate_c", comm, disp_unit, unit)) return err;
  return MPI_Win_allocate(size, unit, info, comm, baseptr, win);
}

int MPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                              void *baseptr, MPI_Win *win) {
  const device::api_guard guard;
  int unit = 0;
  if (int err = unit_of("MPI_Win_allocate_shared_c", comm, disp_unit, unit)) return err;
  return MPI_Win_allocate_shared(size, unit, info, comm, baseptr, win);
}

int MPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                           void *baseptr) {
  const device::api_guard guard;
  int unit = 0;
  const int err = MPI_Win_shared_query(win, rank, size, &unit, baseptr);
  if (err == MPI_SUCCESS && disp_unit != nullptr) *disp_unit = unit;
  return err;
}

}  // extern "C"
