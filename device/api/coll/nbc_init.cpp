// The MPI-4 persistent collectives: MPI_*_init checks the arguments and
// builds the schedule once (taking the communicator's collective sequence
// number, as MPI has every rank initialise them in the same order); each
// MPI_Start runs it again on the same request, and the Wait and Test calls
// leave the request inactive (device/api/persistent.cpp, wait.cpp).
#include "device/api/coll/nbc.hpp"

using namespace iris;
namespace nbc = iris::api::nbc;
using nbc::mode;
using nbc::neighbor_kind;

extern "C" {

int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ibarrier("MPI_Barrier_init", comm, info, mode::persistent, request);
}

int MPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                   MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ibcast("MPI_Bcast_init", buffer, count, datatype, root, comm, info, mode::persistent,
                     request);
}

int MPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                    MPI_Request *request) {
  const device::api_guard guard;
  return nbc::igatherv("MPI_Gather_init", false, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                       nullptr, nullptr, recvtype, root, comm, info, mode::persistent, request);
}

int MPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                     MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::igatherv("MPI_Gatherv_init", true, sendbuf, sendcount, sendtype, recvbuf, 0,
                       recvcounts, displs, recvtype, root, comm, info, mode::persistent, request);
}

int MPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                     MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iscatterv("MPI_Scatter_init", false, sendbuf, sendcount, nullptr, nullptr, sendtype,
                        recvbuf, recvcount, recvtype, root, comm, info, mode::persistent, request);
}

int MPI_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[],
                      MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                      int root, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iscatterv("MPI_Scatterv_init", true, sendbuf, 0, sendcounts, displs, sendtype,
                        recvbuf, recvcount, recvtype, root, comm, info, mode::persistent, request);
}

int MPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iallgatherv("MPI_Allgather_init", false, sendbuf, sendcount, sendtype, recvbuf,
                          recvcount, nullptr, nullptr, recvtype, comm, info, mode::persistent,
                          request);
}

int MPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iallgatherv("MPI_Allgatherv_init", true, sendbuf, sendcount, sendtype, recvbuf, 0,
                          recvcounts, displs, recvtype, comm, info, mode::persistent, request);
}

int MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                      MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ialltoall("MPI_Alltoall_init", sendbuf, sendcount, sendtype, recvbuf, recvcount,
                        recvtype, comm, info, mode::persistent, request);
}

int MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ialltoallv("MPI_Alltoallv_init", sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                         recvcounts, rdispls, recvtype, comm, info, mode::persistent, request);
}

int MPI_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                       const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                       MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ialltoallw("MPI_Alltoallw_init", sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                         recvcounts, rdispls, recvtypes, comm, info, mode::persistent, request);
}

int MPI_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    int root, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ireduce("MPI_Reduce_init", sendbuf, recvbuf, count, datatype, op, root, comm, info,
                      mode::persistent, request);
}

int MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iallreduce("MPI_Allreduce_init", sendbuf, recvbuf, count, datatype, op, comm, info,
                         mode::persistent, request);
}

int MPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                            MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ireduce_scatter("MPI_Reduce_scatter_init", sendbuf, recvbuf, recvcounts, datatype, op,
                              comm, info, mode::persistent, request);
}

int MPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ireduce_scatter_block("MPI_Reduce_scatter_block_init", sendbuf, recvbuf, recvcount,
                                    datatype, op, comm, info, mode::persistent, request);
}

int MPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iscan("MPI_Scan_init", true, sendbuf, recvbuf, count, datatype, op, comm, info,
                    mode::persistent, request);
}

int MPI_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm, MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iscan("MPI_Exscan_init", false, sendbuf, recvbuf, count, datatype, op, comm, info,
                    mode::persistent, request);
}

int MPI_Neighbor_allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Neighbor_allgather_init", neighbor_kind::allgather,
                        nbc::neighbor_gather_args(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                  nullptr, nullptr, recvtype),
                        comm, info, mode::persistent, request);
}

int MPI_Neighbor_allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, const int recvcounts[], const int displs[],
                                 MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                 MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Neighbor_allgatherv_init", neighbor_kind::allgatherv,
                        nbc::neighbor_gather_args(sendbuf, sendcount, sendtype, recvbuf, 0,
                                                  recvcounts, displs, recvtype),
                        comm, info, mode::persistent, request);
}

int MPI_Neighbor_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                               MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Neighbor_alltoall_init", neighbor_kind::alltoall,
                        nbc::neighbor_gather_args(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                  nullptr, nullptr, recvtype),
                        comm, info, mode::persistent, request);
}

int MPI_Neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Info info, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Neighbor_alltoallv_init", neighbor_kind::alltoallv,
                        nbc::neighbor_alltoallv_args(sendbuf, sendcounts, sdispls, sendtype,
                                                     recvbuf, recvcounts, rdispls, recvtype),
                        comm, info, mode::persistent, request);
}

int MPI_Neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[],
                                const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
                                const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Neighbor_alltoallw_init", neighbor_kind::alltoallw,
                        nbc::neighbor_alltoallw_args(sendbuf, sendcounts, sdispls, sendtypes,
                                                     recvbuf, recvcounts, rdispls, recvtypes),
                        comm, info, mode::persistent, request);
}

}  // extern "C"
