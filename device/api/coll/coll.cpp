// MPI collectives that reduce or broadcast: Bcast, Reduce, Allreduce,
// Reduce_scatter(_block), Scan, Exscan, Reduce_local. See coll.hpp for the
// rules every collective here follows.
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "device/api/coll/coll.hpp"
#include "device/api/coll/nbc.hpp"
#include "device/collectives/hierarchy.hpp"
#include "device/collectives/node.hpp"

using namespace iris;
namespace nbc = iris::api::nbc;
using iris::api::communicator;
namespace coll = iris::api::coll;

namespace iris::api::coll {

int check_op(const char *call, const communicator &comm, MPI_Op op, MPI_Datatype type) {
  if (!device::op_valid(op)) {
    return device::error_raise(&comm, call, MPI_ERR_OP, "invalid op handle 0x%x",
                               static_cast<unsigned>(op));
  }
  if (const char *why = device::op_type_mismatch(op, type)) {
    const device::dtype *t = device::dtype_lookup(type);
    if (t != nullptr && t->wide_of != 0) {  // a large count: name the type it counts
      type = t->wide_of;
      t = device::dtype_lookup(type);
    }
    if (t != nullptr && !t->predefined) {
      return device::error_raise(&comm, call, MPI_ERR_OP,
                                 "%s cannot reduce a derived datatype: predefined operations need "
                                 "a predefined type (MPI_Op_create makes an op for any type)",
                                 device::op_name(op));
    }
    const char *name = device::datatype_name(type);
    return device::error_raise(&comm, call, MPI_ERR_OP, "%s cannot reduce %s: it is defined on %s",
                               device::op_name(op), name != nullptr ? name : "this datatype", why);
  }
  return MPI_SUCCESS;
}

int check_no_alias(const char *call, const communicator &comm, const typed_buffer &a,
                   const typed_buffer &b) {
  if (!device::typed_overlap(a, b)) return MPI_SUCCESS;
  return device::error_raise(&comm, call, MPI_ERR_BUFFER,
                             "send and receive buffers overlap (use MPI_IN_PLACE instead)");
}

int error_in_place(const char *call, const communicator &comm, const char *which) {
  return device::error_raise(&comm, call, MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed as %s here",
                             which);
}

}  // namespace iris::api::coll

namespace {

using device::typed_buffer;
using image = device::typed_image;

// One reduction's shape: `count` elements of `type` combined with `op`.
// Partial results are images of `count` elements in the type's layout.
struct reduction {
  coll::channel ch;
  MPI_Op op;
  MPI_Datatype type;
  int count;
  const device::dtype *t;

