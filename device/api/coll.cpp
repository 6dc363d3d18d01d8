// MPI collectives that reduce or broadcast: Bcast, Reduce, Allreduce,
// Reduce_scatter(_block), Scan, Exscan, Reduce_local. See coll.hpp for the
// rules every collective here follows.
#include <climits>
#include <utility>
#include <vector>

#include "device/api/coll.hpp"

using namespace iris;
using iris::api::communicator;
namespace coll = iris::api::coll;

namespace iris::api::coll {

int check_op(const char *call, const communicator &comm, MPI_Op op, MPI_Datatype type) {
  if (!device::op_valid(op)) {
    return device::error_raise(&comm, call, MPI_ERR_OP, "invalid op handle 0x%x",
                               static_cast<unsigned>(op));
  }
  if (const char *why = device::op_type_mismatch(op, type)) {
    const char *name = device::datatype_name(type);
    return device::error_raise(&comm, call, MPI_ERR_OP, "%s cannot reduce %s: it is defined on %s",
                               device::op_name(op), name != nullptr ? name : "this datatype", why);
  }
  return MPI_SUCCESS;
}

int check_no_alias(const char *call, const communicator &comm, const void *a, std::size_t a_bytes,
                   const void *b, std::size_t b_bytes) {
  const auto *pa = static_cast<const std::byte *>(a);
  const auto *pb = static_cast<const std::byte *>(b);
  if (a_bytes == 0 || b_bytes == 0 || pa + a_bytes <= pb || pb + b_bytes <= pa) {
    return MPI_SUCCESS;
  }
  return device::error_raise(&comm, call, MPI_ERR_BUFFER,
                             "send and receive buffers overlap (use MPI_IN_PLACE instead)");
}

int error_in_place(const char *call, const communicator &comm, const char *which) {
  return device::error_raise(&comm, call, MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed as %s here",
                             which);
}

}  // namespace iris::api::coll

