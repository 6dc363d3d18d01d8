// MPI collectives that move blocks without combining them: Gather(v),
// Scatter(v), Allgather(v), Alltoall(v). See coll.hpp for the rules every
// collective here follows.
#include <algorithm>
#include <vector>

#include "device/api/coll.hpp"

using namespace iris;
using iris::api::communicator;
namespace coll = iris::api::coll;

namespace iris::api::coll {

int check_vector(const char *call, const communicator &comm, const void *buf, const int counts[],
                 const int displs[], MPI_Datatype type) {
  if (counts == nullptr || displs == nullptr) {
    return device::error_raise(&comm, call, MPI_ERR_ARG, "%s is NULL",
                               counts == nullptr ? "the counts array" : "the displacements array");
  }
  std::size_t bytes = 0;
  for (int i = 0; i < comm.size; ++i) {
    if (counts[i] < 0) {
      return device::error_raise(&comm, call, MPI_ERR_COUNT, "negative count %d for rank %d",
                                 counts[i], i);
    }
    if (int err = api::check_buffer(call, comm, buf, counts[i], type, bytes)) return err;
  }
  return MPI_SUCCESS;
}

// Vranks count from root. A non-root rank vr heads the subtree of vranks
// [vr, vr + lowest_bit(vr)), cut at size; root heads all of them.
int gather_tree(const channel &ch, const void *mine, std::byte *out, std::size_t block, int root) {
  const int size = ch.comm.size;
  const int vr = (ch.comm.rank - root + size) % size;
  const int subtree = vr == 0 ? size : std::min(lowest_bit(vr), size - vr);
  // Root 0 gathers straight into `out`; everyone else into a buffer.
  std::vector<std::byte> tmp;
  std::byte *buf = out;
  if (!(vr == 0 && root == 0)) {
    tmp.resize(static_cast<std::size_t>(subtree) * block);
    buf = tmp.data();
  }
  copy_bytes(buf, mine, block);
  int have = 1;
  for (int mask = 1; mask < size; mask <<= 1) {
    if ((vr & mask) != 0) {
      send(ch, buf, static_cast<std::size_t>(have) * block, (vr - mask + root) % size);
      return MPI_SUCCESS;
    }
    if (vr + mask < size) {
      const int n = std::min(mask, size - vr - mask);
      if (int err = recv(ch, buf + static_cast<std::size_t>(mask) * block,
                         static_cast<std::size_t>(n) * block, (vr + mask + root) % size)) {
        return err;
      }
      have += n;
    }
  }
  if (buf != out) {  // root != 0: vrank v is rank (v + root) % size
    const auto head = static_cast<std::size_t>(size - root) * block;
    copy_bytes(out + static_cast<std::size_t>(root) * block, buf, head);
    copy_bytes(out, buf + head, static_cast<std::size_t>(root) * block);
  }
  return MPI_SUCCESS;
}

int scatter_tree(const channel &ch, const std::byte *in, void *mine, std::size_t block, int root) {
  const int size = ch.comm.size;
  const int vr = (ch.comm.rank - root + size) % size;
  const int subtree = vr == 0 ? size : std::min(lowest_bit(vr), size - vr);
  std::vector<std::byte> tmp;
  const std::byte *buf = in;
  int mask = 1;
  if (vr == 0) {
    while (mask < size) mask <<= 1;
    if (root != 0) {  // blocks in vrank order: vrank v is rank (v + root) % size
      tmp.resize(static_cast<std::size_t>(size) * block);
      const auto head = static_cast<std::size_t>(size - root) * block;
      copy_bytes(tmp.data(), in + static_cast<std::size_t>(root) * block, head);
      copy_bytes(tmp.data() + head, in, static_cast<std::size_t>(root) * block);
      buf = tmp.data();
    }
  } else {
    mask = lowest_bit(vr);
    tmp.resize(static_cast<std::size_t>(subtree) * block);
    if (int err = recv(ch, tmp.data(), tmp.size(), (vr - mask + root) % size)) return err;
    buf = tmp.data();
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask >= size) continue;
    const int n = std::min(mask, size - vr - mask);
    send(ch, buf + static_cast<std::size_t>(mask) * block, static_cast<std::size_t>(n) * block,
         (vr + mask + root) % size);
  }
  if (mine != nullptr) copy_bytes(mine, buf, block);
  return MPI_SUCCESS;
}

}  // namespace iris::api::coll

