// Nonblocking collectives that move blocks without combining them:
// Igather(v), Iscatter(v), Iallgather(v), Ialltoall(v,w), and the blocking
// Alltoallw (a schedule waited for on the spot). Uniform Igather,
// Iscatter and Ialltoall, and Iallgather(v) go through the node's segment when
// the communicator has one (collectives/node.hpp); otherwise each rank
// posts all its messages in one round (linear algorithms: every message can
// be in flight at once, which suits overlap better than the trees of the
// blocking calls).
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "device/api/coll/nbc.hpp"
#include "device/runtime/runtime.hpp"

using namespace iris;
using iris::api::communicator;
namespace coll = iris::api::coll;
namespace nbc = iris::api::nbc;

namespace {

using device::typed_buffer;
using nbc::mode;
using nbc::schedule;

using coll::block_of;
using coll::check_side;

// MPI-4.1 6.1: a send buffer may not overlap a receive buffer of the same
// call (MPI_IN_PLACE is how one buffer serves both). `one` against every
// block of `many`, the side with a block per rank.
int check_apart(const char *call, const communicator &c, const typed_buffer &one,
                const typed_buffer &many, bool vector, const int counts[], const int displs[]) {
  for (int i = 0; i < c.size; ++i) {
    if (int err = coll::check_no_alias(call, c, one, block_of(many, vector, counts, displs, i))) {
      return err;
    }
  }
  return MPI_SUCCESS;
}

// The end of a node step's messages (Igatherv's, Ialltoallv's): false while
// one still moves; then releases them and sets `err` to the first error,
// `posted` (an error from posting them or from the segment) first.
bool messages_moved(std::vector<device::request *> &pending, int posted, int &err) {
  for (const device::request *q : pending) {
    if (!q->complete) return false;
  }
  const int waited = coll::wait_all(pending);  // all complete: released
  err = posted != MPI_SUCCESS ? posted : waited;
  return true;
}

// Igatherv through the node segment (node_gatherv_post_poll, then at the
// root node_gatherv_posted and node_gatherv_end_poll), as MPI_Gatherv's
// gatherv_node_send and gatherv_node_root: the root posts the receive of a
// block that comes as a message as soon as its rank's count says so (one
// of another length aside, reported as MPI_ERR_TRUNCATE), and the request
// completes once the messages have moved.
void gatherv_node_steps(schedule &s, const communicator &c, const typed_buffer &send,
                        const typed_buffer &recv, const int recvcounts[], const int displs[],
                        int root, bool in_place) {
  struct gatherv_state {
    std::vector<typed_buffer> blocks;  // the root's
    std::vector<char> seen;
    std::vector<std::vector<std::byte>> aside;
    std::vector<device::request *> pending;
    int left = 0;
    int posted = MPI_SUCCESS;
  };
  auto st = std::make_shared<gatherv_state>();
  const bool is_root = c.rank == root;
  if (is_root) {
    st->blocks.reserve(static_cast<std::size_t>(c.size));
    for (int i = 0; i < c.size; ++i)
      st->blocks.push_back(block_of(recv, true, recvcounts, displs, i));
    if (!in_place) s.copy(send, st->blocks[static_cast<std::size_t>(root)]);
  }
  const typed_buffer mine = is_root ? device::typed_bytes(nullptr, 0) : send;
  const communicator *comm = &c;
  nbc::node_steps(s, [st, mine, comm, root, is_root](device::node_collectives &nc,
                                                     std::uint64_t step, int &phase, int &err) {
    const coll::channel ch{*comm, coll::tag_gatherv};
    const auto keep = [&st](int e) {
      if (st->posted == MPI_SUCCESS) st->posted = e;
    };
    if (phase == 0) {
      st->seen.assign(static_cast<std::size_t>(comm->size), 0);
      st->aside.clear();
      st->left = comm->size - 1;
      st->posted = MPI_SUCCESS;
      const bool by_message = !is_root && !device::node_fits_slot(nc, mine.packed_bytes());
      if (!device::node_gatherv_post_poll(nc, step, mine, by_message, root)) return false;
      if (by_message) keep(coll::post_send_from(ch, mine, root, st->pending));
      phase = 1;
    }
    if (phase == 1 && is_root) {
      for (int r = 0; r < comm->size && st->left > 0; ++r) {
        std::uint64_t posted = 0;
        if (r == root || st->seen[static_cast<std::size_t>(r)] != 0 ||
            !device::node_gatherv_posted(nc, step, r, posted)) {
          continue;
        }
        st->seen[static_cast<std::size_t>(r)] = 1;
        --st->left;
        if ((posted & device::node_gatherv_message) == 0) continue;
        const std::size_t bytes = posted & ~device::node_gatherv_message;
        keep(coll::post_gatherv_message(ch, st->blocks[static_cast<std::size_t>(r)], r, bytes,
                                        st->aside, st->pending));
      }
      if (st->left > 0) return false;
      int taken = MPI_SUCCESS;
      if (!device::node_gatherv_end_poll(nc, step, root, st->blocks.data(), taken)) return false;
      keep(taken);
      phase = 2;
    }
    return messages_moved(st->pending, st->posted, err);
  });
}

}  // namespace

