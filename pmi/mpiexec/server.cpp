#include "pmi/mpiexec/server.hpp"

#include <pmix.h>
#include <pmix_server.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

namespace iris::mpiexec {
namespace {

// The longest mpiexec waits for PMIx to report that a local operation
// finished. Each takes milliseconds; beyond this the library is stuck.
constexpr std::chrono::seconds pmix_call_limit{5};

std::string status_text(pmix_status_t status) {
  return PMIx_Error_string(status);
}

pmix_proc_t make_proc(const std::string &nspace, pmix_rank_t rank) {
  pmix_proc_t proc;
  std::memset(&proc, 0, sizeof proc);
  std::snprintf(proc.nspace, sizeof proc.nspace, "%s", nspace.c_str());
  proc.rank = rank;
  return proc;
}

// Waits, with a time limit, for one PMIx call that completes through a
// pmix_op_cbfunc_t. The state is shared with the callback, so a callback
// that comes after the limit still writes to live memory.
class pending_op {
 public:
  pending_op() : state_(std::make_shared<state>()), handle_(new std::shared_ptr<state>(state_)) {}
  pending_op(const pending_op &) = delete;
  pending_op &operator=(const pending_op &) = delete;

  void *cbdata() const { return handle_; }

  static void done(pmix_status_t status, void *cbdata) {
    auto *handle = static_cast<std::shared_ptr<state> *>(cbdata);
    {
      const std::lock_guard lock((*handle)->mutex);
      (*handle)->status = status;
      (*handle)->finished = true;
    }
    (*handle)->cv.notify_all();
    delete handle;
  }

  // `returned` is what the PMIx call returned: PMIX_SUCCESS promises the
  // callback; PMIX_OPERATION_SUCCEEDED means done already; anything else is
  // an error and no callback comes. Throws launch_error on error or timeout.
  void finish(pmix_status_t returned, const char *what) {
    if (returned != PMIX_SUCCESS) {
      delete handle_;
      if (returned == PMIX_OPERATION_SUCCEEDED) return;
      throw launch_error(std::string(what) + " failed: " + status_text(returned));
    }
    std::unique_lock lock(state_->mutex);
    if (!state_->cv.wait_for(lock, pmix_call_limit, [&] { return state_->finished; })) {
      throw launch_error(std::string(what) + " did not complete within " +
                         std::to_string(pmix_call_limit.count()) + " s");
    }
    if (state_->status != PMIX_SUCCESS && state_->status != PMIX_OPERATION_SUCCEEDED) {
      throw launch_error(std::string(what) + " failed: " + status_text(state_->status));
    }
  }

 private:
  struct state {
    std::mutex mutex;
    std::condition_variable cv;
    bool finished = false;
    pmix_status_t status = PMIX_SUCCESS;
  };
  std::shared_ptr<state> state_;
  std::shared_ptr<state> *handle_;  // owned by the callback once the call returned PMIX_SUCCESS
};

// An array of pmix_info_t built through PMIx's own list API, which copies
// every value (strings, nested arrays) into memory PMIx can free.
class info_array {
 public:
  info_array() : list_(PMIx_Info_list_start()) {
    std::memset(&array_, 0, sizeof array_);
    if (list_ == nullptr) throw launch_error("PMIx_Info_list_start failed");
  }
  ~info_array() {
    if (list_ != nullptr) PMIx_Info_list_release(list_);
    if (!leaked_) PMIx_Data_array_destruct(&array_);
  }
  info_array(const info_array &) = delete;
  info_array &operator=(const info_array &) = delete;

  void add(const char *key, const void *value, pmix_data_type_t type) {
    const pmix_status_t status = PMIx_Info_list_add(list_, key, value, type);
    if (status != PMIX_SUCCESS) {
      throw launch_error(std::string("cannot add ") + key +
                         " to a PMIx info list: " + status_text(status));
    }
  }
  void add_string(const char *key, const std::string &value) {
    add(key, value.c_str(), PMIX_STRING);
  }
  void add_uint32(const char *key, std::uint32_t value) { add(key, &value, PMIX_UINT32); }
  void add_bool(const char *key, bool value) { add(key, &value, PMIX_BOOL); }
  void add_array(const char *key, info_array &nested) {
    add(key, &nested.finish(), PMIX_DATA_ARRAY);
  }

  // Converts the list; add() must not be called afterwards.
  pmix_data_array_t &finish() {
    if (list_ != nullptr) {
      const pmix_status_t status = PMIx_Info_list_convert(list_, &array_);
      PMIx_Info_list_release(list_);
      list_ = nullptr;
      if (status != PMIX_SUCCESS) throw launch_error("PMIx_Info_list_convert failed");
    }
    return array_;
  }
  pmix_info_t *data() { return static_cast<pmix_info_t *>(finish().array); }
  std::size_t size() { return finish().size; }

