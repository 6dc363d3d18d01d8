// Nonblocking collectives that synchronize, broadcast or reduce: Ibarrier,
// Ibcast, Ireduce, Iallreduce, Ireduce_scatter(_block), Iscan, Iexscan, and
// what every schedule-based binding shares (nbc.hpp). The algorithms are the
// blocking ones' (coll.cpp) written as schedules: a dissemination barrier,
// binomial trees for broadcast and reduction, a chain for the scans; the
// allreduce ones are in nbc_allreduce.cpp.
#include <climits>
#include <memory>
#include <vector>

#include "device/api/coll/nbc.hpp"
#include "device/api/env/info.hpp"
#include "device/collectives/node.hpp"
#include "device/datatypes/op.hpp"
#include "device/runtime/progress.hpp"

using namespace iris;
using iris::api::communicator;
namespace coll = iris::api::coll;
namespace nbc = iris::api::nbc;

namespace iris::api::nbc {

int check_request(const char *call, const communicator &c, mode m, MPI_Info info,
                  MPI_Request *request) {
  if (m == mode::blocking) return MPI_SUCCESS;
  if (m == mode::persistent) {
    info_entries ignored;
    if (int err = info_read(call, &c, info, ignored)) return err;
  }
  return api::check_not_null(call, &c, request, "request");
}

int post(const char *call, communicator &c, std::unique_ptr<schedule> s, mode m,
         MPI_Request *request) {
  if (m == mode::blocking) return coll::result(call, c, device::schedule_run(std::move(s)));
  device::request *r = device::rt->requests.allocate(device::request_kind::coll, &c);
  device::schedule_attach(*r, std::move(s), m == mode::persistent);
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

// Binomial reduction of `src` towards `tree_root`: returns the buffer that
// holds the result at tree_root (partial results elsewhere). Children's
// parts arrive together, then combine in rank order relative to tree_root,
// lower ranks on the left, so that a non-commutative op needs tree_root 0.
typed_buffer reduce_tree(schedule &s, const typed_buffer &src, MPI_Op op, MPI_Datatype type,
                         int tree_root) {
  const communicator &c = s.group();
  const int vr = (c.rank - tree_root + c.size) % c.size;
  typed_buffer acc = s.scratch(src.count, *src.type);
  s.copy(src, acc);
  std::vector<typed_buffer> parts;
  int parent = -1;
  for (int mask = 1; mask < c.size; mask <<= 1) {
    if ((vr & mask) != 0) {
      parent = (vr - mask + tree_root) % c.size;
      break;
    }
    if (vr + mask < c.size) {
      parts.push_back(s.scratch(src.count, *src.type));
      s.recv(parts.back(), (vr + mask + tree_root) % c.size);
    }
  }
  s.fence();
  for (const typed_buffer &part : parts) {
    s.reduce(acc, part, op, type);  // part = acc o part: acc holds the lower ranks
    acc = part;
  }
  if (parent >= 0) s.send(acc, parent);
  s.fence();
  return acc;
}

// Binomial broadcast of `buf` from `root`, as MPI_Bcast. A rank whose count
// does not match the root's is told (MPI_ERR_TRUNCATE) and relays what
// arrived, or a byte more than it holds, so that the ranks below it are told
// too rather than sent bytes the root never sent.
void bcast_tree(schedule &s, const typed_buffer &buf, int root) {
  const communicator &c = s.group();
  const int vr = (c.rank - root + c.size) % c.size;
  int mask = 1;
  bool relay = false;
  std::size_t received = 0;
  for (; mask < c.size; mask <<= 1) {
    if ((vr & mask) != 0) {
      received = s.recv_exact(buf, (vr - mask + root) % c.size);
      relay = true;
      s.fence();
      break;
    }
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask >= c.size) continue;
    if (relay) {
      s.relay(received, (vr + mask + root) % c.size);
    } else {
      s.send(buf, (vr + mask + root) % c.size);
    }
  }
  s.fence();
}

// Dissemination barrier: in round k signal rank + 2^k, hear from rank - 2^k.
void barrier_rounds(schedule &s) {
  const communicator &c = s.group();
  const typed_buffer none = coll::bytes(nullptr, 0);
  for (int distance = 1; distance < c.size; distance *= 2) {
    s.recv(none, (c.rank - distance + c.size) % c.size);
    s.send(none, (c.rank + distance) % c.size);
    s.fence();
  }
}

}  // namespace iris::api::nbc

