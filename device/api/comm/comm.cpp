// MPI bindings for communicators: rank and size, Barrier, the
// constructors (dup and its variants, split and split_type, create and
// create_group), free, compare, names, info hints, and the intercommunicator
// queries.
#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <vector>

#include "device/api/check.hpp"
#include "device/api/coll/coll.hpp"
#include "device/api/coll/nbc.hpp"
#include "device/api/comm/attr.hpp"
#include "device/api/comm/intercomm.hpp"
#include "device/api/env/info.hpp"
#include "device/collectives/hierarchy.hpp"
#include "device/collectives/node.hpp"
#include "device/communicators/topology_graph.hpp"

using namespace iris;
namespace nbc = iris::api::nbc;
using iris::api::communicator;

namespace {

// Collective over `c`: a duplicate with `hints`, carrying what the copy
// callbacks of c's attributes return. A failed callback frees it again.
// Collective over both groups of intercommunicator `c`: each group agrees
// on a fresh local context, the leaders (rank 0 of each group) exchange
// theirs, and two above the larger is fresh for everyone (confirmed over
// both groups under MULTIPLE: context_agree_inter).
MPI_Comm inter_dup(communicator *c) {
  device::communicator local = device::inter_local_group(*c);
  ++device::rt->agreeing;  // the other group may start sending first
  const std::uint32_t mine = device::context_agree(local);
  std::vector<int> theirs;
  if (c->rank == 0) {
    theirs = device::leader_exchange(*c, c->collective_context(), 0, device::tag_inter_leaders,
                                     {static_cast<int>(mine)});
  }
  device::group_bcast(local, 0, theirs);
  const std::uint32_t context = device::context_agree_inter(
      local, 0, {c, c->collective_context(), 0, device::tag_inter_leaders},
      std::max(mine, static_cast<std::uint32_t>(device::heard(theirs, 0))) + 2);
  --device::rt->agreeing;
  return device::comm_register_inter(c->local_world_rank, c->world_rank, context, mine,
                                     c->errhandler);
}

int dup_common(const char *call, communicator *c, api::info_entries hints, MPI_Comm *newcomm) {
  MPI_Comm made =
      c->inter ? inter_dup(c)
               : device::comm_register(c->world_rank, device::context_agree(*c), c->errhandler);
  if (int err = api::made_despite_failure(call, *c, made)) {
    *newcomm = MPI_COMM_NULL;
    return err;
  }
  api::comm_inherit(made, *c);
  device::comm_lookup(made)->hints = std::move(hints);
  device::topology_copy(*c, *device::comm_lookup(made));  // a duplicate keeps the topology
  if (int err = api::attrs_copy(call, c, device::attr_kind::comm, c->handle, made)) {
    device::comm_release(made);
    return err;
  }
  *newcomm = made;
  return MPI_SUCCESS;
}

// Nonblocking dup: the duplicate's handle, hints and attributes exist at
// once (the copy callbacks run now, in the caller's thread); its
// context ids come from an agreement that the progress engine runs as a
// schedule on c's collective context (device::context_agree_schedule), in
// the order of c's other nonblocking collectives. The request completes,
// and the duplicate (now with c's topology) becomes usable, when the
// agreement is done.
int idup_common(const char *call, communicator *c, api::info_entries hints, MPI_Comm *newcomm,
                MPI_Request *request) {
  const MPI_Comm made = device::comm_register_pending(*c);
  api::comm_inherit(made, *c);
  device::communicator *d = device::comm_lookup(made);
  d->hints = std::move(hints);
  if (int err = api::attrs_copy(call, c, device::attr_kind::comm, c->handle, made)) {
    device::comm_release(made);
    return err;
  }
  auto s = std::make_unique<device::schedule>(*c);
  // The topology is kept by (handle, context): copied once the context is.
  device::context_agree_schedule(*s, *c, [c, d](std::uint32_t context) {
    device::comm_activate(*d, context);
    device::topology_copy(*c, *d);
  });
  device::request *r = device::rt->requests.allocate(device::request_kind::coll, c);
  device::schedule_attach(*r, std::move(s), false);
  *newcomm = made;
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

// Collective over `c`: each rank's (color, key); the members of this rank's
// color, ordered by key then by rank in `c`, make a new communicator
// (MPI_UNDEFINED: MPI_COMM_NULL, still taking part).
MPI_Comm split_common(communicator *c, int color, int key) {
  const auto table = device::comm_allgather_pairs(*c, color, key);
  const std::uint32_t context = device::context_agree(*c);
  if (color == MPI_UNDEFINED) return MPI_COMM_NULL;
  std::vector<int> members;
  for (int r = 0; r < c->size; ++r) {
    if (table[static_cast<std::size_t>(r)].first == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int x, int y) {
    return table[static_cast<std::size_t>(x)].second < table[static_cast<std::size_t>(y)].second;
  });
  for (int &m : members) m = c->world_rank[static_cast<std::size_t>(m)];
  const MPI_Comm made = device::comm_register(std::move(members), context, c->errhandler);
  api::comm_inherit(made, *c);
  return made;
}

// Checks that every member of group `handle` belongs to `c` (to its local
// group, for an intercommunicator).
int check_subgroup(const char *call, const communicator *c, MPI_Group handle,
                   const device::group *&out) {
  out = device::group_lookup(handle);
  if (out == nullptr) {
    return device::error_raise(c, call, MPI_ERR_GROUP, "invalid group handle 0x%x",
                               static_cast<unsigned>(handle));
  }
  const std::vector<int> &members = c->inter ? c->local_world_rank : c->world_rank;
  for (int w : out->world_ranks) {
    if (std::find(members.begin(), members.end(), w) == members.end()) {
      return device::error_raise(c, call, MPI_ERR_GROUP,
                                 "the group holds world rank %d, which is not in the communicator",
                                 w);
    }
  }
  return MPI_SUCCESS;
}

// The value of info key `key` in `entries`, or nullptr.
const std::string *hint(const api::info_entries &entries, const char *key) {
  for (const auto &[k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

}  // namespace

extern "C" {

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  const device::api_guard guard;
  communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Comm_rank", comm, c)) return err;
  if (int err = api::check_not_null("MPI_Comm_rank", c, rank, "rank")) return err;
  *rank = c->rank;
  return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
  const device::api_guard guard;
  communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Comm_size", comm, c)) return err;
  if (int err = api::check_not_null("MPI_Comm_size", c, size, "size")) return err;
  *size = c->local_size();
  return MPI_SUCCESS;
}

int MPI_Barrier(MPI_Comm comm) {
  const device::api_guard guard;
  // Over an intercommunicator: nbc_inter.cpp, waited for here.
  if (nbc::is_inter(comm))
    return nbc::ibarrier("MPI_Barrier", comm, MPI_INFO_NULL, nbc::mode::blocking, nullptr);
  communicator *c = nullptr;
  if (int err = api::check_intracomm("MPI_Barrier", comm, c)) return err;
  device::node_collectives *nc = device::node_collectives_of(*c);
  device::node_hierarchy *h = device::node_hierarchy_of(*c);
  int err = MPI_SUCCESS;
  if (nc != nullptr) {
    err = device::node_call(*nc, [&] { device::node_barrier(*nc); });
  } else if (h != nullptr && h->nc == nullptr) {
    // Alone on its node: the leaders meet.
    if (h->leaders.size > 1) err = device::barrier(h->leaders, api::coll::tag_levels_barrier);
  } else if (h != nullptr) {
    // Across nodes: each node gathers, the leaders meet, each node is let go.
    err = device::node_call(*h->nc, [&] {
      device::node_barrier(*h->nc);
      int met = MPI_SUCCESS;
      if (h->leader && h->leaders.size > 1)
        met = device::barrier(h->leaders, api::coll::tag_levels_barrier);
      // A leader that met a revocation does not let its node go: its ranks
      // meet the revocation themselves (the revoker told each).
      if (met == MPI_ERR_REVOKED) return met;
      device::node_barrier(*h->nc);
      return met;
    });
  } else {
    err = device::barrier(*c);
  }
  return api::coll::result("MPI_Barrier", *c, err);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_dup";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  return dup_common(call, c, c->hints, newcomm);
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_dup_with_info";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  api::info_entries hints;
  if (int err = api::info_read(call, c, info, hints)) return err;
  return dup_common(call, c, std::move(hints), newcomm);
}

int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_idup_with_info";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  if (int err = api::check_not_null(call, c, request, "request")) return err;
  api::info_entries hints;  // as dup_with_info: the given hints, not comm's
  if (int err = api::info_read(call, c, info, hints)) return err;
  return idup_common(call, c, std::move(hints), newcomm, request);
}

int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_idup";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  if (int err = api::check_not_null(call, c, request, "request")) return err;
  return idup_common(call, c, c->hints, newcomm, request);
}

int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_set_info";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (info == MPI_INFO_NULL) {
    return device::error_raise(c, call, MPI_ERR_INFO, "MPI_INFO_NULL is not an info object");
  }
  api::info_entries given;
  if (int err = api::info_read(call, c, info, given)) return err;
  // Keys given replace their old values; the others stay.
  for (auto &[key, value] : given) {
    auto it = std::find_if(c->hints.begin(), c->hints.end(),
                           [&](const auto &entry) { return entry.first == key; });
    if (it != c->hints.end()) {
      it->second = std::move(value);
    } else {
      c->hints.emplace_back(key, std::move(value));
    }
  }
  return MPI_SUCCESS;
}