namespace iris::api::nbc {

int igatherv(const char *call, bool vector, const void *sendbuf, int sendcount,
             MPI_Datatype sendtype, void *recvbuf, int recvcount, const int recvcounts[],
             const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
             mode m, MPI_Request *request) {
  communicator *c = nullptr;
  typed_buffer send;
  typed_buffer recv;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter)
    return inter_gatherv(call, vector, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvcounts,
                         displs, recvtype, root, *c, info, m, request);
  if (int err = coll::check_root(call, *c, root)) return err;
  const bool is_root = c->rank == root;
  const bool in_place = is_root && coll::in_place(sendbuf);
  if (coll::in_place(sendbuf) && !is_root) {
    return coll::error_in_place(call, *c, "the send buffer off root");
  }
  if (!in_place) {
    if (int err = api::check_typed_buffer(call, *c, sendbuf, sendcount, sendtype, send)) {
      return err;
    }
  }
  if (is_root) {
    if (int err =
            check_side(call, *c, vector, recvbuf, recvcount, recvcounts, displs, recvtype, recv)) {
      return err;
    }
    if (!in_place) {
      if (int err = check_apart(call, *c, send, recv, vector, recvcounts, displs)) return err;
    }
  }
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  // Uniform blocks that fit a slot through the node's segment when it has
  // one. Larger ones go as messages, all posted at once: the root reading
  // every block alone from the segment took 1.8x as long at 1 MiB and 8
  // ranks (bench/README.md).
  const typed_buffer mine = in_place ? recv.block(root) : send;
  if (!vector && mine.packed_bytes() > 0 && node_segment(*c, mine.packed_bytes())) {
    node_steps(*s, [mine, recv, is_root, root, in_place](device::node_collectives &nc,
                                                         std::uint64_t step, int &phase, int &err) {
      return device::node_gather_poll(nc, step, phase, mine, is_root ? &recv : nullptr, root,
                                      in_place, err);
    });
    return post(call, *c, std::move(s), m, request);
  }
  // Igatherv through the segment when the communicator has one, as
  // MPI_Gatherv: each rank's block in its slot, or as a message where its
  // own byte count is past a slot (the root learns which from the counts).
  if (vector && node_segment(*c, 0) != nullptr) {
    gatherv_node_steps(*s, *c, send, recv, recvcounts, displs, root, in_place);
    return post(call, *c, std::move(s), m, request);
  }
  if (!is_root) {
    s->send(send, root);
  } else {
    // The root's own block is copied once every receive is posted: copied
    // first, every sender waited for it (1 MiB blocks at 4 ranks: rank 1
    // went at 250 us, 120 with Open MPI).
    for (int i = 0; i < c->size; ++i) {
      if (i != root) s->recv(block_of(recv, vector, recvcounts, displs, i), i);
    }
    if (!in_place) s->copy(send, block_of(recv, vector, recvcounts, displs, root));
  }
  return post(call, *c, std::move(s), m, request);
}