  std::size_t bytes() const { return static_cast<std::size_t>(count) * t->packed_size; }
  image empty() const { return image(count, *t); }
  image copy_of(const void *data) const {
    return image(typed_buffer{const_cast<void *>(data), count, t});
  }
  typed_buffer at(void *data) const { return {data, count, t}; }
};

// upper = lower o upper: `lower` holds the contributions of lower ranks.
void combine(const reduction &red, const image &lower, image &upper) {
  device::op_apply(red.op, lower.origin(), upper.origin(), static_cast<std::size_t>(red.count),
                   red.type, red.t->extent);
}

// Binomial tree towards `root`: a rank combines into `acc` the partial results
// of its children (blocks of ranks above it, counted from root), then hands
// acc to its parent. At root acc ends as the result. Ranks are combined in
// order only relative to root, so a non-commutative op needs root 0.
int reduce_tree(const reduction &red, image &acc, int root) {
  const int size = red.ch.comm.size;
  const int vr = (red.ch.comm.rank - root + size) % size;
  image tmp = red.empty();
  for (int mask = 1; mask < size; mask <<= 1) {
    if ((vr & mask) != 0) return coll::send(red.ch, acc.view(), (vr - mask + root) % size);
    if (vr + mask < size) {
      if (int err = coll::recv(red.ch, tmp.view(), (vr + mask + root) % size)) return err;
      combine(red, acc, tmp);
      acc.swap(tmp);
    }
  }
  return MPI_SUCCESS;
}

// The whole reduction lands in `out` at `root`. A non-commutative op is
// reduced to rank 0 in rank order and then moved to root.
int reduce_to(const reduction &red, image &acc, void *out, int root) {
  const communicator &comm = red.ch.comm;
  const int tree_root = device::op_commutative(red.op) ? root : 0;
  if (int err = reduce_tree(red, acc, tree_root)) return err;
  if (tree_root == root) {
    if (comm.rank == root) device::typed_copy(acc.view(), red.at(out));
    return MPI_SUCCESS;
  }
  if (comm.rank == tree_root) {
    if (int err = coll::send(red.ch, acc.view(), root)) return err;
  }
  if (comm.rank == root) return coll::recv(red.ch, red.at(out), tree_root);
  return MPI_SUCCESS;
}

// Sends `out`, or after a mismatch (`err` set) a byte more than this rank's
// count takes, so that the receiver is told too.
int send_told(const reduction &red, const image &out, int to, int err) {
  if (err == MPI_SUCCESS) return coll::send(red.ch, out.view(), to);
  std::vector<std::byte> longer(out.view().packed_bytes() + 1);
  device::typed_pack(out.view(), longer.data());
  coll::send(red.ch, coll::bytes(longer.data(), longer.size()), to);
  return err;
}

// Receives into `in`, which the message must fill exactly; returns the first
// error, `err` if set.
int recv_told(const reduction &red, image &in, int from, int err) {
  device::request *r = nullptr;
  const int posted = coll::post_recv(red.ch, in.view(), from, r);
  const int got = coll::wait_exact(r, in.view().packed_bytes());
  if (err != MPI_SUCCESS) return err;
  return posted != MPI_SUCCESS ? posted : got;
}

// One step of a recursive doubling that tells both ends of a count
// mismatch (send_told, recv_told). Returns the first error.
int exchange(const reduction &red, const image &out, int to, image &in, int from, int err) {
  device::request *r = nullptr;
  const int posted = coll::post_recv(red.ch, in.view(), from, r);
  const int sent = send_told(red, out, to, err);
  const int got = coll::wait_exact(r, in.view().packed_bytes());
  if (err != MPI_SUCCESS) return err;
  if (posted != MPI_SUCCESS) return posted;
  return sent != MPI_SUCCESS ? sent : got;
}

// Recursive doubling: in round k each rank exchanges its partial result with
// rank ^ 2^k and combines, lower ranks' part first. With a size that is not a
// power of two, the first 2 * rem ranks pair up beforehand (the odd one
// carries the pair) and the even ones get the result at the end. A count
// mismatch goes on to the end rather than leaving later partners waiting,
// and reaches every rank (exchange): MPICH's errors/coll/allreducelength
// hung here.
int allreduce_doubling(const reduction &red, image &acc) {
  const int rank = red.ch.comm.rank;
  const int size = red.ch.comm.size;
  int pof2 = 1;
  while (pof2 * 2 <= size) pof2 *= 2;
  const int rem = size - pof2;
  image tmp = red.empty();
  int newrank = rank - rem;
  int err = MPI_SUCCESS;
  if (rank < 2 * rem) {
    if (rank % 2 == 0) {
      err = coll::send(red.ch, acc.view(), rank + 1);
      newrank = -1;
    } else {
      err = recv_told(red, tmp, rank - 1, err);
      combine(red, tmp, acc);
      newrank = rank / 2;
    }
  }
  for (int mask = 1; newrank >= 0 && mask < pof2; mask <<= 1) {
    const int peer_new = newrank ^ mask;
    const int peer = peer_new < rem ? peer_new * 2 + 1 : peer_new + rem;
    err = exchange(red, acc, peer, tmp, peer, err);
    if (peer < rank) {
      combine(red, tmp, acc);
    } else {
      combine(red, acc, tmp);
      acc.swap(tmp);
    }
  }
  if (rank < 2 * rem) {
    if (rank % 2 == 1) return send_told(red, acc, rank - 1, err);
    return recv_told(red, acc, rank + 1, err);
  }
  return err;
}

// Binomial tree: a rank hears from the parent that clears its lowest set
// bit (counted from root), then serves the subtrees below that bit.
// Returns the first error; `got` is what reached this rank (the whole
// buffer at root).
int bcast_tree(const coll::channel &ch, const typed_buffer &data, int root, std::size_t &got) {
  const communicator &c = ch.comm;
  const int vr = (c.rank - root + c.size) % c.size;
  // A truncated receive still forwards what arrived, so that the subtree
  // below this rank completes instead of waiting forever. A short one (the
  // root sent less than this rank's count takes) is an error too, and only
  // what arrived goes on, so that the ranks below see it as well.
  int err = MPI_SUCCESS;
  typed_buffer forward = data;
  got = data.packed_bytes();
  int mask = 1;
  for (; mask < c.size; mask <<= 1) {
    if ((vr & mask) != 0) {
      device::request *r = nullptr;
      err = coll::post_recv(ch, data, (vr - mask + root) % c.size, r);
      if (err == MPI_SUCCESS) {
        device::progress_until([r] { return r->complete; });
        got = r->status_bytes;
        err = coll::wait(r);
      }
      break;
    }
  }
  if (err == MPI_SUCCESS && got < data.packed_bytes()) {
    forward.count = static_cast<int>(got / data.type->packed_size);
    if (data.contiguous()) forward = coll::bytes(data.base, got);
  }
  // A truncated one goes on a byte longer than this rank holds, so that the
  // ranks below are told too (their counts match this rank's or not).
  std::vector<std::byte> longer;
  if (err == MPI_ERR_TRUNCATE && c.size > 2) {
    longer.resize(data.packed_bytes() + 1);
    device::typed_pack(data, longer.data());
    forward = coll::bytes(longer.data(), longer.size());
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask >= c.size) continue;
    const int sent = coll::send(ch, forward, (vr + mask + root) % c.size);
    if (err == MPI_SUCCESS) err = sent;
  }
  return err;
}

