// MPI bindings for error handlers (predefined and user), error classes,
// codes and strings (predefined and added), and the
// MPIX_Stat_get extension.
#include <cstring>

#include "device/am/am.hpp"
#include "device/api/check.hpp"

using namespace iris;
using iris::api::communicator;

extern "C" {

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_set_errhandler";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (!device::errhandler_valid(errhandler)) {
    return device::error_raise(c, call, MPI_ERR_ERRHANDLER, "invalid error handler handle 0x%x",
                               static_cast<unsigned>(errhandler));
  }
  c->errhandler = errhandler;
  return MPI_SUCCESS;
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_get_errhandler";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  if (int err = api::check_not_null(call, c, errhandler, "errhandler")) return err;
  *errhandler = c->errhandler;
  return MPI_SUCCESS;
}

int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *comm_errhandler_fn,
                               MPI_Errhandler *errhandler) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_create_errhandler";
  if (int err = api::check_initialized(call)) return err;
  if (int err =
          api::check_not_null(call, nullptr, reinterpret_cast<const void *>(comm_errhandler_fn),
                              "comm_errhandler_fn")) {
    return err;
  }
  if (int err = api::check_not_null(call, nullptr, errhandler, "errhandler")) return err;
  *errhandler = device::errhandler_create(comm_errhandler_fn);
  return MPI_SUCCESS;
}

// The handler object stays alive (see errors.hpp): only the caller's handle
// is cleared, as communicators that use the handler keep it.
int MPI_Errhandler_free(MPI_Errhandler *errhandler) {
  const device::api_guard guard;
  const char *call = "MPI_Errhandler_free";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, errhandler, "errhandler")) return err;
  if (!device::errhandler_valid(*errhandler)) {
    return device::error_raise(nullptr, call, MPI_ERR_ERRHANDLER,
                               "invalid error handler handle 0x%x",
                               static_cast<unsigned>(*errhandler));
  }
  *errhandler = MPI_ERRHANDLER_NULL;
  return MPI_SUCCESS;
}

int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_call_errhandler";
  communicator *c = nullptr;
  if (int err = api::check_comm(call, comm, c)) return err;
  const char *text = device::error_code_text(errorcode);
  device::error_raise(c, call, errorcode, "error code %d: %s", errorcode,
                      text != nullptr && text[0] != '\0' ? text : "(no error string)");
  return MPI_SUCCESS;  // the handler ran and returned
}

int MPI_Add_error_class(int *errorclass) {
  const device::api_guard guard;
  const char *call = "MPI_Add_error_class";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, errorclass, "errorclass")) return err;
  const int added = device::error_class_add();
  if (added < 0) return device::error_raise(nullptr, call, MPI_ERR_OTHER, "too many error codes");
  *errorclass = added;
  return MPI_SUCCESS;
}

int MPI_Add_error_code(int errorclass, int *errorcode) {
  const device::api_guard guard;
  const char *call = "MPI_Add_error_code";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, errorcode, "errorcode")) return err;
  if (device::error_class_of(errorclass) != errorclass) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "%d is not an error class", errorclass);
  }
  const int added = device::error_code_add(errorclass);
  if (added < 0) return device::error_raise(nullptr, call, MPI_ERR_OTHER, "too many error codes");
  *errorcode = added;
  return MPI_SUCCESS;
}

int MPI_Add_error_string(int errorcode, const char *string) {
  const device::api_guard guard;
  const char *call = "MPI_Add_error_string";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, string, "string")) return err;
  if (std::strlen(string) >= MPI_MAX_ERROR_STRING) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "string of %zu characters (at most %d)",
                               std::strlen(string), MPI_MAX_ERROR_STRING - 1);
  }
  if (!device::error_string_set(errorcode, string)) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG,
                               "%d is not an added error code or class (those are above %d)",
                               errorcode, MPI_ERR_LASTCODE);
  }
  return MPI_SUCCESS;
}

// MPI-4.1: removing added classes, codes and strings.
int MPI_Remove_error_class(int errorclass) {
  const device::api_guard guard;
  const char *call = "MPI_Remove_error_class";
  if (int err = api::check_initialized(call)) return err;
  if (const char *why = device::error_remove(errorclass, true)) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "%d: %s", errorclass, why);
  }
  return MPI_SUCCESS;
}

int MPI_Remove_error_code(int errorcode) {
  const device::api_guard guard;
  const char *call = "MPI_Remove_error_code";
  if (int err = api::check_initialized(call)) return err;
  if (const char *why = device::error_remove(errorcode, false)) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "%d: %s", errorcode, why);
  }
  return MPI_SUCCESS;
}

