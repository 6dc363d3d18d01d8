// The neighbourhood collectives over a Cartesian topology, a graph or a
// distributed graph: Neighbor_allgather(v), Neighbor_alltoall(v,w), their
// nonblocking forms and (nbc_init.cpp) their persistent ones, all as one
// schedule round.
//
// The neighbours are the topology's lists: for a Cartesian grid, for each
// dimension the rank one step down, then one step up (MPI_PROC_NULL off the
// edge of a non-periodic one); for a graph (MPI_Graph_create), the rank's
// neighbours as MPI_Graph_neighbors lists them, both to send to and to
// receive from; for a distributed graph, its sources and destinations in
// the order given. In a periodic dimension of size 1 or 2
// the same rank is both neighbours, so each message carries its direction as
// its sub-tag: the block a rank sends up arrives as its peer's block from
// below. A graph's messages all share sub-tag 0 and match in order (MPI
// asks a graph's edges between two ranks to be as many each way; several
// edges then pair up in the order listed).
#include <algorithm>
#include <vector>

#include "device/api/coll/nbc.hpp"
#include "device/communicators/topology.hpp"
#include "device/communicators/topology_graph.hpp"

using namespace iris;
using iris::api::communicator;
namespace nbc = iris::api::nbc;

namespace {

using device::typed_buffer;
using nbc::mode;
using nbc::neighbor_kind;
using nbc::schedule;

struct neighbors {
  std::vector<int> in;   // block i comes from in[i]
  std::vector<int> out;  // block i goes to out[i]
  bool cart = false;     // sub-tags: send block i with i, receive block i with i ^ 1
};

int neighbors_of(const char *call, const communicator &c, neighbors &n) {
  if (const device::cart_topology *cart = device::cart_of(c)) {
    if (cart->ndims() > device::nbc_sub_tags / 2) {
      return device::error_raise(&c, call, MPI_ERR_UNSUPPORTED_OPERATION,
                                 "%s is not supported on a grid of more than %d dimensions", call,
                                 device::nbc_sub_tags / 2);
    }
    n.cart = true;
    for (int d = 0; d < cart->ndims(); ++d) {
      int below = 0;
      int above = 0;
      cart->shift(c.rank, d, 1, below, above);
      n.in.push_back(below < 0 ? MPI_PROC_NULL : below);
      n.in.push_back(above < 0 ? MPI_PROC_NULL : above);
    }
    n.out = n.in;
    return MPI_SUCCESS;
  }
  if (const device::graph_topology *graph = device::graph_of(c)) {
    n.in = graph->sources;
    n.out = graph->destinations;
    return MPI_SUCCESS;
  }
  if (const device::general_graph *graph = device::general_graph_of(c)) {
    const auto first = graph->edges.begin() + graph->first_edge(c.rank);
    n.in.assign(first, first + graph->degree(c.rank));
    n.out = n.in;
    return MPI_SUCCESS;
  }
  return device::error_raise(&c, call, MPI_ERR_TOPOLOGY, "the communicator has no topology");
}

// Checks the send and receive sides of `kind` for n.out and n.in blocks.
int check_sides(const char *call, const communicator &c, neighbor_kind kind,
                const nbc::neighbor_args &a, const neighbors &n) {
  const int nin = static_cast<int>(n.in.size());
  const int nout = static_cast<int>(n.out.size());
  // The v-variants' displacements count elements: the checks see the blocks
  // at the buffer's start, which is what NULL detection needs.
  const std::vector<int> zero(std::max(n.in.size(), n.out.size()), 0);
  typed_buffer tb;
  if (a.sendbuf == MPI_IN_PLACE || a.recvbuf == MPI_IN_PLACE) {
    return api::coll::error_in_place(call, c, "a buffer of a neighbourhood collective");
  }
  switch (kind) {
    case neighbor_kind::allgather:
    case neighbor_kind::alltoall:
      if (int err = api::check_typed_buffer(call, c, a.sendbuf, a.sendcount, a.sendtype, tb)) {
        return err;
      }
      return api::check_typed_buffer(call, c, a.recvbuf, a.recvcount, a.recvtype, tb);
    case neighbor_kind::allgatherv:
      if (int err = api::check_typed_buffer(call, c, a.sendbuf, a.sendcount, a.sendtype, tb)) {
        return err;
      }
      return nbc::check_w(call, c, nin, a.recvbuf, a.recvcounts, zero.data(),
                          std::vector<MPI_Datatype>(n.in.size(), a.recvtype).data());
    case neighbor_kind::alltoallv:
      if (int err = nbc::check_w(call, c, nout, a.sendbuf, a.sendcounts, zero.data(),
                                 std::vector<MPI_Datatype>(n.out.size(), a.sendtype).data())) {
        return err;
      }
      return nbc::check_w(call, c, nin, a.recvbuf, a.recvcounts, zero.data(),
                          std::vector<MPI_Datatype>(n.in.size(), a.recvtype).data());
    case neighbor_kind::alltoallw:
      if (int err =
              nbc::check_w(call, c, nout, a.sendbuf, a.sendcounts, a.sdispls_w, a.sendtypes)) {
        return err;
      }
      return nbc::check_w(call, c, nin, a.recvbuf, a.recvcounts, a.rdispls_w, a.recvtypes);
  }
  return MPI_SUCCESS;
}

// Block i of the send side of `kind`.
typed_buffer send_block(neighbor_kind kind, const nbc::neighbor_args &a, int i) {
  const typed_buffer side = nbc::typed(a.sendbuf, a.sendcount, a.sendtype);
  switch (kind) {
    case neighbor_kind::allgather:
    case neighbor_kind::allgatherv:
      return side;
    case neighbor_kind::alltoall:
      return side.block(i);
    case neighbor_kind::alltoallv:
      return nbc::typed(a.sendbuf, 0, a.sendtype).slice(a.sdispls[i], a.sendcounts[i]);
    case neighbor_kind::alltoallw:
      return nbc::w_block(a.sendbuf, a.sendcounts, a.sdispls_w, a.sendtypes, i);
  }
  return side;
}

// Block i of the receive side of `kind`.
typed_buffer recv_block(neighbor_kind kind, const nbc::neighbor_args &a, int i) {
  switch (kind) {
    case neighbor_kind::allgather:
    case neighbor_kind::alltoall:
      return nbc::typed(a.recvbuf, a.recvcount, a.recvtype).block(i);
    case neighbor_kind::allgatherv:
    case neighbor_kind::alltoallv:
      return nbc::typed(a.recvbuf, 0, a.recvtype).slice(a.rdispls[i], a.recvcounts[i]);
    case neighbor_kind::alltoallw:
      return nbc::w_block(a.recvbuf, a.recvcounts, a.rdispls_w, a.recvtypes, i);
  }
  return {};
}

}  // namespace