namespace {

// One reduction's shape: `count` elements of `type` combined with `op`.
struct reduction {
  coll::channel ch;
  MPI_Op op;
  MPI_Datatype type;
  std::size_t count;
  std::size_t bytes;
};

using buffer = std::vector<std::byte>;

buffer copy_of(const void *data, std::size_t bytes) {
  const auto *p = static_cast<const std::byte *>(data);
  return buffer(p, p + bytes);
}

// upper = lower o upper: `lower` holds the contributions of lower ranks.
void combine(const reduction &red, const buffer &lower, buffer &upper) {
  device::op_apply(red.op, lower.data(), upper.data(), red.count, red.type);
}

// Binomial tree towards `root`: a rank combines into `acc` the partial results
// of its children (blocks of ranks above it, counted from root), then hands
// acc to its parent. At root acc ends as the result. Ranks are combined in
// order only relative to root, so a non-commutative op needs root 0.
int reduce_tree(const reduction &red, buffer &acc, int root) {
  const int size = red.ch.comm.size;
  const int vr = (red.ch.comm.rank - root + size) % size;
  buffer tmp(red.bytes);
  for (int mask = 1; mask < size; mask <<= 1) {
    if ((vr & mask) != 0) {
      coll::send(red.ch, acc.data(), red.bytes, (vr - mask + root) % size);
      return MPI_SUCCESS;
    }
    if (vr + mask < size) {
      if (int err = coll::recv(red.ch, tmp.data(), red.bytes, (vr + mask + root) % size)) {
        return err;
      }
      combine(red, acc, tmp);
      acc.swap(tmp);
    }
  }
  return MPI_SUCCESS;
}

// The whole reduction lands in `out` at `root`. A non-commutative op is
// reduced to rank 0 in rank order and then moved to root.
int reduce_to(const reduction &red, buffer &acc, void *out, int root) {
  const communicator &comm = red.ch.comm;
  const int tree_root = device::op_commutative(red.op) ? root : 0;
  if (int err = reduce_tree(red, acc, tree_root)) return err;
  if (tree_root == root) {
    if (comm.rank == root) coll::copy_bytes(out, acc.data(), red.bytes);
    return MPI_SUCCESS;
  }
  if (comm.rank == tree_root) coll::send(red.ch, acc.data(), red.bytes, root);
  if (comm.rank == root) return coll::recv(red.ch, out, red.bytes, tree_root);
  return MPI_SUCCESS;
}

// Recursive doubling: in round k each rank exchanges its partial result with
// rank ^ 2^k and combines, lower ranks' part first. With a size that is not a
// power of two, the first 2 * rem ranks pair up beforehand (the odd one
// carries the pair) and the even ones get the result at the end.
int allreduce_doubling(const reduction &red, buffer &acc) {
  const int rank = red.ch.comm.rank;
  const int size = red.ch.comm.size;
  int pof2 = 1;
  while (pof2 * 2 <= size) pof2 *= 2;
  const int rem = size - pof2;
  buffer tmp(red.bytes);
  int newrank = rank - rem;
  if (rank < 2 * rem) {
    if (rank % 2 == 0) {
      coll::send(red.ch, acc.data(), red.bytes, rank + 1);
      newrank = -1;
    } else {
      if (int err = coll::recv(red.ch, tmp.data(), red.bytes, rank - 1)) return err;
      combine(red, tmp, acc);
      newrank = rank / 2;
    }
  }
  for (int mask = 1; newrank >= 0 && mask < pof2; mask <<= 1) {
    const int peer_new = newrank ^ mask;
    const int peer = peer_new < rem ? peer_new * 2 + 1 : peer_new + rem;
    if (int err =
            coll::sendrecv(red.ch, acc.data(), red.bytes, peer, tmp.data(), red.bytes, peer)) {
      return err;
    }
    if (peer < rank) {
      combine(red, tmp, acc);
    } else {
      combine(red, acc, tmp);
      acc.swap(tmp);
    }
  }
  if (rank < 2 * rem) {
    if (rank % 2 == 1) {
      coll::send(red.ch, acc.data(), red.bytes, rank - 1);
    } else {
      return coll::recv(red.ch, acc.data(), red.bytes, rank + 1);
    }
  }
  return MPI_SUCCESS;
}

// Checks shared by the reductions: communicator, op, datatype, count and the
// receive buffer; the send buffer unless it is MPI_IN_PLACE.
int reduction_checks(const char *call, MPI_Comm handle, const void *sendbuf, const void *recvbuf,
                     int count, MPI_Datatype type, MPI_Op op, communicator *&c,
                     std::size_t &bytes) {
  if (int err = api::check_comm(call, handle, c)) return err;
  if (int err = api::check_buffer(call, *c, recvbuf, count, type, bytes)) return err;
  if (int err = coll::check_op(call, *c, op, type)) return err;
  if (coll::in_place(sendbuf)) return MPI_SUCCESS;
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  if (int err = api::check_buffer(call, *c, sendbuf, count, type, bytes)) return err;
  return coll::check_no_alias(call, *c, sendbuf, bytes, recvbuf, bytes);
}

// Scan and Exscan by recursive doubling: `partial` carries the reduction of
// the block of ranks this rank has heard of (itself included); what came
// from lower ranks also goes into the result. `inclusive` starts the result
// with this rank's own value (Scan); Exscan's result starts empty.
int scan_doubling(const reduction &red, const void *mine, void *out, bool inclusive) {
  const int rank = red.ch.comm.rank;
  buffer partial = copy_of(mine, red.bytes);
  buffer total = partial;
  buffer tmp(red.bytes);
  bool have = inclusive;
  for (int mask = 1; mask < red.ch.comm.size; mask <<= 1) {
    const int peer = rank ^ mask;
    if (peer >= red.ch.comm.size) continue;
    if (int err =
            coll::sendrecv(red.ch, partial.data(), red.bytes, peer, tmp.data(), red.bytes, peer)) {
      return err;
    }
    if (peer < rank) {
      combine(red, tmp, partial);
      if (have) {
        combine(red, tmp, total);
      } else {
        total = tmp;
        have = true;
      }
    } else {
      combine(red, partial, tmp);
      partial.swap(tmp);
    }
  }
  if (have) coll::copy_bytes(out, total.data(), red.bytes);
  return MPI_SUCCESS;
}

int scan_binding(const char *call, int tag, bool inclusive, const void *sendbuf, void *recvbuf,
                 int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  communicator *c = nullptr;
  std::size_t bytes = 0;
  if (int err = reduction_checks(call, comm, sendbuf, recvbuf, count, datatype, op, c, bytes)) {
    return err;
  }
  if (bytes == 0) return MPI_SUCCESS;
  const reduction red{{*c, tag}, op, datatype, static_cast<std::size_t>(count), bytes};
  const void *mine = coll::in_place(sendbuf) ? recvbuf : sendbuf;
  return coll::result(call, *c, scan_doubling(red, mine, recvbuf, inclusive));
}

// Rank 0 hands each rank its block of `all` (blocks of counts[i] elements of
// `extent` bytes, in rank order); a linear scatter like MPI_Scatterv's.
int scatter_counts(const coll::channel &ch, const std::byte *all, void *mine, const int counts[],
                   std::size_t extent) {
  const communicator &comm = ch.comm;
  const auto bytes = [&](int i) { return static_cast<std::size_t>(counts[i]) * extent; };
  if (comm.rank != 0) return coll::recv(ch, mine, bytes(comm.rank), 0);
  std::vector<device::request *> pending;
  std::size_t at = bytes(0);
  coll::copy_bytes(mine, all, bytes(0));
  for (int i = 1; i < comm.size; ++i) {
    pending.push_back(coll::post_send(ch, all + at, bytes(i), i));
    at += bytes(i);
  }
  for (device::request *r : pending) coll::wait(r);
  return MPI_SUCCESS;
}

// MPI_Reduce_scatter's arguments; on success `total` is the sum of counts.
int reduce_scatter_checks(const char *call, const communicator &c, const void *sendbuf,
                          const void *recvbuf, const int counts[], MPI_Datatype type, MPI_Op op,
                          std::size_t &total) {
  if (int err = api::check_not_null(call, &c, counts, "recvcounts")) return err;
  total = 0;
  for (int i = 0; i < c.size; ++i) {
    if (counts[i] < 0) {
      return device::error_raise(&c, call, MPI_ERR_COUNT, "negative count %d for rank %d",
                                 counts[i], i);
    }
    total += static_cast<std::size_t>(counts[i]);
  }
  if (total > static_cast<std::size_t>(INT_MAX)) {
    return device::error_raise(&c, call, MPI_ERR_COUNT, "counts add up to more than INT_MAX");
  }
  const int all = static_cast<int>(total);
  std::size_t bytes = 0;
  if (int err = coll::check_op(call, c, op, type)) return err;
  if (coll::in_place(sendbuf)) return api::check_buffer(call, c, recvbuf, all, type, bytes);
  if (int err = api::check_buffer(call, c, recvbuf, counts[c.rank], type, bytes)) return err;
  std::size_t in_bytes = 0;
  if (int err = api::check_buffer(call, c, sendbuf, all, type, in_bytes)) return err;
  return coll::check_no_alias(call, c, sendbuf, in_bytes, recvbuf, bytes);
}

}  // namespace

