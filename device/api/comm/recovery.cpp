// The MPIX_ fault-tolerance calls (ULFM; include/iris/ft.h): argument
// checks, then the device (protocols/recovery.hpp).
#include <algorithm>

#include "device/api/check.hpp"
#include "device/protocols/recovery.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

int intracomm_of(const char *call, MPI_Comm comm, communicator *&c) {
  if (int err = api::check_comm(call, comm, c)) return err;
  if (!c->inter) return MPI_SUCCESS;
  return device::error_raise(c, call, MPI_ERR_UNSUPPORTED_OPERATION,
                             "not supported on an intercommunicator yet (Iris's recovery covers "
                             "intracommunicators)");
}

int group_of_ranks(const communicator &c, const std::vector<int> &ranks) {
  if (ranks.empty()) return MPI_GROUP_EMPTY;
  std::vector<int> world;
  for (int r : ranks) world.push_back(c.world_rank[static_cast<std::size_t>(r)]);
  return device::group_register(std::move(world));
}

bool bit(const device::agreement &a, int r) {
  return ((a.failed[static_cast<std::size_t>(r) / 64] >> (r % 64)) & 1U) != 0;
}

int unsupported_nonblocking(const char *call, MPI_Comm comm) {
  return device::error_raise(device::comm_lookup(comm), call, MPI_ERR_UNSUPPORTED_OPERATION,
                             "not supported yet: the blocking form is (%s without the i)", call);
}

}  // namespace

extern "C" {

int MPIX_Comm_revoke(MPI_Comm comm) {
  const device::api_guard guard;
  communicator *c = nullptr;
  if (int err = intracomm_of("MPIX_Comm_revoke", comm, c)) return err;
  device::comm_revoke(*c);
  return MPI_SUCCESS;
}

int MPIX_Comm_is_revoked(MPI_Comm comm, int *flag) {
  const device::api_guard guard;
  communicator *c = nullptr;
  if (int err = api::check_comm("MPIX_Comm_is_revoked", comm, c)) return err;
  if (int err = api::check_not_null("MPIX_Comm_is_revoked", c, flag, "flag")) return err;
  *flag = c->revoked ? 1 : 0;
  return MPI_SUCCESS;
}

int MPIX_Comm_agree(MPI_Comm comm, int *flag) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_agree";
  communicator *c = nullptr;
  if (int err = intracomm_of(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, flag, "flag")) return err;
  device::agreement a;
  a.flag = static_cast<std::uint32_t>(*flag);
  device::recovery_agree(*c, a);
  *flag = static_cast<int>(a.flag);
  // Failed ranks this rank has not acknowledged: the flag is agreed all
  // the same, and the error says that some contributions are missing.
  const std::vector<int> acked = device::comm_acked_ranks(*c);
  for (int r = 0; r < c->size; ++r) {
    if (bit(a, r) && !std::binary_search(acked.begin(), acked.end(), r)) {
      return device::error_raise(c, call, MPI_ERR_PROC_FAILED,
                                 "rank %d of the communicator failed and this rank has not "
                                 "acknowledged it (MPIX_Comm_ack_failed); the flag is agreed",
                                 r);
    }
  }
  return MPI_SUCCESS;
}

int MPIX_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_shrink";
  communicator *c = nullptr;
  if (int err = intracomm_of(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  device::agreement a;
  a.context = device::rt->next_context;
  // Messages on the new context may come from a rank that left first.
  ++device::rt->agreeing;
  device::recovery_agree(*c, a);
  --device::rt->agreeing;
  device::rt->next_context = std::max(device::rt->next_context, a.context + 2);
  std::vector<int> members;
  for (int r = 0; r < c->size; ++r) {
    if (!bit(a, r)) members.push_back(c->world_rank[static_cast<std::size_t>(r)]);
  }
  *newcomm = device::comm_register(std::move(members), a.context, c->errhandler);
  return MPI_SUCCESS;
}

int MPIX_Comm_ishrink(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request) {
  const device::api_guard guard;
  (void)newcomm;
  (void)request;
  return unsupported_nonblocking("MPIX_Comm_ishrink", comm);
}

int MPIX_Comm_iagree(MPI_Comm comm, int *flag, MPI_Request *request) {
  const device::api_guard guard;
  (void)flag;
  (void)request;
  return unsupported_nonblocking("MPIX_Comm_iagree", comm);
}

int MPIX_Comm_ack_failed(MPI_Comm comm, int num_to_ack, int *num_acked) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_ack_failed";
  communicator *c = nullptr;
  if (int err = intracomm_of(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, num_acked, "num_acked")) return err;
  if (num_to_ack < 0) {
    return device::error_raise(c, call, MPI_ERR_ARG, "negative num_to_ack %d", num_to_ack);
  }
  // Iris acknowledges every failure known, or none: the draft lets a call
  // acknowledge more than it asked for.
  *num_acked = num_to_ack == 0 ? static_cast<int>(device::comm_acked_ranks(*c).size())
                               : device::comm_ack(*c);
  return MPI_SUCCESS;
}

int MPIX_Comm_failure_ack(MPI_Comm comm) {
  const device::api_guard guard;
  communicator *c = nullptr;
  if (int err = intracomm_of("MPIX_Comm_failure_ack", comm, c)) return err;
  device::comm_ack(*c);
  return MPI_SUCCESS;
}

int MPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group *failed_group) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_failure_get_acked";
  communicator *c = nullptr;
  if (int err = intracomm_of(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, failed_group, "failed_group")) return err;
  *failed_group = group_of_ranks(*c, device::comm_acked_ranks(*c));
  return MPI_SUCCESS;
}

int MPIX_Comm_get_failed(MPI_Comm comm, MPI_Group *failed_group) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_get_failed";
  communicator *c = nullptr;
  if (int err = intracomm_of(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, failed_group, "failed_group")) return err;
  *failed_group = group_of_ranks(*c, device::comm_failed_ranks(*c));
  return MPI_SUCCESS;
}

}  // extern "C"
