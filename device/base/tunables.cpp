#include "device/base/tunables.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "device/base/text.hpp"

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
    {"IRIS_NONTEMPORAL_MIN", 8 << 20, 0, std::int64_t{1} << 40, nullptr,
     "smallest rendezvous message whose pieces are copied into the receive buffer with "
     "non-temporal stores, around the cache (such a message would only evict the cache on "
     "its way to memory); 0: never"},
    {"IRIS_POLL_BATCH", 16, 1, 1 << 20, nullptr,
     "most packets taken from one peer in one progress call, so that no peer starves the others"},
    // Active messages (device/am/).
    {"IRIS_ASYNC_PROGRESS", 0, 0, 2, "auto,on,off",
     "the progress thread that completes active messages, put and get while this rank "
     "computes without calling MPI: auto starts it at the first MPIX_Am_register or "
     "MPIX_Expose, on at MPI_Init, off never (operations then progress only inside MPI "
     "calls; put and get to a rank of this node by CMA need no thread either way)"},
    {"IRIS_PROGRESS_NICE", -20, -20, 19, nullptr,
     "the nice value of that progress thread: at -20 a peer's operation that wakes it takes "
     "the core from this rank's computing thread at once (at the computing thread's own value "
     "the scheduler may let that run on for milliseconds first); a value the process may not "
     "take (without CAP_SYS_NICE, below its RLIMIT_NICE) leaves it at the process's"},
    {"IRIS_AM_PULL_MIN", 32 * 1024, 0, std::int64_t{1} << 40, nullptr,
     "smallest data of an active message that the target reads from the origin itself (CMA, "
     "ranks of one node) after the header handler ran; smaller data travels in the message's "
     "packets"},
    // MPI one-sided (device/api/rma/).
    {"IRIS_WINDOW_RMA_MIN", 4096, 1, std::int64_t{1} << 40, nullptr,
     "smallest put or get piece to a window rank on another node that goes by the netmod's RMA "
     "write or read (ofi with FI_RMA, IRIS_NET_RMA=1), without the target's help; smaller ones "
     "travel in batches or as active messages"},
    // Collectives (device/collectives/).
    {"IRIS_COLL_SHM", 1, 0, 1, nullptr,
     "1: the blocking Barrier, Bcast, Reduce, Allreduce, Allgather, Alltoall, Gather and "
     "Scatter of a "
     "communicator whose ranks all share this node (and IRIS_SHM=1) go through a shared "
     "segment made at its first collective (larger than a slot: read in place with CMA); "
     "across nodes Barrier, Bcast, Reduce and Allreduce run in two levels, each node through "
     "its segment and one leader per node by messages; 0: always through messages"},
    {"IRIS_COLL_SHM_SLOT", -1, -1, 1 << 24, nullptr,
     "bytes of each rank's slot in a communicator's shared collective segment (two per rank); "
     "larger calls go through messages. -1 chooses 1 MiB shared by the ranks, 4-16 KiB each"},
    {"IRIS_COLL_CMA", 1, 0, 1, nullptr,
     "1: a call through that segment larger than a slot reads the other ranks' buffers in "
     "place (CMA, where the kernel allows it); 0: such calls go through messages"},
    {"IRIS_COLL_ALLREDUCE", 0, 0, 3, "auto,doubling,halving,ring",
     "the algorithm of MPI_Allreduce through messages, and of MPI_Iallreduce and "
     "MPI_Allreduce_init always: auto takes the node's segment where it can (blocking calls), "
     "else recursive doubling below 64 KiB and from there Rabenseifner's reduce-scatter by "
     "recursive halving then allgather (halving); any other choice skips the segment and "
     "forces that algorithm (a ring with a non-commutative op runs halving; halving with "
     "fewer elements than the largest power of two within the ranks runs doubling)"},
    {"IRIS_COLL_ALLGATHER", 0, 0, 2, "auto,ring,bruck",
     "the algorithm of the blocking MPI_Allgather through messages: auto takes the node's "
     "segment where it can, else Bruck's (ceil(log2 n) rounds) while a rank's block is "
     "below 64 KiB and a ring from there; ring or bruck skips the segment and forces it"},
    {"IRIS_COLL_ALLTOALL", 0, 0, 3, "auto,pairwise,bruck,linear",
     "the algorithm of the blocking MPI_Alltoall through messages: auto takes the node's "
     "segment where it can, else Bruck's (ceil(log2 n) rounds of about half the blocks) "
     "for blocks up to 256 bytes from 16 ranks, pairwise exchange (n - 1 rounds, a pair at a "
     "time) for blocks from 32 KiB above 32 ranks, and linear (every transfer at once) "
     "otherwise; any other choice skips the segment and forces it"},
    {"IRIS_DEBUG", 0, 0, 1, nullptr,
     "1 prints one line per rank at start-up describing its transports"},
    {"IRIS_RECOVERY", 0, 0, 1, nullptr,
     "1: a rank that dies does not end the job; operations that involve it end with "
     "MPIX_ERR_PROC_FAILED and the survivors go on (ULFM: MPIX_Comm_revoke, _shrink, _agree). "
     "mpiexec --enable-recovery sets it; the launcher must also let the job go on"},
    {"IRIS_STATS", 0, 0, 1, nullptr,
     "1 prints one line per rank at MPI_Finalize: messages by protocol, credit stalls, peak "
     "unexpected-queue depth and bytes"},
};

