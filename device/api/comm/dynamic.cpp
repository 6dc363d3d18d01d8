// MPI's dynamic processes between jobs that already run: ports
// (Open_port, Close_port), Comm_accept and Comm_connect, Comm_join over a
// socket the program gives, and a name service (Publish_name, Lookup_name,
// Unpublish_name) kept as files in one directory, which the jobs of a host
// (or of hosts sharing that file system) see alike. Spawning is not here yet.
//
// A port name is "iris-port:<job hash, hex>:<rank>:<port>:<netmod card>".
// A connect's root sends its group's table (each member's job hash, rank
// and netmod card, and the group's proposal of a context id) to the accept's
// root as a port packet (protocols/port.hpp); the accept's root answers
// with its own group's table and the context id both groups take, the
// larger proposal (ids only grow in each process, so the larger is free in
// both groups), or with an empty answer when the port is not open. Each
// root then broadcasts the other group to its own; every member makes a VC
// for each remote process (transports/dynamic.hpp) and registers the
// intercommunicator. Processes of another job are reached through the
// netmod, opened then in a job that had none; processes of the same job
// through their world VC.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device/api/check.hpp"
#include "device/api/comm/intercomm.hpp"
#include "device/protocols/engine_choice.hpp"
#include "device/protocols/port.hpp"
#include "device/runtime/progress.hpp"
#include "device/transports/dynamic.hpp"
#include "device/transports/net.hpp"

using namespace iris;
using iris::api::communicator;

namespace {

constexpr std::string_view port_prefix = "iris-port:";
constexpr std::size_t max_card = 800;

struct member {
  std::uint64_t job = 0;
  std::int32_t rank = 0;
  std::string card;
};

// What a root sends the other: its group, and the context id it proposes
// (a request) or both take (a reply).
struct group_table {
  std::uint32_t context = 0;
  std::vector<member> members;
};

void put(std::vector<std::byte> &out, const void *p, std::size_t n) {
  const auto *b = static_cast<const std::byte *>(p);
  out.insert(out.end(), b, b + n);
}

std::vector<std::byte> encode(const group_table &t) {
  std::vector<std::byte> out;
  const auto n = static_cast<std::uint32_t>(t.members.size());
  put(out, &t.context, sizeof t.context);
  put(out, &n, sizeof n);
  for (const member &m : t.members) {
    const auto len = static_cast<std::uint32_t>(m.card.size());
    put(out, &m.job, sizeof m.job);
    put(out, &m.rank, sizeof m.rank);
    put(out, &len, sizeof len);
    put(out, m.card.data(), len);
  }
  return out;
}

// False when `in` is not a table (it came from outside: checked whole).
bool decode(std::span<const std::byte> in, group_table &t) {
  std::size_t at = 0;
  const auto take = [&](void *p, std::size_t n) {
    if (in.size() - at < n) return false;
    std::memcpy(p, in.data() + at, n);
    at += n;
    return true;
  };
  std::uint32_t n = 0;
  if (!take(&t.context, sizeof t.context) || !take(&n, sizeof n)) return false;
  if (n == 0 || n > (in.size() - at) / 16) return false;
  t.members.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    member m;
    std::uint32_t len = 0;
    if (!take(&m.job, sizeof m.job) || !take(&m.rank, sizeof m.rank) || !take(&len, sizeof len)) {
      return false;
    }
    if (len > max_card || len > in.size() - at || m.rank < 0) return false;
    m.card.assign(reinterpret_cast<const char *>(in.data() + at), len);
    at += len;
    t.members.push_back(std::move(m));
  }
  return at == in.size();
}

struct port_name {
  std::uint64_t job = 0;
  int rank = 0;
  int port = 0;
  std::string card;
};

std::string port_format(const port_name &p) {
  char head[96];
  std::snprintf(head, sizeof head,
                "%.*s%016" PRIx64 ":%d:%d:", static_cast<int>(port_prefix.size()),
                port_prefix.data(), p.job, p.rank, p.port);
  return head + p.card;
}

