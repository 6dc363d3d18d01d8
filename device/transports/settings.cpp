// The transports' settings: their tunables, declared once with default and
// help text beside the device's (iris_info prints them all), and read at
// MPI_Init. Shared memory first, then the netmod adapter; each netmod
// declares its own in netmods/<name>/settings.cpp.
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "device/base/text.hpp"
#include "device/core/transport.hpp"
#include "device/transports/net.hpp"
#include "netmods/netmod.hpp"

#ifndef IRIS_NETMOD_LIST
#error "device/meson.build defines IRIS_NETMOD_LIST from -Dnetmods"
#endif

namespace iris::device {
namespace {

constexpr tunable table[] = {
    // Shared memory (transport_shm.cpp, shm/).
    {"IRIS_SHM", 1, 0, 1, nullptr,
     "0 sends everything, also between ranks of one node, through the netmod"},
    {"IRIS_SHM_RING_SIZE", -1, -1, 1 << 30, nullptr,
     "bytes of each shared-memory ring (one per ordered pair of ranks on a node of at most "
     "IRIS_SHM_DENSE_RANKS ranks, else one per busy pair, from the pool); a power of two. -1 "
     "chooses: on those small nodes 8 MiB per rank shared by the rings it receives on (4 MiB "
     "each for up to 3 ranks, 1 MiB at 8), never under 256 KiB; 256 KiB for pooled rings"},
    {"IRIS_SHM_FRAGMENT_SIZE", 32 * 1024, 64, 1 << 29, nullptr,
     "largest payload of one shared-memory record; rendezvous data is streamed in pieces of "
     "this size (capped at half the ring)"},
    {"IRIS_SHM_DENSE_RANKS", 8, 0, 1 << 16, nullptr,
     "a node with at most this many ranks reserves one ring per ordered pair at start-up "
     "(fastest for few ranks; memory grows with the square of the ranks); a larger node gives "
     "each rank a receive queue and pair rings from a pool (shm/README.md). 0: always queues"},
    {"IRIS_SHM_QUEUE_CELLS", 256, 16, 1 << 24, nullptr,
     "cells of 256 bytes in each rank's shared-memory receive queue (a power of two), reserved "
     "at start-up; on large nodes the eager limit and the fragment size are capped at half "
     "the queue"},
    {"IRIS_SHM_POOL_SIZE", 128 * 1024 * 1024, 0, std::int64_t{1} << 40, nullptr,
     "most bytes of pair rings (IRIS_SHM_RING_SIZE each) a node holds beyond the receive queues; "
     "reserved one ring at a time while the job runs. Once spent (or /dev/shm is full) pairs "
     "keep using the queues"},
    {"IRIS_SHM_BUSY_PACKETS", 64, 0, 1 << 30, nullptr,
     "packets a rank sends to one peer of its node through the peer's queue before it takes a "
     "pair ring from the pool (a packet that does not fit one queue cell takes one at once)"},
    {"IRIS_RNDV_ENGINE", 0, 0, 2, "auto,cma,pipeline",
     "how rendezvous data moves between ranks of one node: cma reads the sender's memory "
     "(process_vm_readv, one copy by the receiver); pipeline streams it through the ring "
     "(two copies, by both sides at once); auto starts from a fixed rule (the pipeline for a "
     "message alone) and then takes what each peer's messages have shown faster, apart for "
     "messages alone and for streams, where the kernel allows cma"},
    {"IRIS_CMA_THRESHOLD", 32 * 1024, 0, std::int64_t{1} << 40, nullptr,
     "with IRIS_RNDV_ENGINE=auto, the smallest rendezvous message read with cma"},
    {"IRIS_CMA_MIN_BLOCK", 64 * 1024, 1, std::int64_t{1} << 40, nullptr,
     "a rendezvous message of a non-contiguous datatype is read with cma (one iovec per block) "
     "only when the mean block of each non-contiguous side is at least this many bytes (and "
     "the engine choice says cma); smaller blocks are packed and unpacked through the pipeline"},
    {"IRIS_PIPELINE_LARGE", std::int64_t{1} << 40, 0, std::int64_t{1} << 40, nullptr,
     "with IRIS_RNDV_ENGINE=auto, from this size up a rank that is not sending itself lets the "
     "sender copy through the pipeline instead of reading with cma (the default, 1 TiB, never: "
     "cma streamed 2-4 MiB at 12-13 GB/s here against the pipeline's 8)"},
    // The netmod adapter (transport_net.cpp, netmods/).
    {"IRIS_NETMOD", 0, 0, 0, "",
     "the network modules for ranks on other nodes, an ordered list of those this build has "
     "(" IRIS_NETMOD_LIST ", chosen by meson setup -Dnetmods=...): each peer gets the first one "
     "in the list of the lower of the two ranks that both offer and that reaches it (one name: "
     "every peer through it); auto: every netmod built that starts here (ofi only with a fabric "
     "device or a provider named), and each pair of nodes takes the faster of those it shares, "
     "measured at MPI_Init; empty: auto when the build has several, else its one"},
    {"IRIS_NETMOD_PATH", 0, 0, 0, "",
     "folders, colon-separated, searched for netmods loaded at run time "
     "(libiris-netmod-<name>.so) before <libdir>/iris and the build tree's netmods/ (read by "
     "netmods/modules.cpp)"},
    {"IRIS_NET_FRAGMENT_SIZE", 512 * 1024, 64, 64 << 20, nullptr,
     "largest payload of one netmod packet: eager messages up to IRIS_EAGER_LIMIT and "
     "rendezvous data in pieces of this size. Each inbound connection holds a buffer of about "
     "this size"},
    {"IRIS_NET_EAGER_LIMIT", 64 * 1024, 0, 64 << 20, nullptr,
     "largest message sent eagerly to a peer reached through the netmod; a round trip costs "
     "more there, so it is larger than IRIS_EAGER_LIMIT"},
    {"IRIS_NET_EAGER_WINDOW", 1024 * 1024, 128, 1 << 22, nullptr,
     "as IRIS_EAGER_WINDOW, for peers reached through the netmod: bounds a receiver's "
     "unexpected eager memory to this much per such peer"},
    {"IRIS_NET_RMA", 1, 0, 1, nullptr,
     "1: when the netmod can read a peer's memory (ofi with FI_RMA), a rendezvous receiver reads "
     "the sender's buffer itself, and one-sided windows' large puts and gets are its writes and "
     "reads; 0: the data always comes as packets after a CTS, and windows' ops as active "
     "messages"},
    // Dynamic processes (api/comm/dynamic.cpp).
    {"IRIS_DYNAMIC_PEERS", 1024, 0, 1 << 20, nullptr,
     "processes of other jobs one process may connect to in its life (MPI_Comm_connect, "
     "MPI_Comm_accept, MPI_Comm_join): room for their VCs is reserved at MPI_Init, as address "
     "space only; 0 refuses them"},
    {"IRIS_CONNECT_TIMEOUT", 60, 1, 86400, nullptr,
     "seconds an MPI_Comm_connect waits for an MPI_Comm_accept on its port before it fails with "
     "MPI_ERR_PORT"},
    {"IRIS_UNIVERSE_SIZE", 0, 0, 1 << 20, nullptr,
     "the MPI_UNIVERSE_SIZE attribute: how many processes a program may count on, with those it "
     "spawns (0, or less than the world's size: the world's size)"},
    {"IRIS_SPAWN_LAUNCHER", 0, 0, 0, "",
     "the mpiexec MPI_Comm_spawn starts the children with (empty: the one that started this job, "
     "else the one installed with this library, else the build tree's)"},
    {"IRIS_NAMESERV_DIR", 0, 0, 0, "",
     "the directory of MPI_Publish_name's names, one file each, shared by the jobs that look "
     "them up (empty: /tmp/iris-names-<uid>)"},
};

std::int64_t value_of(std::string_view name) {
  return tunable_value(tunable_named(table, name));
}

}  // namespace

bool netmod_auto(std::string_view text) {
  return text == "auto" || (text.empty() && netmod::netmods_built().find(',') != std::string::npos);
}

std::vector<std::string> netmod_list(std::string_view text) {
  const std::string_view built = netmod::netmods_built();
  // auto: every netmod built; one that cannot start or load here is left
  // out when the rank opens its netmods (nets_open), not refused.
  if (netmod_auto(text)) {
    std::vector<std::string> names;
    for (const std::string_view name : split(built, ',')) names.emplace_back(name);
    return names;
  }
  std::vector<std::string> names;
  for (const std::string_view item : split(text, ',')) {
    const std::string name(item);
    std::string why;
    if (name.empty()) {
      why = "an empty name";
    } else if (std::find(names.begin(), names.end(), name) != names.end()) {
      why = name + " twice";
    }
    if (!why.empty()) {
      throw std::runtime_error("IRIS_NETMOD lists " + why + " (built: " + std::string(built) +
                               "; give an ordered list of netmods, such as ofi,tcp)");
    }
    // A netmod of this build, or a module that loads.
    if (std::string unknown; !netmod::netmod_known(name, unknown)) {
      throw std::runtime_error("IRIS_NETMOD lists " + name + ", which " + unknown);
    }
    names.push_back(name);
  }
  return names;
}

bool netmod_built(std::string_view name) {
  const std::vector<std::string_view> built = split(netmod::netmods_built(), ',');
  return std::find(built.begin(), built.end(), name) != built.end();
}

std::span<const tunable> transport_tunables() {
  static const std::vector<tunable> all = [] {
    std::vector<tunable> v(std::begin(table), std::end(table));
    for (const tunable &t : netmod::netmods_tunables()) v.push_back(t);
    return v;
  }();
  return all;
}

transport_settings transport_settings_load() {
  transport_settings s{};
  s.shm.enabled = value_of("IRIS_SHM") != 0;
  const std::int64_t ring = value_of("IRIS_SHM_RING_SIZE");
  s.shm.ring_chosen = ring < 0;
  s.shm.ring_size = s.shm.ring_chosen ? shm_ring_floor : static_cast<std::size_t>(ring);
  s.shm.fragment_size = static_cast<std::size_t>(value_of("IRIS_SHM_FRAGMENT_SIZE"));
  s.shm.dense_ranks = static_cast<int>(value_of("IRIS_SHM_DENSE_RANKS"));
  s.shm.queue_cells = static_cast<std::size_t>(value_of("IRIS_SHM_QUEUE_CELLS"));
  s.shm.pool_size = static_cast<std::size_t>(value_of("IRIS_SHM_POOL_SIZE"));
  s.shm.busy_packets = static_cast<std::uint64_t>(value_of("IRIS_SHM_BUSY_PACKETS"));
  s.shm.engine = static_cast<rndv_engine>(value_of("IRIS_RNDV_ENGINE"));
  s.shm.cma_threshold = static_cast<std::size_t>(value_of("IRIS_CMA_THRESHOLD"));
  s.shm.pipeline_large = static_cast<std::size_t>(value_of("IRIS_PIPELINE_LARGE"));
  s.shm.scattered_min_block = static_cast<std::size_t>(value_of("IRIS_CMA_MIN_BLOCK"));
  const std::string netmods = tunable_text(tunable_named(table, "IRIS_NETMOD"));
  s.net.netmods = netmod_list(netmods);
  s.net.probe = netmod_auto(netmods) && s.net.netmods.size() > 1;
  s.net.fragment_size = static_cast<std::size_t>(value_of("IRIS_NET_FRAGMENT_SIZE"));
  s.net.eager_limit = static_cast<std::size_t>(value_of("IRIS_NET_EAGER_LIMIT"));
  s.net.eager_window = static_cast<int>(value_of("IRIS_NET_EAGER_WINDOW") / 64);
  s.net.rma = value_of("IRIS_NET_RMA") != 0;
  s.net.dynamic_peers = static_cast<std::size_t>(value_of("IRIS_DYNAMIC_PEERS"));
  s.net.connect_timeout_s = static_cast<int>(value_of("IRIS_CONNECT_TIMEOUT"));
  s.net.universe_size = value_of("IRIS_UNIVERSE_SIZE");
  return s;
}

bool transport_setting_value(const transport_settings &s, std::string_view name,
                             std::uint64_t &value) {
  if (name == "shm_fragment_size") {
    value = s.shm.fragment_size;
  } else if (name == "net_eager_limit") {
    value = s.net.eager_limit;
  } else if (name == "net_fragment_size") {
    value = s.net.fragment_size;
  } else {
    return false;
  }
  return true;
}

bool transport_statistic(std::span<const std::unique_ptr<transport>> in_use, std::string_view name,
                         std::uint64_t &value) {
  // Summed: several net transports may count the same kind.
  value = 0;
  bool counted = false;
  for (const auto &t : in_use) {
    std::uint64_t one = 0;
    if (t->statistic(name, one)) {
      value += one;
      counted = true;
    }
  }
  constexpr std::string_view peers_of = "net_peers_";
  return counted || name == "rendezvous_cma" || name == "rendezvous_rma" || name == "window_rma" ||
         (name.starts_with(peers_of) && netmod_built(name.substr(peers_of.size())));
}

std::string netmods_none_start(const transport_settings &s, const std::string &failures) {
  std::string listed;
  for (const std::string &name : s.net.netmods) listed += (listed.empty() ? "" : ",") + name;
  if (s.net.probe)
    return "no netmod starts here (IRIS_NETMOD=auto tried " + listed + "): " + failures;
  return "none of IRIS_NETMOD=" + listed + " starts here: " + failures;
}

std::string transports_preview() {
  const transport_settings s = transport_settings_load();
  const char *asked = std::getenv("IRIS_NETMOD");
  const bool by_default = asked == nullptr || *asked == '\0';
  std::string out =
      "transports: self, shm (a ring per pair on small nodes, receive queues and pooled rings "
      "on large ones; CMA or pipelined rendezvous), net (the netmod)\n";
  const auto &names = s.net.netmods;
  std::string listed;
  for (const std::string &name : names) listed += (listed.empty() ? "" : ",") + name;
  out += (names.size() > 1 ? "netmods: " : "netmod: ") + listed +
         (by_default ? " (the build's default; IRIS_NETMOD chooses others)\n"
                     : " (chosen by IRIS_NETMOD)\n");
  if (s.net.probe) {
    out +=
        "each pair of nodes: the faster of the netmods both offer and that reach, measured at "
        "MPI_Init by the first rank of each node (IRIS_NETMOD=auto)\n";
  } else if (names.size() > 1) {
    out +=
        "each peer on another node: the first netmod of the lower rank's list that both "
        "ranks offer and that reaches it\n";
  }
  out += std::string("shm between ranks of a node: ") +
         (s.shm.enabled ? "yes" : "no (IRIS_SHM=0: every peer through the netmod)") + "\n";
  // A line each, the last without its newline (the caller's). Of a list,
  // one that cannot start here is left out, and its peers go by the next;
  // as MPI_Init, the preview fails when none can start.
  std::string failures;
  bool started = false;
  for (const std::string &name : names) {
    if (&name != &names.front()) out += "\n";
    if (names.size() == 1) {
      out += netmod::netmod_create(name)->preview(netmod_config(s));
      return out;
    }
    try {
      out += netmod::netmod_create(name)->preview(netmod_config(s));
      started = true;
    } catch (const netmod::error &e) {
      out += name + ": not offered, it cannot start here: " + e.what();
      failures += std::string(failures.empty() ? "" : "; ") + e.what();
    }
  }
  if (!started) throw netmod::error(netmods_none_start(s, failures));
  return out;
}

}  // namespace iris::device