namespace iris::api::nbc {

int ineighbor(const char *call, neighbor_kind kind, const neighbor_args &a, MPI_Comm comm,
              MPI_Info info, mode m, MPI_Request *request) {
  communicator *c = nullptr;
  neighbors n;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (int err = neighbors_of(call, *c, n)) return err;
  if (int err = check_sides(call, *c, kind, a, n)) return err;
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  for (std::size_t i = 0; i < n.in.size(); ++i) {
    if (n.in[i] == MPI_PROC_NULL) continue;
    const int sub = n.cart ? static_cast<int>(i ^ 1U) : 0;
    s->recv(recv_block(kind, a, static_cast<int>(i)), n.in[i], sub);
  }
  for (std::size_t i = 0; i < n.out.size(); ++i) {
    if (n.out[i] == MPI_PROC_NULL) continue;
    const int sub = n.cart ? static_cast<int>(i) : 0;
    s->send(send_block(kind, a, static_cast<int>(i)), n.out[i], sub);
  }
  return post(call, *c, std::move(s), m, request);
}

}  // namespace iris::api::nbc

namespace iris::api::nbc {

neighbor_args neighbor_gather_args(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, int recvcount, const int recvcounts[],
                                   const int displs[], MPI_Datatype recvtype) {
  return {sendbuf, sendcount, nullptr,    nullptr, nullptr, sendtype, nullptr,
          recvbuf, recvcount, recvcounts, displs,  nullptr, recvtype, nullptr};
}

neighbor_args neighbor_alltoallv_args(const void *sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                      const int recvcounts[], const int rdispls[],
                                      MPI_Datatype recvtype) {
  return {sendbuf, 0, sendcounts, sdispls, nullptr, sendtype, nullptr,
          recvbuf, 0, recvcounts, rdispls, nullptr, recvtype, nullptr};
}

neighbor_args neighbor_alltoallw_args(const void *sendbuf, const int sendcounts[],
                                      const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                      void *recvbuf, const int recvcounts[],
                                      const MPI_Aint rdispls[], const MPI_Datatype recvtypes[]) {
  return {sendbuf, 0, sendcounts, nullptr, sdispls, MPI_DATATYPE_NULL, sendtypes,
          recvbuf, 0, recvcounts, nullptr, rdispls, MPI_DATATYPE_NULL, recvtypes};
}

}  // namespace iris::api::nbc

using nbc::neighbor_alltoallv_args;
using nbc::neighbor_alltoallw_args;
using nbc::neighbor_gather_args;

extern "C" {

int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Ineighbor_allgather", neighbor_kind::allgather,
                        neighbor_gather_args(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             nullptr, nullptr, recvtype),
                        comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ineighbor(
      "MPI_Ineighbor_allgatherv", neighbor_kind::allgatherv,
      neighbor_gather_args(sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype),
      comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                           MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Ineighbor_alltoall", neighbor_kind::alltoall,
                        neighbor_gather_args(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             nullptr, nullptr, recvtype),
                        comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Ineighbor_alltoallv", neighbor_kind::alltoallv,
                        neighbor_alltoallv_args(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                                recvcounts, rdispls, recvtype),
                        comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                            MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Ineighbor_alltoallw", neighbor_kind::alltoallw,
                        neighbor_alltoallw_args(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                                recvcounts, rdispls, recvtypes),
                        comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Neighbor_allgather", neighbor_kind::allgather,
                        neighbor_gather_args(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             nullptr, nullptr, recvtype),
                        comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  return nbc::ineighbor(
      "MPI_Neighbor_allgatherv", neighbor_kind::allgatherv,
      neighbor_gather_args(sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype),
      comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Neighbor_alltoall", neighbor_kind::alltoall,
                        neighbor_gather_args(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             nullptr, nullptr, recvtype),
                        comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                           MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                           const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Neighbor_alltoallv", neighbor_kind::alltoallv,
                        neighbor_alltoallv_args(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                                recvcounts, rdispls, recvtype),
                        comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                           const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                           const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                           MPI_Comm comm) {
  const device::api_guard guard;
  return nbc::ineighbor("MPI_Neighbor_alltoallw", neighbor_kind::alltoallw,
                        neighbor_alltoallw_args(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                                recvcounts, rdispls, recvtypes),
                        comm, MPI_INFO_NULL, mode::blocking, nullptr);
}

}  // extern "C"