int iscatterv(const char *call, bool vector, const void *sendbuf, int sendcount,
              const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf,
              int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, mode m,
              MPI_Request *request) {
  communicator *c = nullptr;
  typed_buffer send;
  typed_buffer recv;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter)
    return inter_scatterv(call, vector, sendbuf, sendcount, sendcounts, displs, sendtype, recvbuf,
                          recvcount, recvtype, root, *c, info, m, request);
  if (int err = coll::check_root(call, *c, root)) return err;
  const bool is_root = c->rank == root;
  const bool in_place = is_root && coll::in_place(recvbuf);
  if (coll::in_place(recvbuf) && !is_root) {
    return coll::error_in_place(call, *c, "the receive buffer off root");
  }
  if (!in_place) {
    if (int err = api::check_typed_buffer(call, *c, recvbuf, recvcount, recvtype, recv)) {
      return err;
    }
  }
  if (is_root) {
    if (int err =
            check_side(call, *c, vector, sendbuf, sendcount, sendcounts, displs, sendtype, send)) {
      return err;
    }
    if (!in_place) {
      if (int err = check_apart(call, *c, recv, send, vector, sendcounts, displs)) return err;
    }
  }
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  // Uniform blocks through the node's segment when it has one (as
  // MPI_Scatter): the root's n blocks are one run.
  const std::size_t block = is_root ? send.packed_bytes() : recv.packed_bytes();
  const auto n = static_cast<std::size_t>(c->size);
  if (!vector && block > 0 && node_segment(*c, block * n, true)) {
    const typed_buffer all{send.base, send.count * c->size, send.type};
    auto packed = std::make_shared<std::vector<std::byte>>();
    node_steps(*s, [all, recv, is_root, root, in_place, packed](
                       device::node_collectives &nc, std::uint64_t step, int &phase, int &err) {
      return device::node_scatter_poll(nc, step, phase, is_root ? &all : nullptr,
                                       in_place ? nullptr : &recv, root, *packed, err);
    });
    return post(call, *c, std::move(s), m, request);
  }
  if (!is_root) {
    s->recv(recv, root);
  } else {
    // The root's own block last, as Igatherv's: the others' go first.
    for (int i = 0; i < c->size; ++i) {
      if (i != root) s->send(block_of(send, vector, sendcounts, displs, i), i);
    }
    if (!in_place) s->copy(block_of(send, vector, sendcounts, displs, root), recv);
  }
  return post(call, *c, std::move(s), m, request);
}

