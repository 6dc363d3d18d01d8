#include "device/tunables.hpp"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "netmods/netmod.hpp"

#ifndef IRIS_NETMOD_LIST
#error "device/meson.build defines IRIS_NETMOD_LIST from -Dnetmods"
#endif

namespace iris::device {
namespace {

constexpr tunable table[] = {
    {"IRIS_EAGER_LIMIT", 16 * 1024, 0, 1 << 29, nullptr,
     "largest message sent eagerly (its bytes with its header); longer ones use rendezvous. "
     "Capped so that one eager message fits one shared-memory record"},
    {"IRIS_EAGER_WINDOW", 256 * 1024, 128, 1 << 30, nullptr,
     "eager bytes a sender may have unreceived at one receiver, counted in 64-byte units (one "
     "unit per message plus its payload); a message that does not fit the rest of the window "
     "uses rendezvous. Bounds a receiver's unexpected eager memory to this much per peer"},
    {"IRIS_RNDV_ENGINE", 0, 0, 2, "auto,cma,pipeline",
     "how rendezvous data moves between ranks of one node: cma reads the sender's memory "
     "(process_vm_readv, one copy by the receiver); pipeline streams it through the ring "
     "(two copies, by both sides at once); auto pipelines a message alone and reads with cma "
     "when another is already streaming (many messages in flight), where the kernel allows"},
    {"IRIS_CMA_THRESHOLD", 32 * 1024, 0, std::int64_t{1} << 40, nullptr,
     "with IRIS_RNDV_ENGINE=auto, the smallest rendezvous message read with cma"},
    {"IRIS_CMA_MIN_BLOCK", 64 * 1024, 1, std::int64_t{1} << 40, nullptr,
     "a rendezvous message of a non-contiguous datatype is read with cma (one iovec per block) "
     "only when the mean block of each non-contiguous side is at least this many bytes (and "
     "the engine choice says cma); smaller blocks are packed and unpacked through the pipeline"},
    {"IRIS_PIPELINE_LARGE", 2 * 1024 * 1024, 0, std::int64_t{1} << 40, nullptr,
     "with IRIS_RNDV_ENGINE=auto, from this size up a rank that is not sending itself lets the "
     "sender copy through the pipeline instead of reading with cma"},
    {"IRIS_SHM_RING_SIZE", 256 * 1024, 256, 1 << 30, nullptr,
     "bytes of each shared-memory ring (one per ordered pair of ranks on a node of at most "
     "IRIS_SHM_DENSE_RANKS ranks, else one per busy pair, from the pool); a power of two"},
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
    {"IRIS_SHM_FRAGMENT_SIZE", 32 * 1024, 64, 1 << 29, nullptr,
     "largest payload of one shared-memory record; rendezvous data is streamed in pieces of "
     "this size (capped at half the ring)"},
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
    {"IRIS_NETMOD", 0, 0, 0, IRIS_NETMOD_LIST,
     "the network module for ranks on other nodes, one of those this build has (the first is "
     "the default; meson setup -Dnetmods=... chooses them)"},
    {"IRIS_SHM", 1, 0, 1, nullptr,
     "0 sends everything, also between ranks of one node, through the netmod"},
    {"IRIS_NET_RMA", 1, 0, 1, nullptr,
     "1: when the netmod can read a peer's memory (ofi with FI_RMA), a rendezvous receiver reads "
     "the sender's buffer itself; 0: the data always comes as packets after a CTS"},
    {"IRIS_SPIN_COUNT", -1, -1, 1 << 30, nullptr,
     "idle progress polls before a waiting rank yields its core; -1 chooses 2000, or when "
     "a node has more ranks than cores 200 if the rank may sleep (IRIS_SLEEP), else 20"},
    {"IRIS_SLEEP", -1, -1, 1, nullptr,
     "1: a waiting rank that found nothing for IRIS_SLEEP_AFTER yields sleeps until a local "
     "peer sends to it (only when every peer is on this node); 0: it never sleeps; -1 sleeps "
     "when a node has more ranks than cores"},
    {"IRIS_SLEEP_AFTER", 64, 0, 1 << 30, nullptr,
     "idle yields (after IRIS_SPIN_COUNT idle polls) before a waiting rank sleeps"},
    {"IRIS_SLEEP_TIMEOUT", 100, 1, 3600 * 1000, nullptr,
     "milliseconds a sleeping rank sleeps at most before it polls again (a safety net: "
     "senders wake it)"},
    {"IRIS_POLL_BATCH", 16, 1, 1 << 20, nullptr,
     "most packets taken from one peer in one progress call, so that no peer starves the others"},
    {"IRIS_DEBUG", 0, 0, 1, nullptr,
     "1 prints one line per rank at start-up describing its transports"},
    {"IRIS_STATS", 0, 0, 1, nullptr,
     "1 prints one line per rank at MPI_Finalize: messages by protocol, credit stalls, peak "
     "unexpected-queue depth and bytes"},
};

std::int64_t parse_choice(const tunable &t, std::string_view text) {
  std::string_view rest = t.choices;
  for (std::int64_t index = 0; !rest.empty(); ++index) {
    const std::size_t comma = rest.find(',');
    if (rest.substr(0, comma) == text) return index;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  throw std::runtime_error(std::string(t.name) + "=" + std::string(text) + " is not one of " +
                           t.choices);
}

bool is_text(const tunable &t) {
  return t.choices != nullptr && *t.choices == '\0';
}

std::int64_t read_value(const tunable &t) {
  const char *text = std::getenv(t.name);
  if (text == nullptr || *text == '\0') return t.default_value;
  if (t.choices != nullptr) return parse_choice(t, text);
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 0);
  if (end != nullptr && (*end == 'k' || *end == 'K')) value *= 1024, ++end;
  if (end != nullptr && (*end == 'm' || *end == 'M')) value *= 1024 * 1024, ++end;
  if (errno != 0 || end == text || *end != '\0' || value < t.min_value || value > t.max_value) {
    throw std::runtime_error(std::string(t.name) + "=" + text + " is not an integer between " +
                             std::to_string(t.min_value) + " and " + std::to_string(t.max_value));
  }
  return value;
}

const tunable &find(std::string_view name) {
  for (const tunable &t : table) {
    if (name == t.name) return t;
  }
  throw std::logic_error("undeclared tunable " + std::string(name));
}

std::int64_t value_of(std::string_view name) {
  return read_value(find(name));
}

// The name of choice `index` of `t`.
std::string choice_name(const tunable &t, std::int64_t index) {
  std::string_view rest = t.choices;
  for (std::int64_t i = 0; i < index; ++i) rest = rest.substr(rest.find(',') + 1);
  return std::string(rest.substr(0, rest.find(',')));
}

std::string default_text(const tunable &t) {
  if (is_text(t)) return "";
  if (t.choices == nullptr) return std::to_string(t.default_value);
  return choice_name(t, t.default_value);
}

std::string choice_of(std::string_view name) {
  const tunable &t = find(name);
  return choice_name(t, read_value(t));
}

}  // namespace

std::span<const tunable> tunables() {
  static const std::vector<tunable> all = [] {
    std::vector<tunable> v(std::begin(table), std::end(table));
    for (const tunable &t : netmod::netmods_tunables()) v.push_back(t);
    return v;
  }();
  return all;
}

std::int64_t tunable_value(const tunable &t) {
  return read_value(t);
}

std::string tunable_text(const tunable &t) {
  const char *text = is_text(t) ? std::getenv(t.name) : nullptr;
  return text != nullptr ? text : "";
}

settings settings_load() {
  settings s{};
  s.shm_ring_size = static_cast<std::size_t>(value_of("IRIS_SHM_RING_SIZE"));
  s.shm_fragment_size = static_cast<std::size_t>(value_of("IRIS_SHM_FRAGMENT_SIZE"));
  s.shm_dense_ranks = static_cast<int>(value_of("IRIS_SHM_DENSE_RANKS"));
  s.shm_queue_cells = static_cast<std::size_t>(value_of("IRIS_SHM_QUEUE_CELLS"));
  s.shm_pool_size = static_cast<std::size_t>(value_of("IRIS_SHM_POOL_SIZE"));
  s.shm_busy_packets = static_cast<std::uint64_t>(value_of("IRIS_SHM_BUSY_PACKETS"));
  s.eager_limit = static_cast<std::size_t>(value_of("IRIS_EAGER_LIMIT"));
  s.eager_window = static_cast<int>(value_of("IRIS_EAGER_WINDOW") / 64);
  s.engine = static_cast<rndv_engine>(value_of("IRIS_RNDV_ENGINE"));
  s.cma_threshold = static_cast<std::size_t>(value_of("IRIS_CMA_THRESHOLD"));
  s.pipeline_large = static_cast<std::size_t>(value_of("IRIS_PIPELINE_LARGE"));
  s.scattered_min_block = static_cast<std::size_t>(value_of("IRIS_CMA_MIN_BLOCK"));
  s.spin_count = static_cast<int>(value_of("IRIS_SPIN_COUNT"));
  s.poll_batch = static_cast<int>(value_of("IRIS_POLL_BATCH"));
  s.sleep = static_cast<int>(value_of("IRIS_SLEEP"));
  s.sleep_after = static_cast<int>(value_of("IRIS_SLEEP_AFTER"));
  s.sleep_timeout_ms = static_cast<int>(value_of("IRIS_SLEEP_TIMEOUT"));
  s.net_fragment_size = static_cast<std::size_t>(value_of("IRIS_NET_FRAGMENT_SIZE"));
  s.net_eager_limit = static_cast<std::size_t>(value_of("IRIS_NET_EAGER_LIMIT"));
  s.net_eager_window = static_cast<int>(value_of("IRIS_NET_EAGER_WINDOW") / 64);
  s.netmod = choice_of("IRIS_NETMOD");
  s.use_shm = value_of("IRIS_SHM") != 0;
  s.net_rma = value_of("IRIS_NET_RMA") != 0;
  s.debug = value_of("IRIS_DEBUG") != 0;
  s.stats = value_of("IRIS_STATS") != 0;
  return s;
}

std::string tunables_describe() {
  std::string out;
  for (const tunable &t : tunables()) {
    const char *now = std::getenv(t.name);
    out += std::string(t.name) + " = " + (now != nullptr && *now != '\0' ? now : default_text(t)) +
           " (default " + default_text(t) + ")\n    " + t.help + "\n";
  }
  return out;
}

}  // namespace iris::device