namespace {

std::size_t bytes_of(int count, MPI_Datatype type) {
  return static_cast<std::size_t>(count) * device::datatype_extent(type);
}

// Where block i of a v-variant lies in `buf`.
std::byte *block_at(const void *buf, const int displs[], int i, MPI_Datatype type) {
  const auto extent = static_cast<std::ptrdiff_t>(device::datatype_extent(type));
  return static_cast<std::byte *>(const_cast<void *>(buf)) + displs[i] * extent;
}

// Waits for every request; returns the first error.
int wait_all(std::vector<device::request *> &requests) {
  int first = MPI_SUCCESS;
  for (device::request *r : requests) {
    const int err = coll::wait(r);
    if (first == MPI_SUCCESS) first = err;
  }
  requests.clear();
  return first;
}

// The send side of a rooted collective (gather): checked unless this is root
// passing MPI_IN_PLACE, which only root may.
int send_side_checks(const char *call, const communicator &c, const void *buf, int count,
                     MPI_Datatype type, bool is_root, std::size_t &bytes) {
  if (coll::in_place(buf)) {
    return is_root ? MPI_SUCCESS : coll::error_in_place(call, c, "the send buffer off root");
  }
  return api::check_buffer(call, c, buf, count, type, bytes);
}

// Send and receive sides of an all-to-all collective with uniform counts.
int all_checks(const char *call, MPI_Comm comm, const void *sendbuf, int sendcount,
               MPI_Datatype sendtype, const void *recvbuf, int recvcount, MPI_Datatype recvtype,
               communicator *&c, std::size_t &send_block, std::size_t &recv_block) {
  if (int err = api::check_comm(call, comm, c)) return err;
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  if (int err = api::check_buffer(call, *c, recvbuf, recvcount, recvtype, recv_block)) return err;
  const auto n = static_cast<std::size_t>(c->size);
  if (coll::in_place(sendbuf)) {
    send_block = recv_block;
    return MPI_SUCCESS;
  }
  if (int err = api::check_buffer(call, *c, sendbuf, sendcount, sendtype, send_block)) return err;
  return coll::check_no_alias(call, *c, sendbuf, send_block * n, recvbuf, recv_block * n);
}

}  // namespace