int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_get_info";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, info_used, "info_used")) return err;
  *info_used = api::info_make(c->hints);
  return MPI_SUCCESS;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_split";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  if (color < 0 && color != MPI_UNDEFINED) {
    return device::error_raise(c, call, MPI_ERR_ARG, "invalid color %d", color);
  }
  if (c->inter) {
    device::communicator local = device::inter_local_group(*c);
    *newcomm = api::inter_split(*c, device::comm_allgather_pairs(local, color, key), color);
    return api::made_despite_failure(call, *c, *newcomm);
  }
  *newcomm = split_common(c, color, key);
  return api::made_despite_failure(call, *c, *newcomm);
}

// The node is the only resource Iris knows: MPI_COMM_TYPE_SHARED, and the
// hardware-guided types with "mpi_hw_resource_type" = "mpi_shared_memory".
// Any other resource gives MPI_COMM_NULL, as MPI-4.1 says. Unguided, the
// node is the answer when it is a strict subset of comm, else MPI_COMM_NULL.
// On an intercommunicator (MPI-4) the local group is split so, and each part
// joins the remote group's part of the same type, as MPI_Comm_split does.
int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_split_type";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  api::info_entries hints;
  if (int err = api::info_read(call, c, info, hints)) return err;
  std::optional<device::communicator> local;
  if (c->inter) local.emplace(device::inter_local_group(*c));
  const communicator &own = local ? *local : *c;
  const int node = device::comm_node_of(own, own.rank);
  int color = MPI_UNDEFINED;
  switch (split_type) {
    case MPI_UNDEFINED:
      break;
    case MPI_COMM_TYPE_SHARED:
      color = node;
      break;
    case MPI_COMM_TYPE_HW_GUIDED:
    case MPI_COMM_TYPE_RESOURCE_GUIDED: {
      const std::string *resource = hint(hints, "mpi_hw_resource_type");
      if (resource != nullptr && *resource == "mpi_shared_memory") color = node;
      break;
    }
    case MPI_COMM_TYPE_HW_UNGUIDED: {
      bool all_here = true;
      for (int r = 0; r < own.size; ++r) {
        all_here = all_here && device::comm_node_of(own, r) == node;
      }
      if (!all_here) color = node;
      break;
    }
    default:
      return device::error_raise(c, call, MPI_ERR_ARG, "invalid split_type %d", split_type);
  }
  *newcomm = c->inter ? api::inter_split(*c, device::comm_allgather_pairs(own, color, key), color)
                      : split_common(c, color, key);
  if (int err = api::made_despite_failure(call, *c, *newcomm)) return err;
  if (*newcomm != MPI_COMM_NULL && split_type != MPI_COMM_TYPE_SHARED) {
    device::comm_lookup(*newcomm)->hints = {{"mpi_hw_resource_type", "mpi_shared_memory"}};
  }
  return MPI_SUCCESS;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group handle, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_create";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  const device::group *g = nullptr;
  if (int err = check_subgroup(call, c, handle, g)) return err;
  if (c->inter) {
    // Each group gives a subgroup of its own: color 0 for its members,
    // ordered as in the group.
    std::vector<std::pair<int, int>> table;
    for (int w : c->local_world_rank) {
      const int in = g->rank_of(w);
      table.emplace_back(in < 0 ? MPI_UNDEFINED : 0, in);
    }
    const int color = g->rank_of(device::rt->rank) < 0 ? MPI_UNDEFINED : 0;
    *newcomm = api::inter_split(*c, table, color);
    return api::made_despite_failure(call, *c, *newcomm);
  }
  const std::uint32_t context = device::context_agree(*c);
  *newcomm = g->rank_of(device::rt->rank) < 0
                 ? MPI_COMM_NULL
                 : device::comm_register(g->world_ranks, context, c->errhandler);
  if (int err = api::made_despite_failure(call, *c, *newcomm)) return err;
  api::comm_inherit(*newcomm, *c);
  return MPI_SUCCESS;
}

