// MPI bindings for communicators, collectives, datatypes and error handlers.
#include <algorithm>
#include <cstring>
#include <vector>

#include "device/api/check.hpp"

using namespace iris;
using iris::api::communicator;

extern "C" {

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Comm_rank", comm, c)) return err;
  if (int err = api::check_not_null("MPI_Comm_rank", c, rank, "rank")) return err;
  *rank = c->rank;
  return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
  communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Comm_size", comm, c)) return err;
  if (int err = api::check_not_null("MPI_Comm_size", c, size, "size")) return err;
  *size = c->size;
  return MPI_SUCCESS;
}

int MPI_Barrier(MPI_Comm comm) {
  communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Barrier", comm, c)) return err;
  device::barrier(*c);
  return MPI_SUCCESS;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  const char *call = "MPI_Comm_dup";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  const std::uint32_t context = device::context_agree(*c);
  *newcomm = device::comm_register(c->world_rank, context, c->errhandler);
  return MPI_SUCCESS;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  const char *call = "MPI_Comm_split";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  if (color < 0 && color != MPI_UNDEFINED) {
    return device::error_raise(c, call, MPI_ERR_ARG, "invalid color %d", color);
  }
  const auto table = device::comm_allgather_pairs(*c, color, key);
  const std::uint32_t context = device::context_agree(*c);
  if (color == MPI_UNDEFINED) {
    *newcomm = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  // Members of my color, ordered by key, then by rank in the parent.
  std::vector<int> members;
  for (int r = 0; r < c->size; ++r) {
    if (table[static_cast<std::size_t>(r)].first == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int x, int y) {
    return table[static_cast<std::size_t>(x)].second < table[static_cast<std::size_t>(y)].second;
  });
  for (int &m : members) m = c->world_rank[static_cast<std::size_t>(m)];
  *newcomm = device::comm_register(std::move(members), context, c->errhandler);
  return MPI_SUCCESS;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group handle, MPI_Comm *newcomm) {
  const char *call = "MPI_Comm_create";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  const device::group *g = device::group_lookup(handle);
  if (g == nullptr) {
    return device::error_raise(c, call, MPI_ERR_GROUP, "invalid group handle 0x%x",
                               static_cast<unsigned>(handle));
  }
  for (int w : g->world_ranks) {
    if (std::find(c->world_rank.begin(), c->world_rank.end(), w) == c->world_rank.end()) {
      return device::error_raise(c, call, MPI_ERR_GROUP,
                                 "the group holds world rank %d, which is not in the communicator",
                                 w);
    }
  }
  const std::uint32_t context = device::context_agree(*c);
  *newcomm = g->rank_of(device::rt->rank) < 0
                 ? MPI_COMM_NULL
                 : device::comm_register(g->world_ranks, context, c->errhandler);
  return MPI_SUCCESS;
}

int MPI_Comm_free(MPI_Comm *comm) {
  const char *call = "MPI_Comm_free";
  if (int err = api::check_not_null(call, nullptr, comm, "comm")) return err;
  communicator *c = nullptr;
  if (int err = api::check_comm(call, *comm, c)) return err;
  if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF) {
    return device::error_raise(c, call, MPI_ERR_COMM, "a predefined communicator cannot be freed");
  }
  device::comm_release(*comm);
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result) {
  const char *call = "MPI_Comm_compare";
  communicator *a = nullptr;
  communicator *b = nullptr;
  if (int err = api::check_comm(call, comm1, a)) return err;
  if (int err = api::check_comm(call, comm2, b)) return err;
  if (int err = api::check_not_null(call, a, result, "result")) return err;
  std::vector<int> sa = a->world_rank;
  std::vector<int> sb = b->world_rank;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  *result = comm1 == comm2                   ? MPI_IDENT
            : a->world_rank == b->world_rank ? MPI_CONGRUENT
            : sa == sb                       ? MPI_SIMILAR
                                             : MPI_UNEQUAL;
  return MPI_SUCCESS;
}

int MPI_Comm_set_name(MPI_Comm comm, const char *name) {
  communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Comm_set_name", comm, c)) return err;
  if (int err = api::check_not_null("MPI_Comm_set_name", c, name, "comm_name")) return err;
  c->name.assign(name, strnlen(name, MPI_MAX_OBJECT_NAME - 1));
  return MPI_SUCCESS;
}

int MPI_Comm_get_name(MPI_Comm comm, char *name, int *resultlen) {
  const char *call = "MPI_Comm_get_name";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, name, "comm_name")) return err;
  if (int err = api::check_not_null(call, c, resultlen, "resultlen")) return err;
  std::memcpy(name, c->name.c_str(), c->name.size() + 1);
  *resultlen = static_cast<int>(c->name.size());
  return MPI_SUCCESS;
}

}  // extern "C"