namespace {

using device::typed_buffer;
using nbc::mode;
using nbc::node_segment;
using nbc::node_steps;
using nbc::schedule;

// The checks of MPI_Allreduce and its relatives: op, datatype, count, the
// receive buffer, and the send buffer unless it is MPI_IN_PLACE.
int reduction_checks(const char *call, const communicator &c, const void *sendbuf,
                     const void *recvbuf, int count, int send_count, MPI_Datatype type, MPI_Op op) {
  typed_buffer recv;
  if (int err = api::check_typed_buffer(call, c, recvbuf, count, type, recv)) return err;
  if (int err = coll::check_op(call, c, op, type)) return err;
  if (coll::in_place(sendbuf)) return MPI_SUCCESS;
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, c, "the receive buffer");
  typed_buffer send;
  if (int err = api::check_typed_buffer(call, c, sendbuf, send_count, type, send)) return err;
  return coll::check_no_alias(call, c, send, recv);
}

// A reduction through the segment (Allreduce: `root` -1) when it has one,
// takes the data (a slot, or larger read in place), they are of a
// predefined type without gaps, and, for an Allreduce, no algorithm is
// forced (IRIS_COLL_ALLREDUCE): adds its steps to `s` and returns true.
// `in` gives the count and type (a Reduce's `out` is the root's only).
bool node_reduction(schedule &s, const typed_buffer &in, void *out, MPI_Op op, MPI_Datatype type,
                    int root) {
  const device::dtype &t = *in.type;
  const std::size_t bytes = in.packed_bytes();
  if ((root < 0 && device::rt->config.coll_allreduce != 0) || !t.predefined || t.wide_of != 0 ||
      t.true_lb != 0 || t.extent != static_cast<std::int64_t>(t.packed_size) || bytes == 0 ||
      node_segment(s.comm(), bytes, true) == nullptr) {
    return false;
  }
  device::op_hold(op);  // the program may free op while the call runs
  std::shared_ptr<void> held(nullptr, [op](void *) { device::op_unhold(op); });
  node_steps(s, [held, in, out, op, type, root](device::node_collectives &nc, std::uint64_t step,
                                                int &phase, int &err) {
    return device::node_reduce_poll(nc, step, phase, in.base, out,
                                    static_cast<std::size_t>(in.count), type, in.type->extent, op,
                                    root, err);
  });
  return true;
}

// Where a reduction's input lies: the send buffer, or in place the receive
// buffer.
typed_buffer input(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type) {
  return nbc::typed(coll::in_place(sendbuf) ? recvbuf : sendbuf, count, type);
}

}  // namespace

namespace iris::api::nbc {

device::node_collectives *node_segment(const communicator &c, std::size_t bytes, bool large_too) {
  device::node_collectives *nc = device::node_collectives_made(c);
  if (nc == nullptr) return nullptr;
  const bool takes =
      large_too ? device::node_takes(*nc, bytes) : device::node_fits_slot(*nc, bytes);
  return takes ? nc : nullptr;
}

int ibarrier(const char *call, MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request) {
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter) return inter_barrier(call, *c, info, m, request);
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  if (node_segment(*c, 0) != nullptr) {
    node_steps(*s, [](device::node_collectives &nc, std::uint64_t step, int &phase, int &) {
      return device::node_barrier_poll(nc, step, phase);
    });
  } else {
    barrier_rounds(*s);
  }
  return post(call, *c, std::move(s), m, request);
}

int ibcast(const char *call, void *buffer, int count, MPI_Datatype datatype, int root,
           MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request) {
  communicator *c = nullptr;
  typed_buffer data;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter) return inter_bcast(call, buffer, count, datatype, root, *c, info, m, request);
  if (int err = api::check_typed_buffer(call, *c, buffer, count, datatype, data)) return err;
  if (int err = coll::check_root(call, *c, root)) return err;
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  if (data.packed_bytes() > 0 && node_segment(*c, data.packed_bytes(), true) != nullptr) {
    // What a root packs, or a receiver reads, for data that is not one run.
    auto packed = std::make_shared<std::vector<std::byte>>();
    node_steps(*s, [data, root, packed](device::node_collectives &nc, std::uint64_t step,
                                        int &phase, int &err) {
      return device::node_bcast_poll(nc, step, data, root, phase, *packed, err);
    });
  } else {
    bcast_tree(*s, data, root);
  }
  return post(call, *c, std::move(s), m, request);
}

