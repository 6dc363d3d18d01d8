// MPI bindings for groups.
#include <algorithm>

#include "device/api/check.hpp"

using namespace iris;
using iris::device::group;

namespace {

int group_of(const char *call, MPI_Group handle, group *&out) {
  if (int err = api::check_initialized(call)) return err;
  out = device::group_lookup(handle);
  if (out != nullptr) return MPI_SUCCESS;
  return device::error_raise(nullptr, call, MPI_ERR_GROUP, "invalid group handle 0x%x",
                             static_cast<unsigned>(handle));
}

bool contains(const group &g, int w) {
  return g.rank_of(w) >= 0;
}

// Checks `ranks` names `n` distinct ranks of `g`.
int check_ranks(const char *call, const group &g, int n, const int ranks[]) {
  if (n < 0 || n > g.size() || (n > 0 && ranks == nullptr)) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "invalid rank list of %d entries", n);
  }
  std::vector<bool> seen(static_cast<std::size_t>(g.size()), false);
  for (int i = 0; i < n; ++i) {
    if (ranks[i] < 0 || ranks[i] >= g.size() || seen[static_cast<std::size_t>(ranks[i])]) {
      return device::error_raise(nullptr, call, MPI_ERR_RANK,
                                 "rank %d is out of range (group size %d) or repeated", ranks[i],
                                 g.size());
    }
    seen[static_cast<std::size_t>(ranks[i])] = true;
  }
  return MPI_SUCCESS;
}

// A new group of `members`, of the session of `from` (of the first of two
// groups that has one).
int group_out(const char *call, MPI_Group *newgroup, std::vector<int> members, const group &from,
              const group *also = nullptr) {
  if (int err = api::check_not_null(call, nullptr, newgroup, "newgroup")) return err;
  *newgroup = members.empty() ? MPI_GROUP_EMPTY : device::group_register(std::move(members));
  if (*newgroup != MPI_GROUP_EMPTY) {
    device::group_lookup(*newgroup)->session =
        from.session != 0 || also == nullptr ? from.session : also->session;
  }
  return MPI_SUCCESS;
}

// The ranks of `g` that (first, last, stride) triplets name, in order:
// first, first + stride, ... while not past last. Every computed rank must
// be in the group and appear once.
int expand_ranges(const char *call, const group &g, int n, const int ranges[][3],
                  std::vector<int> &out) {
  if (n < 0 || (n > 0 && ranges == nullptr)) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "invalid range list of %d entries", n);
  }
  std::vector<bool> seen(static_cast<std::size_t>(g.size()), false);
  for (int i = 0; i < n; ++i) {
    const int first = ranges[i][0];
    const int last = ranges[i][1];
    const int stride = ranges[i][2];
    if (stride == 0) {
      return device::error_raise(nullptr, call, MPI_ERR_ARG, "range %d has stride 0", i);
    }
    if ((stride > 0 && first > last) || (stride < 0 && first < last)) {
      return device::error_raise(nullptr, call, MPI_ERR_ARG,
                                 "range %d (%d, %d, %d): the stride leads away from last", i, first,
                                 last, stride);
    }
    for (long long r = first; stride > 0 ? r <= last : r >= last; r += stride) {
      if (r < 0 || r >= g.size() || seen[static_cast<std::size_t>(r)]) {
        return device::error_raise(nullptr, call, MPI_ERR_RANK,
                                   "range %d (%d, %d, %d) gives rank %lld, which is out of range "
                                   "(group size %d) or repeated",
                                   i, first, last, stride, r, g.size());
      }
      seen[static_cast<std::size_t>(r)] = true;
      out.push_back(static_cast<int>(r));
    }
  }
  return MPI_SUCCESS;
}

enum class combine { union_of, intersection_of, difference_of };

