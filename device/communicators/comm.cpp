// Communicator creation: context ids by agreement, and the registry.
#include <algorithm>
#include <cstring>

#include "device/base/handle.hpp"
#include "device/base/threading.hpp"
#include "device/collectives/schedule.hpp"
#include "device/datatypes/dtype.hpp"
#include "device/protocols/recovery.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/send.hpp"
#include "device/runtime/runtime.hpp"
#include "device/transports/dynamic.hpp"

namespace iris::device {

int group::rank_of(int w) const {
  const auto it = std::find(world_ranks.begin(), world_ranks.end(), w);
  return it == world_ranks.end() ? -1 : static_cast<int>(it - world_ranks.begin());
}

namespace {

// Dissemination with max among `n` members; member i is parent rank
// rank_of(i) and this rank is member `me`. Max is idempotent, so the values
// heard twice through different paths do no harm; after ceil(log2 n)
// rounds every member holds the maximum of all. Each message also carries
// whether its sender, or any member it heard from, runs at
// MPI_THREAD_MULTIPLE (`threaded`, an OR, idempotent too): each process
// chooses its own thread level, and an agreement's rounds must be the same
// at every member (agree).
template <typename RankOf>
std::uint32_t agree_max(const communicator &parent, int n, int me, RankOf rank_of, int tag,
                        std::uint32_t agreed, bool *threaded = nullptr) {
  std::uint32_t word[2] = {agreed, threaded != nullptr && *threaded ? 1U : 0U};
  for (int distance = 1; distance < n; distance *= 2) {
    const int to = rank_of((me + distance) % n);
    const int from = rank_of((me - distance + n) % n);
    std::uint32_t heard[2] = {0, 0};
    request *recv =
        recv_start(parent, parent.collective_context(), heard, sizeof(heard), from, tag);
    request_wait_release(
        send_start(parent, parent.collective_context(), word, sizeof(word), to, tag));
    request_wait_release(recv);
    word[0] = std::max(word[0], heard[0]);
    word[1] |= heard[1];
  }
  if (threaded != nullptr) *threaded = word[1] != 0;
  return word[0];
}

// Under MPI_THREAD_MULTIPLE, agreements on different parents may run at once
// in one process (each waits with the call lock given up), and two of them
// may settle on the same value. A proposal is therefore only tentative until
// a second round finds that no member saw it clash: with a context already
// handed out, or with another agreement's tentative value that was there
// first (so of two clashing agreements at least one goes on). Those that
// clashed anywhere try again above the value. Each agreement proposes the
// next free id plus its own spread (context_spread), so that clashes are
// rare instead of the rule.
bool context_clashes(std::uint32_t agreed) {
  const auto near = [agreed](std::uint32_t c) { return c + 1 >= agreed && c <= agreed + 1; };
  return std::any_of(rt->contexts_tentative.begin(), rt->contexts_tentative.end(), near) ||
         std::any_of(rt->contexts_agreed.begin(), rt->contexts_agreed.end(), near);
}

// An even offset below 128 from (parent context, attempt): a multiplicative
// hash, so that two parents meet on one offset once in 64 tries.
std::uint32_t context_spread(std::uint32_t parent_context, std::uint32_t attempt) {
  const std::uint32_t mixed = (parent_context * 64u + attempt) * 2654435761u;
  return 2 * (mixed >> 26);
}

template <typename RankOf>
std::uint32_t agree(const communicator &parent, int n, int me, RankOf rank_of, int tag) {
  ++rt->agreeing;  // peers may send on the agreed context before this rank is done
  std::uint32_t floor = 0;
  std::uint32_t agreed = 0;
  for (std::uint32_t attempt = 0;; ++attempt) {
    std::uint32_t proposal = std::max(rt->next_context, floor);
    // Under MULTIPLE, agreements running at once in several processes would
    // otherwise all propose the same next free id and clash at every try:
    // each proposes above it by a spread that its parent and the attempt
    // pick, the same on every member.
    if (threads_enabled) proposal += context_spread(parent.context, attempt);
    // The second round runs when any member is at MULTIPLE, at every
    // member: a process at a lower level (MPI lets each choose) joins it,
    // or the members would disagree on which message is whose and hang.
    bool threaded = threads_enabled;
    agreed = agree_max(parent, n, me, rank_of, tag, proposal, &threaded);
    if (!threaded) break;
    const bool clash = context_clashes(agreed);
    rt->contexts_tentative.push_back(agreed);
    const bool any_clash = agree_max(parent, n, me, rank_of, tag, clash ? 1 : 0) != 0;
    rt->contexts_tentative.erase(
        std::find(rt->contexts_tentative.begin(), rt->contexts_tentative.end(), agreed));
    if (!any_clash) {
      rt->contexts_agreed.push_back(agreed);
      break;
    }
    floor = agreed + 2;
  }
  rt->next_context = std::max(rt->next_context, agreed + 2);  // point-to-point and collective
  --rt->agreeing;
  return agreed;
}

}  // namespace

std::uint32_t context_agree(const communicator &parent) {
  return agree(
      parent, parent.size, parent.rank, [](int i) { return i; }, tag_context_agree);
}

std::uint32_t context_propose(const communicator &parent) {
  std::uint32_t proposal = rt->next_context;
  if (threads_enabled) proposal += context_spread(parent.context, 0);
  return agree_max(
      parent, parent.size, parent.rank, [](int i) { return i; }, tag_context_agree, proposal);
}

std::uint32_t context_agree_among(const communicator &parent, const std::vector<int> &members,
                                  int tag) {
  const int me =
      static_cast<int>(std::find(members.begin(), members.end(), parent.rank) - members.begin());
  return agree(
      parent, static_cast<int>(members.size()), me,
      [&](int i) { return members[static_cast<std::size_t>(i)]; }, tag);
}

std::uint32_t context_confirm(std::uint32_t first, std::uint32_t spread,
                              const std::function<std::uint32_t(std::uint32_t)> &max_all) {
  std::uint32_t agreed = first;
  for (std::uint32_t attempt = 1;; ++attempt) {
    // As agree's second round: checked and made tentative in one step under
    // the call lock, so of two agreements that meet on one value in this
    // process the later sees the earlier.
    const bool clash = context_clashes(agreed);
    rt->contexts_tentative.push_back(agreed);
    const bool any_clash = max_all(clash ? 1 : 0) != 0;
    rt->contexts_tentative.erase(
        std::find(rt->contexts_tentative.begin(), rt->contexts_tentative.end(), agreed));
    if (!any_clash) break;
    rt->next_context = std::max(rt->next_context, agreed + 2);
    agreed = max_all(rt->next_context + context_spread(spread, attempt));
  }
  rt->contexts_agreed.push_back(agreed);
  return agreed;
}

namespace {

// The maximum of `value` over both groups: among `local`, then between the
// leaders, then from each leader to its group.
std::uint32_t inter_max(const communicator &local, int leader, const inter_link &link,
                        std::uint32_t value) {
  value = agree_max(
      local, local.size, local.rank, [](int i) { return i; }, tag_context_agree, value);
  std::vector<int> theirs;
  if (local.rank == leader) {
    theirs = leader_exchange(*link.channel, link.context, link.peer, link.tag,
                             {static_cast<int>(value)});
  }
  group_bcast(local, leader, theirs);
  return std::max(value, static_cast<std::uint32_t>(heard(theirs, 0)));
}

}  // namespace

// Two intercommunicators built at once in one process would otherwise meet
// on one context: each group's own value was confirmed among that group
// only, and the larger of the two (plus two) is new to the other group, so
// another agreement under way there could settle on it too.
std::uint32_t context_agree_inter(const communicator &local, int leader, const inter_link &link,
                                  std::uint32_t first) {
  // Confirmed at every level, not only under MULTIPLE: this group cannot
  // tell whether a process of the other runs at MULTIPLE without asking,
  // and asking costs the round the confirmation takes.
  const std::uint32_t agreed = context_confirm(first, local.context, [&](std::uint32_t value) {
    return inter_max(local, leader, link, value);
  });
  rt->next_context = std::max(rt->next_context, agreed + 2);
  return agreed;
}

int comm_node_of(const communicator &comm, int rank) {
  const int w = comm.world_rank[static_cast<std::size_t>(rank)];
  // A process of another job (dynamic processes) shares memory with none.
  return w < rt->size ? rt->pmi->node_of(w) : -1 - w;
}

namespace {

int comm_register_slot(std::vector<int> world_ranks, std::uint32_t context, int errhandler) {
  auto c = std::make_unique<communicator>();
  c->context = context;
  c->size = static_cast<int>(world_ranks.size());
  c->rank = static_cast<int>(std::find(world_ranks.begin(), world_ranks.end(), rt->rank) -
                             world_ranks.begin());
  c->world_rank = std::move(world_ranks);
  c->errhandler = errhandler;
  // Reuse a free slot; slots 1 and 2 are MPI_COMM_WORLD and MPI_COMM_SELF.
  std::size_t slot = 3;
  while (slot < rt->comms.size() && rt->comms[slot]) ++slot;
  if (slot == rt->comms.size()) rt->comms.emplace_back();
  c->handle = handle_make(handle_kind::comm, slot);
  const int handle = c->handle;
  rt->comms[slot] = std::move(c);
  return handle;
}

}  // namespace

int comm_register(std::vector<int> world_ranks, std::uint32_t context, int errhandler) {
  const int handle = comm_register_slot(std::move(world_ranks), context, errhandler);
  comm_publish(*rt, handle_index(handle));
  recovery_comm_made(*rt->comms[handle_index(handle)]);
  return handle;
}

int comm_register_inter(std::vector<int> local, std::vector<int> remote, std::uint32_t context,
                        std::uint32_t local_context, int errhandler) {
  const int rank =
      static_cast<int>(std::find(local.begin(), local.end(), rt->rank) - local.begin());
  // Not published: its sends take the call lock.
  const int handle = comm_register_slot(std::move(remote), context, errhandler);
  communicator *c = rt->comms[handle_index(handle)].get();
  c->rank = rank;  // comm_register looked for this process among the remote group
  c->inter = true;
  c->local_world_rank = std::move(local);
  c->local_context = local_context;
  std::pair<std::uint64_t, int> mine, theirs;
  process_id(c->local_world_rank.front(), mine.first, mine.second);
  process_id(c->world_rank.front(), theirs.first, theirs.second);
  c->merge_first = mine < theirs ? 1 : 2;
  if (context != pending_context) recovery_comm_made(*c);
  return handle;
}

namespace {

// One nonblocking agreement's state, shared by the calls of its schedule.
// The members are numbered 0 .. n-1: over an intracommunicator its ranks;
// over an intercommunicator the group communicator::local_first names
// first, then the other (both sides number them alike).
struct context_agreement {
  communicator *parent = nullptr;
  int n = 0;
  int me = 0;
  bool local_first = false;  // intercommunicator: this group is numbered first
  std::uint32_t value = 0;
  std::uint32_t heard = 0;
  std::uint32_t clash = 0;
  std::uint32_t clash_heard = 0;
  std::uint32_t floor = 0;
  std::uint32_t attempt = 0;
  int sub = 0;  // the next round's sub-tag
  std::function<void(std::uint32_t)> done;

