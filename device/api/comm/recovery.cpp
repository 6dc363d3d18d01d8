// The MPIX_ fault-tolerance calls (ULFM; include/iris/ft.h): argument
// checks, then the device (protocols/recovery.hpp).
#include <algorithm>
#include <memory>

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

// Failed ranks of `c` in an agreed value that this rank has not
// acknowledged: MPIX_Comm_agree then says so (MPI_ERR_PROC_FAILED), the
// flag being agreed all the same.
int unacknowledged(const communicator &c, const device::agreement &a) {
  const std::vector<int> acked = device::comm_acked_ranks(c);
  for (int r = 0; r < c.size; ++r) {
    if (bit(a, r) && !std::binary_search(acked.begin(), acked.end(), r)) return r;
  }
  return -1;
}

int agree_result(const char *call, communicator &c, const device::agreement &a) {
  const int r = unacknowledged(c, a);
  if (r < 0) return MPI_SUCCESS;
  return device::error_raise(&c, call, MPI_ERR_PROC_FAILED,
                             "rank %d of the communicator failed and this rank has not "
                             "acknowledged it (MPIX_Comm_ack_failed); the flag is agreed",
                             r);
}

int agreement_busy(const char *call, communicator &c) {
  return device::error_raise(&c, call, MPI_ERR_OTHER,
                             "an MPIX_Comm_iagree or MPIX_Comm_ishrink on this communicator "
                             "is still under way here: complete it first (one agreement at "
                             "a time per communicator)");
}

// The survivors of `c` in the agreed value, as a new communicator on its
// agreed context; every rank moves past that context.
MPI_Comm shrunk(const communicator &c, const device::agreement &a) {
  device::rt->next_context = std::max(device::rt->next_context, a.context + 2);
  std::vector<int> members;
  for (int r = 0; r < c.size; ++r) {
    if (!bit(a, r)) members.push_back(c.world_rank[static_cast<std::size_t>(r)]);
  }
  return device::comm_register(std::move(members), a.context, c.errhandler);
}

// MPIX_Comm_iagree and _ishrink: the progress engine runs the agreement
// (device::agreement_start); the request completes at the first poll after
// it is decided.
struct agreement_ext final : device::request_ext {
  std::shared_ptr<device::agreement_run> run;
  int *flag = nullptr;          // iagree: where the flag goes
  MPI_Comm *newcomm = nullptr;  // ishrink: where the new communicator goes
  int error = MPI_SUCCESS;

  void poll(device::request &r) override {
    if (r.complete || !run->done) return;
    if (newcomm != nullptr) {
      *newcomm = shrunk(*run->comm, run->value);
      --device::rt->agreeing;
      device::rt->recovery.shrinking = false;
    } else {
      *flag = static_cast<int>(run->value.flag);
      error = agree_result("MPIX_Comm_iagree", *run->comm, run->value);
    }
    r.complete = true;
  }
  int finish(device::request &r, void *status) override {
    (void)r;
    api::status_empty(static_cast<MPI_Status *>(status));
    return error;
  }
  int peek(device::request &r, void *status) override { return finish(r, status); }
  void cancel(device::request &r) override { (void)r; }  // a collective: not cancelled
  bool free(device::request &r) override {
    (void)r;
    return true;  // erroneous for a collective; its agreement still runs to its end
  }
};

int agreement_request(communicator &c, std::unique_ptr<agreement_ext> ext, MPI_Request *request) {
  device::request *r = device::rt->requests.allocate(device::request_kind::recv, &c);
  r->ext = ext.release();
  *request = device::request_handle(*r);
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

// Over an intercommunicator too: the notice goes to both groups
// (each_member), whose members share its context.
int MPIX_Comm_revoke(MPI_Comm comm) {
  const device::api_guard guard;
  communicator *c = nullptr;
  if (int err = api::check_comm("MPIX_Comm_revoke", comm, c)) return err;
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
  if (!device::recovery_agree(*c, a)) return agreement_busy(call, *c);
  *flag = static_cast<int>(a.flag);
  return agree_result(call, *c, a);
}

int MPIX_Comm_iagree(MPI_Comm comm, int *flag, MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_iagree";
  communicator *c = nullptr;
  if (int err = intracomm_of(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, flag, "flag")) return err;
  if (int err = api::check_not_null(call, c, request, "request")) return err;
  device::agreement a;
  a.flag = static_cast<std::uint32_t>(*flag);
  auto ext = std::make_unique<agreement_ext>();
  ext->flag = flag;
  ext->run = device::agreement_start(*c, a);
  if (ext->run == nullptr) return agreement_busy(call, *c);
  return agreement_request(*c, std::move(ext), request);
}

int MPIX_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_shrink";
  communicator *c = nullptr;
  if (int err = intracomm_of(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  if (device::rt->recovery.shrinking) return agreement_busy(call, *c);
  device::agreement a;
  a.context = device::rt->next_context;
  ++device::rt->agreeing;
  const bool agreed = device::recovery_agree(*c, a);
  --device::rt->agreeing;
  if (!agreed) return agreement_busy(call, *c);
  *newcomm = shrunk(*c, a);
  return MPI_SUCCESS;
}

int MPIX_Comm_ishrink(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_ishrink";
  communicator *c = nullptr;
  if (int err = intracomm_of(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  if (int err = api::check_not_null(call, c, request, "request")) return err;
  if (device::rt->recovery.shrinking) return agreement_busy(call, *c);
  device::agreement a;
  a.context = device::rt->next_context;
  auto ext = std::make_unique<agreement_ext>();
  ext->newcomm = newcomm;
  ext->run = device::agreement_start(*c, a);
  if (ext->run == nullptr) return agreement_busy(call, *c);
  device::rt->recovery.shrinking = true;
  ++device::rt->agreeing;
  *newcomm = MPI_COMM_NULL;
  return agreement_request(*c, std::move(ext), request);
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
