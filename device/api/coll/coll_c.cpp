// The large-count (`_c`) collectives whose counts are single numbers:
// Bcast, the reductions, Gather, Scatter, Allgather, Alltoall and the
// neighbourhood Allgather and Alltoall, each blocking, nonblocking (MPI_I*)
// and persistent (*_init); Reduce_local_c and Op_create_c; and what the
// `_c` bindings share (coll_c.hpp). The v- and w-variants are in
// coll_vc.cpp.
#include "device/api/coll/coll_c.hpp"

#include "device/communicators/topology.hpp"
#include "device/datatypes/op.hpp"

using namespace iris;
namespace coll_c = iris::api::coll_c;
namespace nbc = iris::api::nbc;
using iris::api::big_count;
using nbc::mode;

namespace iris::api::coll_c {

const communicator *lookup(MPI_Comm comm) {
  return device::rt != nullptr ? device::comm_lookup(comm) : nullptr;
}

bool at_root(MPI_Comm comm, int root) {
  const communicator *c = lookup(comm);
  if (c == nullptr) return true;
  return c->inter ? root == MPI_ROOT : c->rank == root;
}

bool own_block(MPI_Comm comm, int root, const void *buf) {
  const communicator *c = lookup(comm);
  if (c == nullptr) return true;
  if (c->inter) return root >= 0;
  return !(c->rank == root && buf == MPI_IN_PLACE);
}

int count_arg(const char *call, MPI_Comm comm, MPI_Count count, MPI_Datatype type, bool used,
              big_count &b) {
  return b.set(call, comm, used || fits_int(count) ? count : 0, type);
}

int int_array::raise(const char *call, MPI_Comm comm, const char *what, int i, long long value) {
  return device::error_raise(lookup(comm), call, MPI_ERR_COUNT,
                             "%s[%d] = %lld does not fit an int, which Iris's v- and w-variants "
                             "take as counts and displacements",
                             what, i, value);
}

int w_blocks::block(const char *call, MPI_Comm comm, int i, MPI_Count count, MPI_Datatype type) {
  made_.push_back(std::make_unique<big_count>());
  if (int err = made_.back()->set(call, comm, count, type)) return err;
  counts_[static_cast<std::size_t>(i)] = made_.back()->count();
  types_[static_cast<std::size_t>(i)] = made_.back()->type();
  return MPI_SUCCESS;
}

int w_blocks::set_w(const char *call, MPI_Comm comm, int n, const MPI_Count counts[],
                    const MPI_Aint displs[], const MPI_Datatype types[]) {
  null_ = counts == nullptr || displs == nullptr || types == nullptr;
  if (null_ || n <= 0) return MPI_SUCCESS;
  const auto size = static_cast<std::size_t>(n);
  counts_.assign(size, 0);
  types_.assign(size, MPI_DATATYPE_NULL);
  displs_.assign(displs, displs + n);
  for (int i = 0; i < n; ++i) {
    if (int err = block(call, comm, i, counts[i], types[i])) return err;
  }
  return MPI_SUCCESS;
}

int w_blocks::set_v(const char *call, MPI_Comm comm, int n, const MPI_Count counts[],
                    const MPI_Aint displs[], MPI_Datatype type) {
  null_ = counts == nullptr || displs == nullptr;
  if (null_ || n <= 0) return MPI_SUCCESS;
  const auto size = static_cast<std::size_t>(n);
  counts_.assign(size, 0);
  types_.assign(size, type);
  displs_.assign(size, 0);
  for (int i = 0; i < n; ++i) {
    if (int err = block(call, comm, i, counts[i], type)) return err;
  }
  const device::dtype *t = device::dtype_lookup(type);
  if (t == nullptr) return MPI_SUCCESS;  // ialltoallw reports it (with a count of 0)
  for (int i = 0; i < n; ++i) {
    MPI_Aint bytes = 0;
    if (__builtin_mul_overflow(displs[i], static_cast<MPI_Aint>(t->extent), &bytes)) {
      return device::error_raise(
          lookup(comm), call, MPI_ERR_ARG, "displacement %d (%lld extents of %lld bytes) overflows",
          i, static_cast<long long>(displs[i]), static_cast<long long>(t->extent));
    }
    displs_[static_cast<std::size_t>(i)] = bytes;
  }
  return MPI_SUCCESS;
}

bool all_fit(int n, const MPI_Count counts[], const MPI_Aint displs[]) {
  for (int i = 0; i < n; ++i) {
    if (counts != nullptr && !fits_int(counts[i])) return false;
    if (displs != nullptr && !fits_int(displs[i])) return false;
  }
  return true;
}

int peers(MPI_Comm comm) {
  const communicator *c = lookup(comm);
  return c != nullptr ? c->size : 0;
}

int neighbors(MPI_Comm comm, bool in) {
  const communicator *c = lookup(comm);
  if (c == nullptr) return 0;
  if (const device::cart_topology *cart = device::cart_of(*c)) return 2 * cart->ndims();
  if (const device::graph_topology *graph = device::graph_of(*c)) {
    return static_cast<int>(in ? graph->sources.size() : graph->destinations.size());
  }
  return 0;
}

}  // namespace iris::api::coll_c
namespace {

// Each family's one body; its blocking, nonblocking and persistent bindings
// below differ only in the mode, the info and the request they pass.

int bcast(const char *call, void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
          MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request) {
  big_count b;
  if (int err = coll_c::count_arg(call, comm, count, datatype, root != MPI_PROC_NULL, b))
    return err;
  return nbc::ibcast(call, buffer, b.count(), b.type(), root, comm, info, m, request);
}

int reduce(const char *call, const void *sendbuf, void *recvbuf, MPI_Count count,
           MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, MPI_Info info, mode m,
           MPI_Request *request) {
  big_count b;
  if (int err = coll_c::count_arg(call, comm, count, datatype, root != MPI_PROC_NULL, b))
    return err;
  return nbc::ireduce(call, sendbuf, recvbuf, b.count(), b.type(), op, root, comm, info, m,
                      request);
}

int allreduce(const char *call, const void *sendbuf, void *recvbuf, MPI_Count count,
              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, mode m,
              MPI_Request *request) {
  big_count b;
  if (int err = coll_c::count_arg(call, comm, count, datatype, true, b)) return err;
  return nbc::iallreduce(call, sendbuf, recvbuf, b.count(), b.type(), op, comm, info, m, request);
}

// Scan (inclusive) and Exscan.
int scan(const char *call, bool inclusive, const void *sendbuf, void *recvbuf, MPI_Count count,
         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, mode m,
         MPI_Request *request) {
  big_count b;
  if (int err = coll_c::count_arg(call, comm, count, datatype, true, b)) return err;
  return nbc::iscan(call, inclusive, sendbuf, recvbuf, b.count(), b.type(), op, comm, info, m,
                    request);
}

int reduce_scatter_block(const char *call, const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, mode m,
                         MPI_Request *request) {
  big_count b;
  if (int err = coll_c::count_arg(call, comm, recvcount, datatype, true, b)) return err;
  return nbc::ireduce_scatter_block(call, sendbuf, recvbuf, b.count(), b.type(), op, comm, info, m,
                                    request);
}

// The two halves of a call that sends and receives blocks: `send_used` and
// `recv_used` say whether this rank's count and type matter (a count that
// does not fit an int is an error only where it does).
struct halves {
  big_count s;
  big_count r;
  int read(const char *call, MPI_Comm comm, MPI_Count sendcount, MPI_Datatype sendtype,
           bool send_used, MPI_Count recvcount, MPI_Datatype recvtype, bool recv_used) {
    if (int err = coll_c::count_arg(call, comm, sendcount, sendtype, send_used, s)) return err;
    return coll_c::count_arg(call, comm, recvcount, recvtype, recv_used, r);
  }
};

int gather(const char *call, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
           void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
           MPI_Info info, mode m, MPI_Request *request) {
  halves h;
  if (int err = h.read(call, comm, sendcount, sendtype, coll_c::own_block(comm, root, sendbuf),
                       recvcount, recvtype, coll_c::at_root(comm, root)))
    return err;
  return nbc::igatherv(call, false, sendbuf, h.s.count(), h.s.type(), recvbuf, h.r.count(), nullptr,
                       nullptr, h.r.type(), root, comm, info, m, request);
}

int scatter(const char *call, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
            MPI_Info info, mode m, MPI_Request *request) {
  halves h;
  if (int err = h.read(call, comm, sendcount, sendtype, coll_c::at_root(comm, root), recvcount,
                       recvtype, coll_c::own_block(comm, root, recvbuf)))
    return err;
  return nbc::iscatterv(call, false, sendbuf, h.s.count(), nullptr, nullptr, h.s.type(), recvbuf,
                        h.r.count(), h.r.type(), root, comm, info, m, request);
}

int allgather(const char *call, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
              void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
              MPI_Info info, mode m, MPI_Request *request) {
  halves h;
  if (int err = h.read(call, comm, sendcount, sendtype, sendbuf != MPI_IN_PLACE, recvcount,
                       recvtype, true))
    return err;
  return nbc::iallgatherv(call, false, sendbuf, h.s.count(), h.s.type(), recvbuf, h.r.count(),
                          nullptr, nullptr, h.r.type(), comm, info, m, request);
}

int alltoall(const char *call, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
             MPI_Info info, mode m, MPI_Request *request) {
  halves h;
  if (int err = h.read(call, comm, sendcount, sendtype, sendbuf != MPI_IN_PLACE, recvcount,
                       recvtype, true))
    return err;
  return nbc::ialltoall(call, sendbuf, h.s.count(), h.s.type(), recvbuf, h.r.count(), h.r.type(),
                        comm, info, m, request);
}

// Neighbor_allgather and Neighbor_alltoall.
int neighbor(const char *call, nbc::neighbor_kind kind, const void *sendbuf, MPI_Count sendcount,
             MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
             MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request) {
  halves h;
  if (int err = h.read(call, comm, sendcount, sendtype, true, recvcount, recvtype, true))
    return err;
  return nbc::ineighbor(call, kind,
                        nbc::neighbor_gather_args(sendbuf, h.s.count(), h.s.type(), recvbuf,
                                                  h.r.count(), nullptr, nullptr, h.r.type()),
                        comm, info, m, request);
}

}  // namespace