int ireduce(const char *call, const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
            MPI_Op op, int root, MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request) {
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter)
    return inter_reduce(call, sendbuf, recvbuf, count, datatype, op, root, *c, info, m, request);
  if (int err = coll::check_root(call, *c, root)) return err;
  if (c->rank == root) {
    if (int err = reduction_checks(call, *c, sendbuf, recvbuf, count, count, datatype, op)) {
      return err;
    }
  } else {
    typed_buffer send;
    if (coll::in_place(sendbuf)) return coll::error_in_place(call, *c, "the send buffer off root");
    if (int err = api::check_typed_buffer(call, *c, sendbuf, count, datatype, send)) return err;
    if (int err = coll::check_op(call, *c, op, datatype)) return err;
  }
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  if (node_reduction(*s, input(sendbuf, c->rank == root ? recvbuf : nullptr, count, datatype),
                     recvbuf, op, datatype, root)) {
    return post(call, *c, std::move(s), m, request);
  }
  // A non-commutative op reduces to rank 0 in rank order, then moves to root.
  const int tree_root = device::op_commutative(op) ? root : 0;
  const typed_buffer result =
      reduce_tree(*s, input(sendbuf, c->rank == root ? recvbuf : nullptr, count, datatype), op,
                  datatype, tree_root);
  const typed_buffer out = typed(recvbuf, count, datatype);
  if (c->rank == tree_root) {
    if (tree_root == root) {
      s->copy(result, out);
    } else {
      s->send(result, root);
    }
  } else if (c->rank == root) {
    s->recv(out, tree_root);
  }
  return post(call, *c, std::move(s), m, request);
}

int iallreduce(const char *call, const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, mode m,
               MPI_Request *request) {
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter)
    return inter_allreduce(call, sendbuf, recvbuf, count, datatype, op, *c, info, m, request);
  if (int err = reduction_checks(call, *c, sendbuf, recvbuf, count, count, datatype, op)) {
    return err;
  }
  if (int err = check_request(call, *c, m, info, request)) return err;
  const typed_buffer out = typed(recvbuf, count, datatype);
  auto s = std::make_unique<schedule>(*c);
  if (node_reduction(*s, input(sendbuf, recvbuf, count, datatype), recvbuf, op, datatype, -1)) {
    return post(call, *c, std::move(s), m, request);
  }
  const allreduce_algorithm how = allreduce_pick(*c, count, *out.type, op);
  allreduce_schedule(*s, input(sendbuf, recvbuf, count, datatype), out, op, datatype, how);
  return post(call, *c, std::move(s), m, request);
}

int ireduce_scatter_block(const char *call, const void *sendbuf, void *recvbuf, int recvcount,
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, mode m,
                          MPI_Request *request) {
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter)
    return inter_reduce_scatter_block(call, sendbuf, recvbuf, recvcount, datatype, op, *c, info, m,
                                      request);
  if (recvcount > INT_MAX / c->size) {
    return device::error_raise(c, call, MPI_ERR_COUNT, "recvcount %d times %d ranks is too large",
                               recvcount, c->size);
  }
  const int total = recvcount * c->size;
  const int in_count = coll::in_place(sendbuf) ? total : recvcount;
  if (int err = reduction_checks(call, *c, sendbuf, recvbuf, in_count, total, datatype, op)) {
    return err;
  }
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  const typed_buffer all =
      reduce_tree(*s, input(sendbuf, recvbuf, total, datatype), op, datatype, 0);
  const typed_buffer mine = typed(recvbuf, recvcount, datatype);
  if (c->rank == 0) {
    s->copy(all.slice(0, recvcount), mine);
    for (int i = 1; i < c->size; ++i) s->send(all.slice(std::int64_t{i} * recvcount, recvcount), i);
  } else {
    s->recv(mine, 0);
  }
  return post(call, *c, std::move(s), m, request);
}