  // Member v as (a rank of the local group?, its rank there).
  std::pair<bool, int> member(int v) const {
    if (!parent->inter) return {false, v};
    const int first = local_first ? parent->local_size() : parent->size;
    if (v < first) return {local_first, v};
    return {!local_first, v - first};
  }
};

bool block_clashes(std::uint32_t agreed) {
  const auto near = [agreed](std::uint32_t c) {
    return c + nonblocking_context_block > agreed && c < agreed + nonblocking_context_block;
  };
  return std::any_of(rt->contexts_tentative.begin(), rt->contexts_tentative.end(), near) ||
         std::any_of(rt->contexts_agreed.begin(), rt->contexts_agreed.end(), near);
}

// Dissemination rounds after which every member's a.*field is the maximum of
// all members' (a.*heard receives).
void plan_max(schedule &s, const std::shared_ptr<context_agreement> &a,
              std::uint32_t context_agreement::*field, std::uint32_t context_agreement::*heard) {
  const dtype *word = dtype_lookup(MPI_UNSIGNED);
  for (int distance = 1; distance < a->n; distance *= 2) {
    const auto [to_local, to] = a->member((a->me + distance) % a->n);
    const auto [from_local, from] = a->member((a->me - distance + a->n) % a->n);
    const int sub = a->sub;
    a->sub = (a->sub + 1) % nbc_sub_tags;
    s.address_local(to_local);
    s.send({&(a.get()->*field), 1, word}, to, sub);
    s.address_local(from_local);
    s.recv({&(a.get()->*heard), 1, word}, from, sub);
    s.address_local(false);
    s.fence();
    s.call([a, field, heard](schedule &) {
      a.get()->*field = std::max(a.get()->*field, a.get()->*heard);
    });
  }
}

void plan_attempt(schedule &s, const std::shared_ptr<context_agreement> &a) {
  s.call([a](schedule &) {
    // Above the next free block, by a spread that the parent and the attempt
    // pick (the same on every member), so that agreements on different
    // parents rarely meet on one value.
    const std::uint32_t mixed = (a->parent->context * 64U + a->attempt) * 2654435761U;
    a->value = std::max(rt->next_nonblocking_context, a->floor) +
               nonblocking_context_block * (mixed >> 27);
    rt->next_nonblocking_context =
        std::max(rt->next_nonblocking_context, a->value + nonblocking_context_block);
  });
  plan_max(s, a, &context_agreement::value, &context_agreement::heard);
  s.call([a](schedule &) {
    a->clash = block_clashes(a->value) ? 1 : 0;
    rt->contexts_tentative.push_back(a->value);
  });
  plan_max(s, a, &context_agreement::clash, &context_agreement::clash_heard);
  s.call([a](schedule &next) {
    rt->contexts_tentative.erase(
        std::find(rt->contexts_tentative.begin(), rt->contexts_tentative.end(), a->value));
    rt->next_nonblocking_context =
        std::max(rt->next_nonblocking_context, a->value + nonblocking_context_block);
    if (a->clash != 0) {
      a->floor = a->value + nonblocking_context_block;
      ++a->attempt;
      plan_attempt(next, a);
      return;
    }
    rt->contexts_agreed.push_back(a->value);
    --rt->agreeing;
    a->done(a->value);
  });
}

}  // namespace

void context_agree_schedule(schedule &s, communicator &parent,
                            std::function<void(std::uint32_t)> done) {
  auto a = std::make_shared<context_agreement>();
  a->parent = &parent;
  a->done = std::move(done);
  if (parent.inter) {
    a->n = parent.local_size() + parent.size;
    a->local_first = parent.local_first();
    a->me = a->local_first ? parent.rank : parent.size + parent.rank;
  } else {
    a->n = parent.size;
    a->me = parent.rank;
  }
  ++rt->agreeing;  // peers may send on the agreed block before this rank is done
  plan_attempt(s, a);
}

int comm_register_pending(const communicator &parent) {
  if (parent.inter) {
    return comm_register_inter(parent.local_world_rank, parent.world_rank, pending_context,
                               pending_context, parent.errhandler);
  }
  // comm_register without the publication.
  return comm_register_slot(parent.world_rank, pending_context, parent.errhandler);
}

void comm_activate(communicator &c, std::uint32_t context) {
  c.context = context;
  recovery_comm_made(c);
  if (c.inter) {
    c.local_context = context + 2;
    return;
  }
  // Published only while registered (an erroneous program may have freed
  // it before the request completed, and its slot may hold another now).
  const std::size_t slot = handle_index(c.handle);
  if (slot < rt->comms.size() && rt->comms[slot].get() == &c) comm_publish(*rt, slot);
}

communicator inter_local_group(const communicator &inter) {
  communicator local;
  local.handle = inter.handle;
  local.context = inter.local_context;
  local.rank = inter.rank;
  local.size = inter.local_size();
  local.world_rank = inter.local_world_rank;
  local.errhandler = inter.errhandler;
  return local;
}

std::vector<int> leader_exchange(const communicator &channel, std::uint32_t context, int peer,
                                 int tag, const std::vector<int> &mine) {
  // The length first, then the values: both leaders send before waiting.
  const int length = static_cast<int>(mine.size());
  int theirs_length = 0;
  request *recv = recv_start(channel, context, &theirs_length, sizeof(int), peer, tag);
  request_wait_release(send_start(channel, context, &length, sizeof(int), peer, tag));
  request_wait_release(recv);
  std::vector<int> theirs(static_cast<std::size_t>(theirs_length));
  recv = recv_start(channel, context, theirs.data(), theirs.size() * sizeof(int), peer, tag);
  request_wait_release(
      send_start(channel, context, mine.data(), mine.size() * sizeof(int), peer, tag));
  request_wait_release(recv);
  return theirs;
}

void group_bcast(const communicator &group, int root, std::vector<int> &data) {
  const std::uint32_t context = group.collective_context();
  if (group.rank == root) {
    const int length = static_cast<int>(data.size());
    for (int r = 0; r < group.size; ++r) {
      if (r == root) continue;
      request_wait_release(send_start(group, context, &length, sizeof(int), r, tag_inter_bcast));
      request_wait_release(
          send_start(group, context, data.data(), data.size() * sizeof(int), r, tag_inter_bcast));
    }
    return;
  }
  int length = 0;
  request_wait_release(recv_start(group, context, &length, sizeof(int), root, tag_inter_bcast));
  data.assign(static_cast<std::size_t>(length), 0);
  request_wait_release(
      recv_start(group, context, data.data(), data.size() * sizeof(int), root, tag_inter_bcast));
}

void comm_release(int handle) {
  const std::size_t slot = handle_index(handle);
  if (slot < published_comm_limit)
    rt->published_comms[slot].store(nullptr, std::memory_order_release);
  // Its contexts' receive queues, if empty, go back to the matcher's free list.
  if (communicator *c = rt->comms[slot].get()) {
    c->node_coll.reset();
    c->node_coll_state = -1;
    c->hierarchy.reset();
    c->hierarchy_state = -1;
    rt->matching.forget(c->context);
    rt->matching.forget(c->collective_context());
    if (c->inter) {
      rt->matching.forget(c->local_context);
      rt->matching.forget(c->local_context + 1);
    }
  }
  rt->freed_comms.push_back(std::move(rt->comms[slot]));
}

std::vector<std::pair<int, int>> comm_allgather_pairs(const communicator &parent, int color,
                                                      int key) {
  // Everyone sends its pair to rank 0, which sends the whole table back:
  // linear, fine for the sizes one node holds.
  std::vector<std::pair<int, int>> table(static_cast<std::size_t>(parent.size));
  const std::uint32_t context = parent.collective_context();
  const int mine[2] = {color, key};
  const std::size_t table_bytes = table.size() * sizeof(int) * 2;
  std::vector<int> flat(table.size() * 2);
  if (parent.rank == 0) {
    flat[0] = color;
    flat[1] = key;
    for (int r = 1; r < parent.size; ++r) {
      request_wait_release(recv_start(parent, context, &flat[static_cast<std::size_t>(r) * 2],
                                      sizeof(mine), r, tag_split_gather));
    }
    for (int r = 1; r < parent.size; ++r) {
      request_wait_release(
          send_start(parent, context, flat.data(), table_bytes, r, tag_split_table));
    }
  } else {
    request_wait_release(send_start(parent, context, mine, sizeof(mine), 0, tag_split_gather));
    request_wait_release(recv_start(parent, context, flat.data(), table_bytes, 0, tag_split_table));
  }
  for (std::size_t r = 0; r < table.size(); ++r) table[r] = {flat[r * 2], flat[r * 2 + 1]};
  return table;
}

int group_register(std::vector<int> world_ranks) {
  if (rt->groups.size() < 2) rt->groups.resize(2);  // 0: MPI_GROUP_NULL, 1: MPI_GROUP_EMPTY
  std::size_t slot = 2;
  while (slot < rt->groups.size() && rt->groups[slot]) ++slot;
  if (slot == rt->groups.size()) rt->groups.emplace_back();
  rt->groups[slot] = std::make_unique<group>(group{std::move(world_ranks)});
  return handle_make(handle_kind::group, slot);
}

group *group_lookup(int handle) {
  static group empty;
  if (!handle_is(handle, handle_kind::group)) return nullptr;
  const std::size_t slot = handle_index(handle);
  if (slot == 1) return &empty;
  if (slot < 2 || slot >= rt->groups.size()) return nullptr;
  return rt->groups[slot].get();
}

void group_release(int handle) {
  rt->groups[handle_index(handle)].reset();
}

}  // namespace iris::device
