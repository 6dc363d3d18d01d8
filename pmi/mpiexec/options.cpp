// The command line: one table declares every option with its default and help
// text; --help prints it, the parser walks it.
#include "pmi/mpiexec/options.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace iris::mpiexec {
namespace {

// More ranks than this on one host is a typo, not a job.
constexpr int max_ranks = 100000;

int parse_nranks(std::string_view text) {
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > max_ranks) {
    throw usage_error("-n needs a number of ranks from 1 to " + std::to_string(max_ranks) +
                      ", got '" + std::string(text) + "'");
  }
  return n;
}

int parse_nodes(std::string_view text) {
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > max_ranks) {
    throw usage_error("--nodes needs a number of nodes from 1 to " + std::to_string(max_ranks) +
                      ", got '" + std::string(text) + "'");
  }
  return n;
}

std::optional<double> parse_seconds(std::string_view text) {
  const std::string copy(text);
  char *end = nullptr;
  const double seconds = std::strtod(copy.c_str(), &end);
  if (copy.empty() || *end != '\0' || !std::isfinite(seconds) || seconds <= 0 || seconds > 1e7) {
    return std::nullopt;
  }
  return seconds;
}

bind_policy parse_bind(std::string_view text) {
  if (text == "core") return bind_policy::core;
  if (text == "none") return bind_policy::none;
  throw usage_error("--bind-to takes core or none, got '" + std::string(text) + "'");
}

env_setting parse_env(std::string_view text) {
  const std::size_t equals = text.find('=');
  const std::string_view name = text.substr(0, equals);
  if (name.empty())
    throw usage_error("-x takes NAME or NAME=value, got '" + std::string(text) + "'");
  if (equals == std::string_view::npos) return {std::string(name), std::nullopt};
  return {std::string(name), std::string(text.substr(equals + 1))};
}

// A working directory the ranks can enter, checked before any starts.
std::string parse_wdir(std::string_view text) {
  const std::string dir(text);
  struct stat info;
  if (dir.empty() || ::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    throw usage_error("-wdir '" + dir + "' is not a directory");
  }
  if (::access(dir.c_str(), X_OK) != 0) {
    throw usage_error("-wdir '" + dir + "': cannot enter it (" + std::strerror(errno) + ")");
  }
  return dir;
}

struct option_spec {
  std::array<std::string_view, 2> names;  // second one may be empty
  std::string_view value_name;            // empty: a flag without a value
  std::string_view default_text;
  std::string_view help;
  void (*apply)(options &, std::string_view value);
};