std::int64_t parse_choice(const tunable &t, std::string_view text) {
  const std::vector<std::string_view> choices = split(t.choices, ',');
  const auto at = std::find(choices.begin(), choices.end(), text);
  if (at != choices.end()) return at - choices.begin();
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

std::int64_t value_of(std::string_view name) {
  return read_value(tunable_named(table, name));
}

// The name of choice `index` of `t`.
std::string choice_name(const tunable &t, std::int64_t index) {
  return std::string(split(t.choices, ',').at(static_cast<std::size_t>(index)));
}

std::string default_text(const tunable &t) {
  if (is_text(t)) return "";
  if (t.choices == nullptr) return std::to_string(t.default_value);
  return choice_name(t, t.default_value);
}

}  // namespace

std::span<const tunable> device_tunables() {
  return table;
}

std::int64_t tunable_value(const tunable &t) {
  return read_value(t);
}

const tunable &tunable_named(std::span<const tunable> in, std::string_view name) {
  for (const tunable &t : in) {
    if (name == t.name) return t;
  }
  throw std::logic_error("undeclared tunable " + std::string(name));
}

std::string tunable_choice(const tunable &t) {
  return choice_name(t, read_value(t));
}

std::string tunable_text(const tunable &t) {
  const char *text = is_text(t) ? std::getenv(t.name) : nullptr;
  return text != nullptr ? text : "";
}

settings settings_load() {
  settings s{};
  s.eager_limit = static_cast<std::size_t>(value_of("IRIS_EAGER_LIMIT"));
  s.eager_window = static_cast<int>(value_of("IRIS_EAGER_WINDOW") / 64);
  s.spin_count = static_cast<int>(value_of("IRIS_SPIN_COUNT"));
  s.poll_batch = static_cast<int>(value_of("IRIS_POLL_BATCH"));
  const std::int64_t nontemporal = value_of("IRIS_NONTEMPORAL_MIN");
  s.nontemporal_min = nontemporal == 0 ? SIZE_MAX : static_cast<std::size_t>(nontemporal);
  s.sleep = static_cast<int>(value_of("IRIS_SLEEP"));
  s.sleep_after = static_cast<int>(value_of("IRIS_SLEEP_AFTER"));
  s.sleep_timeout_ms = static_cast<int>(value_of("IRIS_SLEEP_TIMEOUT"));
  s.async_progress = static_cast<int>(value_of("IRIS_ASYNC_PROGRESS"));
  s.am_pull_min = static_cast<std::uint64_t>(value_of("IRIS_AM_PULL_MIN"));
  s.window_rma_min = static_cast<std::uint64_t>(value_of("IRIS_WINDOW_RMA_MIN"));
  s.progress_nice = static_cast<int>(value_of("IRIS_PROGRESS_NICE"));
  s.coll_shm = value_of("IRIS_COLL_SHM") != 0;
  s.coll_shm_slot = value_of("IRIS_COLL_SHM_SLOT");
  s.coll_cma = value_of("IRIS_COLL_CMA") != 0;
  s.coll_allreduce = static_cast<int>(value_of("IRIS_COLL_ALLREDUCE"));
  s.coll_allgather = static_cast<int>(value_of("IRIS_COLL_ALLGATHER"));
  s.coll_alltoall = static_cast<int>(value_of("IRIS_COLL_ALLTOALL"));
  s.debug = value_of("IRIS_DEBUG") != 0;
  s.stats = value_of("IRIS_STATS") != 0;
  s.recovery = value_of("IRIS_RECOVERY") != 0;
  return s;
}

std::string tunables_describe(std::span<const tunable> all) {
  std::string out;
  for (const tunable &t : all) {
    const char *now = std::getenv(t.name);
    out += std::string(t.name) + " = " + (now != nullptr && *now != '\0' ? now : default_text(t)) +
           " (default " + default_text(t) + ")\n    " + t.help + "\n";
  }
  return out;
}

}  // namespace iris::device
