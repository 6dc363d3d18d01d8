// Collectives over an intercommunicator (MPI-4.1 6.2.2): every process of
// one group contributes, every process of the other receives. Rooted ones
// name their root with MPI_ROOT (the root itself), MPI_PROC_NULL (the rest
// of its group) or the root's rank in the remote group (the other group).
// They are schedules like the nonblocking collectives, so the blocking,
// nonblocking and persistent forms all come from here: messages to the
// remote group go on the intercommunicator's collective context, messages
// within a group on its local group's (schedule::address_local).
//
// The all-to-all kinds exchange directly with every remote rank; a
// reduction is reduced within the contributing group to its rank 0, which
// hands it over; Allreduce's leaders swap their groups' results and
// broadcast them in their own group, and so do Reduce_scatter(_block)'s,
// which then scatter them. Scan and Exscan keep check_intracomm's error:
// they are not defined on an intercommunicator.
#include <climits>
#include <vector>

#include "device/api/coll/nbc.hpp"

using namespace iris;
using iris::api::communicator;
namespace coll = iris::api::coll;
namespace nbc = iris::api::nbc;

namespace {

using device::typed_buffer;
using nbc::mode;
using nbc::schedule;

enum class role : std::uint8_t { root, idle, member };

int check_root(const char *call, const communicator &c, int root, role &out) {
  if (root == MPI_ROOT) {
    out = role::root;
  } else if (root == MPI_PROC_NULL) {
    out = role::idle;
  } else if (root >= 0 && root < c.size) {
    out = role::member;
  } else {
    return device::error_raise(&c, call, MPI_ERR_ROOT,
                               "invalid root %d on an intercommunicator (MPI_ROOT, MPI_PROC_NULL "
                               "or a rank of the remote group of size %d)",
                               root, c.size);
  }
  return MPI_SUCCESS;
}

int no_in_place(const char *call, const communicator &c, const void *a, const void *b) {
  if (!coll::in_place(a) && !coll::in_place(b)) return MPI_SUCCESS;
  return coll::error_in_place(call, c, "a buffer on an intercommunicator");
}

using coll::block_of;
using coll::check_side;

}  // namespace