extern "C" {

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const char *call = "MPI_Gather";
  communicator *c = nullptr;
  std::size_t send_bytes = 0;
  std::size_t block = 0;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  const bool is_root = c->rank == root;
  if (int err = send_side_checks(call, *c, sendbuf, sendcount, sendtype, is_root, send_bytes)) {
    return err;
  }
  block = send_bytes;
  if (is_root) {
    if (int err = api::check_buffer(call, *c, recvbuf, recvcount, recvtype, block)) return err;
    const std::size_t all = block * static_cast<std::size_t>(c->size);
    if (!coll::in_place(sendbuf)) {
      if (int err = coll::check_no_alias(call, *c, sendbuf, send_bytes, recvbuf, all)) return err;
    }
  }
  if (block == 0) return MPI_SUCCESS;
  std::byte *out = static_cast<std::byte *>(recvbuf);
  const void *mine =
      coll::in_place(sendbuf) ? out + block * static_cast<std::size_t>(root) : sendbuf;
  const coll::channel ch{*c, coll::tag_gather};
  return coll::result(call, *c, coll::gather_tree(ch, mine, is_root ? out : nullptr, block, root));
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const char *call = "MPI_Scatter";
  communicator *c = nullptr;
  std::size_t block = 0;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  const bool is_root = c->rank == root;
  const bool keep = is_root && coll::in_place(recvbuf);  // root's block stays in sendbuf
  if (coll::in_place(recvbuf) && !is_root) {
    return coll::error_in_place(call, *c, "the receive buffer off root");
  }
  if (!keep) {
    if (int err = api::check_buffer(call, *c, recvbuf, recvcount, recvtype, block)) return err;
  }
  if (is_root) {
    if (int err = api::check_buffer(call, *c, sendbuf, sendcount, sendtype, block)) return err;
    const std::size_t all = block * static_cast<std::size_t>(c->size);
    if (!keep) {
      if (int err = coll::check_no_alias(call, *c, sendbuf, all, recvbuf, block)) return err;
    }
  }
  if (block == 0) return MPI_SUCCESS;
  const coll::channel ch{*c, coll::tag_scatter};
  const auto *in = static_cast<const std::byte *>(sendbuf);
  return coll::result(
      call, *c,
      coll::scatter_tree(ch, is_root ? in : nullptr, keep ? nullptr : recvbuf, block, root));
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  const char *call = "MPI_Gatherv";
  communicator *c = nullptr;
  std::size_t send_bytes = 0;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  const bool is_root = c->rank == root;
  if (int err = send_side_checks(call, *c, sendbuf, sendcount, sendtype, is_root, send_bytes)) {
    return err;
  }
  const coll::channel ch{*c, coll::tag_gatherv};
  if (!is_root) {
    coll::send(ch, sendbuf, send_bytes, root);
    return MPI_SUCCESS;
  }
  if (int err = coll::check_vector(call, *c, recvbuf, recvcounts, displs, recvtype)) return err;
  // Linear: root posts every receive, then waits for them all.
  std::vector<device::request *> pending;
  for (int i = 0; i < c->size; ++i) {
    std::byte *at = block_at(recvbuf, displs, i, recvtype);
    if (i == root) {
      if (!coll::in_place(sendbuf)) coll::copy_bytes(at, sendbuf, send_bytes);
      continue;
    }
    pending.push_back(coll::post_recv(ch, at, bytes_of(recvcounts[i], recvtype), i));
  }
  return coll::result(call, *c, wait_all(pending));
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm) {
  const char *call = "MPI_Scatterv";
  communicator *c = nullptr;
  std::size_t recv_bytes = 0;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  const bool is_root = c->rank == root;
  const bool keep = is_root && coll::in_place(recvbuf);
  if (coll::in_place(recvbuf) && !is_root) {
    return coll::error_in_place(call, *c, "the receive buffer off root");
  }
  if (!keep) {
    if (int err = api::check_buffer(call, *c, recvbuf, recvcount, recvtype, recv_bytes)) {
      return err;
    }
  }
  const coll::channel ch{*c, coll::tag_scatterv};
  if (!is_root) return coll::result(call, *c, coll::recv(ch, recvbuf, recv_bytes, root));
  if (int err = coll::check_vector(call, *c, sendbuf, sendcounts, displs, sendtype)) return err;
  std::vector<device::request *> pending;
  for (int i = 0; i < c->size; ++i) {
    const std::byte *at = block_at(sendbuf, displs, i, sendtype);
    const std::size_t bytes = bytes_of(sendcounts[i], sendtype);
    if (i == root) {
      if (!keep) coll::copy_bytes(recvbuf, at, std::min(bytes, recv_bytes));
      continue;
    }
    pending.push_back(coll::post_send(ch, at, bytes, i));
  }
  return coll::result(call, *c, wait_all(pending));
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const char *call = "MPI_Allgather";
  communicator *c = nullptr;
  std::size_t send_block = 0;
  std::size_t block = 0;
  if (int err = all_checks(call, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                           c, send_block, block)) {
    return err;
  }
  if (block == 0) return MPI_SUCCESS;
  // Ring: in step s every rank passes on to its right the block it got in
  // step s - 1 (its own first); after size - 1 steps it has them all.
  auto *out = static_cast<std::byte *>(recvbuf);
  const int n = c->size;
  if (!coll::in_place(sendbuf)) coll::copy_bytes(out + block * c->rank, sendbuf, send_block);
  const coll::channel ch{*c, coll::tag_allgather};
  const int right = (c->rank + 1) % n;
  const int left = (c->rank - 1 + n) % n;
  int err = MPI_SUCCESS;
  for (int s = 0; s < n - 1 && err == MPI_SUCCESS; ++s) {
    const int give = (c->rank - s + n) % n;
    const int take = (c->rank - s - 1 + n) % n;
    err = coll::sendrecv(ch, out + block * give, block, right, out + block * take, block, left);
  }
  return coll::result(call, *c, err);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  const char *call = "MPI_Allgatherv";
  communicator *c = nullptr;
  std::size_t send_bytes = 0;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  if (int err = coll::check_vector(call, *c, recvbuf, recvcounts, displs, recvtype)) return err;
  if (!coll::in_place(sendbuf)) {
    if (int err = api::check_buffer(call, *c, sendbuf, sendcount, sendtype, send_bytes)) {
      return err;
    }
    const void *mine = block_at(recvbuf, displs, c->rank, recvtype);
    if (int err = coll::check_no_alias(call, *c, sendbuf, send_bytes, mine,
                                       bytes_of(recvcounts[c->rank], recvtype))) {
      return err;
    }
    coll::copy_bytes(block_at(recvbuf, displs, c->rank, recvtype), sendbuf, send_bytes);
  }
  // The same ring as MPI_Allgather, with blocks of their own sizes.
  const coll::channel ch{*c, coll::tag_allgatherv};
  const int n = c->size;
  int err = MPI_SUCCESS;
  for (int s = 0; s < n - 1 && err == MPI_SUCCESS; ++s) {
    const int give = (c->rank - s + n) % n;
    const int take = (c->rank - s - 1 + n) % n;
    err = coll::sendrecv(ch, block_at(recvbuf, displs, give, recvtype),
                         bytes_of(recvcounts[give], recvtype), (c->rank + 1) % n,
                         block_at(recvbuf, displs, take, recvtype),
                         bytes_of(recvcounts[take], recvtype), (c->rank - 1 + n) % n);
  }
  return coll::result(call, *c, err);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const char *call = "MPI_Alltoall";
  communicator *c = nullptr;
  std::size_t send_block = 0;
  std::size_t block = 0;
  if (int err = all_checks(call, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                           c, send_block, block)) {
    return err;
  }
  if (block == 0) return MPI_SUCCESS;
  auto *out = static_cast<std::byte *>(recvbuf);
  const int n = c->size;
  // In place, the blocks to send are first copied out of the receive buffer.
  std::vector<std::byte> saved;
  const auto *in = static_cast<const std::byte *>(sendbuf);
  if (coll::in_place(sendbuf)) {
    saved.assign(out, out + block * static_cast<std::size_t>(n));
    in = saved.data();
  }
  coll::copy_bytes(out + block * c->rank, in + send_block * c->rank, send_block);
  // Pairwise: in step s send to rank + s and receive from rank - s, so that
  // every rank talks to a different peer in each step.
  const coll::channel ch{*c, coll::tag_alltoall};
  int err = MPI_SUCCESS;
  for (int s = 1; s < n && err == MPI_SUCCESS; ++s) {
    const int to = (c->rank + s) % n;
    const int from = (c->rank - s + n) % n;
    err = coll::sendrecv(ch, in + send_block * to, send_block, to, out + block * from, block, from);
  }
  return coll::result(call, *c, err);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  const char *call = "MPI_Alltoallv";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  if (int err = coll::check_vector(call, *c, recvbuf, recvcounts, rdispls, recvtype)) return err;
  const int n = c->size;
  // Where each outgoing block is. In place they are first copied out of the
  // receive buffer, packed.
  std::vector<const std::byte *> from_block(static_cast<std::size_t>(n));
  std::vector<std::size_t> out_bytes(static_cast<std::size_t>(n));
  std::vector<std::byte> saved;
  if (coll::in_place(sendbuf)) {
    std::size_t total = 0;
    for (int i = 0; i < n; ++i) total += bytes_of(recvcounts[i], recvtype);
    saved.resize(total);
    std::size_t at = 0;
    for (int i = 0; i < n; ++i) {
      out_bytes[i] = bytes_of(recvcounts[i], recvtype);
      coll::copy_bytes(saved.data() + at, block_at(recvbuf, rdispls, i, recvtype), out_bytes[i]);
      from_block[i] = saved.data() + at;
      at += out_bytes[i];
    }
  } else {
    if (int err = coll::check_vector(call, *c, sendbuf, sendcounts, sdispls, sendtype)) return err;
    if (sendbuf == recvbuf && sendbuf != nullptr) {
      return coll::check_no_alias(call, *c, sendbuf, 1, recvbuf, 1);
    }
    for (int i = 0; i < n; ++i) {
      out_bytes[i] = bytes_of(sendcounts[i], sendtype);
      from_block[i] = block_at(sendbuf, sdispls, i, sendtype);
    }
  }
  const int me = c->rank;
  coll::copy_bytes(block_at(recvbuf, rdispls, me, recvtype), from_block[me],
                   std::min(out_bytes[me], bytes_of(recvcounts[me], recvtype)));
  const coll::channel ch{*c, coll::tag_alltoallv};
  int err = MPI_SUCCESS;
  for (int s = 1; s < n && err == MPI_SUCCESS; ++s) {
    const int to = (me + s) % n;
    const int from = (me - s + n) % n;
    err = coll::sendrecv(ch, from_block[to], out_bytes[to], to,
                         block_at(recvbuf, rdispls, from, recvtype),
                         bytes_of(recvcounts[from], recvtype), from);
  }
  return coll::result(call, *c, err);
}

}  // extern "C"