int ireduce_scatter(const char *call, const void *sendbuf, void *recvbuf, const int recvcounts[],
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, mode m,
                    MPI_Request *request) {
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter)
    return inter_reduce_scatter(call, sendbuf, recvbuf, recvcounts, datatype, op, *c, info, m,
                                request);
  if (int err = api::check_not_null(call, c, recvcounts, "recvcounts")) return err;
  std::int64_t total = 0;
  for (int i = 0; i < c->size; ++i) {
    if (recvcounts[i] < 0) {
      return device::error_raise(c, call, MPI_ERR_COUNT, "negative count %d for rank %d",
                                 recvcounts[i], i);
    }
    total += recvcounts[i];
  }
  if (total > INT_MAX) {
    return device::error_raise(c, call, MPI_ERR_COUNT, "counts add up to more than INT_MAX");
  }
  const int all_count = static_cast<int>(total);
  const int in_count = coll::in_place(sendbuf) ? all_count : recvcounts[c->rank];
  if (int err = reduction_checks(call, *c, sendbuf, recvbuf, in_count, all_count, datatype, op)) {
    return err;
  }
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  const typed_buffer all =
      reduce_tree(*s, input(sendbuf, recvbuf, all_count, datatype), op, datatype, 0);
  const typed_buffer mine = typed(recvbuf, recvcounts[c->rank], datatype);
  if (c->rank == 0) {
    s->copy(all.slice(0, recvcounts[0]), mine);
    std::int64_t at = recvcounts[0];
    for (int i = 1; i < c->size; ++i) {
      s->send(all.slice(at, recvcounts[i]), i);
      at += recvcounts[i];
    }
  } else {
    s->recv(mine, 0);
  }
  return post(call, *c, std::move(s), m, request);
}

// A chain: rank r hears the reduction of ranks 0..r-1 from r - 1, combines
// its own value on the right and passes the result on to r + 1.
int iscan(const char *call, bool inclusive, const void *sendbuf, void *recvbuf, int count,
          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, mode m,
          MPI_Request *request) {
  communicator *c = nullptr;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (int err = reduction_checks(call, *c, sendbuf, recvbuf, count, count, datatype, op)) {
    return err;
  }
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  const typed_buffer in = input(sendbuf, recvbuf, count, datatype);
  const typed_buffer out = typed(recvbuf, count, datatype);
  const typed_buffer acc = s->scratch(count, *in.type);
  s->copy(in, acc);
  if (c->rank > 0) {
    const typed_buffer lower = s->scratch(count, *in.type);
    s->recv(lower, c->rank - 1);
    s->fence();
    // Exscan's rank 0 leaves its receive buffer alone (undefined in MPI).
    if (!inclusive) s->copy(lower, out);
    s->reduce(lower, acc, op, datatype);
  }
  if (inclusive) s->copy(acc, out);
  if (c->rank + 1 < c->size) s->send(acc, c->rank + 1);
  return post(call, *c, std::move(s), m, request);
}

}  // namespace iris::api::nbc

extern "C" {

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ibarrier("MPI_Ibarrier", comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ibcast("MPI_Ibcast", buffer, count, datatype, root, comm, MPI_INFO_NULL, mode::start,
                     request);
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ireduce("MPI_Ireduce", sendbuf, recvbuf, count, datatype, op, root, comm,
                      MPI_INFO_NULL, mode::start, request);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iallreduce("MPI_Iallreduce", sendbuf, recvbuf, count, datatype, op, comm,
                         MPI_INFO_NULL, mode::start, request);
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ireduce_scatter_block("MPI_Ireduce_scatter_block", sendbuf, recvbuf, recvcount,
                                    datatype, op, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ireduce_scatter("MPI_Ireduce_scatter", sendbuf, recvbuf, recvcounts, datatype, op,
                              comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iscan("MPI_Iscan", true, sendbuf, recvbuf, count, datatype, op, comm, MPI_INFO_NULL,
                    mode::start, request);
}

int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iscan("MPI_Iexscan", false, sendbuf, recvbuf, count, datatype, op, comm,
                    MPI_INFO_NULL, mode::start, request);
}

}  // extern "C"