extern "C" {

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  const char *call = "MPI_Bcast";
  communicator *c = nullptr;
  std::size_t bytes = 0;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_buffer(call, *c, buffer, count, datatype, bytes)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  if (bytes == 0) return MPI_SUCCESS;
  // Binomial tree: a rank hears from the parent that clears its lowest set
  // bit (counted from root), then serves the subtrees below that bit.
  const coll::channel ch{*c, coll::tag_bcast};
  const int vr = (c->rank - root + c->size) % c->size;
  // A truncated receive still forwards what arrived, so that the subtree
  // below this rank completes instead of waiting forever.
  int err = MPI_SUCCESS;
  int mask = 1;
  for (; mask < c->size; mask <<= 1) {
    if ((vr & mask) != 0) {
      err = coll::recv(ch, buffer, bytes, (vr - mask + root) % c->size);
      break;
    }
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask < c->size) coll::send(ch, buffer, bytes, (vr + mask + root) % c->size);
  }
  return coll::result(call, *c, err);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
  const char *call = "MPI_Reduce";
  communicator *c = nullptr;
  std::size_t bytes = 0;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  if (c->rank == root) {
    if (int err = reduction_checks(call, comm, sendbuf, recvbuf, count, datatype, op, c, bytes)) {
      return err;
    }
  } else {
    // The receive buffer is significant only at root.
    if (coll::in_place(sendbuf)) return coll::error_in_place(call, *c, "the send buffer off root");
    if (int err = api::check_buffer(call, *c, sendbuf, count, datatype, bytes)) return err;
    if (int err = coll::check_op(call, *c, op, datatype)) return err;
  }
  if (bytes == 0) return MPI_SUCCESS;
  const reduction red{{*c, coll::tag_reduce}, op, datatype, static_cast<std::size_t>(count), bytes};
  buffer acc = copy_of(coll::in_place(sendbuf) ? recvbuf : sendbuf, bytes);
  return coll::result(call, *c, reduce_to(red, acc, recvbuf, root));
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  const char *call = "MPI_Allreduce";
  communicator *c = nullptr;
  std::size_t bytes = 0;
  if (int err = reduction_checks(call, comm, sendbuf, recvbuf, count, datatype, op, c, bytes)) {
    return err;
  }
  if (bytes == 0) return MPI_SUCCESS;
  const reduction red{
      {*c, coll::tag_allreduce}, op, datatype, static_cast<std::size_t>(count), bytes};
  buffer acc = copy_of(coll::in_place(sendbuf) ? recvbuf : sendbuf, bytes);
  const int err = allreduce_doubling(red, acc);
  if (err == MPI_SUCCESS) coll::copy_bytes(recvbuf, acc.data(), bytes);
  return coll::result(call, *c, err);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  const char *call = "MPI_Reduce_scatter_block";
  communicator *c = nullptr;
  std::size_t block = 0;
  if (int err = reduction_checks(call, comm, sendbuf, recvbuf, recvcount, datatype, op, c, block)) {
    return err;
  }
  const std::size_t total = block * static_cast<std::size_t>(c->size);
  if (!coll::in_place(sendbuf)) {
    if (int err = api::check_buffer(call, *c, sendbuf, recvcount * c->size, datatype, block)) {
      return err;
    }
    block = total / static_cast<std::size_t>(c->size);
    if (int err = coll::check_no_alias(call, *c, sendbuf, total, recvbuf, block)) return err;
  }
  if (block == 0) return MPI_SUCCESS;
  // Reduce everything to rank 0 (rank order, so any op), then scatter it.
  const coll::channel ch{*c, coll::tag_reduce_scatter_block};
  const reduction red{ch, op, datatype, static_cast<std::size_t>(recvcount) * c->size, total};
  buffer acc = copy_of(coll::in_place(sendbuf) ? recvbuf : sendbuf, total);
  int err = reduce_tree(red, acc, 0);
  if (err == MPI_SUCCESS) err = coll::scatter_tree(ch, acc.data(), recvbuf, block, 0);
  return coll::result(call, *c, err);
}