constexpr std::array option_table{
    option_spec{
        .names = {"-n", "-np"},
        .value_name = "N",
        .default_text = "",
        .help = "number of ranks to start on this host (required)",
        .apply = [](options &o, std::string_view v) { o.nranks = parse_nranks(v); },
    },
    option_spec{
        .names = {"--nodes", ""},
        .value_name = "K",
        .default_text = "1",
        .help = "spread the ranks over K simulated nodes of this host, in blocks: ranks on "
                "one node talk through shared memory, ranks on different nodes through the "
                "netmod",
        .apply = [](options &o, std::string_view v) { o.nodes = parse_nodes(v); },
    },
    option_spec{
        .names = {"--bind-to", ""},
        .value_name = "core|none",
        .default_text = "core if ranks <= cores, else none",
        .help = "bind each rank to one core, round-robin over the cores, or not at all",
        .apply = [](options &o, std::string_view v) { o.bind = parse_bind(v); },
    },
    option_spec{
        .names = {"--report-bindings", ""},
        .value_name = "",
        .default_text = "off",
        .help = "print one line per rank on stderr saying where it is bound",
        .apply = [](options &o, std::string_view) { o.report_bindings = true; },
    },
    option_spec{
        .names = {"--timeout", ""},
        .value_name = "S",
        .default_text = "$MPIEXEC_TIMEOUT, else none",
        .help = "kill the job after S seconds (decimals allowed) and exit 124",
        .apply =
            [](options &o, std::string_view v) {
              o.timeout_s = parse_seconds(v);
              if (!o.timeout_s) {
                throw usage_error("--timeout takes a positive number of seconds, got '" +
                                  std::string(v) + "'");
              }
            },
    },
    option_spec{
        .names = {"--enable-recovery", ""},
        .value_name = "",
        .default_text = "off: a rank that fails ends the job",
        .help = "fault tolerance (ULFM): a rank that dies after connecting to PMIx (killed "
                "by a signal, or exits without finalizing PMIx) does not end the job; "
                "mpiexec tells the other ranks through a PMIx event and they go on. Sets "
                "IRIS_RECOVERY=1 in every rank unless -x IRIS_RECOVERY is given. Exit "
                "status: 0 when every rank that did not die exited 0, else the first "
                "nonzero code of such a rank (that of the first death when none is left)",
        .apply = [](options &o, std::string_view) { o.recovery = true; },
    },
    option_spec{
        .names = {"-wdir", "--wdir"},
        .value_name = "DIR",
        .default_text = "mpiexec's working directory",
        .help = "run the program's ranks in DIR; before the first program it is also the "
                "default of the programs after ':', each of which may give its own "
                "(: -n M -wdir DIR2 program2)",
        .apply = [](options &o, std::string_view v) { o.wdir = parse_wdir(v); },
    },
    option_spec{
        .names = {"-x", ""},
        .value_name = "NAME[=value]",
        .default_text = "mpiexec's whole environment is passed anyway",
        .help = "pass NAME from mpiexec's environment, or set it to value; repeatable",
        .apply = [](options &o, std::string_view v) { o.env.push_back(parse_env(v)); },
    },
    option_spec{
        .names = {"--info", ""},
        .value_name = "",
        .default_text = "",
        .help = "print this build's configuration, the netmod a job started now would use "
                "and what it would choose (interfaces, libfabric provider), and every IRIS_* "
                "setting, then exit; -x settings before it apply",
        .apply = [](options &o, std::string_view) { o.info = true; },
    },
    option_spec{
        .names = {"-h", "--help"},
        .value_name = "",
        .default_text = "",
        .help = "print this help and exit",
        .apply = [](options &o, std::string_view) { o.help = true; },
    },
};

const option_spec *find_option(std::string_view name) {
  for (const option_spec &spec : option_table) {
    if (name == spec.names[0] || (!spec.names[1].empty() && name == spec.names[1])) return &spec;
  }
  return nullptr;
}

bool is_executable_file(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// Resolves `name` the way execvp(3) would, so that a missing program is
// reported here, before any rank starts.
// A relative path is taken in `wdir` when one is given, where the rank runs.
std::string resolve_program(const std::string &name, const std::string &wdir) {
  if (name.find('/') != std::string::npos) {
    const std::string path = name[0] != '/' && !wdir.empty() ? wdir + "/" + name : name;
    const std::string where = path != name ? " (in -wdir " + wdir + ")" : "";
    struct stat info;
    if (::stat(path.c_str(), &info) != 0) {
      throw usage_error("program '" + name + "' not found" + where);
    }
    if (!is_executable_file(path)) {
      throw usage_error("program '" + name + "' is not an executable file" + where);
    }
    return path;
  }
  const char *path_env = std::getenv("PATH");
  const std::string_view path = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view dir = path.substr(start, end - start);
    const std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  throw usage_error("program '" + name + "' not found in PATH");
}

}  // namespace