// union: all of a, then b's members not in a; intersection: a's members in
// b; difference: a's members not in b. Always in a's order first.
int group_combine(const char *call, MPI_Group a, MPI_Group b, MPI_Group *newgroup, combine how) {
  group *ga = nullptr;
  group *gb = nullptr;
  if (int err = group_of(call, a, ga)) return err;
  if (int err = group_of(call, b, gb)) return err;
  std::vector<int> members;
  for (int w : ga->world_ranks) {
    const bool in_b = contains(*gb, w);
    if (how == combine::union_of || in_b == (how == combine::intersection_of)) {
      members.push_back(w);
    }
  }
  if (how == combine::union_of) {
    for (int w : gb->world_ranks) {
      if (!contains(*ga, w)) members.push_back(w);
    }
  }
  return group_out(call, newgroup, std::move(members), *ga, gb);
}

}  // namespace

extern "C" {

int MPI_Comm_group(MPI_Comm comm, MPI_Group *newgroup) {
  const device::api_guard guard;
  api::communicator *c = nullptr;
  if (int err = api::check_comm("MPI_Comm_group", comm, c)) return err;
  if (int err = api::check_not_null("MPI_Comm_group", c, newgroup, "group")) return err;
  *newgroup = device::group_register(c->inter ? c->local_world_rank : c->world_rank);
  device::group_lookup(*newgroup)->session = c->session;
  return MPI_SUCCESS;
}

int MPI_Group_size(MPI_Group handle, int *size) {
  const device::api_guard guard;
  group *g = nullptr;
  if (int err = group_of("MPI_Group_size", handle, g)) return err;
  if (int err = api::check_not_null("MPI_Group_size", nullptr, size, "size")) return err;
  *size = g->size();
  return MPI_SUCCESS;
}

int MPI_Group_rank(MPI_Group handle, int *rank) {
  const device::api_guard guard;
  group *g = nullptr;
  if (int err = group_of("MPI_Group_rank", handle, g)) return err;
  if (int err = api::check_not_null("MPI_Group_rank", nullptr, rank, "rank")) return err;
  const int r = g->rank_of(device::rt->rank);
  *rank = r >= 0 ? r : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int MPI_Group_incl(MPI_Group handle, int n, const int ranks[], MPI_Group *newgroup) {
  const device::api_guard guard;
  const char *call = "MPI_Group_incl";
  group *g = nullptr;
  if (int err = group_of(call, handle, g)) return err;
  if (int err = check_ranks(call, *g, n, ranks)) return err;
  std::vector<int> members;
  for (int i = 0; i < n; ++i) members.push_back(g->world_ranks[static_cast<std::size_t>(ranks[i])]);
  return group_out(call, newgroup, std::move(members), *g);
}

int MPI_Group_excl(MPI_Group handle, int n, const int ranks[], MPI_Group *newgroup) {
  const device::api_guard guard;
  const char *call = "MPI_Group_excl";
  group *g = nullptr;
  if (int err = group_of(call, handle, g)) return err;
  if (int err = check_ranks(call, *g, n, ranks)) return err;
  std::vector<int> members;
  for (int r = 0; r < g->size(); ++r) {
    if (std::find(ranks, ranks + n, r) == ranks + n) {
      members.push_back(g->world_ranks[static_cast<std::size_t>(r)]);
    }
  }
  return group_out(call, newgroup, std::move(members), *g);
}

int MPI_Group_range_incl(MPI_Group handle, int n, int ranges[][3], MPI_Group *newgroup) {
  const device::api_guard guard;
  const char *call = "MPI_Group_range_incl";
  group *g = nullptr;
  if (int err = group_of(call, handle, g)) return err;
  std::vector<int> ranks;
  if (int err = expand_ranges(call, *g, n, ranges, ranks)) return err;
  std::vector<int> members;
  for (int r : ranks) members.push_back(g->world_ranks[static_cast<std::size_t>(r)]);
  return group_out(call, newgroup, std::move(members), *g);
}

int MPI_Group_range_excl(MPI_Group handle, int n, int ranges[][3], MPI_Group *newgroup) {
  const device::api_guard guard;
  const char *call = "MPI_Group_range_excl";
  group *g = nullptr;
  if (int err = group_of(call, handle, g)) return err;
  std::vector<int> ranks;
  if (int err = expand_ranges(call, *g, n, ranges, ranks)) return err;
  std::vector<bool> excluded(static_cast<std::size_t>(g->size()), false);
  for (int r : ranks) excluded[static_cast<std::size_t>(r)] = true;
  std::vector<int> members;
  for (int r = 0; r < g->size(); ++r) {
    if (!excluded[static_cast<std::size_t>(r)]) {
      members.push_back(g->world_ranks[static_cast<std::size_t>(r)]);
    }
  }
  return group_out(call, newgroup, std::move(members), *g);
}

int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                              int ranks2[]) {
  const device::api_guard guard;
  const char *call = "MPI_Group_translate_ranks";
  group *a = nullptr;
  group *b = nullptr;
  if (int err = group_of(call, group1, a)) return err;
  if (int err = group_of(call, group2, b)) return err;
  if (n < 0 || (n > 0 && (ranks1 == nullptr || ranks2 == nullptr))) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "invalid rank arrays for n = %d", n);
  }
  for (int i = 0; i < n; ++i) {
    if (ranks1[i] == MPI_PROC_NULL) {
      ranks2[i] = MPI_PROC_NULL;
      continue;
    }
    if (ranks1[i] < 0 || ranks1[i] >= a->size()) {
      return device::error_raise(nullptr, call, MPI_ERR_RANK, "rank %d is not in group1 (size %d)",
                                 ranks1[i], a->size());
    }
    const int r = b->rank_of(a->world_ranks[static_cast<std::size_t>(ranks1[i])]);
    ranks2[i] = r >= 0 ? r : MPI_UNDEFINED;
  }
  return MPI_SUCCESS;
}