namespace iris::api::nbc {

int inter_barrier(const char *call, communicator &c, MPI_Info info, mode m, MPI_Request *request) {
  if (int err = check_request(call, c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(c);
  // Everyone of this group has arrived; the leaders swap that news; each
  // tells its group.
  s->address_local(true);
  barrier_rounds(*s);
  s->address_local(false);
  if (c.rank == 0) {
    const typed_buffer none = coll::bytes(nullptr, 0);
    s->recv(none, 0);
    s->send(none, 0);
    s->fence();
  }
  s->address_local(true);
  barrier_rounds(*s);
  return post(call, c, std::move(s), m, request);
}

int inter_bcast(const char *call, void *buffer, int count, MPI_Datatype datatype, int root,
                communicator &c, MPI_Info info, mode m, MPI_Request *request) {
  role r = role::idle;
  typed_buffer data;
  if (int err = check_root(call, c, root, r)) return err;
  if (r != role::idle) {
    if (int err = api::check_typed_buffer(call, c, buffer, count, datatype, data)) return err;
  }
  if (int err = check_request(call, c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(c);
  if (r == role::root) {
    s->send(data, 0);
  } else if (r == role::member) {
    if (c.rank == 0) {
      s->recv(data, root);
      s->fence();
    }
    s->address_local(true);
    bcast_tree(*s, data, 0);
  }
  return post(call, c, std::move(s), m, request);
}

int inter_gatherv(const char *call, bool vector, const void *sendbuf, int sendcount,
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, const int recvcounts[],
                  const int displs[], MPI_Datatype recvtype, int root, communicator &c,
                  MPI_Info info, mode m, MPI_Request *request) {
  role r = role::idle;
  typed_buffer send;
  typed_buffer recv;
  if (int err = check_root(call, c, root, r)) return err;
  if (int err = no_in_place(call, c, sendbuf, recvbuf)) return err;
  if (r == role::root) {
    if (int err =
            check_side(call, c, vector, recvbuf, recvcount, recvcounts, displs, recvtype, recv)) {
      return err;
    }
  } else if (r == role::member) {
    if (int err = api::check_typed_buffer(call, c, sendbuf, sendcount, sendtype, send)) return err;
  }
  if (int err = check_request(call, c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(c);
  if (r == role::root) {
    for (int i = 0; i < c.size; ++i) s->recv(block_of(recv, vector, recvcounts, displs, i), i);
  } else if (r == role::member) {
    s->send(send, root);
  }
  return post(call, c, std::move(s), m, request);
}

int inter_scatterv(const char *call, bool vector, const void *sendbuf, int sendcount,
                   const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root, communicator &c, MPI_Info info,
                   mode m, MPI_Request *request) {
  role r = role::idle;
  typed_buffer send;
  typed_buffer recv;
  if (int err = check_root(call, c, root, r)) return err;
  if (int err = no_in_place(call, c, sendbuf, recvbuf)) return err;
  if (r == role::root) {
    if (int err =
            check_side(call, c, vector, sendbuf, sendcount, sendcounts, displs, sendtype, send)) {
      return err;
    }
  } else if (r == role::member) {
    if (int err = api::check_typed_buffer(call, c, recvbuf, recvcount, recvtype, recv)) return err;
  }
  if (int err = check_request(call, c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(c);
  if (r == role::root) {
    for (int i = 0; i < c.size; ++i) s->send(block_of(send, vector, sendcounts, displs, i), i);
  } else if (r == role::member) {
    s->recv(recv, root);
  }
  return post(call, c, std::move(s), m, request);
}

int inter_allgatherv(const char *call, bool vector, const void *sendbuf, int sendcount,
                     MPI_Datatype sendtype, void *recvbuf, int recvcount, const int recvcounts[],
                     const int displs[], MPI_Datatype recvtype, communicator &c, MPI_Info info,
                     mode m, MPI_Request *request) {
  typed_buffer send;
  typed_buffer recv;
  if (int err = no_in_place(call, c, sendbuf, recvbuf)) return err;
  if (int err = api::check_typed_buffer(call, c, sendbuf, sendcount, sendtype, send)) return err;
  if (int err =
          check_side(call, c, vector, recvbuf, recvcount, recvcounts, displs, recvtype, recv)) {
    return err;
  }
  if (int err = check_request(call, c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(c);
  for (int i = 0; i < c.size; ++i) {
    s->recv(block_of(recv, vector, recvcounts, displs, i), i);
    s->send(send, i);
  }
  return post(call, c, std::move(s), m, request);
}

// Alltoall, Alltoallv and Alltoallw: block i goes to and comes from remote
// rank i. `send_block` and `recv_block` give block i of each side.
template <typename SendBlock, typename RecvBlock>
int inter_exchange(const char *call, communicator &c, MPI_Info info, mode m, MPI_Request *request,
                   SendBlock send_block, RecvBlock recv_block) {
  if (int err = check_request(call, c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(c);
  for (int i = 0; i < c.size; ++i) {
    s->recv(recv_block(i), i);
    s->send(send_block(i), i);
  }
  return post(call, c, std::move(s), m, request);
}

int inter_alltoall(const char *call, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, int recvcount, MPI_Datatype recvtype, communicator &c,
                   MPI_Info info, mode m, MPI_Request *request) {
  typed_buffer send;
  typed_buffer recv;
  if (int err = no_in_place(call, c, sendbuf, recvbuf)) return err;
  if (int err = api::check_typed_buffer(call, c, sendbuf, sendcount, sendtype, send)) return err;
  if (int err = api::check_typed_buffer(call, c, recvbuf, recvcount, recvtype, recv)) return err;
  return inter_exchange(
      call, c, info, m, request, [&](int i) { return send.block(i); },
      [&](int i) { return recv.block(i); });
}

int inter_alltoallv(const char *call, const void *sendbuf, const int sendcounts[],
                    const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                    communicator &c, MPI_Info info, mode m, MPI_Request *request) {
  typed_buffer send;
  typed_buffer recv;
  if (int err = no_in_place(call, c, sendbuf, recvbuf)) return err;
  if (int err = coll::check_vector(call, c, sendbuf, sendcounts, sdispls, sendtype, send)) {
    return err;
  }
  if (int err = coll::check_vector(call, c, recvbuf, recvcounts, rdispls, recvtype, recv)) {
    return err;
  }
  return inter_exchange(
      call, c, info, m, request, [&](int i) { return send.slice(sdispls[i], sendcounts[i]); },
      [&](int i) { return recv.slice(rdispls[i], recvcounts[i]); });
}

template <typename Displ>
int inter_alltoallw(const char *call, const void *sendbuf, const int sendcounts[],
                    const Displ sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                    const int recvcounts[], const Displ rdispls[], const MPI_Datatype recvtypes[],
                    communicator &c, MPI_Info info, mode m, MPI_Request *request) {
  if (int err = no_in_place(call, c, sendbuf, recvbuf)) return err;
  if (int err = check_w(call, c, c.size, sendbuf, sendcounts, sdispls, sendtypes)) return err;
  if (int err = check_w(call, c, c.size, recvbuf, recvcounts, rdispls, recvtypes)) return err;
  return inter_exchange(
      call, c, info, m, request,
      [&](int i) { return w_block(sendbuf, sendcounts, sdispls, sendtypes, i); },
      [&](int i) { return w_block(recvbuf, recvcounts, rdispls, recvtypes, i); });
}

template int inter_alltoallw<int>(const char *, const void *, const int[], const int[],
                                  const MPI_Datatype[], void *, const int[], const int[],
                                  const MPI_Datatype[], communicator &, MPI_Info, mode,
                                  MPI_Request *);
template int inter_alltoallw<MPI_Aint>(const char *, const void *, const int[], const MPI_Aint[],
                                       const MPI_Datatype[], void *, const int[], const MPI_Aint[],
                                       const MPI_Datatype[], communicator &, MPI_Info, mode,
                                       MPI_Request *);

int inter_reduce(const char *call, const void *sendbuf, void *recvbuf, int count,
                 MPI_Datatype datatype, MPI_Op op, int root, communicator &c, MPI_Info info, mode m,
                 MPI_Request *request) {
  role r = role::idle;
  typed_buffer data;
  if (int err = check_root(call, c, root, r)) return err;
  if (r != role::idle) {
    if (int err = no_in_place(call, c, sendbuf, recvbuf)) return err;
    const void *mine = r == role::root ? recvbuf : sendbuf;
    if (int err = api::check_typed_buffer(call, c, mine, count, datatype, data)) return err;
    if (int err = coll::check_op(call, c, op, datatype)) return err;
  }
  if (int err = check_request(call, c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(c);
  if (r == role::root) {
    s->recv(data, 0);
  } else if (r == role::member) {
    s->address_local(true);
    const typed_buffer result = reduce_tree(*s, data, op, datatype, 0);
    s->address_local(false);
    if (c.rank == 0) s->send(result, root);
  }
  return post(call, c, std::move(s), m, request);
}

int inter_allreduce(const char *call, const void *sendbuf, void *recvbuf, int count,
                    MPI_Datatype datatype, MPI_Op op, communicator &c, MPI_Info info, mode m,
                    MPI_Request *request) {
  typed_buffer send;
  typed_buffer recv;
  if (int err = no_in_place(call, c, sendbuf, recvbuf)) return err;
  if (int err = api::check_typed_buffer(call, c, sendbuf, count, datatype, send)) return err;
  if (int err = api::check_typed_buffer(call, c, recvbuf, count, datatype, recv)) return err;
  if (int err = coll::check_op(call, c, op, datatype)) return err;
  if (int err = check_request(call, c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(c);
  s->address_local(true);
  const typed_buffer result = reduce_tree(*s, send, op, datatype, 0);
  if (c.rank == 0) {
    s->address_local(false);
    s->recv(recv, 0);
    s->send(result, 0);
    s->fence();
    s->address_local(true);
  }
  bcast_tree(*s, recv, 0);
  return post(call, c, std::move(s), m, request);
}

// Reduce_scatter(_block): each group reduces its send buffers (as many
// elements as its own receive counts add up to: the two groups' totals must
// agree) to its rank 0; the leaders swap their groups' results; each leader
// scatters the other group's result over its own group by `counts`.
int inter_reduce_scatter_counts(const char *call, const void *sendbuf, void *recvbuf,
                                const std::vector<int> &counts, MPI_Datatype datatype, MPI_Op op,
                                communicator &c, MPI_Info info, mode m, MPI_Request *request) {
  std::int64_t total64 = 0;
  for (int n : counts) total64 += n;
  if (total64 > INT_MAX) {
    return device::error_raise(&c, call, MPI_ERR_COUNT, "counts add up to more than INT_MAX");
  }
  const int total = static_cast<int>(total64);
  const int me = c.rank;
  typed_buffer send;
  typed_buffer recv;
  if (int err = no_in_place(call, c, sendbuf, recvbuf)) return err;
  if (int err = api::check_typed_buffer(call, c, sendbuf, total, datatype, send)) return err;
  if (int err = api::check_typed_buffer(call, c, recvbuf, counts[static_cast<std::size_t>(me)],
                                        datatype, recv)) {
    return err;
  }
  if (int err = coll::check_op(call, c, op, datatype)) return err;
  if (int err = check_request(call, c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(c);
  s->address_local(true);
  const typed_buffer result = reduce_tree(*s, send, op, datatype, 0);
  if (me != 0) {
    s->recv(recv, 0);
    return post(call, c, std::move(s), m, request);
  }
  const typed_buffer theirs = s->scratch(total, *send.type);
  s->address_local(false);
  s->recv(theirs, 0);
  s->send(result, 0);
  s->fence();
  s->address_local(true);
  std::int64_t at = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const typed_buffer block = theirs.slice(at, counts[i]);
    if (i == 0) {
      s->copy(block, recv);
    } else {
      s->send(block, static_cast<int>(i));
    }
    at += counts[i];
  }
  return post(call, c, std::move(s), m, request);
}

int inter_reduce_scatter_block(const char *call, const void *sendbuf, void *recvbuf, int recvcount,
                               MPI_Datatype datatype, MPI_Op op, communicator &c, MPI_Info info,
                               mode m, MPI_Request *request) {
  if (recvcount < 0) {
    return device::error_raise(&c, call, MPI_ERR_COUNT, "negative count %d", recvcount);
  }
  return inter_reduce_scatter_counts(
      call, sendbuf, recvbuf, std::vector<int>(static_cast<std::size_t>(c.local_size()), recvcount),
      datatype, op, c, info, m, request);
}

int inter_reduce_scatter(const char *call, const void *sendbuf, void *recvbuf,
                         const int recvcounts[], MPI_Datatype datatype, MPI_Op op, communicator &c,
                         MPI_Info info, mode m, MPI_Request *request) {
  if (int err = api::check_not_null(call, &c, recvcounts, "recvcounts")) return err;
  std::vector<int> counts(recvcounts, recvcounts + c.local_size());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0) {
      return device::error_raise(&c, call, MPI_ERR_COUNT, "negative count %d for rank %zu",
                                 counts[i], i);
    }
  }
  return inter_reduce_scatter_counts(call, sendbuf, recvbuf, counts, datatype, op, c, info, m,
                                     request);
}

}  // namespace iris::api::nbc