  // After a PMIx call timed out the library may still read the array.
  void leak() { leaked_ = true; }

 private:
  void *list_;
  pmix_data_array_t array_;
  bool leaked_ = false;
};

// PMIx_generate_regex / PMIx_generate_ppn results are malloc'd and may be
// binary: they are loaded as PMIX_REGEX, never as PMIX_STRING.
void add_regex(info_array &info, const char *key, const std::string &input, bool ppn) {
  char *regex = nullptr;
  const pmix_status_t status =
      ppn ? PMIx_generate_ppn(input.c_str(), &regex) : PMIx_generate_regex(input.c_str(), &regex);
  if (status != PMIX_SUCCESS || regex == nullptr) {
    throw launch_error(std::string("cannot build the PMIx map ") + key + ": " +
                       status_text(status));
  }
  const std::unique_ptr<char, decltype(&std::free)> owned(regex, &std::free);
  info.add(key, regex, PMIX_REGEX);
}

std::string join(const std::vector<std::string> &items, char separator) {
  std::string out;
  for (const std::string &item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// ---- Module callbacks: on PMIx's progress thread, never blocking. ----------

pmix_server *server_of(void *server_object) {
  return static_cast<pmix_server *>(server_object);
}

pmix_status_t client_connected(const pmix_proc_t *proc, void *server_object,
                               pmix_op_cbfunc_t cbfunc, void *cbdata) {
  server_of(server_object)->on_connected(static_cast<int>(proc->rank));
  // 4.2.2 may pass no cbfunc: it already let the client go.
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, cbdata);
  return PMIX_SUCCESS;
}

pmix_status_t client_finalized(const pmix_proc_t *proc, void *server_object,
                               pmix_op_cbfunc_t cbfunc, void *cbdata) {
  server_of(server_object)->on_finalized(static_cast<int>(proc->rank));
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, cbdata);
  return PMIX_SUCCESS;
}

// Whatever `procs` says, the whole job ends: an abort is fatal to an MPI job.
pmix_status_t client_abort(const pmix_proc_t *proc, void *server_object, int status,
                           const char msg[], pmix_proc_t[], size_t, pmix_op_cbfunc_t cbfunc,
                           void *cbdata) {
  // Queue the request before releasing the client: once released it exits,
  // and the main thread must see the abort before it reaps that exit.
  server_of(server_object)
      ->on_abort({.rank = static_cast<int>(proc->rank),
                  .status = status,
                  .message = msg != nullptr ? msg : ""});
  // Without this call the client blocks in PMIx_Abort forever.
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, cbdata);
  return PMIX_SUCCESS;
}

// One server holds every rank, so the library completes fences itself and
// does not call this by default. Should it, the data is already complete:
// hand it straight back.
pmix_status_t fence_nb(const pmix_proc_t[], size_t, const pmix_info_t[], size_t, char *data,
                       size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata) {
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, data, ndata, cbdata, nullptr, nullptr);
  return PMIX_SUCCESS;
}

// Every entry spelled out: nullptr tells the library the host does not
// offer that service (the client gets PMIX_ERR_NOT_SUPPORTED).
pmix_server_module_t server_module = {
    .client_connected = client_connected,
    .client_finalized = client_finalized,
    .abort = client_abort,
    .fence_nb = fence_nb,
    .direct_modex = nullptr,  // every rank is local: the library has all data
    .publish = nullptr,
    .lookup = nullptr,
    .unpublish = nullptr,
    .spawn = nullptr,
    .connect = nullptr,
    .disconnect = nullptr,
    .register_events = nullptr,
    .deregister_events = nullptr,
    .listener = nullptr,
    .notify_event = nullptr,
    .query = nullptr,
    .tool_connected = nullptr,
    .log = nullptr,
    .allocate = nullptr,
    .job_control = nullptr,
    .monitor = nullptr,
    .get_credential = nullptr,
    .validate_credential = nullptr,
    .iof_pull = nullptr,
    .push_stdin = nullptr,
    .group = nullptr,
    .fabric = nullptr,
    .client_connected2 = nullptr,  // client_connected covers it
};

// ---- What the job tells its ranks. -------------------------------------------