bool port_parse(const char *text, port_name &out) {
  const std::string_view s(text);
  if (!s.starts_with(port_prefix)) return false;
  unsigned long long job = 0;
  int rank = -1;
  int port = -1;
  int used = 0;
  const std::string rest(s.substr(port_prefix.size()));
  if (std::sscanf(rest.c_str(), "%16llx:%d:%d:%n", &job, &rank, &port, &used) != 3 || used == 0 ||
      rank < 0 || port <= 0) {
    return false;
  }
  out = {static_cast<std::uint64_t>(job), rank, port, rest.substr(static_cast<std::size_t>(used))};
  return !out.card.empty();
}

// The error of a call about a port or its connection, with one line.
int port_error(const communicator *c, const char *call, int error_class, const std::string &why) {
  return device::error_raise(c, call, error_class, "%s", why.c_str());
}

// Every member's entry of the group of `c`, at the root (collective).
// `card` is this member's; empty when it has no netmod (then `ok` is 0).
std::vector<member> gather_members(const communicator &c, int root, const std::string &card) {
  struct entry {
    std::uint64_t job;
    std::int32_t rank;
    std::uint32_t len;
    char card[max_card];
  };
  entry mine{};
  mine.job = device::job_hash_here();
  mine.rank = device::rt->rank;
  mine.len = static_cast<std::uint32_t>(std::min(card.size(), max_card));
  std::memcpy(mine.card, card.data(), mine.len);
  std::vector<entry> all(c.rank == root ? static_cast<std::size_t>(c.size) : 0);
  MPI_Gather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, root, c.handle);
  std::vector<member> out;
  for (const entry &e : all) out.push_back({e.job, e.rank, std::string(e.card, e.len)});
  return out;
}

// The root's verdict, the context and the other group's table, from the
// root to every member of `c` (collective). Returns the verdict.
int bcast_outcome(const communicator &c, int root, int verdict, std::uint32_t &context,
                  std::vector<std::byte> &table, std::string &why) {
  std::uint64_t head[3] = {static_cast<std::uint64_t>(verdict), context, table.size()};
  MPI_Bcast(head, 3, MPI_UINT64_T, root, c.handle);
  context = static_cast<std::uint32_t>(head[1]);
  std::uint64_t why_length = why.size();
  MPI_Bcast(&why_length, 1, MPI_UINT64_T, root, c.handle);
  why.resize(why_length);
  if (why_length > 0) {
    MPI_Bcast(why.data(), static_cast<int>(why_length), MPI_CHAR, root, c.handle);
  }
  table.resize(head[2]);
  if (head[2] > 0) MPI_Bcast(table.data(), static_cast<int>(head[2]), MPI_BYTE, root, c.handle);
  return static_cast<int>(head[0]);
}

// Writes a port step, polling while the transport has no room.
void port_write(int vc_index, device::port_step step, int port, std::span<const std::byte> table) {
  device::vc &to = device::rt->vcs[static_cast<std::size_t>(vc_index)];
  while (!device::port_send(to, step, port, table)) device::progress_poll();
}

// The first waiting step that `pick` takes, removed from the inbox.
template <typename Pick>
bool inbox_take(Pick pick, device::port_message &out) {
  auto &inbox = device::rt->port_inbox;
  const auto found = std::find_if(inbox.begin(), inbox.end(), pick);
  if (found == inbox.end()) return false;
  out = std::move(*found);
  inbox.erase(found);
  return true;
}

// The part of accept and connect both groups share: this member's card,
// collectively checked (each member must reach the others' jobs).
int card_here(const communicator &c, const char *call, std::string &card) {
  std::string why;
  device::net_transport *net = device::net_for_others(why);
  if (net != nullptr) {
    card = net->dynamic_card();
    if (card.empty()) why = "the netmod (IRIS_NETMOD) cannot reach processes of other jobs";
    if (card.size() > max_card) why = "this process's netmod card is too long for a port";
  }
  int ok = why.empty() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c.handle);
  if (!why.empty()) return port_error(&c, call, MPI_ERR_OTHER, why);
  if (ok == 0) {
    return port_error(&c, call, MPI_ERR_OTHER, "another member cannot reach other jobs");
  }
  return MPI_SUCCESS;
}