int iallgatherv(const char *call, bool vector, const void *sendbuf, int sendcount,
                MPI_Datatype sendtype, void *recvbuf, int recvcount, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, mode m,
                MPI_Request *request) {
  communicator *c = nullptr;
  typed_buffer send;
  typed_buffer recv;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter)
    return inter_allgatherv(call, vector, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                            recvcounts, displs, recvtype, *c, info, m, request);
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  if (int err =
          check_side(call, *c, vector, recvbuf, recvcount, recvcounts, displs, recvtype, recv)) {
    return err;
  }
  const bool in_place = coll::in_place(sendbuf);
  if (!in_place) {
    if (int err = api::check_typed_buffer(call, *c, sendbuf, sendcount, sendtype, send)) {
      return err;
    }
    if (int err = check_apart(call, *c, send, recv, vector, recvcounts, displs)) return err;
  }
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  const typed_buffer own = block_of(recv, vector, recvcounts, displs, c->rank);
  const typed_buffer mine = in_place ? own : send;
  // Through the node's segment when it has one and no algorithm is forced
  // (as MPI_Allgather and MPI_Allgatherv): the largest block decides, and
  // every rank knows every block's size.
  if (device::rt->config.coll_allgather == 0) {
    // Every block is needed only when they differ (the exchange reads
    // them); uniform ones are all the size of this rank's.
    auto blocks = std::make_shared<std::vector<typed_buffer>>();
    if (vector) {
      for (int i = 0; i < c->size; ++i)
        blocks->push_back(block_of(recv, vector, recvcounts, displs, i));
    }
    const std::size_t largest = vector ? largest_block(*blocks) : own.packed_bytes();
    if (largest > 0 && node_segment(*c, largest, true)) {
      auto state = std::make_shared<device::node_exchange_state>();
      node_steps(*s, [mine, recv, in_place, vector, blocks, state](
                         device::node_collectives &nc, std::uint64_t step, int &phase, int &err) {
        return device::node_exchange_poll(nc, step, phase, mine, false, recv, false, in_place,
                                          vector ? blocks->data() : nullptr, *state, err);
      });
      return post(call, *c, std::move(s), m, request);
    }
  }
  for (int i = 0; i < c->size; ++i) {
    if (i == c->rank) continue;
    s->recv(block_of(recv, vector, recvcounts, displs, i), i);
    s->send(mine, i);
  }
  if (!in_place) s->copy(send, own);  // once the messages are on their way
  return post(call, *c, std::move(s), m, request);
}

bool alltoall_takes(const device::node_collectives &nc, std::size_t block, int n) {
  const std::size_t all = block * static_cast<std::size_t>(n);
  return device::node_fits_slot(nc, all) ||
         (block >= alltoall_read_from(n) && device::node_takes(nc, all));
}

int ialltoall(const char *call, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
              void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
              mode m, MPI_Request *request) {
  communicator *c = nullptr;
  typed_buffer send;
  typed_buffer recv;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter)
    return inter_alltoall(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, *c,
                          info, m, request);
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  if (int err = api::check_typed_buffer(call, *c, recvbuf, recvcount, recvtype, recv)) return err;
  const bool in_place = coll::in_place(sendbuf);
  if (!in_place) {
    if (int err = api::check_typed_buffer(call, *c, sendbuf, sendcount, sendtype, send)) {
      return err;
    }
    if (int err = coll::check_no_alias(call, *c, {send.base, send.count * c->size, send.type},
                                       {recv.base, recv.count * c->size, recv.type})) {
      return err;
    }
  }
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  // Through the node's segment when it has one and no algorithm is forced
  // (as MPI_Alltoall): each rank posts its n blocks as one run (in place
  // copied first) and takes block `rank` of every rank's.
  const device::node_collectives *nc = node_segment(*c, 0);
  if (device::rt->config.coll_alltoall == 0 && recv.packed_bytes() > 0 && nc != nullptr &&
      alltoall_takes(*nc, recv.packed_bytes(), c->size)) {
    const typed_buffer all = in_place ? typed_buffer{recv.base, recv.count * c->size, recv.type}
                                      : typed_buffer{send.base, send.count * c->size, send.type};
    auto state = std::make_shared<device::node_exchange_state>();
    node_steps(*s, [all, recv, in_place, state](device::node_collectives &nc, std::uint64_t step,
                                                int &phase, int &err) {
      return device::node_exchange_poll(nc, step, phase, all, in_place, recv, true, false, nullptr,
                                        *state, err);
    });
    return post(call, *c, std::move(s), m, request);
  }
  if (in_place) {  // send what the receive buffer held, from a copy
    const typed_buffer whole{recv.base, recv.count * c->size, recv.type};
    const typed_buffer held = s->scratch(whole.count, *recv.type);
    s->copy(whole, held);
    send = {held.base, recv.count, recv.type};
  }
  for (int i = 0; i < c->size; ++i) {
    if (i == c->rank) continue;
    s->recv(recv.block(i), i);
    s->send(send.block(i), i);
  }
  // Its own block once the messages are on their way.
  if (!in_place) s->copy(send.block(c->rank), recv.block(c->rank));
  return post(call, *c, std::move(s), m, request);
}