// Reduces everything to rank 0 (rank order, so any op), then scatters the
// blocks of their several sizes.
int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  const char *call = "MPI_Reduce_scatter";
  communicator *c = nullptr;
  std::size_t total = 0;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err =
          reduce_scatter_checks(call, *c, sendbuf, recvbuf, recvcounts, datatype, op, total)) {
    return err;
  }
  if (total == 0) return MPI_SUCCESS;
  const std::size_t extent = device::datatype_extent(datatype);
  const coll::channel ch{*c, coll::tag_reduce_scatter};
  const reduction red{ch, op, datatype, total, total * extent};
  buffer acc = copy_of(coll::in_place(sendbuf) ? recvbuf : sendbuf, red.bytes);
  int err = reduce_tree(red, acc, 0);
  if (err == MPI_SUCCESS) err = scatter_counts(ch, acc.data(), recvbuf, recvcounts, extent);
  return coll::result(call, *c, err);
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm) {
  return scan_binding("MPI_Scan", coll::tag_scan, true, sendbuf, recvbuf, count, datatype, op,
                      comm);
}

// Rank 0's receive buffer is left as it was: the standard leaves it undefined.
int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm) {
  return scan_binding("MPI_Exscan", coll::tag_exscan, false, sendbuf, recvbuf, count, datatype, op,
                      comm);
}

int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                     MPI_Op op) {
  const char *call = "MPI_Reduce_local";
  if (int err = api::check_initialized(call)) return err;
  const communicator *world = device::comm_lookup(MPI_COMM_WORLD);
  std::size_t bytes = 0;
  if (int err = api::check_buffer(call, *world, inbuf, count, datatype, bytes)) return err;
  if (int err = api::check_buffer(call, *world, inoutbuf, count, datatype, bytes)) return err;
  if (int err = coll::check_op(call, *world, op, datatype)) return err;
  device::op_apply(op, inbuf, inoutbuf, static_cast<std::size_t>(count), datatype);
  return MPI_SUCCESS;
}

}  // extern "C"