// Collective over the group's members only: they agree on a context among
// themselves, on comm's collective context with a tag made from `tag`.
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group handle, int tag, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_create_group";
  communicator *c = nullptr;
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  if (int err = api::check_send_tag(call, *c, tag)) return err;
  const device::group *g = nullptr;
  if (int err = check_subgroup(call, c, handle, g)) return err;
  if (g->rank_of(device::rt->rank) < 0) {
    *newcomm = MPI_COMM_NULL;  // a non-member may call it: nothing to do
    return MPI_SUCCESS;
  }
  std::vector<int> members;  // ranks in c, in the group's order
  for (int w : g->world_ranks) {
    members.push_back(static_cast<int>(std::find(c->world_rank.begin(), c->world_rank.end(), w) -
                                       c->world_rank.begin()));
  }
  const int agree_tag =
      device::tag_create_group_base + tag % (device::tag_nbc_base - device::tag_create_group_base);
  const std::uint32_t context = device::context_agree_among(*c, members, agree_tag);
  *newcomm = device::comm_register(g->world_ranks, context, c->errhandler);
  if (int err = api::made_despite_failure(call, *c, *newcomm, false)) return err;
  api::comm_inherit(*newcomm, *c);
  return MPI_SUCCESS;
}

int MPI_Comm_free(MPI_Comm *comm) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_free";
  if (int err = api::check_not_null(call, nullptr, comm, "comm")) return err;
  communicator *c = nullptr;
  if (int err = api::check_comm(call, *comm, c)) return err;
  if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF) {
    return device::error_raise(c, call, MPI_ERR_COMM, "a predefined communicator cannot be freed");
  }
  // The delete callbacks first: when one fails, the communicator stays.
  if (int err = api::attrs_delete_all(call, c, device::attr_kind::comm, *comm)) return err;
  api::parent_forget(*comm);
  device::comm_release(*comm);
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_compare";
  communicator *a = nullptr;
  communicator *b = nullptr;
  if (int err = api::check_comm(call, comm1, a)) return err;
  if (int err = api::check_comm(call, comm2, b)) return err;
  if (int err = api::check_not_null(call, a, result, "result")) return err;
  // Intercommunicators compare both groups (and never equal an intra one).
  std::vector<int> sa = a->world_rank;
  std::vector<int> sb = b->world_rank;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  std::vector<int> la = a->local_world_rank;
  std::vector<int> lb = b->local_world_rank;
  const bool same_local = la == lb;
  std::sort(la.begin(), la.end());
  std::sort(lb.begin(), lb.end());
  *result = comm1 == comm2                                 ? MPI_IDENT
            : a->inter != b->inter                         ? MPI_UNEQUAL
            : a->world_rank == b->world_rank && same_local ? MPI_CONGRUENT
            : sa == sb && la == lb                         ? MPI_SIMILAR
                                                           : MPI_UNEQUAL;
  return MPI_SUCCESS;
}