options parse_options(int argc, char **argv) {
  options opts;
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // the program
    std::optional<std::string_view> inline_value;
    if (arg.starts_with("--") && arg.find('=') != std::string_view::npos) {
      inline_value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
    }
    const option_spec *spec = find_option(arg);
    if (spec == nullptr) {
      throw usage_error("unknown option '" + std::string(arg) + "' (mpiexec --help lists them)");
    }
    std::string_view value;
    if (!spec->value_name.empty()) {
      if (inline_value) {
        value = *inline_value;
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        throw usage_error("option " + std::string(arg) + " needs a value (" +
                          std::string(spec->value_name) + ")");
      }
    } else if (inline_value) {
      throw usage_error("option " + std::string(arg) + " takes no value");
    }
    spec->apply(opts, value);
    if (opts.help || opts.info) return opts;
  }

  if (opts.nranks == 0) {
    throw usage_error("no -n given: say how many ranks to start, e.g. mpiexec -n 4 ./prog");
  }
  if (i >= argc) throw usage_error("no program given: mpiexec -n N program [args...]");
  if (!opts.timeout_s) {
    const char *env = std::getenv("MPIEXEC_TIMEOUT");
    if (env != nullptr && *env != '\0') {
      opts.timeout_s = parse_seconds(env);
      if (!opts.timeout_s) {
        throw usage_error("MPIEXEC_TIMEOUT must be a positive number of seconds, got '" +
                          std::string(env) + "'");
      }
    }
  }
  // The first program and its arguments, then `: -n N program args` for
  // each further one.
  const int first = opts.nranks;
  int total = 0;
  while (i < argc) {
    int end = i;
    while (end < argc && std::string_view(argv[end]) != ":") ++end;
    options::app a;
    a.nranks = opts.apps.empty() ? first : 0;
    a.wdir = opts.wdir;
    int at = i;
    // After ':', -n N and maybe -wdir DIR, in either order.
    while (!opts.apps.empty() && at + 1 < end) {
      const std::string_view name = argv[at];
      if (name == "-n" || name == "-np") {
        a.nranks = parse_nranks(argv[at + 1]);
      } else if (name == "-wdir" || name == "--wdir") {
        a.wdir = parse_wdir(argv[at + 1]);
      } else {
        break;
      }
      at += 2;
    }
    if (!opts.apps.empty() && a.nranks == 0) {
      throw usage_error("after ':' comes -n N [-wdir DIR] program [args...]");
    }
    if (at >= end) throw usage_error("no program given after ':'");
    a.program_path = resolve_program(argv[at], a.wdir);
    a.argv.assign(argv + at, argv + end);
    total += a.nranks;
    opts.apps.push_back(std::move(a));
    if (end + 1 == argc) throw usage_error("no program given after ':'");
    i = end + 1;
  }
  opts.nranks = total;
  if (opts.recovery && std::none_of(opts.env.begin(), opts.env.end(), [](const env_setting &e) {
        return e.name == "IRIS_RECOVERY";
      })) {
    // First, so that nothing the user wrote is applied before it.
    opts.env.insert(opts.env.begin(), env_setting{"IRIS_RECOVERY", "1"});
  }
  if (opts.nodes > opts.nranks) {
    throw usage_error("--nodes " + std::to_string(opts.nodes) + " is more nodes than the " +
                      std::to_string(opts.nranks) + " ranks of -n");
  }
  return opts;
}

void print_help(std::FILE *out) {
  std::fprintf(out,
               "Usage: mpiexec [options] -n N program [args...] [: -n M [-wdir DIR] program2 "
               "[args...]]...\n"
               "Starts N ranks of program (then M of program2, ...) on this host as their PMIx\n"
               "server; MPI_APPNUM numbers the programs when there are several.\n\n"
               "Options:\n");
  for (const option_spec &spec : option_table) {
    std::string names(spec.names[0]);
    if (!spec.names[1].empty()) names += ", " + std::string(spec.names[1]);
    if (!spec.value_name.empty()) names += " " + std::string(spec.value_name);
    std::fprintf(out, "  %-22s %.*s\n", names.c_str(), static_cast<int>(spec.help.size()),
                 spec.help.data());
    if (!spec.default_text.empty()) {
      std::fprintf(out, "  %-22s default: %.*s\n", "", static_cast<int>(spec.default_text.size()),
                   spec.default_text.data());
    }
  }
  std::fprintf(out,
               "\nExit status: that of the first rank to fail (128+N if killed by signal N),\n"
               "the abort code after an abort, 124 after --timeout, 128+N after mpiexec\n"
               "gets signal N, 2 for bad arguments, 1 when mpiexec itself fails.\n"
               "With --enable-recovery a rank's death is reported on stderr only: the exit\n"
               "status is 0 when every rank that did not die exited 0, else the first nonzero\n"
               "code of such a rank (that of the first death when every rank died).\n");
}

}  // namespace iris::mpiexec
