// MPI environment bindings: Init, Finalize, Abort, versions, clocks.
#include <pthread.h>
#include <time.h>

#include <cstdio>
#include <cstring>

#include "device/am/am.hpp"
#include "device/api/check.hpp"
#include "device/api/comm/attr.hpp"
#include "device/api/rma/rma.hpp"
#include "device/setup/setup.hpp"

using namespace iris;

namespace {

// The World model's state (MPI_Init .. MPI_Finalize, at most once) and the
// sessions alive: the runtime exists while either uses it.
bool world_initialized = false;
bool finalized = false;
int sessions_alive = 0;
pthread_t main_thread;

int init_common(const char *call, int required, int *provided) {
  if (world_initialized || finalized) {
    return device::error_raise(
        nullptr, call, MPI_ERR_OTHER,
        finalized ? "MPI was already finalized" : "MPI is already initialized");
  }
  if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "invalid thread level %d", required);
  }
  main_thread = pthread_self();
  int err = api::runtime_enter(required);
  if (provided != nullptr && device::rt != nullptr) *provided = device::rt->thread_level;
  if (err == MPI_SUCCESS) world_initialized = true;
  // A spawned child: its world joins its parents before MPI_Init returns.
  if (err == MPI_SUCCESS) err = api::parent_connect();
  return err;
}

// Copies `text` into an MPI output string of at most `limit` chars + NUL.
void copy_out(const std::string &text, char *out, int *length, std::size_t limit) {
  const std::size_t n = std::min(text.size(), limit - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
  *length = static_cast<int>(n);
}

}  // namespace

bool api::runtime_ended_for_good() {
  return device::rt == nullptr && finalized;
}

int api::runtime_enter(int required) {
  if (device::rt != nullptr) return MPI_SUCCESS;  // a session or the World model made it
  main_thread = pthread_self();
  const int err = device::runtime_init(required);
  // Last: from here a progress thread may poll (IRIS_ASYNC_PROGRESS=on).
  if (err == MPI_SUCCESS) device::am_init_done();
  return err;
}

void api::session_opened() {
  ++sessions_alive;
}

int api::session_closed() {
  --sessions_alive;
  return world_initialized ? MPI_SUCCESS : runtime_leave();
}

// The last user of the runtime ends it: MPI_Finalize, or the last
// MPI_Session_finalize after it (or without the World model).
int api::runtime_leave() {
  if (sessions_alive > 0 || world_initialized) return MPI_SUCCESS;
  api::buffered_sends_drain();
  api::names_unpublish_all();
  api::rma::close_all();  // windows the program left open (MPI says it frees them)
  // Without MPI_Finalize (sessions alone) MPI may start again: a new session.
  const int err = device::runtime_finalize(!finalized);
  device::attr_clear_all();
  return err;
}

extern "C" {

int MPI_Init(int *, char ***) {
  const device::api_guard guard;
  return init_common("MPI_Init", MPI_THREAD_SINGLE, nullptr);
}

int MPI_Init_thread(int *, char ***, int required, int *provided) {
  const device::api_guard guard;
  if (provided == nullptr) {
    return device::error_raise(nullptr, "MPI_Init_thread", MPI_ERR_ARG, "provided is NULL");
  }
  return init_common("MPI_Init_thread", required, provided);
}

int MPI_Finalize(void) {
  const device::api_guard guard;
  if (int err = api::check_initialized("MPI_Finalize")) return err;
  if (!world_initialized) {
    return device::error_raise(nullptr, "MPI_Finalize", MPI_ERR_OTHER,
                               "MPI_Init was not called (sessions end with MPI_Session_finalize)");
  }
  // First, as if MPI_COMM_SELF were freed: its attributes' delete callbacks,
  // the last set first, while MPI still works, as MPI-4.1 says. A failing
  // callback is reported through SELF's handler; finalizing goes on.
  api::attrs_delete_all("MPI_Finalize", device::comm_lookup(MPI_COMM_SELF), device::attr_kind::comm,
                        MPI_COMM_SELF);
  world_initialized = false;
  finalized = true;
  // Sessions still open keep the runtime, and the communicators made from
  // them keep working, until the last of them is finalized.
  return api::runtime_leave();
}

int MPI_Initialized(int *flag) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Initialized", nullptr, flag, "flag")) return err;
  *flag = world_initialized || finalized ? 1 : 0;  // the World model's, not a session's
  return MPI_SUCCESS;
}

int MPI_Finalized(int *flag) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Finalized", nullptr, flag, "flag")) return err;
  *flag = finalized ? 1 : 0;
  return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode) {
  const device::api_guard guard;
  char line[160];
  std::snprintf(line, sizeof(line), "iris: rank %d: MPI_Abort called with error code %d\n",
                device::rt != nullptr ? device::rt->rank : 0, errorcode);
  std::fputs(line, stderr);
  std::fflush(stderr);
  (void)comm;  // the whole job ends whatever the communicator
  if (device::rt != nullptr) device::rt->pmi->abort(errorcode, line);
  std::_Exit(errorcode);
}

int MPI_Query_thread(int *provided) {
  const device::api_guard guard;
  if (int err = api::check_initialized("MPI_Query_thread")) return err;
  if (int err = api::check_not_null("MPI_Query_thread", nullptr, provided, "provided")) return err;
  *provided = device::rt->thread_level;
  return MPI_SUCCESS;
}

int MPI_Is_thread_main(int *flag) {
  const device::api_guard guard;
  if (int err = api::check_initialized("MPI_Is_thread_main")) return err;
  if (int err = api::check_not_null("MPI_Is_thread_main", nullptr, flag, "flag")) return err;
  *flag = pthread_equal(main_thread, pthread_self()) ? 1 : 0;
  return MPI_SUCCESS;
}

int MPI_Get_version(int *version, int *subversion) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Get_version", nullptr, version, "version")) return err;
  if (int err = api::check_not_null("MPI_Get_version", nullptr, subversion, "subversion")) {
    return err;
  }
  *version = MPI_VERSION;
  *subversion = MPI_SUBVERSION;
  return MPI_SUCCESS;
}

int MPI_Get_library_version(char *version, int *resultlen) {
  const device::api_guard guard;
  const char *call = "MPI_Get_library_version";
  if (int err = api::check_not_null(call, nullptr, version, "version")) return err;
  if (int err = api::check_not_null(call, nullptr, resultlen, "resultlen")) return err;
  copy_out("Iris " IRIS_VERSION_STRING " (MPI point-to-point runtime, Nemesis-style device)",
           version, resultlen, MPI_MAX_LIBRARY_VERSION_STRING);
  return MPI_SUCCESS;
}

int MPI_Get_processor_name(char *name, int *resultlen) {
  const device::api_guard guard;
  const char *call = "MPI_Get_processor_name";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, name, "name")) return err;
  if (int err = api::check_not_null(call, nullptr, resultlen, "resultlen")) return err;
  copy_out(device::rt->processor_name, name, resultlen, MPI_MAX_PROCESSOR_NAME);
  return MPI_SUCCESS;
}

double MPI_Wtime(void) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double MPI_Wtick(void) {
  timespec resolution{};
  clock_getres(CLOCK_MONOTONIC, &resolution);
  return static_cast<double>(resolution.tv_sec) + static_cast<double>(resolution.tv_nsec) * 1e-9;
}

}  // extern "C"
