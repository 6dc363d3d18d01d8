// The PMIx backend: a process started by a PMIx server (Iris's mpiexec,
// Open MPI's mpirun, srun --mpi=pmix).
#include <pmix.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pmi/backends.hpp"

extern char **environ;

namespace iris::pmi {
namespace {

std::string status_text(pmix_status_t status) {
  return PMIx_Error_string(status);
}

pmix_proc_t make_proc(const char *nspace, pmix_rank_t rank) {
  pmix_proc_t proc;
  std::memset(&proc, 0, sizeof proc);
  std::snprintf(proc.nspace, sizeof proc.nspace, "%s", nspace);
  proc.rank = rank;
  return proc;
}

// Owns a value that PMIx_Get allocated.
struct value_deleter {
  void operator()(pmix_value_t *value) const {
    PMIx_Value_destruct(value);
    std::free(value);
  }
};
using value_ptr = std::unique_ptr<pmix_value_t, value_deleter>;

// One info entry on the stack, released on scope exit.
class scoped_info {
 public:
  scoped_info(const char *key, const void *data, pmix_data_type_t type) {
    std::memset(&info_, 0, sizeof info_);
    if (PMIx_Info_load(&info_, key, data, type) != PMIX_SUCCESS) {
      throw error(std::string("cannot build the PMIx attribute ") + key);
    }
  }
  ~scoped_info() { PMIx_Value_destruct(&info_.value); }
  scoped_info(const scoped_info &) = delete;
  scoped_info &operator=(const scoped_info &) = delete;
  pmix_info_t *get() { return &info_; }

 private:
  pmix_info_t info_;
};

// The environment variables a PMIx server sets for the processes it starts.
bool launcher_advertised() {
  for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view var(*entry);
    if (var.starts_with("PMIX_NAMESPACE=") || var.starts_with("PMIX_SERVER_URI")) return true;
  }
  return false;
}

// Reads `key` of `proc` from the data the server registered with the job.
// PMIX_OPTIONAL keeps a missing key from turning into a request to the server
// that would only time out after seconds. Returns nullptr when it is missing.
value_ptr get_optional(const pmix_proc_t &proc, const char *key) {
  const bool optional = true;
  scoped_info info(PMIX_OPTIONAL, &optional, PMIX_BOOL);
  pmix_value_t *value = nullptr;
  if (PMIx_Get(&proc, key, info.get(), 1, &value) != PMIX_SUCCESS) return nullptr;
  return value_ptr(value);
}

bool unsigned_of(const pmix_value_t &value, std::uint64_t &out) {
  switch (value.type) {
    case PMIX_UINT8:
      out = value.data.uint8;
      return true;
    case PMIX_UINT16:
      out = value.data.uint16;
      return true;
    case PMIX_UINT32:
      out = value.data.uint32;
      return true;
    case PMIX_UINT64:
      out = value.data.uint64;
      return true;
    case PMIX_SIZE:
      out = value.data.size;
      return true;
    case PMIX_PROC_RANK:
      out = value.data.rank;
      return true;
    default:
      return false;
  }
}

// ---- Recovery: the launcher's word that a rank of the job is gone. --------

// The longest watch_failures() waits for PMIx to confirm the registration of
// its event handler (milliseconds when all is well).
constexpr std::chrono::seconds registration_limit{5};

// The codes by which a launcher says a process died. Iris's mpiexec sends
// PMIX_ERR_PROC_ABORTED (pmi/README.md, --enable-recovery); the others are
// the codes libpmix 4.2.2 defines for a process's end, which other launchers
// may send (not checked with them). PMIX_EVENT_PROC_TERMINATED also comes for a
// normal end under launchers asked to report every termination, which
// Iris's mpiexec never is.
constexpr pmix_status_t failure_codes[] = {
    PMIX_ERR_PROC_ABORTED,      PMIX_EVENT_PROC_TERMINATED,
    PMIX_ERR_PROC_TERM_WO_SYNC, PMIX_ERR_PROC_ABORTED_BY_SIG,
#ifdef PMIX_ERR_PROC_ABORTING
    PMIX_ERR_PROC_ABORTING,
#endif
};

// What the event handler shares with the client. Written by the client's
// thread (watch_failures), read by PMIx's progress thread (the handler),
// under `mutex`: fn only stores, so the handler holds it for microseconds.
struct failure_watch {
  pmix_proc_t self;
  int size = 0;
  std::mutex mutex;
  void (*fn)(int rank, void *arg) = nullptr;  // guarded by mutex
  void *arg = nullptr;                        // guarded by mutex
  std::vector<bool> reported;                 // guarded by mutex, by rank