extern "C" {

int MPI_Op_create_c(MPI_User_function_c *user_fn, int commute, MPI_Op *op) {
  const device::api_guard guard;
  const char *call = "MPI_Op_create_c";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, reinterpret_cast<void *>(user_fn), "user_fn")) {
    return err;
  }
  if (int err = api::check_not_null(call, nullptr, op, "op")) return err;
  *op = device::op_create_c(user_fn, commute != 0);
  return MPI_SUCCESS;
}

int MPI_Reduce_local_c(const void *inbuf, void *inoutbuf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Op op) {
  const device::api_guard guard;
  big_count b;
  if (int err = b.set("MPI_Reduce_local_c", MPI_COMM_WORLD, count, datatype)) return err;
  return api::coll::reduce_local("MPI_Reduce_local_c", inbuf, inoutbuf, b.count(), b.type(), op);
}

int MPI_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  const device::api_guard guard;
  return bcast("MPI_Bcast_c", buffer, count, datatype, root, comm, MPI_INFO_NULL, mode::blocking,
               nullptr);
}

int MPI_Ibcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                 MPI_Request *request) {
  const device::api_guard guard;
  return bcast("MPI_Ibcast_c", buffer, count, datatype, root, comm, MPI_INFO_NULL, mode::start,
               request);
}

