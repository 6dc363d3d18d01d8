// The MPIX_ fault-tolerance calls (ULFM; include/iris/ft.h): argument
// checks, then the device (protocols/recovery.hpp).
#include <algorithm>
#include <memory>

#include "device/api/check.hpp"
#include "device/protocols/recovery.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

int group_of_ranks(const communicator &c, const std::vector<int> &ranks) {
  if (ranks.empty()) return MPI_GROUP_EMPTY;
  std::vector<int> world;
  for (int r : ranks) world.push_back(c.world_rank[static_cast<std::size_t>(r)]);
  return device::group_register(std::move(world));
}

// This rank's contribution to an agreement on `c`: over an
// intercommunicator, to its own group's flag (recovery.hpp).
device::agreement contribution(const communicator &c, int flag) {
  device::agreement a;
  if (device::recovery_first_group(c)) {
    a.flag = static_cast<std::uint32_t>(flag);
  } else {
    a.second_flag = static_cast<std::uint32_t>(flag);
  }
  return a;
}

// The agreed flag: over an intercommunicator, the AND of the remote
// group's contributions (as MPICH and Open MPI define it).
int agreed_flag(const communicator &c, const device::agreement &a) {
  if (!c.inter) return static_cast<int>(a.flag);
  return static_cast<int>(device::recovery_first_group(c) ? a.second_flag : a.flag);
}

// Failed processes of `c` (both groups of an intercommunicator) in an
// agreed value that this rank has not acknowledged: MPIX_Comm_agree then
// says so (MPI_ERR_PROC_FAILED), the flag being agreed all the same.
int unacknowledged(communicator &c, const device::agreement &a) {
  const communicator &u = device::recovery_union(c);
  const std::vector<int> acked = device::comm_acked_ranks(u);
  for (int r = 0; r < u.size; ++r) {
    if (a.has_failed(r) && !std::binary_search(acked.begin(), acked.end(), r)) return r;
  }
  return -1;
}

int agree_result(const char *call, communicator &c, const device::agreement &a) {
  const int r = unacknowledged(c, a);
  if (r < 0) return MPI_SUCCESS;
  if (c.inter) {
    const int local_start = device::recovery_local_start(c);
    const int local_size = static_cast<int>(c.local_world_rank.size());
    const bool in_local = r >= local_start && r < local_start + local_size;
    const int rank = in_local ? r - local_start : r - (local_start == 0 ? local_size : 0);
    return device::error_raise(&c, call, MPI_ERR_PROC_FAILED,
                               "rank %d of the %s group failed and this rank has not "
                               "acknowledged it (MPIX_Comm_ack_failed); the flag is agreed",
                               rank, in_local ? "local" : "remote");
  }
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
// agreed context; every rank moves past that context. Of an
// intercommunicator: the survivors of each group, on the agreed context
// and the next two for their local traffic (each group's members are the
// only ones to use those), or MPI_COMM_NULL when none of the remote group
// is left.
MPI_Comm shrunk(communicator &c, const device::agreement &a) {
  if (!c.inter) {
    device::rt->next_context = std::max(device::rt->next_context, a.context + 2);
    std::vector<int> members;
    for (int r = 0; r < c.size; ++r) {
      if (!a.has_failed(r)) members.push_back(c.world_rank[static_cast<std::size_t>(r)]);
    }
    return device::comm_register(std::move(members), a.context, c.errhandler);
  }
  device::rt->next_context = std::max(device::rt->next_context, a.context + 4);
  const communicator &u = device::recovery_union(c);
  const int local_size = static_cast<int>(c.local_world_rank.size());
  const int local_start = device::recovery_local_start(c);
  const int remote_start = local_start == 0 ? local_size : 0;
  std::vector<int> local, remote;
  for (int r = 0; r < u.size; ++r) {
    if (a.has_failed(r)) continue;
    const int w = u.world_rank[static_cast<std::size_t>(r)];
    if (r >= local_start && r < local_start + local_size) local.push_back(w);
    if (r >= remote_start && r < remote_start + c.size) remote.push_back(w);
  }
  if (remote.empty()) return MPI_COMM_NULL;
  const MPI_Comm made = device::comm_register_inter(std::move(local), std::move(remote), a.context,
                                                    a.context + 2, c.errhandler);
  device::communicator *m = device::comm_lookup(made);
  m->merge_first = c.merge_first;
  m->session = c.session;
  return made;
}

int shrink_result(const char *call, communicator &c, MPI_Comm made) {
  if (made != MPI_COMM_NULL) return MPI_SUCCESS;
  return device::error_raise(&c, call, MPI_ERR_PROC_FAILED,
                             "every process of the intercommunicator's remote group failed: "
                             "there is nothing to shrink it to (newcomm is MPI_COMM_NULL)");
}

// MPIX_Comm_iagree and _ishrink: the progress engine runs the agreement
// (device::agreement_start); the request completes at the first poll after
// it is decided.
struct agreement_ext final : device::request_ext {
  std::shared_ptr<device::agreement_run> run;
  communicator *comm = nullptr;  // the one called on (run->comm: its union)
  int *flag = nullptr;           // iagree: where the flag goes
  MPI_Comm *newcomm = nullptr;   // ishrink: where the new communicator goes
  int error = MPI_SUCCESS;

  void poll(device::request &r) override {
    if (r.complete || !run->done) return;
    if (newcomm != nullptr) {
      *newcomm = shrunk(*comm, run->value);
      --device::rt->agreeing;
      device::rt->recovery.shrinking = false;
      error = shrink_result("MPIX_Comm_ishrink", *comm, *newcomm);
    } else {
      *flag = agreed_flag(*comm, run->value);
      error = agree_result("MPIX_Comm_iagree", *comm, run->value);
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
// (each_member), whose members share its context. The agreements run over
// both groups as one (device::recovery_union): the flag is the AND of the
// remote group's, a shrink keeps the survivors of each group, and the
// failed and acknowledged groups hold the processes of both.
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
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, flag, "flag")) return err;
  device::agreement a = contribution(*c, *flag);
  if (!device::recovery_agree(device::recovery_union(*c), a)) return agreement_busy(call, *c);
  *flag = agreed_flag(*c, a);
  return agree_result(call, *c, a);
}

int MPIX_Comm_iagree(MPI_Comm comm, int *flag, MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_iagree";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, flag, "flag")) return err;
  if (int err = api::check_not_null(call, c, request, "request")) return err;
  auto ext = std::make_unique<agreement_ext>();
  ext->comm = c;
  ext->flag = flag;
  ext->run = device::agreement_start(device::recovery_union(*c), contribution(*c, *flag));
  if (ext->run == nullptr) return agreement_busy(call, *c);
  return agreement_request(*c, std::move(ext), request);
}

int MPIX_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_shrink";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  if (device::rt->recovery.shrinking) return agreement_busy(call, *c);
  device::agreement a;
  a.context = device::rt->next_context;
  ++device::rt->agreeing;
  const bool agreed = device::recovery_agree(device::recovery_union(*c), a);
  --device::rt->agreeing;
  if (!agreed) return agreement_busy(call, *c);
  *newcomm = shrunk(*c, a);
  return shrink_result(call, *c, *newcomm);
}