// Bcast across nodes (collectives/hierarchy.hpp): the root's node through
// its segment, then the leaders by messages, then the other nodes through
// theirs. Every rank takes part in every level it belongs to, whatever
// went wrong before, so that none waits forever.
int bcast_levels(const communicator &c, const device::node_hierarchy &h, const typed_buffer &data,
                 int root, std::size_t &got) {
  const int root_node = h.node_of[static_cast<std::size_t>(root)];
  const bool root_here = h.node_of[static_cast<std::size_t>(c.rank)] == root_node;
  int err = MPI_SUCCESS;
  const auto keep = [&](int e, std::size_t arrived) {
    if (err == MPI_SUCCESS) err = e;
    got = std::min(got, arrived);
  };
  std::size_t arrived = 0;
  if (root_here && h.nc != nullptr) {
    const int e = device::node_call(*h.nc, [&] {
      return device::node_bcast(*h.nc, data, h.local_of[static_cast<std::size_t>(root)], arrived);
    });
    keep(e, arrived);
  }
  // A leader passes on only what reached it (a short message stays short),
  // and any error it met: the leaders' tree is told by a byte more than this
  // rank holds, its node by the failed mark.
  const auto reached = [&](typed_buffer &what) {
    if (got < data.packed_bytes()) {
      what.count = static_cast<int>(got / data.type->packed_size);
      if (data.contiguous()) what = coll::bytes(data.base, got);
    }
  };
  if (h.leader && h.leaders.size > 1) {
    typed_buffer what = data;
    std::vector<std::byte> longer;
    if (root_here && err == MPI_ERR_TRUNCATE) {
      longer.resize(data.packed_bytes() + 1);
      device::typed_pack(data, longer.data());
      what = coll::bytes(longer.data(), longer.size());
    } else if (root_here) {
      reached(what);
    }
    const int e = bcast_tree({h.leaders, coll::tag_levels_bcast}, what, root_node, arrived);
    keep(e, arrived);
  }
  // A leader that met a revocation leaves its node's ranks to meet it too
  // (the revoker told each): a failed mark would tell them another error.
  if (!root_here && h.nc != nullptr && err != MPI_ERR_REVOKED) {
    typed_buffer what = data;
    if (h.leader) reached(what);
    const int e = device::node_call(*h.nc, [&] {
      return device::node_bcast(*h.nc, what, 0, arrived, h.leader && err != MPI_SUCCESS);
    });
    keep(e, arrived);
  }
  return err;
}