namespace {

// Ialltoallv through the node segment (node_alltoallv_post_poll and
// _take_poll): in place, the blocks go from copies the schedule makes at
// each start; the blocks past the slot move as messages on Alltoallv's
// tags (the step's parity, as the blocking one), and the step's request
// completes once they have.
void alltoallv_node_steps(schedule &s, const communicator &c, const typed_buffer &send,
                          const int sendcounts[], const int sdispls[], const typed_buffer &recv,
                          const int recvcounts[], const int rdispls[], bool in_place) {
  struct blocks_state {
    std::vector<typed_buffer> out, in;
    std::vector<int> to_message, from_message;
    std::vector<char> taken;               // by rank: its block taken
    std::vector<device::request *> early;  // by rank: its block's receive, posted early
    std::vector<device::request *> pending;
    bool exposed = false;
    bool as_posted = false;  // node_alltoallv_as_posted
    int posted = MPI_SUCCESS;
    int taken_err = MPI_SUCCESS;
  };
  auto st = std::make_shared<blocks_state>();
  const int n = c.size;
  st->out.resize(static_cast<std::size_t>(n));
  st->in.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    typed_buffer &in = st->in[static_cast<std::size_t>(i)];
    typed_buffer &out = st->out[static_cast<std::size_t>(i)];
    in = recv.slice(rdispls[i], recvcounts[i]);
    if (i == c.rank) {
      if (!in_place) s.copy(send.slice(sdispls[i], sendcounts[i]), in);
    } else if (in_place) {
      out = s.scratch(recvcounts[i], *recv.type);
      s.copy(in, out);
    } else {
      out = send.slice(sdispls[i], sendcounts[i]);
    }
  }
  const communicator *comm = &c;
  // As MPI_Alltoallv's alltoallv_node: blocks of alltoall_read_from(n) in
  // one run are read in place; the other blocks past a slot move as
  // messages, their receives posted with this rank's run (8 ranks 1 MiB
  // 7017 -> 4960 us; bench/results/2026-12-01-issue43-alltoallv-as-posted.md).
  const std::size_t read_from = alltoall_read_from(n);
  node_steps(s, [st, comm, read_from](device::node_collectives &nc, std::uint64_t step, int &phase,
                                      int &err) {
    const coll::channel ch{*comm, (step & 1U) != 0 ? coll::tag_alltoallv_odd : coll::tag_alltoallv};
    const auto keep = [&st](int e) {
      if (st->posted == MPI_SUCCESS) st->posted = e;
    };
    const int size = comm->size;
    if (phase == 0) {
      st->to_message.clear();
      st->from_message.clear();
      st->taken.assign(static_cast<std::size_t>(size), 0);
      st->early.assign(static_cast<std::size_t>(size), nullptr);
      st->posted = MPI_SUCCESS;
      st->taken_err = MPI_SUCCESS;
      if (!device::node_alltoallv_post_poll(nc, step, st->out.data(), read_from, st->to_message,
                                            st->exposed)) {
        return false;
      }
      st->as_posted = device::node_alltoallv_as_posted(nc, st->in.data());
      if (st->as_posted) {
        keep(coll::alltoallv_post_early(ch, nc, st->in.data(), read_from, st->early));
      }
      for (const int r : st->to_message) {
        keep(coll::post_send_from(ch, st->out[static_cast<std::size_t>(r)], r, st->pending));
      }
      phase = 1;
    }
    if (phase == 1) {
      if (!device::node_alltoallv_take_poll(nc, step, st->in.data(), st->as_posted, st->taken,
                                            st->from_message, st->taken_err)) {
        return false;
      }
      keep(st->taken_err);
      keep(coll::alltoallv_settle_early(ch, st->in.data(), st->from_message, st->early,
                                        st->pending));
      phase = 2;
    }
    if (phase == 2) {
      if (!device::node_alltoallv_end_poll(nc, step, st->exposed)) return false;
      phase = 3;
    }
    return messages_moved(st->pending, st->posted, err);
  });
}

}  // namespace