// Makes the intercommunicator of `c`'s group and `remote` on `context`
// (every member).
int intercomm_make(communicator &c, const char *call, const group_table &remote,
                   std::uint32_t context, std::uint32_t local_context, bool accepted,
                   MPI_Comm *newcomm) {
  std::vector<int> remote_vcs;
  for (const member &m : remote.members) {
    std::string why;
    const int v = device::peer_of(m.job, m.rank, m.card, why);
    if (v < 0) return port_error(&c, call, MPI_ERR_OTHER, why);
    if (std::find(c.world_rank.begin(), c.world_rank.end(), v) != c.world_rank.end()) {
      return port_error(&c, call, MPI_ERR_OTHER, "a process is in both groups");
    }
    remote_vcs.push_back(v);
  }
  device::rt->next_context = std::max(device::rt->next_context, context + 2);
  *newcomm = device::comm_register_inter(c.world_rank, std::move(remote_vcs), context,
                                         local_context, c.errhandler);
  device::communicator *made = device::comm_lookup(*newcomm);
  made->session = c.session;
  made->merge_first = accepted ? 1 : 2;  // the accepting group first on a tie
  return MPI_SUCCESS;
}

int check_root(const char *call, MPI_Comm comm, int root, communicator *&c) {
  if (int err = api::check_intracomm(call, comm, c)) return err;
  if (root < 0 || root >= c->size) {
    return device::error_raise(c, call, MPI_ERR_ROOT, "invalid root %d (communicator size %d)",
                               root, c->size);
  }
  return MPI_SUCCESS;
}

// What a connect or accept agrees locally before the roots talk: the local
// group's own context (for the intercommunicator's local traffic) and its
// proposal for the shared one.
struct local_agreement {
  std::uint32_t local_context;
  std::uint32_t proposal;
};
local_agreement agree_locally(const communicator &c) {
  const std::uint32_t mine = device::context_agree(c);
  return {mine, device::context_propose(c)};
}

// The name service's directory: IRIS_NAMESERV_DIR, else one per user in /tmp.
std::string names_dir() {
  const char *given = std::getenv("IRIS_NAMESERV_DIR");
  if (given != nullptr && given[0] != '\0') return given;
  return "/tmp/iris-names-" + std::to_string(getuid());
}

std::string name_file(const std::string &dir, const char *service) {
  std::string hex;
  for (const char ch : std::string_view(service)) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", static_cast<unsigned char>(ch));
    hex += two;
  }
  return dir + "/" + hex;
}

// Names this process published and did not unpublish: removed at the end.
std::set<std::string> &published() {
  static std::set<std::string> files;
  return files;
}

}  // namespace

int api::group_cards(communicator &local, int leader, const char *call, std::vector<int> &packed) {
  packed.clear();
  std::string card;
  const int err = card_here(local, call, card);
  if (err != MPI_SUCCESS) return err;
  const std::vector<member> members = gather_members(local, leader, card);
  if (local.rank != leader) return MPI_SUCCESS;
  const std::vector<std::byte> bytes = encode({0, members});
  packed.assign(1 + (bytes.size() + sizeof(int) - 1) / sizeof(int), 0);
  packed[0] = static_cast<int>(bytes.size());
  std::memcpy(packed.data() + 1, bytes.data(), bytes.size());
  return MPI_SUCCESS;
}

int api::card_peer(const std::vector<int> &packed, std::uint64_t job, int rank, std::string &why) {
  if (const int known = device::known_peer(job, rank); known >= 0) return known;
  group_table table;
  const std::size_t room = packed.empty() ? 0 : (packed.size() - 1) * sizeof(int);
  if (packed.empty() || packed[0] <= 0 || static_cast<std::size_t>(packed[0]) > room ||
      !decode({reinterpret_cast<const std::byte *>(packed.data() + 1),
               static_cast<std::size_t>(packed[0])},
              table)) {
    why = "the other group sent no cards to reach its processes of other jobs";
    return -1;
  }
  for (const member &m : table.members) {
    if (m.job == job && m.rank == rank) return device::peer_of(job, rank, m.card, why);
  }
  why = "the other group's cards leave out rank " + std::to_string(rank) + " of its job";
  return -1;
}