int MPI_Bcast_init_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                     MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return bcast("MPI_Bcast_init_c", buffer, count, datatype, root, comm, info, mode::persistent,
               request);
}

int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, int root, MPI_Comm comm) {
  const device::api_guard guard;
  return reduce("MPI_Reduce_c", sendbuf, recvbuf, count, datatype, op, root, comm, MPI_INFO_NULL,
                mode::blocking, nullptr);
}

int MPI_Ireduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, int root, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return reduce("MPI_Ireduce_c", sendbuf, recvbuf, count, datatype, op, root, comm, MPI_INFO_NULL,
                mode::start, request);
}

int MPI_Reduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return reduce("MPI_Reduce_init_c", sendbuf, recvbuf, count, datatype, op, root, comm, info,
                mode::persistent, request);
}

int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm) {
  const device::api_guard guard;
  return allreduce("MPI_Allreduce_c", sendbuf, recvbuf, count, datatype, op, comm, MPI_INFO_NULL,
                   mode::blocking, nullptr);
}

int MPI_Iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return allreduce("MPI_Iallreduce_c", sendbuf, recvbuf, count, datatype, op, comm, MPI_INFO_NULL,
                   mode::start, request);
}

int MPI_Allreduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return allreduce("MPI_Allreduce_init_c", sendbuf, recvbuf, count, datatype, op, comm, info,
                   mode::persistent, request);
}

int MPI_Scan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
               MPI_Op op, MPI_Comm comm) {
  const device::api_guard guard;
  return scan("MPI_Scan_c", true, sendbuf, recvbuf, count, datatype, op, comm, MPI_INFO_NULL,
              mode::blocking, nullptr);
}

int MPI_Iscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return scan("MPI_Iscan_c", true, sendbuf, recvbuf, count, datatype, op, comm, MPI_INFO_NULL,
              mode::start, request);
}