int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result) {
  const device::api_guard guard;
  const char *call = "MPI_Group_compare";
  group *a = nullptr;
  group *b = nullptr;
  if (int err = group_of(call, group1, a)) return err;
  if (int err = group_of(call, group2, b)) return err;
  if (int err = api::check_not_null(call, nullptr, result, "result")) return err;
  std::vector<int> sa = a->world_ranks;
  std::vector<int> sb = b->world_ranks;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  *result = a->world_ranks == b->world_ranks ? MPI_IDENT : sa == sb ? MPI_SIMILAR : MPI_UNEQUAL;
  return MPI_SUCCESS;
}

int MPI_Group_union(MPI_Group a, MPI_Group b, MPI_Group *newgroup) {
  const device::api_guard guard;
  return group_combine("MPI_Group_union", a, b, newgroup, combine::union_of);
}

int MPI_Group_intersection(MPI_Group a, MPI_Group b, MPI_Group *newgroup) {
  const device::api_guard guard;
  return group_combine("MPI_Group_intersection", a, b, newgroup, combine::intersection_of);
}

int MPI_Group_difference(MPI_Group a, MPI_Group b, MPI_Group *newgroup) {
  const device::api_guard guard;
  return group_combine("MPI_Group_difference", a, b, newgroup, combine::difference_of);
}

int MPI_Group_free(MPI_Group *handle) {
  const device::api_guard guard;
  const char *call = "MPI_Group_free";
  if (int err = api::check_not_null(call, nullptr, handle, "group")) return err;
  group *g = nullptr;
  if (int err = group_of(call, *handle, g)) return err;
  // Constructors return MPI_GROUP_EMPTY for empty results, and programs free
  // what they were given: freeing it only clears the handle.
  if (*handle != MPI_GROUP_EMPTY) device::group_release(*handle);
  *handle = MPI_GROUP_NULL;
  return MPI_SUCCESS;
}

}  // extern "C"
