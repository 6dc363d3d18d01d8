// The large-count (`_c`) v- and w-variants: Gatherv, Scatterv, Allgatherv,
// Alltoallv, Alltoallw, Reduce_scatter and the neighbourhood Allgatherv,
// Alltoallv and Alltoallw, each blocking, nonblocking (MPI_I*) and
// persistent (*_init). Their MPI_Count counts and MPI_Aint displacements
// become int arrays (coll_c.hpp); the collective is the int one's.
// Alltoallw_c and Neighbor_alltoallw_c keep their byte displacements whole,
// and Alltoallv_c and Neighbor_alltoallv_c turn their blocks into w-blocks
// once an entry is past an int, so these take any count and displacement
// (a count past an int of a dense type).
#include "device/api/coll/coll_c.hpp"

using namespace iris;
namespace coll_c = iris::api::coll_c;
namespace nbc = iris::api::nbc;
using iris::api::big_count;
using iris::api::communicator;
using nbc::mode;

namespace {

// Alltoallv_c and its forms: the int path while every count and
// displacement fits an int, else every block as a w-block (byte
// displacements, a temporary type for a count past an int).
int alltoallv_c(const char *call, const void *sendbuf, const MPI_Count sendcounts[],
                const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                const MPI_Count recvcounts[], const MPI_Aint rdispls[], MPI_Datatype recvtype,
                MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request) {
  const int n = coll_c::peers(comm);
  const int ns = sendbuf == MPI_IN_PLACE ? 0 : n;
  if (coll_c::all_fit(ns, sendcounts, sdispls) && coll_c::all_fit(n, recvcounts, rdispls)) {
    coll_c::int_array scounts;
    coll_c::int_array sdisp;
    coll_c::int_array rcounts;
    coll_c::int_array rdisp;
    if (int err = scounts.set(call, comm, sendcounts, ns, "sendcounts")) return err;
    if (int err = sdisp.set(call, comm, sdispls, ns, "sdispls")) return err;
    if (int err = rcounts.set(call, comm, recvcounts, n, "recvcounts")) return err;
    if (int err = rdisp.set(call, comm, rdispls, n, "rdispls")) return err;
    return nbc::ialltoallv(call, sendbuf, scounts.get(), sdisp.get(), sendtype, recvbuf,
                           rcounts.get(), rdisp.get(), recvtype, comm, info, m, request);
  }
  coll_c::w_blocks send;
  coll_c::w_blocks recv;
  if (int err = send.set_v(call, comm, ns, sendcounts, sdispls, sendtype)) return err;
  if (int err = recv.set_v(call, comm, n, recvcounts, rdispls, recvtype)) return err;
  return nbc::ialltoallw<MPI_Aint>(call, sendbuf, send.counts(), send.displs(), send.types(),
                                   recvbuf, recv.counts(), recv.displs(), recv.types(), comm, info,
                                   m, request);
}

// Alltoallw_c and its forms: byte displacements as they are, a temporary
// type for a count past an int.
int alltoallw_c(const char *call, const void *sendbuf, const MPI_Count sendcounts[],
                const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info, mode m,
                MPI_Request *request) {
  const int n = coll_c::peers(comm);
  const int ns = sendbuf == MPI_IN_PLACE ? 0 : n;
  coll_c::w_blocks send;
  coll_c::w_blocks recv;
  if (int err = send.set_w(call, comm, ns, sendcounts, sdispls, sendtypes)) return err;
  if (int err = recv.set_w(call, comm, n, recvcounts, rdispls, recvtypes)) return err;
  return nbc::ialltoallw<MPI_Aint>(call, sendbuf, send.counts(), send.displs(), send.types(),
                                   recvbuf, recv.counts(), recv.displs(), recv.types(), comm, info,
                                   m, request);
}

// Neighbor_alltoallv_c and its forms: the int path while every entry fits
// an int, else the blocks as w-blocks of Neighbor_alltoallw.
int neighbor_alltoallv_c(const char *call, const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, mode m,
                         MPI_Request *request) {
  const int ns = coll_c::neighbors(comm, false);
  const int nr = coll_c::neighbors(comm, true);
  if (coll_c::all_fit(ns, sendcounts, sdispls) && coll_c::all_fit(nr, recvcounts, rdispls)) {
    coll_c::int_array scounts;
    coll_c::int_array sdisp;
    coll_c::int_array rcounts;
    coll_c::int_array rdisp;
    if (int err = scounts.set(call, comm, sendcounts, ns, "sendcounts")) return err;
    if (int err = sdisp.set(call, comm, sdispls, ns, "sdispls")) return err;
    if (int err = rcounts.set(call, comm, recvcounts, nr, "recvcounts")) return err;
    if (int err = rdisp.set(call, comm, rdispls, nr, "rdispls")) return err;
    return nbc::ineighbor(
        call, nbc::neighbor_kind::alltoallv,
        nbc::neighbor_alltoallv_args(sendbuf, scounts.get(), sdisp.get(), sendtype, recvbuf,
                                     rcounts.get(), rdisp.get(), recvtype),
        comm, info, m, request);
  }
  coll_c::w_blocks send;
  coll_c::w_blocks recv;
  if (int err = send.set_v(call, comm, ns, sendcounts, sdispls, sendtype)) return err;
  if (int err = recv.set_v(call, comm, nr, recvcounts, rdispls, recvtype)) return err;
  return nbc::ineighbor(
      call, nbc::neighbor_kind::alltoallw,
      nbc::neighbor_alltoallw_args(sendbuf, send.counts(), send.displs(), send.types(), recvbuf,
                                   recv.counts(), recv.displs(), recv.types()),
      comm, info, m, request);
}

// Neighbor_alltoallw_c and its forms: a temporary type for a count past an
// int.
int neighbor_alltoallw_c(const char *call, const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info, mode m,
                         MPI_Request *request) {
  coll_c::w_blocks send;
  coll_c::w_blocks recv;
  if (int err =
          send.set_w(call, comm, coll_c::neighbors(comm, false), sendcounts, sdispls, sendtypes)) {
    return err;
  }
  if (int err =
          recv.set_w(call, comm, coll_c::neighbors(comm, true), recvcounts, rdispls, recvtypes)) {
    return err;
  }
  return nbc::ineighbor(
      call, nbc::neighbor_kind::alltoallw,
      nbc::neighbor_alltoallw_args(sendbuf, send.counts(), send.displs(), send.types(), recvbuf,
                                   recv.counts(), recv.displs(), recv.types()),
      comm, info, m, request);
}

// Gatherv_c and its forms: the send half's count, the root's int arrays.
int gatherv(const char *call, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
            void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
            MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, mode m,
            MPI_Request *request) {
  big_count s;
  coll_c::int_array counts;
  coll_c::int_array disp;
  if (int err = coll_c::count_arg(call, comm, sendcount, sendtype,
                                  coll_c::own_block(comm, root, sendbuf), s))
    return err;
  const int n = coll_c::at_root(comm, root) ? coll_c::peers(comm) : 0;
  if (int err = counts.set(call, comm, recvcounts, n, "recvcounts")) return err;
  if (int err = disp.set(call, comm, displs, n, "displs")) return err;
  return nbc::igatherv(call, true, sendbuf, s.count(), s.type(), recvbuf, 0, counts.get(),
                       disp.get(), recvtype, root, comm, info, m, request);
}

// Scatterv_c and its forms: the root's int arrays, the receive half's count.
int scatterv(const char *call, const void *sendbuf, const MPI_Count sendcounts[],
             const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
             MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, mode m,
             MPI_Request *request) {
  big_count r;
  coll_c::int_array counts;
  coll_c::int_array disp;
  if (int err = coll_c::count_arg(call, comm, recvcount, recvtype,
                                  coll_c::own_block(comm, root, recvbuf), r))
    return err;
  const int n = coll_c::at_root(comm, root) ? coll_c::peers(comm) : 0;
  if (int err = counts.set(call, comm, sendcounts, n, "sendcounts")) return err;
  if (int err = disp.set(call, comm, displs, n, "displs")) return err;
  return nbc::iscatterv(call, true, sendbuf, 0, counts.get(), disp.get(), sendtype, recvbuf,
                        r.count(), r.type(), root, comm, info, m, request);
}

// Allgatherv_c and its forms.
int allgatherv(const char *call, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
               void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
               MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request) {
  big_count s;
  coll_c::int_array counts;
  coll_c::int_array disp;
  if (int err = coll_c::count_arg(call, comm, sendcount, sendtype, sendbuf != MPI_IN_PLACE, s))
    return err;
  const int n = coll_c::peers(comm);
  if (int err = counts.set(call, comm, recvcounts, n, "recvcounts")) return err;
  if (int err = disp.set(call, comm, displs, n, "displs")) return err;
  return nbc::iallgatherv(call, true, sendbuf, s.count(), s.type(), recvbuf, 0, counts.get(),
                          disp.get(), recvtype, comm, info, m, request);
}

// Reduce_scatter_c and its forms: one count per rank of the local group.
int reduce_scatter(const char *call, const void *sendbuf, void *recvbuf,
                   const MPI_Count recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Info info, mode m, MPI_Request *request) {
  coll_c::int_array counts;
  const communicator *c = coll_c::lookup(comm);
  if (int err =
          counts.set(call, comm, recvcounts, c != nullptr ? c->local_size() : 0, "recvcounts"))
    return err;
  return nbc::ireduce_scatter(call, sendbuf, recvbuf, counts.get(), datatype, op, comm, info, m,
                              request);
}

// Neighbor_allgatherv_c and its forms: one count per incoming neighbour.
int neighbor_allgatherv(const char *call, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                        const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Info info, mode m, MPI_Request *request) {
  big_count s;
  coll_c::int_array counts;
  coll_c::int_array disp;
  if (int err = coll_c::count_arg(call, comm, sendcount, sendtype, true, s)) return err;
  const int n = coll_c::neighbors(comm, true);
  if (int err = counts.set(call, comm, recvcounts, n, "recvcounts")) return err;
  if (int err = disp.set(call, comm, displs, n, "displs")) return err;
  return nbc::ineighbor(call, nbc::neighbor_kind::allgatherv,
                        nbc::neighbor_gather_args(sendbuf, s.count(), s.type(), recvbuf, 0,
                                                  counts.get(), disp.get(), recvtype),
                        comm, info, m, request);
}

}  // namespace