// A broadcast whose root sent fewer bytes than this rank's count takes.
int short_bcast(const char *call, const communicator &comm, std::size_t got, std::size_t want) {
  return device::error_raise(&comm, call, MPI_ERR_TRUNCATE,
                             "the root sent %zu bytes where this rank's count and datatype take "
                             "%zu: the ranks passed counts or datatypes that do not match",
                             got, want);
}

// Reduce (root >= 0) or Allreduce (root -1) across nodes
// (collectives/hierarchy.hpp): each node folds at its leader through its
// segment, the leaders reduce by messages (to the root's node's leader, or
// all of them), then the result goes to the root from its leader, or to
// every rank of each node through its segment. Every rank takes part in
// every level it belongs to, whatever went wrong before.
int reduce_levels(const communicator &c, const device::node_hierarchy &h, const reduction &red,
                  const void *in, void *out, int root) {
  const bool all = root < 0;
  const std::size_t bytes = red.bytes();
  const int root_node = all ? -1 : h.node_of[static_cast<std::size_t>(root)];
  int err = MPI_SUCCESS;
  const auto keep = [&](int e) {
    if (err == MPI_SUCCESS) err = e;
  };
  // The node's fold, at its leader: into the receive buffer where the result
  // ends there, else into a buffer of this call's own.
  std::vector<std::byte> own;
  void *partial = out;
  if (h.leader && !all && c.rank != root) {
    own.resize(bytes);
    partial = own.data();
  }
  if (h.nc != nullptr) {
    keep(device::node_call(*h.nc, [&] {
      return device::node_reduce(*h.nc, in, partial, static_cast<std::size_t>(red.count), red.type,
                                 red.t->extent, red.op, 0);
    }));
  } else if (partial != in) {
    std::memcpy(partial, in, bytes);
  }
  if (h.leader && h.leaders.size > 1) {
    const reduction across{{h.leaders, all ? coll::tag_levels_allreduce : coll::tag_levels_reduce},
                           red.op,
                           red.type,
                           red.count,
                           red.t};
    const nbc::allreduce_algorithm how =
        all ? nbc::allreduce_pick(h.leaders, red.count, *red.t, red.op)
            : nbc::allreduce_algorithm::doubling;
    image acc = how == nbc::allreduce_algorithm::doubling ? across.copy_of(partial) : image();
    if (how != nbc::allreduce_algorithm::doubling) {
      // Large data: the schedule (halving), in place.
      auto s = std::make_unique<nbc::schedule>(h.leaders, coll::tag_levels_allreduce);
      nbc::allreduce_schedule(*s, across.at(partial), across.at(partial), red.op, red.type, how);
      keep(device::schedule_run(std::move(s)));
    } else if (all) {
      const int e = allreduce_doubling(across, acc);
      if (e == MPI_SUCCESS) device::typed_copy(acc.view(), across.at(partial));
      keep(e);
    } else {
      keep(reduce_to(across, acc, partial, root_node));
    }
  }
  // A leader that met an error passes it on: its node's ranks see a failed
  // root (Allreduce), the root a longer message (Reduce); but a revocation
  // they meet themselves (the revoker told each).
  if (err == MPI_ERR_REVOKED) return err;
  if (all) {
    std::size_t sent = 0;
    if (h.nc != nullptr) {
      keep(device::node_call(*h.nc, [&] {
        return device::node_bcast(*h.nc, red.at(out), 0, sent, h.leader && err != MPI_SUCCESS);
      }));
    }
  } else if (h.node_of[static_cast<std::size_t>(c.rank)] == root_node &&
             h.local_of[static_cast<std::size_t>(root)] != 0) {
    const coll::channel to_root{h.local, coll::tag_levels_to_root};
    const int root_here = h.local_of[static_cast<std::size_t>(root)];
    if (h.leader && err == MPI_SUCCESS) keep(coll::send(to_root, red.at(partial), root_here));
    if (h.leader && err != MPI_SUCCESS) {
      std::vector<std::byte> longer(bytes + 1);
      device::typed_pack(red.at(partial), longer.data());
      coll::send(to_root, coll::bytes(longer.data(), longer.size()), root_here);
    }
    if (c.rank == root) keep(coll::recv(to_root, red.at(out), 0));
  }
  return err;
}