// The job as a whole: its size and its node map.
void add_job_info(info_array &job, const job_layout &layout) {
  const auto nranks = static_cast<std::uint32_t>(layout.nranks);
  const std::size_t nnodes = layout.node_names.size();
  std::vector<std::string> peers;  // every rank runs on this host
  std::vector<std::vector<std::string>> ranks_of_node(nnodes);
  for (int rank = 0; rank < layout.nranks; ++rank) {
    peers.push_back(std::to_string(rank));
    const auto node = static_cast<std::size_t>(layout.node_of_rank[static_cast<std::size_t>(rank)]);
    ranks_of_node[node].push_back(std::to_string(rank));
  }
  std::vector<std::string> ppn;
  for (const auto &ranks : ranks_of_node) ppn.push_back(join(ranks, ','));

  job.add_string(PMIX_JOBID, layout.nspace);
  job.add_uint32(PMIX_JOB_SIZE, nranks);
  job.add_uint32(PMIX_UNIV_SIZE, nranks);
  job.add_uint32(PMIX_MAX_PROCS, nranks);
  job.add_uint32(PMIX_LOCAL_SIZE, nranks);
  job.add_string(PMIX_LOCAL_PEERS, join(peers, ','));
  const pmix_rank_t leader = 0;
  job.add(PMIX_LOCALLDR, &leader, PMIX_PROC_RANK);
  job.add_uint32(PMIX_NUM_NODES, static_cast<std::uint32_t>(nnodes));
  add_regex(job, PMIX_NODE_MAP, join(layout.node_names, ','), false);
  add_regex(job, PMIX_PROC_MAP, join(ppn, ';'), true);
}

// Every rank needs its PMIX_PROC_DATA, PMIX_RANK first: a rank without one
// fails in PMIx_Init and the library deadlocks at teardown.
void add_proc_data(info_array &job, const job_layout &layout) {
  std::vector<std::uint16_t> next_local_rank(layout.node_names.size(), 0);
  for (int rank = 0; rank < layout.nranks; ++rank) {
    const int node = layout.node_of_rank[static_cast<std::size_t>(rank)];
    const std::uint16_t local_rank = next_local_rank[static_cast<std::size_t>(node)]++;
    info_array proc;
    const auto pmix_rank = static_cast<pmix_rank_t>(rank);
    proc.add(PMIX_RANK, &pmix_rank, PMIX_PROC_RANK);
    proc.add(PMIX_LOCAL_RANK, &local_rank, PMIX_UINT16);
    proc.add(PMIX_NODE_RANK, &local_rank, PMIX_UINT16);
    proc.add_uint32(PMIX_NODEID, static_cast<std::uint32_t>(node));
    proc.add_string(PMIX_HOSTNAME, layout.node_names[static_cast<std::size_t>(node)]);
    job.add_array(PMIX_PROC_DATA, proc);
  }
}

}  // namespace

pmix_server::pmix_server(const std::string &tmpdir, job_layout layout)
    : layout_(std::move(layout)), client_state_(static_cast<std::size_t>(layout_.nranks)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw launch_error("cannot create an eventfd for the PMIx server");
  info_array info;
  info.add_string(PMIX_SERVER_TMPDIR, tmpdir);
  info.add_string(PMIX_SYSTEM_TMPDIR, tmpdir);
  // Only our own ranks may connect: no tools, no system-wide rendezvous.
  info.add_bool(PMIX_SERVER_TOOL_SUPPORT, false);
  info.add_bool(PMIX_SERVER_SYSTEM_SUPPORT, false);
  const pmix_status_t status = PMIx_server_init(&server_module, info.data(), info.size());
  if (status != PMIX_SUCCESS) {
    ::close(wake_fd_);
    throw launch_error("PMIx_server_init failed: " + status_text(status));
  }
}

pmix_server::~pmix_server() {
  ::close(wake_fd_);
}

void pmix_server::register_job() {
  info_array job;
  add_job_info(job, layout_);
  add_proc_data(job, layout_);
  pending_op registered;
  try {
    registered.finish(
        PMIx_server_register_nspace(layout_.nspace.c_str(), layout_.nranks, job.data(), job.size(),
                                    &pending_op::done, registered.cbdata()),
        "PMIx_server_register_nspace");
  } catch (const launch_error &) {
    job.leak();  // the library may still read it
    throw;
  }

  for (int rank = 0; rank < layout_.nranks; ++rank) {
    const pmix_proc_t proc = make_proc(layout_.nspace, static_cast<pmix_rank_t>(rank));
    pending_op client;
    // `this` comes back as server_object in the callbacks about this client.
    client.finish(PMIx_server_register_client(&proc, ::getuid(), ::getgid(), this,
                                              &pending_op::done, client.cbdata()),
                  "PMIx_server_register_client");
  }
}