int api::accept_common(const char *call, const char *port, int root, communicator &comm,
                       MPI_Comm *newcomm, const std::function<bool(std::string &)> &gone) {
  communicator *c = &comm;
  std::string card;
  if (int err = card_here(*c, call, card)) return err;
  ++device::rt->agreeing;  // the other group may send on the new context first
  const local_agreement here = agree_locally(*c);
  const std::vector<member> members = gather_members(*c, root, card);
  int verdict = MPI_SUCCESS;
  std::string why;
  std::uint32_t context = 0;
  std::vector<std::byte> theirs;
  if (c->rank == root) {
    port_name p;
    if (port == nullptr || !port_parse(port, p) || p.job != device::job_hash_here() ||
        p.rank != device::rt->rank || device::rt->ports_open.count(p.port) == 0) {
      verdict = MPI_ERR_PORT;
      why = std::string("not a port the root has open: '") + (port != nullptr ? port : "") + "'";
    } else {
      // Blocks until a connect comes, as MPI's accept does.
      device::port_message request;
      const auto for_port = [&](const device::port_message &m) {
        return m.port == p.port && m.step == device::port_step::request;
      };
      bool given_up = false;
      device::progress_until([&] {
        if (inbox_take(for_port, request)) return true;
        given_up = gone && gone(why);
        return given_up;
      });
      group_table remote;
      if (given_up) {
        verdict = MPI_ERR_SPAWN;
      } else if (!decode(request.table, remote)) {
        verdict = MPI_ERR_OTHER;
        why = "a malformed connection request came to the port";
        port_write(request.from, device::port_step::reply, p.port, {});
      } else {
        context = std::max(here.proposal, remote.context);
        theirs = request.table;
        port_write(request.from, device::port_step::reply, p.port,
                   encode(group_table{context, members}));
      }
    }
  }
  verdict = bcast_outcome(*c, root, verdict, context, theirs, why);
  int err = MPI_SUCCESS;
  if (verdict != MPI_SUCCESS) {
    err = port_error(c, call, verdict, why);
  } else {
    group_table remote;
    (void)decode(theirs, remote);
    err = intercomm_make(*c, call, remote, context, here.local_context, true, newcomm);
  }
  --device::rt->agreeing;
  return err;
}

extern "C" {

int MPI_Open_port(MPI_Info info, char *port_name_out) {
  const device::api_guard guard;
  const char *call = "MPI_Open_port";
  (void)info;
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, port_name_out, "port_name")) return err;
  std::string why;
  device::net_transport *net = device::net_for_others(why);
  const std::string card = net != nullptr ? net->dynamic_card() : std::string();
  if (net != nullptr && card.empty()) why = "the netmod cannot reach processes of other jobs";
  if (!why.empty()) return port_error(nullptr, call, MPI_ERR_OTHER, why);
  static int next_port = 1;
  const port_name p{device::job_hash_here(), device::rt->rank, next_port++, card};
  const std::string text = port_format(p);
  if (text.size() >= MPI_MAX_PORT_NAME) {
    return port_error(nullptr, call, MPI_ERR_OTHER,
                      "the port name would be " + std::to_string(text.size()) +
                          " characters, past MPI_MAX_PORT_NAME (set IRIS_TCP_IF to publish "
                          "fewer addresses)");
  }
  device::rt->ports_open.insert(p.port);
  std::memcpy(port_name_out, text.c_str(), text.size() + 1);
  return MPI_SUCCESS;
}

// Connections waiting on the port are refused (their connects fail with
// MPI_ERR_PORT).
int MPI_Close_port(const char *port_name_in) {
  const device::api_guard guard;
  const char *call = "MPI_Close_port";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, port_name_in, "port_name")) return err;
  port_name p;
  if (!port_parse(port_name_in, p) || p.job != device::job_hash_here() ||
      p.rank != device::rt->rank || device::rt->ports_open.erase(p.port) == 0) {
    return port_error(nullptr, call, MPI_ERR_PORT,
                      std::string("not a port this process has open: '") + port_name_in + "'");
  }
  device::port_message waiting;
  while (inbox_take(
      [&](const device::port_message &m) {
        return m.port == p.port && m.step == device::port_step::request;
      },
      waiting)) {
    port_write(waiting.from, device::port_step::reply, p.port, {});
  }
  return MPI_SUCCESS;
}