  // `proc` is a rank of this job other than this process: report it once.
  void consider(const pmix_proc_t &proc) {
    if (std::strncmp(proc.nspace, self.nspace, PMIX_MAX_NSLEN) != 0) return;
    if (proc.rank == self.rank || proc.rank >= static_cast<pmix_rank_t>(size)) return;
    const std::lock_guard lock(mutex);
    if (reported[proc.rank]) return;
    reported[proc.rank] = true;
    if (fn != nullptr) fn(static_cast<int>(proc.rank), arg);
  }
};

// On PMIx's progress thread: the dead ranks are the affected procs of the
// event, else its source when that is a rank of this job (a launcher sends
// as itself, another namespace). Always completes the event, or PMIx keeps
// it pending.
void on_failure_event(std::size_t, pmix_status_t, const pmix_proc_t *source, pmix_info_t info[],
                      std::size_t ninfo, pmix_info_t *, std::size_t,
                      pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata) {
  failure_watch *watch = nullptr;
  for (std::size_t i = 0; i < ninfo; ++i) {
    if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_RETURN_OBJECT) && info[i].value.type == PMIX_POINTER) {
      watch = static_cast<failure_watch *>(info[i].value.data.ptr);
    }
  }
  if (watch != nullptr) {
    bool named = false;
    for (std::size_t i = 0; i < ninfo; ++i) {
      const pmix_value_t &value = info[i].value;
      if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && value.type == PMIX_PROC &&
          value.data.proc != nullptr) {
        named = true;
        watch->consider(*value.data.proc);
      } else if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROCS) &&
                 value.type == PMIX_DATA_ARRAY && value.data.darray != nullptr &&
                 value.data.darray->type == PMIX_PROC && value.data.darray->array != nullptr) {
        named = true;
        const auto *procs = static_cast<const pmix_proc_t *>(value.data.darray->array);
        for (std::size_t p = 0; p < value.data.darray->size; ++p) watch->consider(procs[p]);
      }
    }
    if (!named && source != nullptr) watch->consider(*source);
  }
  if (cbfunc != nullptr) cbfunc(PMIX_EVENT_ACTION_COMPLETE, nullptr, 0, nullptr, nullptr, cbdata);
}

// The registration, shared with its callback: PMIx reads the codes and the
// attributes on its own thread after PMIx_Register_event_handler returned,
// and a callback that comes after the time limit still writes to live memory.
struct registration {
  std::vector<pmix_status_t> codes{std::begin(failure_codes), std::end(failure_codes)};
  pmix_info_t info[2];
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  pmix_status_t status = PMIX_SUCCESS;

  explicit registration(failure_watch *watch) {
    std::memset(info, 0, sizeof info);
    // A PMIX_POINTER value is the pointer itself, not its address.
    if (PMIx_Info_load(&info[0], PMIX_EVENT_RETURN_OBJECT, watch, PMIX_POINTER) != PMIX_SUCCESS ||
        PMIx_Info_load(&info[1], PMIX_EVENT_HDLR_NAME, "iris-recovery", PMIX_STRING) !=
            PMIX_SUCCESS) {
      throw error("cannot build the attributes of the PMIx failure event handler");
    }
  }
  ~registration() { PMIx_Value_destruct(&info[1].value); }
  registration(const registration &) = delete;
  registration &operator=(const registration &) = delete;

  static void finished(pmix_status_t status, std::size_t, void *cbdata) {
    auto *handle = static_cast<std::shared_ptr<registration> *>(cbdata);
    {
      const std::lock_guard lock((*handle)->mutex);
      (*handle)->status = status;
      (*handle)->done = true;
    }
    (*handle)->cv.notify_all();
    delete handle;
  }
};

class pmix_client final : public client {
 public:
  explicit pmix_client(const pmix_proc_t &self) : self_(self) {
    read_size();
    read_nodes();
    read_host_ranks();
  }

  ~pmix_client() override {
    // A device that threw during setup never reached finalize(); leaving
    // without PMIx_Finalize would make mpiexec report a rank that vanished.
    if (!finalized_) PMIx_Finalize(nullptr, 0);
  }

  pmix_client(const pmix_client &) = delete;
  pmix_client &operator=(const pmix_client &) = delete;

  int rank() const override { return static_cast<int>(self_.rank); }
  int size() const override { return size_; }
  int node_of(int rank) const override {
    check_rank(rank);
    return node_of_[static_cast<std::size_t>(rank)];
  }
  int host_ranks() const override { return host_ranks_; }
  std::string_view job_id() const override { return self_.nspace; }
  std::string_view backend() const override { return "pmix"; }
  bool singleton() const override { return false; }