void pmix_server::setup_fork(int rank, c_environment &env) {
  const pmix_proc_t proc = make_proc(layout_.nspace, static_cast<pmix_rank_t>(rank));
  const pmix_status_t status = PMIx_server_setup_fork(&proc, env.address());
  if (status != PMIX_SUCCESS) {
    throw launch_error("PMIx_server_setup_fork for rank " + std::to_string(rank) +
                       " failed: " + status_text(status));
  }
}

std::vector<abort_request> pmix_server::take_aborts() {
  std::uint64_t count = 0;
  [[maybe_unused]] const ssize_t ignored = ::read(wake_fd_, &count, sizeof count);
  const std::lock_guard lock(aborts_mutex_);
  return std::exchange(aborts_, {});
}

bool pmix_server::connected_without_finalize(int rank) const {
  return client_state_[static_cast<std::size_t>(rank)].load() == connected;
}

namespace {

// A failure event's attributes, alive until PMIx says it sent the event.
struct failure_event {
  pmix_proc_t dead;
  pmix_info_t info[2];

  failure_event(const std::string &nspace, int rank)
      : dead(make_proc(nspace, static_cast<pmix_rank_t>(rank))) {
    std::memset(info, 0, sizeof info);
    const bool non_default = true;
    if (PMIx_Info_load(&info[0], PMIX_EVENT_AFFECTED_PROC, &dead, PMIX_PROC) != PMIX_SUCCESS ||
        PMIx_Info_load(&info[1], PMIX_EVENT_NON_DEFAULT, &non_default, PMIX_BOOL) != PMIX_SUCCESS) {
      throw launch_error("cannot build the PMIx failure event of rank " + std::to_string(rank));
    }
  }
  ~failure_event() {
    for (pmix_info_t &i : info) PMIx_Value_destruct(&i.value);
  }
  failure_event(const failure_event &) = delete;
  failure_event &operator=(const failure_event &) = delete;

  // On PMIx's thread.
  static void sent(pmix_status_t, void *cbdata) { delete static_cast<failure_event *>(cbdata); }
};

}  // namespace

void pmix_server::notify_failure(int rank, bool finished) {
  auto event = std::make_unique<failure_event>(layout_.nspace, rank);
  // The server is the source (its own namespace, not the job's), so
  // PMIX_RANGE_NAMESPACE, which is the source's namespace, would reach no
  // rank: the range is every client of this server, the job's ranks only.
  const pmix_status_t status =
      PMIx_Notify_event(finished ? PMIX_EVENT_PROC_TERMINATED : PMIX_ERR_PROC_ABORTED, nullptr,
                        PMIX_RANGE_LOCAL, event->info, 2, &failure_event::sent, event.get());
  if (status == PMIX_SUCCESS) {
    [[maybe_unused]] failure_event *owned_by_pmix = event.release();
    return;
  }
  if (status == PMIX_OPERATION_SUCCEEDED) return;
  throw launch_error("cannot tell the other ranks that rank " + std::to_string(rank) +
                     " died: PMIx_Notify_event failed: " + status_text(status));
}

bool pmix_server::ever_connected(int rank) const {
  return client_state_[static_cast<std::size_t>(rank)].load() != not_connected;
}

bool pmix_server::has_finalized(int rank) const {
  return client_state_[static_cast<std::size_t>(rank)].load() == finalized;
}

void pmix_server::shutdown() {
  pending_op deregistered;
  PMIx_server_deregister_nspace(layout_.nspace.c_str(), &pending_op::done, deregistered.cbdata());
  deregistered.finish(PMIX_SUCCESS, "PMIx_server_deregister_nspace");
  const pmix_status_t status = PMIx_server_finalize();
  if (status != PMIX_SUCCESS) {
    throw launch_error("PMIx_server_finalize failed: " + status_text(status));
  }
}

void pmix_server::on_connected(int rank) {
  if (rank >= 0 && rank < layout_.nranks) {
    // Only forward: a late connect notice must not undo a finalize.
    int expected = not_connected;
    client_state_[static_cast<std::size_t>(rank)].compare_exchange_strong(expected, connected);
  }
}

void pmix_server::on_finalized(int rank) {
  if (rank >= 0 && rank < layout_.nranks) {
    client_state_[static_cast<std::size_t>(rank)].store(finalized);
  }
}

void pmix_server::on_abort(abort_request request) {
  {
    const std::lock_guard lock(aborts_mutex_);
    aborts_.push_back(std::move(request));
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t ignored = ::write(wake_fd_, &one, sizeof one);
}

}  // namespace iris::mpiexec
