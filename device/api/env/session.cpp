// MPI-4 sessions: MPI_Session_init and _finalize, the process sets
// "mpi://WORLD" and "mpi://SELF" (their names, their info, a group of
// each), the session's info, and its error handlers.
//
// A session is a user of the runtime, as the World model is (init.cpp):
// the first of them makes it, the last ends it, so that sessions and
// MPI_Init .. MPI_Finalize may come in any order in one process, and a
// session may begin again after every earlier one has ended. Communicators
// come from a session's groups through MPI_Comm_create_from_group
// (comm_mpi4.cpp). Handles are of kind session (base/handle.hpp); index 0
// is MPI_SESSION_NULL.
#include <strings.h>

#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/api/check.hpp"
#include "device/api/env/info.hpp"
#include "device/base/handle.hpp"

using namespace iris;

namespace {

struct session {
  int errhandler = MPI_ERRORS_ARE_FATAL;
  int thread_level = MPI_THREAD_SINGLE;
};

// Indexed by handle_index; an ended session is std::nullopt. Indexes are
// not reused, so that a stale handle is never taken for a new session.
std::vector<std::optional<session>> sessions{std::nullopt};

constexpr std::string_view world_pset = "mpi://WORLD";
constexpr std::string_view self_pset = "mpi://SELF";
constexpr std::string_view psets[] = {world_pset, self_pset};

const char *level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

// The level an info value names ("MPI_THREAD_MULTIPLE", ...), or -1.
int level_of(const std::string &name) {
  for (int level = MPI_THREAD_SINGLE; level <= MPI_THREAD_MULTIPLE; ++level) {
    if (name == level_name(level)) return level;
  }
  return -1;
}

int raise(const session &s, MPI_Session handle, const char *call, int error_class,
          const char *text) {
  return device::error_raise_object(s.errhandler, handle, call, error_class, "%s", text);
}

// Checks that `handle` names a live session (an invalid one is raised on
// MPI_COMM_WORLD's handler, as MPI-4 says for a call without a valid object).
int check_session(const char *call, MPI_Session handle, session *&out) {
  const std::size_t index = device::handle_index(handle);
  if (!device::handle_is(handle, device::handle_kind::session) || index == 0 ||
      index >= sessions.size() || !sessions[index]) {
    return device::error_raise(nullptr, call, MPI_ERR_SESSION, "invalid session handle 0x%x",
                               static_cast<unsigned>(handle));
  }
  out = &*sessions[index];
  return MPI_SUCCESS;
}

// Process set names compare without regard to case, as MPICH's do
// ("mpi://self" is mpi://SELF: MPICH's init/session_self asks so).
bool same_name(const char *name, std::string_view pset) {
  return std::strlen(name) == pset.size() && strncasecmp(name, pset.data(), pset.size()) == 0;
}

// The process set named `name`, as its members' world ranks; false for a
// name this runtime does not know.
bool pset_members(const char *name, std::vector<int> &out) {
  out.clear();
  if (same_name(name, world_pset)) {
    for (int r = 0; r < device::rt->size; ++r) out.push_back(r);
    return true;
  }
  if (same_name(name, self_pset)) {
    out.push_back(device::rt->rank);
    return true;
  }
  return false;
}

int unknown_pset(const session &s, MPI_Session handle, const char *call, const char *name) {
  const std::string text = "no process set named \"" + std::string(name) +
                           "\" (this runtime has mpi://WORLD and mpi://SELF)";
  return raise(s, handle, call, MPI_ERR_ARG, text.c_str());
}

}  // namespace

int api::check_session_handle(const char *call, int session_handle) {
  session *s = nullptr;
  return check_session(call, session_handle, s);
}