// Reduces through shared memory when it can: the node's segment
// (collectives/node.hpp) when the communicator lies on this node and the
// data fit it, the two levels when it spans nodes (with a commutative op,
// or nodes holding runs of consecutive ranks, so that rank order holds);
// always of a predefined type laid out without gaps (what the ops read in
// place). `done` tells whether it did; then the result is its error.
int node_reduction(communicator &comm, const reduction &red, const void *in, void *out, int root,
                   bool &done) {
  device::node_collectives *nc = device::node_collectives_of(comm);
  device::node_hierarchy *h = device::node_hierarchy_of(comm);
  const device::dtype &t = *red.t;
  const bool plain = t.predefined && t.wide_of == 0 && t.true_lb == 0 &&
                     t.extent == static_cast<std::int64_t>(t.packed_size) && red.bytes() > 0;
  if (nc != nullptr) {
    done = plain && device::node_takes(*nc, red.bytes());
    if (!done) return MPI_SUCCESS;
    return device::node_call(*nc, [&] {
      return device::node_reduce(*nc, in, out, static_cast<std::size_t>(red.count), red.type,
                                 t.extent, red.op, root);
    });
  }
  done = h != nullptr && plain && (device::op_commutative(red.op) || h->runs);
  if (!done) return MPI_SUCCESS;
  return reduce_levels(comm, *h, red, in, out, root);
}

// Checks shared by the reductions: communicator, op, datatype, count and the
// receive buffer; the send buffer unless it is MPI_IN_PLACE. On success
// `recv` describes the receive buffer.
int reduction_checks(const char *call, MPI_Comm handle, const void *sendbuf, const void *recvbuf,
                     int count, MPI_Datatype type, MPI_Op op, communicator *&c,
                     typed_buffer &recv) {
  if (int err = api::check_intracomm(call, handle, c)) return err;
  if (int err = api::check_typed_buffer(call, *c, recvbuf, count, type, recv)) return err;
  if (int err = coll::check_op(call, *c, op, type)) return err;
  if (coll::in_place(sendbuf)) return MPI_SUCCESS;
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  typed_buffer send;
  if (int err = api::check_typed_buffer(call, *c, sendbuf, count, type, send)) return err;
  return coll::check_no_alias(call, *c, send, recv);
}