int MPI_Comm_accept(const char *port, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_accept";
  (void)info;
  communicator *c = nullptr;
  if (int err = check_root(call, comm, root, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  return api::accept_common(call, port, root, *c, newcomm, {});
}

// Waits IRIS_CONNECT_TIMEOUT seconds at most for the accept.
int MPI_Comm_connect(const char *port, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *newcomm) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_connect";
  (void)info;
  communicator *c = nullptr;
  if (int err = check_root(call, comm, root, c)) return err;
  if (int err = api::check_not_null(call, c, newcomm, "newcomm")) return err;
  std::string card;
  if (int err = card_here(*c, call, card)) return err;
  ++device::rt->agreeing;
  const local_agreement here = agree_locally(*c);
  const std::vector<member> members = gather_members(*c, root, card);
  int verdict = MPI_SUCCESS;
  std::string why;
  std::uint32_t context = 0;
  std::vector<std::byte> theirs;
  if (c->rank == root) {
    port_name p;
    int target = -1;
    if (port == nullptr || !port_parse(port, p)) {
      verdict = MPI_ERR_PORT;
      why = std::string("not an Iris port name: '") + (port != nullptr ? port : "") + "'";
    } else if ((target = device::peer_of(p.job, p.rank, p.card, why)) < 0) {
      verdict = MPI_ERR_PORT;
      why = "cannot reach the port's process: " + why;
    } else {
      port_write(target, device::port_step::request, p.port,
                 encode(group_table{here.proposal, members}));
      const int seconds = device::rt->transport_config.net.connect_timeout_s;
      const std::uint64_t deadline =
          device::monotonic_ns() + static_cast<std::uint64_t>(seconds) * 1'000'000'000U;
      device::port_message reply;
      bool answered = false;
      device::progress_until([&] {
        answered = inbox_take(
            [&](const device::port_message &m) {
              return m.port == p.port && m.from == target && m.step == device::port_step::reply;
            },
            reply);
        return answered || device::monotonic_ns() > deadline;
      });
      group_table remote;
      if (!answered) {
        port_write(target, device::port_step::withdraw, p.port, {});
        verdict = MPI_ERR_PORT;
        why = "no MPI_Comm_accept took the connection within " + std::to_string(seconds) +
              " s (IRIS_CONNECT_TIMEOUT)";
      } else if (reply.table.empty()) {
        verdict = MPI_ERR_PORT;
        why = std::string("the port is closed: '") + port + "'";
      } else if (!decode(reply.table, remote)) {
        verdict = MPI_ERR_OTHER;
        why = "a malformed answer came from the port";
      } else {
        context = remote.context;
        theirs = std::move(reply.table);
      }
    }
  }
  verdict = bcast_outcome(*c, root, verdict, context, theirs, why);
  int err = MPI_SUCCESS;
  if (verdict != MPI_SUCCESS) {
    err = port_error(c, call, verdict, why);
  } else {
    group_table remote;
    (void)decode(theirs, remote);
    err = intercomm_make(*c, call, remote, context, here.local_context, false, newcomm);
  }
  --device::rt->agreeing;
  return err;
}

// Both ends write their own port's name on the socket and read the other's;
// the end with the lower name accepts, the other connects.
int MPI_Comm_join(int fd, MPI_Comm *intercomm) {
  const device::api_guard guard;
  const char *call = "MPI_Comm_join";
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, intercomm, "intercomm")) return err;
  char mine[MPI_MAX_PORT_NAME] = {};
  char theirs[MPI_MAX_PORT_NAME] = {};
  if (int err = MPI_Open_port(MPI_INFO_NULL, mine)) return err;
  const auto io = [&](bool writing, char *buffer) {
    std::size_t done = 0;
    while (done < MPI_MAX_PORT_NAME) {
      const ssize_t n = writing ? ::write(fd, buffer + done, MPI_MAX_PORT_NAME - done)
                                : ::read(fd, buffer + done, MPI_MAX_PORT_NAME - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  };
  if (!io(true, mine) || !io(false, theirs) || theirs[MPI_MAX_PORT_NAME - 1] != '\0') {
    MPI_Close_port(mine);
    return port_error(nullptr, call, MPI_ERR_OTHER,
                      "socket " + std::to_string(fd) +
                          " did not carry the other process's port name (it must be a connected "
                          "socket to a process calling MPI_Comm_join)");
  }
  const int cmp = std::strcmp(mine, theirs);
  if (cmp == 0) {
    MPI_Close_port(mine);
    return port_error(nullptr, call, MPI_ERR_OTHER, "the socket leads back to this process");
  }
  const int err = cmp < 0 ? MPI_Comm_accept(mine, MPI_INFO_NULL, 0, MPI_COMM_SELF, intercomm)
                          : MPI_Comm_connect(theirs, MPI_INFO_NULL, 0, MPI_COMM_SELF, intercomm);
  MPI_Close_port(mine);
  return err;
}

int MPI_Publish_name(const char *service_name, MPI_Info info, const char *port_name_in) {
  const device::api_guard guard;
  const char *call = "MPI_Publish_name";
  (void)info;
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, service_name, "service_name")) return err;
  if (int err = api::check_not_null(call, nullptr, port_name_in, "port_name")) return err;
  const std::string dir = names_dir();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return port_error(nullptr, call, MPI_ERR_SERVICE,
                      "cannot make the name directory " + dir + ": " + std::strerror(errno));
  }
  const std::string file = name_file(dir, service_name);
  // Written aside, then linked into place: a lookup never reads half a name,
  // and of two publishers of one name only the first links.
  const std::string aside = file + ".tmp." + std::to_string(getpid());
  const int fd = ::open(aside.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const std::size_t n = std::strlen(port_name_in);
  const bool written = fd >= 0 && ::write(fd, port_name_in, n) == static_cast<ssize_t>(n);
  if (fd >= 0) ::close(fd);
  const bool linked = written && ::link(aside.c_str(), file.c_str()) == 0;
  const int link_errno = errno;
  ::unlink(aside.c_str());
  if (!linked) {
    return port_error(nullptr, call, MPI_ERR_SERVICE,
                      std::string("cannot publish '") + service_name + "' in " + dir + ": " +
                          (written && link_errno == EEXIST ? "the name is already published"
                                                           : std::strerror(link_errno)));
  }
  published().insert(file);
  return MPI_SUCCESS;
}