int ialltoallv(const char *call, const void *sendbuf, const int sendcounts[], const int sdispls[],
               MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
               MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, mode m, MPI_Request *request) {
  communicator *c = nullptr;
  typed_buffer send;
  typed_buffer recv;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter)
    return inter_alltoallv(call, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                           rdispls, recvtype, *c, info, m, request);
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  if (int err = coll::check_vector(call, *c, recvbuf, recvcounts, rdispls, recvtype, recv)) {
    return err;
  }
  const bool in_place = coll::in_place(sendbuf);
  if (!in_place) {
    if (int err = coll::check_vector(call, *c, sendbuf, sendcounts, sdispls, sendtype, send)) {
      return err;
    }
    // Block i against block i only (a full check would take size^2 steps).
    for (int i = 0; i < c->size; ++i) {
      if (int err = coll::check_no_alias(call, *c, send.slice(sdispls[i], sendcounts[i]),
                                         recv.slice(rdispls[i], recvcounts[i]))) {
        return err;
      }
    }
  }
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  // Through the node's segment when it has one whose slot holds the table
  // and no algorithm is forced, as MPI_Alltoallv: each rank posts its
  // blocks that fit its slot with a table, large ones are read in place,
  // the others go as messages, and it takes its block of every run.
  device::node_collectives *nc = node_segment(*c, 0);
  if (device::rt->config.coll_alltoall == 0 && nc != nullptr && device::node_scatterv_takes(*nc)) {
    alltoallv_node_steps(*s, *c, send, sendcounts, sdispls, recv, recvcounts, rdispls, in_place);
    return post(call, *c, std::move(s), m, request);
  }
  for (int i = 0; i < c->size; ++i) {
    const typed_buffer in = recv.slice(rdispls[i], recvcounts[i]);
    if (i == c->rank) {
      if (!in_place) s->copy(send.slice(sdispls[i], sendcounts[i]), in);
      continue;
    }
    typed_buffer out;
    if (in_place) {  // send what block i held, from a copy
      out = s->scratch(recvcounts[i], *recv.type);
      s->copy(in, out);
    } else {
      out = send.slice(sdispls[i], sendcounts[i]);
    }
    s->recv(in, i);
    s->send(out, i);
  }
  return post(call, *c, std::move(s), m, request);
}

