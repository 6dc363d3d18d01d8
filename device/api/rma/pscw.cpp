// General active-target synchronization (PSCW): MPI_Win_post, MPI_Win_start,
// MPI_Win_complete, MPI_Win_wait and MPI_Win_test.
//
// A post is a notice to each rank of the group (notify: a count in its
// control block where this rank maps it, else a message to its handler,
// run by its progress whether or not it calls MPI); MPI_Win_start
// waits for one from each of its group and takes it. MPI_Win_complete
// completes this rank's ops at each target of its group, then sends each a
// complete notice; MPI_Win_wait waits for one from each rank of its post's
// group. Notices are counted by the rank that sent them, so that a post
// for a later epoch, or from a rank outside this epoch's group, waits its
// turn. To a rank not mapped here (window not dynamic), small ops wait in
// a batch from MPI_Win_start, and when nothing in it returns anything the
// complete notice goes at its end, one message answered by nobody
// (batch_complete).
// MPI_MODE_NOCHECK on post and start (both sides must give it) sends and
// waits for no post.
#include "device/api/rma/rma.hpp"
#include "device/core/comm.hpp"
#include "device/runtime/progress.hpp"

using namespace iris;
using namespace iris::api::rma;

namespace {

// The window ranks of `group`'s members.
int ranks_of(const char *call, const window &w, MPI_Group group, std::vector<int> &out) {
  const device::group *g = device::group_lookup(group);
  if (g == nullptr) {
    return raise(w, call, MPI_ERR_GROUP, "invalid group handle 0x%x", static_cast<unsigned>(group));
  }
  out.clear();
  for (const int world : g->world_ranks) {
    int r = 0;
    while (r < w.comm->size && w.comm->world_rank[static_cast<std::size_t>(r)] != world) ++r;
    if (r == w.comm->size) {
      return raise(w, call, MPI_ERR_GROUP, "world rank %d of the group is not in the window",
                   world);
    }
    out.push_back(r);
  }
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Win_post(MPI_Group group, int assert, MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Win_post";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (w->exposure_open) {
    return raise(*w, call, MPI_ERR_RMA_SYNC,
                 "an exposure epoch is open already (MPI_Win_wait or MPI_Win_test first)");
  }
  std::vector<int> ranks;
  if (int err = ranks_of(call, *w, group, ranks)) return err;
  w->exposure = std::move(ranks);
  w->exposure_open = true;
  if ((assert &MPI_MODE_NOCHECK) == 0) {
    for (const int r : w->exposure) notify(*w, r, true);
  }
  return MPI_SUCCESS;
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Win_start";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (w->access_open) {
    return raise(*w, call, MPI_ERR_RMA_SYNC,
                 "an access epoch of MPI_Win_start is open already (MPI_Win_complete first)");
  }
  std::vector<int> ranks;
  if (int err = ranks_of(call, *w, group, ranks)) return err;
  if ((assert &MPI_MODE_NOCHECK) == 0) {
    if (int err = notices_wait(*w, ranks, true)) return raise(*w, call, err, "%s", failure_text);
  }
  for (const int r : ranks) {
    target &t = w->targets[static_cast<std::size_t>(r)];
    t.started = true;
    // Small ops to a rank not mapped here wait in a batch that
    // MPI_Win_complete sends with its notice (batch_complete).
    if (t.ctl == nullptr && w->flavor != MPI_WIN_FLAVOR_DYNAMIC) batch_begin(*w, r, 0);
  }
  w->access = std::move(ranks);
  w->access_open = true;
  return MPI_SUCCESS;
}

int MPI_Win_complete(MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Win_complete";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (!w->access_open) {
    return raise(*w, call, MPI_ERR_RMA_SYNC, "no access epoch of MPI_Win_start is open");
  }
  int err = MPI_SUCCESS;
  std::string why;
  std::vector<int> notices;  // those whose notice did not go with their batch
  for (const int r : w->access) {
    if (batch_complete(*w, r)) continue;
    std::string reason;
    const int e = complete(*w, r, reason, true);  // the complete notice follows
    if (e != MPI_SUCCESS && err == MPI_SUCCESS) {
      err = e;
      why = reason;
    }
    batch_settle(*w, r, true);  // the epoch's batching ends
    notices.push_back(r);
  }
  for (const int r : notices) notify(*w, r, false);
  for (const int r : w->access) w->targets[static_cast<std::size_t>(r)].started = false;
  w->access.clear();
  w->access_open = false;
  if (err != MPI_SUCCESS) return raise(*w, call, err, "%s", why.c_str());
  return MPI_SUCCESS;
}

int MPI_Win_wait(MPI_Win win) {
  const device::api_guard guard;
  const char *call = "MPI_Win_wait";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (!w->exposure_open) {
    return raise(*w, call, MPI_ERR_RMA_SYNC, "no exposure epoch of MPI_Win_post is open");
  }
  const int err = notices_wait(*w, w->exposure, false);
  w->exposure.clear();
  w->exposure_open = false;
  if (err != MPI_SUCCESS) return raise(*w, call, err, "%s", failure_text);
  return MPI_SUCCESS;
}

int MPI_Win_test(MPI_Win win, int *flag) {
  const device::api_guard guard;
  const char *call = "MPI_Win_test";
  window *w = nullptr;
  if (int err = check_window(call, win, w)) return err;
  if (flag == nullptr) return raise(*w, call, MPI_ERR_ARG, "flag is NULL");
  if (!w->exposure_open) {
    return raise(*w, call, MPI_ERR_RMA_SYNC, "no exposure epoch of MPI_Win_post is open");
  }
  device::progress_poll();
  *flag = take_notices(*w, w->exposure, false) ? 1 : 0;
  if (*flag != 0) {
    w->exposure.clear();
    w->exposure_open = false;
  }
  return MPI_SUCCESS;
}

}  // extern "C"