int MPI_Scan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return scan("MPI_Scan_init_c", true, sendbuf, recvbuf, count, datatype, op, comm, info,
              mode::persistent, request);
}

int MPI_Exscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm) {
  const device::api_guard guard;
  return scan("MPI_Exscan_c", false, sendbuf, recvbuf, count, datatype, op, comm, MPI_INFO_NULL,
              mode::blocking, nullptr);
}

int MPI_Iexscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return scan("MPI_Iexscan_c", false, sendbuf, recvbuf, count, datatype, op, comm, MPI_INFO_NULL,
              mode::start, request);
}

int MPI_Exscan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return scan("MPI_Exscan_init_c", false, sendbuf, recvbuf, count, datatype, op, comm, info,
              mode::persistent, request);
}

int MPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  const device::api_guard guard;
  return reduce_scatter_block("MPI_Reduce_scatter_block_c", sendbuf, recvbuf, recvcount, datatype,
                              op, comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Ireduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request *request) {
  const device::api_guard guard;
  return reduce_scatter_block("MPI_Ireduce_scatter_block_c", sendbuf, recvbuf, recvcount, datatype,
                              op, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Reduce_scatter_block_init_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                    MPI_Request *request) {
  const device::api_guard guard;
  return reduce_scatter_block("MPI_Reduce_scatter_block_init_c", sendbuf, recvbuf, recvcount,
                              datatype, op, comm, info, mode::persistent, request);
}

int MPI_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                 MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const device::api_guard guard;
  return gather("MPI_Gather_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Igather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Request *request) {
  const device::api_guard guard;
  return gather("MPI_Igather_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Gather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                      MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return gather("MPI_Gather_init_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                root, comm, info, mode::persistent, request);
}

int MPI_Scatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const device::api_guard guard;
  return scatter("MPI_Scatter_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                 comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Iscatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                   MPI_Request *request) {
  const device::api_guard guard;
  return scatter("MPI_Iscatter_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                 comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Scatter_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                       MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return scatter("MPI_Scatter_init_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                 root, comm, info, mode::persistent, request);
}

int MPI_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  return allgather("MPI_Allgather_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                   comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Iallgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                     MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                     MPI_Request *request) {
  const device::api_guard guard;
  return allgather("MPI_Iallgather_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                   comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return allgather("MPI_Allgather_init_c", sendbuf, sendcount, sendtype, recvbuf, recvcount,
                   recvtype, comm, info, mode::persistent, request);
}

int MPI_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  return alltoall("MPI_Alltoall_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                  comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Ialltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request *request) {
  const device::api_guard guard;
  return alltoall("MPI_Ialltoall_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                  comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return alltoall("MPI_Alltoall_init_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                  comm, info, mode::persistent, request);
}

int MPI_Neighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm) {
  const device::api_guard guard;
  return neighbor("MPI_Neighbor_allgather_c", nbc::neighbor_kind::allgather, sendbuf, sendcount,
                  sendtype, recvbuf, recvcount, recvtype, comm, MPI_INFO_NULL, mode::blocking,
                  nullptr);
}

int MPI_Ineighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return neighbor("MPI_Ineighbor_allgather_c", nbc::neighbor_kind::allgather, sendbuf, sendcount,
                  sendtype, recvbuf, recvcount, recvtype, comm, MPI_INFO_NULL, mode::start,
                  request);
}

int MPI_Neighbor_allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return neighbor("MPI_Neighbor_allgather_init_c", nbc::neighbor_kind::allgather, sendbuf,
                  sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, mode::persistent,
                  request);
}

int MPI_Neighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                            MPI_Comm comm) {
  const device::api_guard guard;
  return neighbor("MPI_Neighbor_alltoall_c", nbc::neighbor_kind::alltoall, sendbuf, sendcount,
                  sendtype, recvbuf, recvcount, recvtype, comm, MPI_INFO_NULL, mode::blocking,
                  nullptr);
}

int MPI_Ineighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return neighbor("MPI_Ineighbor_alltoall_c", nbc::neighbor_kind::alltoall, sendbuf, sendcount,
                  sendtype, recvbuf, recvcount, recvtype, comm, MPI_INFO_NULL, mode::start,
                  request);
}

int MPI_Neighbor_alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                 MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return neighbor("MPI_Neighbor_alltoall_init_c", nbc::neighbor_kind::alltoall, sendbuf, sendcount,
                  sendtype, recvbuf, recvcount, recvtype, comm, info, mode::persistent, request);
}

}  // extern "C"