int MPI_Unpublish_name(const char *service_name, MPI_Info info, const char *port_name_in) {
  const device::api_guard guard;
  const char *call = "MPI_Unpublish_name";
  (void)info;
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, service_name, "service_name")) return err;
  if (int err = api::check_not_null(call, nullptr, port_name_in, "port_name")) return err;
  const std::string file = name_file(names_dir(), service_name);
  // Only the pair published goes: the name under another port stays.
  char text[MPI_MAX_PORT_NAME] = {};
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  const ssize_t n = fd >= 0 ? ::read(fd, text, sizeof(text) - 1) : -1;
  if (fd >= 0) ::close(fd);
  if (n > 0 && std::strcmp(text, port_name_in) != 0) {
    return port_error(nullptr, call, MPI_ERR_SERVICE,
                      std::string("'") + service_name + "' is published for another port");
  }
  if (n <= 0 || ::unlink(file.c_str()) != 0) {
    return port_error(nullptr, call, MPI_ERR_SERVICE,
                      std::string("'") + service_name + "' is not published");
  }
  published().erase(file);
  return MPI_SUCCESS;
}

int MPI_Lookup_name(const char *service_name, MPI_Info info, char *port_name_out) {
  const device::api_guard guard;
  const char *call = "MPI_Lookup_name";
  (void)info;
  if (int err = api::check_initialized(call)) return err;
  if (int err = api::check_not_null(call, nullptr, service_name, "service_name")) return err;
  if (int err = api::check_not_null(call, nullptr, port_name_out, "port_name")) return err;
  const std::string file = name_file(names_dir(), service_name);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  char text[MPI_MAX_PORT_NAME] = {};
  const ssize_t n = fd >= 0 ? ::read(fd, text, sizeof(text) - 1) : -1;
  if (fd >= 0) ::close(fd);
  if (n <= 0) {
    return port_error(nullptr, call, MPI_ERR_NAME,
                      std::string("no port is published as '") + service_name + "'");
  }
  std::memcpy(port_name_out, text, static_cast<std::size_t>(n) + 1);
  return MPI_SUCCESS;
}

}  // extern "C"

// At the end of MPI: the names this process left published go.
void iris::api::names_unpublish_all() {
  for (const std::string &file : published()) ::unlink(file.c_str());
  published().clear();
}