template <typename Displ>
int ialltoallw(const char *call, const void *sendbuf, const int sendcounts[], const Displ sdispls[],
               const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
               const Displ rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
               mode m, MPI_Request *request) {
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (c->inter)
    return inter_alltoallw(call, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                           rdispls, recvtypes, *c, info, m, request);
  if (coll::in_place(recvbuf)) return coll::error_in_place(call, *c, "the receive buffer");
  if (int err = check_w(call, *c, c->size, recvbuf, recvcounts, rdispls, recvtypes)) return err;
  const bool in_place = coll::in_place(sendbuf);
  if (!in_place) {
    if (int err = check_w(call, *c, c->size, sendbuf, sendcounts, sdispls, sendtypes)) return err;
    for (int i = 0; i < c->size; ++i) {  // block i against block i, as Ialltoallv
      if (int err =
              coll::check_no_alias(call, *c, w_block(sendbuf, sendcounts, sdispls, sendtypes, i),
                                   w_block(recvbuf, recvcounts, rdispls, recvtypes, i))) {
        return err;
      }
    }
  }
  if (m == mode::blocking) {
    // MPI_Alltoallw: as MPI_Alltoallv, each block with its own type (the
    // node segment, else messages picked by size). In place, the blocks
    // go from a packed copy of the receive buffer.
    const int n = c->size;
    coll::root_blocks out(n);
    coll::root_blocks in(n);
    std::vector<std::byte> saved;
    std::size_t total = 0;
    for (int i = 0; i < n; ++i) {
      in[i] = w_block(recvbuf, recvcounts, rdispls, recvtypes, i);
      total += in[i].packed_bytes();
    }
    if (in_place) saved.resize(total);
    std::size_t at = 0;
    for (int i = 0; i < n; ++i) {
      if (!in_place) {
        out[i] = w_block(sendbuf, sendcounts, sdispls, sendtypes, i);
        continue;
      }
      device::typed_pack(in[i], saved.data() + at);
      out[i] = coll::bytes(saved.data() + at, in[i].packed_bytes());
      at += in[i].packed_bytes();
    }
    device::typed_copy(out[c->rank], in[c->rank]);
    return coll::alltoall_blocks(call, *c, out, in);
  }
  if (int err = check_request(call, *c, m, info, request)) return err;
  auto s = std::make_unique<schedule>(*c);
  for (int i = 0; i < c->size; ++i) {
    const typed_buffer in = w_block(recvbuf, recvcounts, rdispls, recvtypes, i);
    if (i == c->rank) {
      if (!in_place) s->copy(w_block(sendbuf, sendcounts, sdispls, sendtypes, i), in);
      continue;
    }
    typed_buffer out;
    if (in_place) {
      out = s->scratch(in.count, *in.type);
      s->copy(in, out);
    } else {
      out = w_block(sendbuf, sendcounts, sdispls, sendtypes, i);
    }
    s->recv(in, i);
    s->send(out, i);
  }
  return post(call, *c, std::move(s), m, request);
}

template int ialltoallw<int>(const char *, const void *, const int[], const int[],
                             const MPI_Datatype[], void *, const int[], const int[],
                             const MPI_Datatype[], MPI_Comm, MPI_Info, mode, MPI_Request *);
template int ialltoallw<MPI_Aint>(const char *, const void *, const int[], const MPI_Aint[],
                                  const MPI_Datatype[], void *, const int[], const MPI_Aint[],
                                  const MPI_Datatype[], MPI_Comm, MPI_Info, mode, MPI_Request *);

}  // namespace iris::api::nbc

extern "C" {

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                MPI_Request *request) {
  const device::api_guard guard;
  return nbc::igatherv("MPI_Igather", false, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                       nullptr, nullptr, recvtype, root, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::igatherv("MPI_Igatherv", true, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts,
                       displs, recvtype, root, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iscatterv("MPI_Iscatter", false, sendbuf, sendcount, nullptr, nullptr, sendtype,
                        recvbuf, recvcount, recvtype, root, comm, MPI_INFO_NULL, mode::start,
                        request);
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iscatterv("MPI_Iscatterv", true, sendbuf, 0, sendcounts, displs, sendtype, recvbuf,
                        recvcount, recvtype, root, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iallgatherv("MPI_Iallgather", false, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                          nullptr, nullptr, recvtype, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::iallgatherv("MPI_Iallgatherv", true, sendbuf, sendcount, sendtype, recvbuf, 0,
                          recvcounts, displs, recvtype, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ialltoall("MPI_Ialltoall", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                        comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ialltoallv("MPI_Ialltoallv", sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                         recvcounts, rdispls, recvtype, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                   MPI_Request *request) {
  const device::api_guard guard;
  return nbc::ialltoallw("MPI_Ialltoallw", sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                         recvcounts, rdispls, recvtypes, comm, MPI_INFO_NULL, mode::start, request);
}

int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  const device::api_guard guard;
  return nbc::ialltoallw("MPI_Alltoallw", sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                         recvcounts, rdispls, recvtypes, comm, MPI_INFO_NULL, mode::blocking,
                         nullptr);
}

}  // extern "C"