int MPI_Comm_set_name(MPI_Comm comm, const char *name) {
  const device::api_guard guard;
  communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Comm_set_name", comm, c)) return err;
  if (int err = api::check_not_null("MPI_Comm_set_name", c, name, "comm_name")) return err;
  c->name.assign(name, strnlen(name, MPI_MAX_OBJECT_NAME - 1));
  return MPI_SUCCESS;
}

int MPI_Comm_get_name(MPI_Comm comm, char *name, int *resultlen) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_get_name";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, name, "comm_name")) return err;
  if (int err = api::check_not_null(call, c, resultlen, "resultlen")) return err;
  std::memcpy(name, c->name.c_str(), c->name.size() + 1);
  *resultlen = static_cast<int>(c->name.size());
  return MPI_SUCCESS;
}

int MPI_Comm_test_inter(MPI_Comm comm, int *flag) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_test_inter";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, flag, "flag")) return err;
  *flag = c->inter ? 1 : 0;
  return MPI_SUCCESS;
}

int MPI_Comm_remote_size(MPI_Comm comm, int *size) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_remote_size";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, size, "size")) return err;
  if (!c->inter) return device::error_raise(c, call, MPI_ERR_COMM, "not an intercommunicator");
  *size = c->size;
  return MPI_SUCCESS;
}

int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_remote_group";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, group, "group")) return err;
  if (!c->inter) return device::error_raise(c, call, MPI_ERR_COMM, "not an intercommunicator");
  *group = device::group_register(c->world_rank);
  return MPI_SUCCESS;
}

}  // extern "C"