// Scan and Exscan by recursive doubling: `partial` carries the reduction of
// the block of ranks this rank has heard of (itself included); what came
// from lower ranks also goes into the result. `inclusive` starts the result
// with this rank's own value (Scan); Exscan's result starts empty.
int scan_doubling(const reduction &red, const void *mine, void *out, bool inclusive) {
  const int rank = red.ch.comm.rank;
  image partial = red.copy_of(mine);
  image total = partial;
  image tmp = red.empty();
  bool have = inclusive;
  for (int mask = 1; mask < red.ch.comm.size; mask <<= 1) {
    const int peer = rank ^ mask;
    if (peer >= red.ch.comm.size) continue;
    if (int err = coll::sendrecv(red.ch, partial.view(), peer, tmp.view(), peer)) return err;
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
  if (have) device::typed_copy(total.view(), red.at(out));
  return MPI_SUCCESS;
}

int scan_binding(const char *call, int tag, bool inclusive, const void *sendbuf, void *recvbuf,
                 int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  communicator *c = nullptr;
  typed_buffer recv;
  if (int err = reduction_checks(call, comm, sendbuf, recvbuf, count, datatype, op, c, recv)) {
    return err;
  }
  const reduction red{{*c, tag}, op, datatype, count, recv.type};
  if (red.bytes() == 0) return MPI_SUCCESS;
  const void *mine = coll::in_place(sendbuf) ? recvbuf : sendbuf;
  return coll::result(call, *c, scan_doubling(red, mine, recvbuf, inclusive));
}

// Rank 0 hands each rank its block of `all` (counts[i] elements each, in
// rank order); a linear scatter like MPI_Scatterv's.
int scatter_counts(const coll::channel &ch, const typed_buffer &all, const typed_buffer &mine,
                   const int counts[]) {
  const communicator &comm = ch.comm;
  if (comm.rank != 0) return coll::recv(ch, mine, 0);
  std::vector<device::request *> pending;
  std::int64_t at = counts[0];
  device::typed_copy(all.slice(0, counts[0]), mine);
  int err = MPI_SUCCESS;
  for (int i = 1; i < comm.size && err == MPI_SUCCESS; ++i) {
    device::request *r = nullptr;
    err = coll::post_send(ch, all.slice(at, counts[i]), i, r);
    if (r != nullptr) pending.push_back(r);
    at += counts[i];
  }
  for (device::request *r : pending) coll::wait(r);
  return err;
}

// MPI_Reduce_scatter's arguments; on success `total` is the sum of counts
// and `recv` this rank's receive buffer (all of it, in place).
int reduce_scatter_checks(const char *call, const communicator &c, const void *sendbuf,
                          const void *recvbuf, const int counts[], MPI_Datatype type, MPI_Op op,
                          std::size_t &total, typed_buffer &recv) {
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
  if (coll::in_place(sendbuf)) {
    if (int err = api::check_typed_buffer(call, c, recvbuf, all, type, recv)) return err;
    return coll::check_op(call, c, op, type);
  }
  if (int err = api::check_typed_buffer(call, c, recvbuf, counts[c.rank], type, recv)) return err;
  if (int err = coll::check_op(call, c, op, type)) return err;
  typed_buffer send;
  if (int err = api::check_typed_buffer(call, c, sendbuf, all, type, send)) return err;
  return coll::check_no_alias(call, c, send, recv);
}

}  // namespace