int MPIX_Comm_ishrink(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_ishrink";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  if (int err = api::check_not_null(call, c, request, "request")) return err;
  if (device::rt->recovery.shrinking) return agreement_busy(call, *c);
  device::agreement a;
  a.context = device::rt->next_context;
  auto ext = std::make_unique<agreement_ext>();
  ext->comm = c;
  ext->newcomm = newcomm;
  ext->run = device::agreement_start(device::recovery_union(*c), a);
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
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, num_acked, "num_acked")) return err;
  if (num_to_ack < 0) {
    return device::error_raise(c, call, MPI_ERR_ARG, "negative num_to_ack %d", num_to_ack);
  }
  // Iris acknowledges every failure known, or none: the draft lets a call
  // acknowledge more than it asked for.
  if (num_to_ack != 0) device::comm_ack(*c);
  *num_acked = static_cast<int>(device::comm_acked_ranks(device::recovery_union(*c)).size());
  return MPI_SUCCESS;
}

int MPIX_Comm_failure_ack(MPI_Comm comm) {
  const device::api_guard guard;
  communicator *c = nullptr;
  if (int err = api::check_comm("MPIX_Comm_failure_ack", comm, c)) return err;
  device::comm_ack(*c);
  return MPI_SUCCESS;
}

int MPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group *failed_group) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_failure_get_acked";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, failed_group, "failed_group")) return err;
  const communicator &u = device::recovery_union(*c);
  *failed_group = group_of_ranks(u, device::comm_acked_ranks(u));
  return MPI_SUCCESS;
}

int MPIX_Comm_get_failed(MPI_Comm comm, MPI_Group *failed_group) {
  const device::api_guard guard;
  const char *call = "MPIX_Comm_get_failed";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, failed_group, "failed_group")) return err;
  const communicator &u = device::recovery_union(*c);
  *failed_group = group_of_ranks(u, device::comm_failed_ranks(u));
  return MPI_SUCCESS;
}

}  // extern "C"