extern "C" {

int MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session_out) {
  const device::api_guard guard;
  const char *call = "MPI_Session_init";
  // MPI_ERRHANDLER_NULL: the default handler, as for a communicator.
  const int handler = errhandler == MPI_ERRHANDLER_NULL ? MPI_ERRORS_ARE_FATAL : errhandler;
  if (!device::errhandler_valid(handler)) {
    return device::error_raise(nullptr, call, MPI_ERR_ERRHANDLER,
                               "invalid error handler handle 0x%x",
                               static_cast<unsigned>(errhandler));
  }
  const session failed{handler, MPI_THREAD_SINGLE};
  if (session_out == nullptr) {
    return raise(failed, MPI_SESSION_NULL, call, MPI_ERR_ARG, "session is NULL");
  }
  const api::info_entries *entries = api::info_find(info);
  if (entries == nullptr) {
    const std::string text = "invalid info handle 0x" + std::to_string(static_cast<unsigned>(info));
    return raise(failed, MPI_SESSION_NULL, call, MPI_ERR_INFO, text.c_str());
  }
  // "thread_level": the level wanted, by name (MPI-4 11.3.1).
  int wanted = MPI_THREAD_SINGLE;
  for (const auto &[key, value] : *entries) {
    if (key != "thread_level") continue;
    wanted = level_of(value);
    if (wanted < 0) {
      const std::string text = "info thread_level \"" + value +
                               "\" is none of MPI_THREAD_SINGLE, _FUNNELED, _SERIALIZED, _MULTIPLE";
      return raise(failed, MPI_SESSION_NULL, call, MPI_ERR_INFO_VALUE, text.c_str());
    }
  }
  if (api::runtime_ended_for_good()) {
    return raise(failed, MPI_SESSION_NULL, call, MPI_ERR_OTHER,
                 "MPI cannot start again in this process once MPI_Finalize has ended it");
  }
  if (const int err = api::runtime_enter(wanted)) return err;
  api::session_opened();
  sessions.push_back(session{handler, device::rt->thread_level});
  *session_out = device::handle_make(device::handle_kind::session, sessions.size() - 1);
  return MPI_SUCCESS;
}

// Ends the session; the last user of the runtime ends it too, which is
// collective over the job (the session's processes are all of it here).
int MPI_Session_finalize(MPI_Session *session_inout) {
  const device::api_guard guard;
  const char *call = "MPI_Session_finalize";
  if (int err = api::check_not_null(call, nullptr, session_inout, "session")) return err;
  session *s = nullptr;
  if (int err = check_session(call, *session_inout, s)) return err;
  api::session_buffer_end(*session_inout);  // its buffered sends leave first
  sessions[device::handle_index(*session_inout)].reset();
  *session_inout = MPI_SESSION_NULL;
  return api::session_closed();
}

int MPI_Session_get_num_psets(MPI_Session handle, MPI_Info info, int *npset_names) {
  const device::api_guard guard;
  const char *call = "MPI_Session_get_num_psets";
  session *s = nullptr;
  if (int err = check_session(call, handle, s)) return err;
  (void)info;  // Iris defines no keys that filter process sets
  if (npset_names == nullptr) return raise(*s, handle, call, MPI_ERR_ARG, "npset_names is NULL");
  *npset_names = static_cast<int>(std::size(psets));
  return MPI_SUCCESS;
}

// With *pset_len 0, only the length the name needs (with its NUL) is
// returned; else at most *pset_len - 1 characters and a NUL are written.
int MPI_Session_get_nth_pset(MPI_Session handle, MPI_Info info, int n, int *pset_len,
                             char *pset_name) {
  const device::api_guard guard;
  const char *call = "MPI_Session_get_nth_pset";
  session *s = nullptr;
  if (int err = check_session(call, handle, s)) return err;
  (void)info;
  if (pset_len == nullptr) return raise(*s, handle, call, MPI_ERR_ARG, "pset_len is NULL");
  if (n < 0 || n >= static_cast<int>(std::size(psets))) {
    const std::string text = "process set " + std::to_string(n) + " does not exist (there are " +
                             std::to_string(std::size(psets)) + ")";
    return raise(*s, handle, call, MPI_ERR_ARG, text.c_str());
  }
  const std::string_view name = psets[n];
  if (*pset_len == 0) {
    *pset_len = static_cast<int>(name.size()) + 1;
    return MPI_SUCCESS;
  }
  if (*pset_len < 0) return raise(*s, handle, call, MPI_ERR_ARG, "negative pset_len");
  if (pset_name == nullptr) return raise(*s, handle, call, MPI_ERR_ARG, "pset_name is NULL");
  const std::size_t copied = std::min(name.size(), static_cast<std::size_t>(*pset_len) - 1);
  std::memcpy(pset_name, name.data(), copied);
  pset_name[copied] = '\0';
  return MPI_SUCCESS;
}