extern "C" {

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::ibcast("MPI_Bcast", buffer, count, datatype, root, comm, MPI_INFO_NULL,
                       nbc::mode::blocking, nullptr);
  const char *call = "MPI_Bcast";
  communicator *c = nullptr;
  typed_buffer data;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (int err = api::check_typed_buffer(call, *c, buffer, count, datatype, data)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  device::node_collectives *nc = device::node_collectives_of(*c);
  device::node_hierarchy *h = device::node_hierarchy_of(*c);
  if (data.packed_bytes() == 0) return MPI_SUCCESS;
  if (nc != nullptr && device::node_takes(*nc, data.packed_bytes())) {
    std::size_t sent = 0;
    const int err =
        device::node_call(*nc, [&] { return device::node_bcast(*nc, data, root, sent); });
    if (err != MPI_ERR_TRUNCATE || sent > data.packed_bytes()) return coll::result(call, *c, err);
    return short_bcast(call, *c, sent, data.packed_bytes());
  }
  const std::size_t want = data.packed_bytes();
  std::size_t got = want;
  const int err = h != nullptr ? bcast_levels(*c, *h, data, root, got)
                               : bcast_tree({*c, coll::tag_bcast}, data, root, got);
  if (err == MPI_SUCCESS && got < want) return short_bcast(call, *c, got, want);
  return coll::result(call, *c, err);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::ireduce("MPI_Reduce", sendbuf, recvbuf, count, datatype, op, root, comm,
                        MPI_INFO_NULL, nbc::mode::blocking, nullptr);
  const char *call = "MPI_Reduce";
  communicator *c = nullptr;
  typed_buffer data;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  if (c->rank == root) {
    if (int err = reduction_checks(call, comm, sendbuf, recvbuf, count, datatype, op, c, data)) {
      return err;
    }
  } else {
    // The receive buffer is significant only at root.
    if (coll::in_place(sendbuf)) return coll::error_in_place(call, *c, "the send buffer off root");
    if (int err = api::check_typed_buffer(call, *c, sendbuf, count, datatype, data)) return err;
    if (int err = coll::check_op(call, *c, op, datatype)) return err;
  }
  const reduction red{{*c, coll::tag_reduce}, op, datatype, count, data.type};
  const void *mine = coll::in_place(sendbuf) ? recvbuf : sendbuf;
  bool shared = false;
  const int node_err = node_reduction(*c, red, mine, recvbuf, root, shared);
  if (shared) return coll::result(call, *c, node_err);
  if (red.bytes() == 0) return MPI_SUCCESS;
  image acc = red.copy_of(coll::in_place(sendbuf) ? recvbuf : sendbuf);
  return coll::result(call, *c, reduce_to(red, acc, recvbuf, root));
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::iallreduce("MPI_Allreduce", sendbuf, recvbuf, count, datatype, op, comm,
                           MPI_INFO_NULL, nbc::mode::blocking, nullptr);
  const char *call = "MPI_Allreduce";
  communicator *c = nullptr;
  typed_buffer recv;
  if (int err = reduction_checks(call, comm, sendbuf, recvbuf, count, datatype, op, c, recv)) {
    return err;
  }
  const reduction red{{*c, coll::tag_allreduce}, op, datatype, count, recv.type};
  // A forced message algorithm (IRIS_COLL_ALLREDUCE) skips shared memory.
  if (device::rt->config.coll_allreduce == 0) {
    bool shared = false;
    const int node_err =
        node_reduction(*c, red, coll::in_place(sendbuf) ? recvbuf : sendbuf, recvbuf, -1, shared);
    if (shared) return coll::result(call, *c, node_err);
  }
  if (red.bytes() == 0) return MPI_SUCCESS;
  // Halving and the ring: the nonblocking schedules, run here on this
  // call's tag.
  const nbc::allreduce_algorithm how = nbc::allreduce_pick(*c, count, *recv.type, op);
  if (how != nbc::allreduce_algorithm::doubling) {
    auto s = std::make_unique<nbc::schedule>(*c, coll::tag_allreduce);
    const void *in = coll::in_place(sendbuf) ? recvbuf : sendbuf;
    nbc::allreduce_schedule(*s, nbc::typed(in, count, datatype), recv, op, datatype, how);
    return coll::result(call, *c, device::schedule_run(std::move(s)));
  }
  image acc = red.copy_of(coll::in_place(sendbuf) ? recvbuf : sendbuf);
  const int err = allreduce_doubling(red, acc);
  if (err == MPI_SUCCESS) device::typed_copy(acc.view(), recv);
  return coll::result(call, *c, err);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::ireduce_scatter_block("MPI_Reduce_scatter_block", sendbuf, recvbuf, recvcount,
                                      datatype, op, comm, MPI_INFO_NULL, nbc::mode::blocking,
                                      nullptr);
  const char *call = "MPI_Reduce_scatter_block";
  communicator *c = nullptr;
  typed_buffer recv;
  if (int err = reduction_checks(call, comm, sendbuf, recvbuf, recvcount, datatype, op, c, recv)) {
    return err;
  }
  const std::size_t block = recv.packed_bytes();
  if (!coll::in_place(sendbuf)) {
    typed_buffer send;
    if (int err = api::check_typed_buffer(call, *c, sendbuf, recvcount * c->size, datatype, send)) {
      return err;
    }
    if (int err = coll::check_no_alias(call, *c, send, recv)) {
      return err;
    }
  }
  if (block == 0) return MPI_SUCCESS;
  // Reduce everything to rank 0 (rank order, so any op), then scatter it.
  const coll::channel ch{*c, coll::tag_reduce_scatter_block};
  const reduction red{ch, op, datatype, recvcount * c->size, recv.type};
  image acc = red.copy_of(coll::in_place(sendbuf) ? recvbuf : sendbuf);
  int err = reduce_tree(red, acc, 0);
  if (err == MPI_SUCCESS) {
    const typed_buffer blocks{acc.origin(), recvcount, recv.type};
    // In place the result is the first block of recvbuf, as for a scatter.
    const typed_buffer mine{recvbuf, recvcount, recv.type};
    err = coll::scatter_tree(ch, &blocks, &mine, block, 0);
  }
  return coll::result(call, *c, err);
}

// Reduces everything to rank 0 (rank order, so any op), then scatters the
// blocks of their several sizes.
int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::ireduce_scatter("MPI_Reduce_scatter", sendbuf, recvbuf, recvcounts, datatype, op,
                                comm, MPI_INFO_NULL, nbc::mode::blocking, nullptr);
  const char *call = "MPI_Reduce_scatter";
  communicator *c = nullptr;
  std::size_t total = 0;
  typed_buffer recv;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (int err = reduce_scatter_checks(call, *c, sendbuf, recvbuf, recvcounts, datatype, op, total,
                                      recv)) {
    return err;
  }
  const coll::channel ch{*c, coll::tag_reduce_scatter};
  const reduction red{ch, op, datatype, static_cast<int>(total), recv.type};
  if (red.bytes() == 0) return MPI_SUCCESS;
  image acc = red.copy_of(coll::in_place(sendbuf) ? recvbuf : sendbuf);
  int err = reduce_tree(red, acc, 0);
  if (err == MPI_SUCCESS) {
    err = scatter_counts(ch, acc.view(), {recvbuf, recvcounts[c->rank], recv.type}, recvcounts);
  }
  return coll::result(call, *c, err);
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm) {
  const device::api_guard guard;
  return scan_binding("MPI_Scan", coll::tag_scan, true, sendbuf, recvbuf, count, datatype, op,
                      comm);
}