  void put(std::string_view key, std::string_view value) override {
    check_card(key, value);
    const std::string text(value);
    pmix_value_t pmix_value;
    std::memset(&pmix_value, 0, sizeof pmix_value);
    pmix_status_t status = PMIx_Value_load(&pmix_value, text.c_str(), PMIX_STRING);
    if (status == PMIX_SUCCESS)
      status = PMIx_Put(PMIX_GLOBAL, std::string(key).c_str(), &pmix_value);
    PMIx_Value_destruct(&pmix_value);
    if (status != PMIX_SUCCESS) {
      throw error("PMIx_Put of business card '" + std::string(key) +
                  "' failed: " + status_text(status));
    }
  }

  void commit() override {
    const pmix_status_t status = PMIx_Commit();
    if (status != PMIX_SUCCESS) throw error("PMIx_Commit failed: " + status_text(status));
  }

  void fence() override {
    const bool collect = true;
    scoped_info info(PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    const pmix_status_t status = PMIx_Fence(nullptr, 0, info.get(), 1);
    if (status != PMIX_SUCCESS) throw error("PMIx_Fence failed: " + status_text(status));
  }

  std::string get(int rank, std::string_view key) override {
    check_rank(rank);
    const pmix_proc_t peer = make_proc(self_.nspace, static_cast<pmix_rank_t>(rank));
    pmix_value_t *raw = nullptr;
    const pmix_status_t status = PMIx_Get(&peer, std::string(key).c_str(), nullptr, 0, &raw);
    if (status != PMIX_SUCCESS) {
      throw error("PMIx_Get of business card '" + std::string(key) + "' from rank " +
                  std::to_string(rank) + " failed: " + status_text(status));
    }
    const value_ptr value(raw);
    if (value->type != PMIX_STRING || value->data.string == nullptr) {
      throw error("business card '" + std::string(key) + "' from rank " + std::to_string(rank) +
                  " is not a string");
    }
    return value->data.string;
  }

  [[noreturn]] void abort(int code, std::string_view message) override {
    // Output still buffered here would be lost when the launcher kills us.
    std::fflush(nullptr);
    // PMIx_Abort returns once the server has the request; the server then
    // kills the job, and _exit covers a server that does not.
    PMIx_Abort(code, std::string(message).c_str(), nullptr, 0);
    ::_exit(code);
  }

  bool watch_failures(void (*fn)(int rank, void *arg), void *arg) override {
    if (!watch_) register_failure_handler();
    const std::lock_guard lock(watch_->mutex);
    watch_->fn = fn;
    watch_->arg = arg;
    if (fn != nullptr) {
      for (int rank = 0; rank < size_; ++rank) {
        if (watch_->reported[static_cast<std::size_t>(rank)]) fn(rank, arg);
      }
    }
    return true;
  }

  void finalize() override {
    if (finalized_) return;
    finalized_ = true;
    const pmix_status_t status = PMIx_Finalize(nullptr, 0);
    if (status != PMIX_SUCCESS) throw error("PMIx_Finalize failed: " + status_text(status));
  }

 private:
  void check_rank(int rank) const {
    if (rank < 0 || rank >= size_) {
      throw error("rank " + std::to_string(rank) + " does not exist in job " + self_.nspace +
                  " of size " + std::to_string(size_));
    }
  }

  // PMIX_JOB_SIZE, not PMIX_UNIV_SIZE: under mpirun the latter is the number
  // of slots, which can exceed the ranks started.
  void read_size() {
    const pmix_proc_t job = make_proc(self_.nspace, PMIX_RANK_WILDCARD);
    const value_ptr value = get_optional(job, PMIX_JOB_SIZE);
    std::uint64_t size = 0;
    if (!value || !unsigned_of(*value, size) || size == 0 || size > 0x7fffffff) {
      throw error(std::string("the PMIx server gave no usable ") + PMIX_JOB_SIZE + " for job " +
                  self_.nspace);
    }
    size_ = static_cast<int>(size);
    if (self_.rank >= size) {
      throw error("PMIx rank " + std::to_string(self_.rank) + " is outside job " + self_.nspace +
                  " of size " + std::to_string(size_));
    }
  }

  // Ranks share a node when their PMIX_HOSTNAME matches. PMIX_NODEID would do
  // too, but a launcher may not give it for ranks on other nodes, and
  // PMIX_LOCAL_PEERS cannot tell apart nodes simulated on one host.
  void read_nodes() {
    std::map<std::string, int> node_by_name;
    node_of_.reserve(static_cast<std::size_t>(size_));
    for (int rank = 0; rank < size_; ++rank) {
      const std::string name = node_name_of(rank);
      const auto [it, inserted] =
          node_by_name.try_emplace(name, static_cast<int>(node_by_name.size()));
      node_of_.push_back(it->second);
    }
  }

  // PMIX_LOCAL_SIZE: the ranks on this host, when the launcher gives it.
  void read_host_ranks() {
    const pmix_proc_t job = make_proc(self_.nspace, PMIX_RANK_WILDCARD);
    std::uint64_t n = 0;
    if (const value_ptr value = get_optional(job, PMIX_LOCAL_SIZE);
        value && unsigned_of(*value, n) && n > 0 && n <= static_cast<std::uint64_t>(size_)) {
      host_ranks_ = static_cast<int>(n);
    }
  }

  std::string node_name_of(int rank) const {
    const pmix_proc_t proc = make_proc(self_.nspace, static_cast<pmix_rank_t>(rank));
    if (const value_ptr name = get_optional(proc, PMIX_HOSTNAME)) {
      if (name->type == PMIX_STRING && name->data.string != nullptr) {
        return std::string("host:") + name->data.string;
      }
    }
    if (const value_ptr id = get_optional(proc, PMIX_NODEID)) {
      std::uint64_t node = 0;
      if (unsigned_of(*id, node)) return "id:" + std::to_string(node);
    }
    throw error("cannot tell which node rank " + std::to_string(rank) +
                " runs on: the PMIx server " + "gave neither " + PMIX_HOSTNAME + " nor " +
                PMIX_NODEID);
  }

  // Once per process: later watch_failures() calls change only fn and arg.
  void register_failure_handler() {
    auto watch = std::make_unique<failure_watch>();
    watch->self = self_;
    watch->size = size_;
    watch->reported.assign(static_cast<std::size_t>(size_), false);
    const auto state = std::make_shared<registration>(watch.get());
    auto *handle = new std::shared_ptr<registration>(state);
    const pmix_status_t returned =
        PMIx_Register_event_handler(state->codes.data(), state->codes.size(), state->info, 2,
                                    &on_failure_event, &registration::finished, handle);
    if (returned != PMIX_SUCCESS) {
      delete handle;  // no callback comes
      throw error("PMIx_Register_event_handler for failure events failed: " +
                  status_text(returned));
    }
    std::unique_lock lock(state->mutex);
    if (!state->cv.wait_for(lock, registration_limit, [&] { return state->done; })) {
      // PMIx may still call the handler: the watch must outlive it. A later
      // call tries again.
      abandoned_watches_.push_back(std::move(watch));
      throw error("PMIx_Register_event_handler for failure events did not complete within " +
                  std::to_string(registration_limit.count()) + " s");
    }
    if (state->status < 0) {
      throw error("PMIx_Register_event_handler for failure events failed: " +
                  status_text(state->status));
    }
    watch_ = std::move(watch);
  }

  pmix_proc_t self_;
  int size_ = 0;
  std::vector<int> node_of_;
  int host_ranks_ = -1;
  bool finalized_ = false;
  // Read by PMIx's thread until PMIx_Finalize stops it: destroyed after it
  // (members go after the destructor's body).
  std::unique_ptr<failure_watch> watch_;
  std::vector<std::unique_ptr<failure_watch>> abandoned_watches_;  // registrations timed out
};

}  // namespace

std::unique_ptr<client> pmix_client_open() {
  pmix_proc_t self;
  std::memset(&self, 0, sizeof self);
  const pmix_status_t status = PMIx_Init(&self, nullptr, 0);
  if (status == PMIX_ERR_UNREACH && !launcher_advertised()) {
    // No launcher: PMIx set itself up as a singleton, which we do not use.
    PMIx_Finalize(nullptr, 0);
    return nullptr;
  }
  if (status != PMIX_SUCCESS) {
    // No PMIx_Finalize here: after a failed PMIx_Init it can crash (4.2.2).
    if (launcher_advertised()) {
      throw error("PMIx_Init failed (" + status_text(status) +
                  ") although PMIX_NAMESPACE/PMIX_SERVER_URI* say a PMIx launcher started this "
                  "process: is the launcher still running?");
    }
    throw error("PMIx_Init failed: " + status_text(status));
  }
  try {
    return std::make_unique<pmix_client>(self);
  } catch (...) {
    PMIx_Finalize(nullptr, 0);
    throw;
  }
}

}  // namespace iris::pmi
