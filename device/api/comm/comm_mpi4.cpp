// MPI-4 communicator calls beside the sessions model: Comm_create_from_group
// and Intercomm_create_from_groups (every group of Iris is a group of
// MPI_COMM_WORLD's processes, so they work through Comm_create_group and
// Intercomm_create over MPI_COMM_WORLD, with the string tag hashed into a
// tag), Info_create_env, and Comm_disconnect (it frees the communicator
// once its pending operations are done; the processes of another job stay
// known to this one, and their connections open until MPI ends).
#include <climits>
#include <cstdint>
#include <string_view>
#include <vector>

#include "device/api/check.hpp"

using namespace iris;

namespace {

// A tag from a string tag: FNV-1a, folded into the int range.
int tag_of(const char *stringtag) {
  std::uint32_t h = 2166136261U;
  for (const char ch : std::string_view(stringtag)) {
    h = (h ^ static_cast<unsigned char>(ch)) * 16777619U;
  }
  return static_cast<int>(h & 0x3fffffffU);
}

int check_stringtag(const char *call, const char *stringtag) {
  if (int err = api::check_initialized(call)) return err;
  return api::check_not_null(call, nullptr, stringtag, "stringtag");
}

}  // namespace

extern "C" {

int MPI_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info,
                               MPI_Errhandler errhandler, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_create_from_group";
  (void)info;
  if (int err = check_stringtag(call, stringtag)) return err;
  if (int err = api::check_not_null(call, nullptr, newcomm, "newcomm")) return err;
  // A bad group goes to the handler given (no communicator exists yet).
  const int handler = errhandler == MPI_ERRHANDLER_NULL ? MPI_ERRORS_ARE_FATAL : errhandler;
  if (!device::errhandler_valid(handler)) {
    return device::error_raise(nullptr, call, MPI_ERR_ERRHANDLER,
                               "invalid error handler handle 0x%x",
                               static_cast<unsigned>(errhandler));
  }
  const device::group *g = device::group_lookup(group);
  if (g == nullptr) {
    return device::error_raise_object(handler, MPI_COMM_NULL, call, MPI_ERR_GROUP,
                                      "invalid group handle 0x%x", static_cast<unsigned>(group));
  }
  if (g->rank_of(device::rt->rank) < 0) {
    return device::error_raise_object(handler, MPI_COMM_NULL, call, MPI_ERR_GROUP,
                                      "this process is not in the group (it must be)");
  }
  MPI_Comm made = MPI_COMM_NULL;
  if (int err = MPI_Comm_create_group(MPI_COMM_WORLD, group, tag_of(stringtag), &made)) {
    return err;
  }
  if (made != MPI_COMM_NULL && errhandler != MPI_ERRHANDLER_NULL) {
    if (int err = MPI_Comm_set_errhandler(made, errhandler)) return err;
  }
  // It derives from the group's session (a session's buffer serves it).
  if (made != MPI_COMM_NULL)
    device::comm_lookup(made)->session = device::group_lookup(group)->session;
  *newcomm = made;
  return MPI_SUCCESS;
}

int MPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader,
                                     MPI_Group remote_group, int remote_leader,
                                     const char *stringtag, MPI_Info info,
                                     MPI_Errhandler errhandler, MPI_Comm *newintercomm) {
  const device::api_guard guard;
  const char *call = "MPI_Intercomm_create_from_groups";
  if (int err = check_stringtag(call, stringtag)) return err;
  if (int err = api::check_not_null(call, nullptr, newintercomm, "newintercomm")) return err;
  int remote_size = 0;
  if (int err = MPI_Group_size(remote_group, &remote_size)) return err;
  if (remote_leader < 0 || remote_leader >= remote_size) {
    return device::error_raise(nullptr, call, MPI_ERR_RANK,
                               "remote_leader %d is not in the remote group (size %d)",
                               remote_leader, remote_size);
  }
  MPI_Group world = MPI_GROUP_NULL;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int leader_in_world = MPI_UNDEFINED;
  MPI_Group_translate_ranks(remote_group, 1, &remote_leader, world, &leader_in_world);
  MPI_Group_free(&world);
  MPI_Comm local = MPI_COMM_NULL;
  if (int err = MPI_Comm_create_from_group(local_group, stringtag, info, errhandler, &local)) {
    return err;
  }
  const int err = MPI_Intercomm_create(local, local_leader, MPI_COMM_WORLD, leader_in_world,
                                       tag_of(stringtag), newintercomm);
  MPI_Comm_free(&local);
  if (err == MPI_SUCCESS && errhandler != MPI_ERRHANDLER_NULL) {
    return MPI_Comm_set_errhandler(*newintercomm, errhandler);
  }
  return err;
}

// The environment as MPI_INFO_ENV describes it (argc and argv are not kept).
int MPI_Info_create_env(int argc, char *argv[], MPI_Info *info) {
  const device::api_guard guard;
  (void)argc;
  (void)argv;
  if (int err = api::check_not_null("MPI_Info_create_env", nullptr, info, "info")) return err;
  return MPI_Info_dup(MPI_INFO_ENV, info);
}

int MPI_Comm_disconnect(MPI_Comm *comm) {
  const device::api_guard guard;
  return MPI_Comm_free(comm);
}

// MPI-4.1: Iris reports no hardware resources (an empty info object).
int MPI_Get_hw_resource_info(MPI_Info *hw_info) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Get_hw_resource_info", nullptr, hw_info, "hw_info")) {
    return err;
  }
  return MPI_Info_create(hw_info);
}

int MPI_Type_create_subarray_c(int ndims, const MPI_Count sizes[], const MPI_Count subsizes[],
                               const MPI_Count starts[], int order, MPI_Datatype oldtype,
                               MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_subarray_c";
  if (ndims < 0 || (ndims > 0 && (sizes == nullptr || subsizes == nullptr || starts == nullptr))) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "invalid arrays for ndims %d", ndims);
  }
  std::vector<int> s, ss, st;
  for (int d = 0; d < ndims; ++d) {
    for (const MPI_Count v : {sizes[d], subsizes[d], starts[d]}) {
      if (v > INT_MAX || v < INT_MIN) {
        return device::error_raise(nullptr, call, MPI_ERR_COUNT,
                                   "%lld is past 2^31-1, which Iris does not support here",
                                   static_cast<long long>(v));
      }
    }
    s.push_back(static_cast<int>(sizes[d]));
    ss.push_back(static_cast<int>(subsizes[d]));
    st.push_back(static_cast<int>(starts[d]));
  }
  return MPI_Type_create_subarray(ndims, s.data(), ss.data(), st.data(), order, oldtype, newtype);
}

int MPI_Type_create_darray_c(int size, int rank, int ndims, const MPI_Count gsizes[],
                             const int distribs[], const int dargs[], const int psizes[], int order,
                             MPI_Datatype oldtype, MPI_Datatype *newtype) {
  const device::api_guard guard;
  const char *call = "MPI_Type_create_darray_c";
  if (ndims < 0 || (ndims > 0 && gsizes == nullptr)) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "invalid gsizes for ndims %d", ndims);
  }
  std::vector<int> g;
  for (int d = 0; d < ndims; ++d) {
    if (gsizes[d] > INT_MAX || gsizes[d] < INT_MIN) {
      return device::error_raise(nullptr, call, MPI_ERR_COUNT,
                                 "gsize %lld is past 2^31-1, which Iris does not support here",
                                 static_cast<long long>(gsizes[d]));
    }
    g.push_back(static_cast<int>(gsizes[d]));
  }
  return MPI_Type_create_darray(size, rank, ndims, g.data(), distribs, dargs, psizes, order,
                                oldtype, newtype);
}

}  // extern "C"