// "mpi_size": the number of processes in the set (MPI-4 11.3.2).
int MPI_Session_get_pset_info(MPI_Session handle, const char *pset_name, MPI_Info *info) {
  const device::api_guard guard;
  const char *call = "MPI_Session_get_pset_info";
  session *s = nullptr;
  if (int err = check_session(call, handle, s)) return err;
  if (pset_name == nullptr) return raise(*s, handle, call, MPI_ERR_ARG, "pset_name is NULL");
  if (info == nullptr) return raise(*s, handle, call, MPI_ERR_ARG, "info is NULL");
  std::vector<int> members;
  if (!pset_members(pset_name, members)) return unknown_pset(*s, handle, call, pset_name);
  *info = api::info_make({{"mpi_size", std::to_string(members.size())}});
  return MPI_SUCCESS;
}

// "thread_level": the level the session has (the runtime's, which the first
// of its users chose).
int MPI_Session_get_info(MPI_Session handle, MPI_Info *info_used) {
  const device::api_guard guard;
  const char *call = "MPI_Session_get_info";
  session *s = nullptr;
  if (int err = check_session(call, handle, s)) return err;
  if (info_used == nullptr) return raise(*s, handle, call, MPI_ERR_ARG, "info_used is NULL");
  *info_used = api::info_make({{"thread_level", level_name(s->thread_level)}});
  return MPI_SUCCESS;
}

int MPI_Group_from_session_pset(MPI_Session handle, const char *pset_name, MPI_Group *newgroup) {
  const device::api_guard guard;
  const char *call = "MPI_Group_from_session_pset";
  session *s = nullptr;
  if (int err = check_session(call, handle, s)) return err;
  if (pset_name == nullptr) return raise(*s, handle, call, MPI_ERR_ARG, "pset_name is NULL");
  if (newgroup == nullptr) return raise(*s, handle, call, MPI_ERR_ARG, "newgroup is NULL");
  std::vector<int> members;
  if (!pset_members(pset_name, members)) return unknown_pset(*s, handle, call, pset_name);
  *newgroup = device::group_register(std::move(members));
  device::group_lookup(*newgroup)->session = handle;
  return MPI_SUCCESS;
}

int MPI_Session_create_errhandler(MPI_Session_errhandler_function *session_errhandler_fn,
                                  MPI_Errhandler *errhandler) {
  const device::api_guard guard;
  const char *call = "MPI_Session_create_errhandler";
  if (int err =
          api::check_not_null(call, nullptr, reinterpret_cast<const void *>(session_errhandler_fn),
                              "session_errhandler_fn")) {
    return err;
  }
  if (int err = api::check_not_null(call, nullptr, errhandler, "errhandler")) return err;
  *errhandler = device::errhandler_create(
      reinterpret_cast<device::comm_errhandler_fn *>(session_errhandler_fn));
  return MPI_SUCCESS;
}

int MPI_Session_set_errhandler(MPI_Session handle, MPI_Errhandler errhandler) {
  const device::api_guard guard;
  const char *call = "MPI_Session_set_errhandler";
  session *s = nullptr;
  if (int err = check_session(call, handle, s)) return err;
  if (!device::errhandler_valid(errhandler)) {
    const std::string text =
        "invalid error handler handle 0x" + std::to_string(static_cast<unsigned>(errhandler));
    return raise(*s, handle, call, MPI_ERR_ERRHANDLER, text.c_str());
  }
  s->errhandler = errhandler;
  return MPI_SUCCESS;
}

int MPI_Session_get_errhandler(MPI_Session handle, MPI_Errhandler *errhandler) {
  const device::api_guard guard;
  const char *call = "MPI_Session_get_errhandler";
  session *s = nullptr;
  if (int err = check_session(call, handle, s)) return err;
  if (errhandler == nullptr) return raise(*s, handle, call, MPI_ERR_ARG, "errhandler is NULL");
  *errhandler = s->errhandler;
  return MPI_SUCCESS;
}

int MPI_Session_call_errhandler(MPI_Session handle, int errorcode) {
  const device::api_guard guard;
  const char *call = "MPI_Session_call_errhandler";
  session *s = nullptr;
  if (int err = check_session(call, handle, s)) return err;
  const char *text = device::error_code_text(errorcode);
  const std::string line = "error code " + std::to_string(errorcode) + ": " +
                           (text != nullptr && text[0] != '\0' ? text : "(no error string)");
  raise(*s, handle, call, errorcode, line.c_str());
  return MPI_SUCCESS;  // the handler ran and returned
}

}  // extern "C"