// Rank 0's receive buffer is left as it was: the standard leaves it undefined.
int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm) {
  const device::api_guard guard;
  return scan_binding("MPI_Exscan", coll::tag_exscan, false, sendbuf, recvbuf, count, datatype, op,
                      comm);
}

int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                     MPI_Op op) {
  const device::api_guard guard;
  return coll::reduce_local("MPI_Reduce_local", inbuf, inoutbuf, count, datatype, op);
}

}  // extern "C"

int iris::api::coll::reduce_local(const char *call, const void *inbuf, void *inoutbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op) {
  if (int err = api::check_initialized(call)) return err;
  const communicator *world = device::comm_lookup(MPI_COMM_WORLD);
  // MPI_IN_PLACE has no meaning here (the address -1 was read from), and
  // the two buffers may not be one (MPI-4.1 6.9.7).
  if (coll::in_place(inbuf) || coll::in_place(inoutbuf)) {
    return device::error_raise(world, call, MPI_ERR_BUFFER, "%s is MPI_IN_PLACE, which %s refuses",
                               coll::in_place(inbuf) ? "inbuf" : "inoutbuf", call);
  }
  if (count > 0 && inbuf == inoutbuf) {
    return device::error_raise(world, call, MPI_ERR_BUFFER,
                               "inbuf and inoutbuf are the same buffer %p", inoutbuf);
  }
  typed_buffer in;
  typed_buffer inout;
  if (int err = api::check_typed_buffer(call, *world, inbuf, count, datatype, in)) return err;
  if (int err = api::check_typed_buffer(call, *world, inoutbuf, count, datatype, inout)) {
    return err;
  }
  if (int err = coll::check_op(call, *world, op, datatype)) return err;
  device::op_apply(op, inbuf, inoutbuf, static_cast<std::size_t>(count), datatype, in.type->extent);
  return MPI_SUCCESS;
}