int MPI_Remove_error_string(int errorcode) {
  const device::api_guard guard;
  const char *call = "MPI_Remove_error_string";
  if (int err = api::check_initialized(call)) return err;
  if (!device::error_string_remove(errorcode)) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG,
                               "%d is not an added error class or code with a string", errorcode);
  }
  return MPI_SUCCESS;
}

int MPI_Error_class(int errorcode, int *errorclass) {
  const device::api_guard guard;
  if (int err = api::check_not_null("MPI_Error_class", nullptr, errorclass, "errorclass")) {
    return err;
  }
  const int found = device::error_class_of(errorcode);
  if (found < 0) {
    return device::error_raise(nullptr, "MPI_Error_class", MPI_ERR_ARG, "unknown error code %d",
                               errorcode);
  }
  *errorclass = found;
  return MPI_SUCCESS;
}

int MPI_Error_string(int errorcode, char *string, int *resultlen) {
  const device::api_guard guard;
  const char *call = "MPI_Error_string";
  if (int err = api::check_not_null(call, nullptr, string, "string")) return err;
  if (int err = api::check_not_null(call, nullptr, resultlen, "resultlen")) return err;
  const char *text = device::error_code_text(errorcode);
  if (text == nullptr) {
    return device::error_raise(nullptr, call, MPI_ERR_ARG, "unknown error code %d", errorcode);
  }
  const std::size_t n = std::min(std::strlen(text), std::size_t{MPI_MAX_ERROR_STRING - 1});
  std::memcpy(string, text, n);
  string[n] = '\0';
  *resultlen = static_cast<int>(n);
  return MPI_SUCCESS;
}

int MPIX_Stat_get(const char *name, MPI_Count *value) {
  const device::api_guard guard;
  const char *call = "MPIX_Stat_get";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, name, "name")) return err;
  if (int err = api::check_not_null(call, nullptr, value, "value")) return err;
  const device::statistics s = device::stats_total(*device::rt);
  const device::settings &c = device::rt->config;
  // What credits let peers leave unexpected here: each peer's window.
  std::uint64_t bound = 0;
  for (const device::vc &v : device::rt->vcs) {
    if (v.flow_controlled) bound += static_cast<std::uint64_t>(v.window);
  }
  const struct {
    const char *name;
    std::uint64_t value;
  } table[] = {
      {"eager", s.eager},
      {"eager_sync", s.eager_sync},
      {"rendezvous", s.rendezvous},
      {"rendezvous_read", s.rendezvous_read},
      {"rendezvous_scattered", s.rendezvous_scattered},
      {"rendezvous_pipeline", s.rendezvous_pipeline},
      {"credit_stalls", s.credit_stalls},
      {"credit_packets", s.credit_packets},
      {"sleeps", s.sleeps},
      {"sleep_timeouts", s.sleep_timeouts},
      {"unexpected_depth_peak", device::rt->matching.unexpected_counts().depth_peak},
      {"unexpected_bytes_peak", device::rt->matching.unexpected_counts().bytes_peak},
      {"match_compared", device::rt->matching.compared()},
      {"match_rebinned", device::rt->matching.rebinned()},
      {"recv_unlocked", device::rt->matching.unlocked_receives()},
      {"recv_aside", device::rt->matching.aside_deliveries()},
      {"rendezvous_aside", device::rt->matching.aside_rendezvous()},
      {"data_aside", s.data_aside},
      {"rendezvous_send_aside", s.rendezvous_send_aside},
      {"data_sent_aside", s.data_sent_aside},
      {"eager_limit", c.eager_limit},
      {"inline_bytes", device::unexpected_msg::inline_capacity},
      {"eager_window", static_cast<std::uint64_t>(c.eager_window) * device::credit_unit},
      {"unexpected_bytes_bound", bound * device::credit_unit},
  };
  for (const auto &entry : table) {
    if (std::strcmp(entry.name, name) == 0) {
      *value = static_cast<MPI_Count>(entry.value);
      return MPI_SUCCESS;
    }
  }
  std::uint64_t setting = 0;
  if (device::transport_statistic(device::rt->transports, name, setting) ||
      device::am_statistic(name, setting) ||
      device::transport_setting_value(device::rt->transport_config, name, setting)) {
    *value = static_cast<MPI_Count>(setting);
    return MPI_SUCCESS;
  }
  return device::error_raise(nullptr, call, MPI_ERR_ARG, "unknown statistic \"%s\"", name);
}

}  // extern "C"