extern "C" {

int MPI_Gatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                  int root, MPI_Comm comm) {
  const device::api_guard guard;
  return gatherv("MPI_Gatherv_c", sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                 recvtype, root, comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Scatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                   MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int root, MPI_Comm comm) {
  const device::api_guard guard;
  return scatterv("MPI_Scatterv_c", sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                  recvtype, root, comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                     MPI_Comm comm) {
  const device::api_guard guard;
  return allgatherv("MPI_Allgatherv_c", sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                    recvtype, comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  return alltoallv_c("MPI_Alltoallv_c", sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                     rdispls, recvtype, comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  const device::api_guard guard;
  return alltoallw_c("MPI_Alltoallw_c", sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                     recvcounts, rdispls, recvtypes, comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  const device::api_guard guard;
  return reduce_scatter("MPI_Reduce_scatter_c", sendbuf, recvbuf, recvcounts, datatype, op, comm,
                        MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Neighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                              MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  return neighbor_allgatherv("MPI_Neighbor_allgatherv_c", sendbuf, sendcount, sendtype, recvbuf,
                             recvcounts, displs, recvtype, comm, MPI_INFO_NULL, mode::blocking,
                             nullptr);
}

int MPI_Neighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                             const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                             const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                             MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  return neighbor_alltoallv_c("MPI_Neighbor_alltoallv_c", sendbuf, sendcounts, sdispls, sendtype,
                              recvbuf, recvcounts, rdispls, recvtype, comm, MPI_INFO_NULL,
                              mode::blocking, nullptr);
}

int MPI_Neighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[],
                             const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                             void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                             const MPI_Datatype recvtypes[], MPI_Comm comm) {
  const device::api_guard guard;
  return neighbor_alltoallw_c("MPI_Neighbor_alltoallw_c", sendbuf, sendcounts, sdispls, sendtypes,
                              recvbuf, recvcounts, rdispls, recvtypes, comm, MPI_INFO_NULL,
                              mode::blocking, nullptr);
}

int MPI_Igatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                   int root, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return gatherv("MPI_Igatherv_c", sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                 recvtype, root, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Iscatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                    MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return scatterv("MPI_Iscatterv_c", sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                  recvtype, root, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Iallgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return allgatherv("MPI_Iallgatherv_c", sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                    recvtype, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ialltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                     MPI_Request *request) {
  const device::api_guard guard;
  return alltoallv_c("MPI_Ialltoallv_c", sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                     recvcounts, rdispls, recvtype, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ialltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                     MPI_Request *request) {
  const device::api_guard guard;
  return alltoallw_c("MPI_Ialltoallw_c", sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                     recvcounts, rdispls, recvtypes, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ireduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return reduce_scatter("MPI_Ireduce_scatter_c", sendbuf, recvbuf, recvcounts, datatype, op, comm,
                        MPI_INFO_NULL, mode::start, request);
}

int MPI_Ineighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                               MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return neighbor_allgatherv("MPI_Ineighbor_allgatherv_c", sendbuf, sendcount, sendtype, recvbuf,
                             recvcounts, displs, recvtype, comm, MPI_INFO_NULL, mode::start,
                             request);
}

int MPI_Ineighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                              const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return neighbor_alltoallv_c("MPI_Ineighbor_alltoallv_c", sendbuf, sendcounts, sdispls, sendtype,
                              recvbuf, recvcounts, rdispls, recvtype, comm, MPI_INFO_NULL,
                              mode::start, request);
}

int MPI_Ineighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                              void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return neighbor_alltoallw_c("MPI_Ineighbor_alltoallw_c", sendbuf, sendcounts, sdispls, sendtypes,
                              recvbuf, recvcounts, rdispls, recvtypes, comm, MPI_INFO_NULL,
                              mode::start, request);
}

int MPI_Gatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request) {
  const device::api_guard guard;
  return gatherv("MPI_Gatherv_init_c", sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                 recvtype, root, comm, info, mode::persistent, request);
}

int MPI_Scatterv_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                        MPI_Request *request) {
  const device::api_guard guard;
  return scatterv("MPI_Scatterv_init_c", sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                  recvtype, root, comm, info, mode::persistent, request);
}

int MPI_Allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                          MPI_Request *request) {
  const device::api_guard guard;
  return allgatherv("MPI_Allgatherv_init_c", sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                    displs, recvtype, comm, info, mode::persistent, request);
}

int MPI_Alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                         MPI_Request *request) {
  const device::api_guard guard;
  return alltoallv_c("MPI_Alltoallv_init_c", sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                     recvcounts, rdispls, recvtype, comm, info, mode::persistent, request);
}

int MPI_Alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                         MPI_Request *request) {
  const device::api_guard guard;
  return alltoallw_c("MPI_Alltoallw_init_c", sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                     recvcounts, rdispls, recvtypes, comm, info, mode::persistent, request);
}

int MPI_Reduce_scatter_init_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                              MPI_Request *request) {
  const device::api_guard guard;
  return reduce_scatter("MPI_Reduce_scatter_init_c", sendbuf, recvbuf, recvcounts, datatype, op,
                        comm, info, mode::persistent, request);
}

int MPI_Neighbor_allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, const MPI_Count recvcounts[],
                                   const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                   MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return neighbor_allgatherv("MPI_Neighbor_allgatherv_init_c", sendbuf, sendcount, sendtype,
                             recvbuf, recvcounts, displs, recvtype, comm, info, mode::persistent,
                             request);
}

int MPI_Neighbor_alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                                  const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                  const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request) {
  const device::api_guard guard;
  return neighbor_alltoallv_c("MPI_Neighbor_alltoallv_init_c", sendbuf, sendcounts, sdispls,
                              sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, info,
                              mode::persistent, request);
}

int MPI_Neighbor_alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                                  const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                  void *recvbuf, const MPI_Count recvcounts[],
                                  const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                  MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return neighbor_alltoallw_c("MPI_Neighbor_alltoallw_init_c", sendbuf, sendcounts, sdispls,
                              sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, info,
                              mode::persistent, request);
}

}  // extern "C"
