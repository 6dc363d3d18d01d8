#include "device/tunables.hpp"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace iris::device {
namespace {

constexpr tunable table[] = {
    {"IRIS_SHM_RING_SIZE", 256 * 1024, 256, 1 << 30,
     "bytes of each shared-memory ring (one per ordered pair of ranks on a node); a power of two"},
    {"IRIS_SHM_FRAGMENT_SIZE", 32 * 1024, 64, 1 << 29,
     "largest payload of one shared-memory record; longer messages are split and pipelined "
     "(capped at half the ring)"},
    {"IRIS_SPIN_COUNT", -1, -1, 1 << 30,
     "idle progress polls before a waiting rank yields its core; -1 chooses 2000, or 20 when "
     "a node has more ranks than cores"},
    {"IRIS_POLL_BATCH", 16, 1, 1 << 20,
     "most packets taken from one peer in one progress call, so that no peer starves the others"},
    {"IRIS_DEBUG", 0, 0, 1, "1 prints one line per rank at start-up describing its transports"},
};

std::int64_t read_value(const tunable &t) {
  const char *text = std::getenv(t.name);
  if (text == nullptr || *text == '\0') return t.default_value;
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

const tunable &find(const char *name) {
  for (const tunable &t : table) {
    if (std::string_view(t.name) == name) return t;
  }
  throw std::logic_error(std::string("undeclared tunable ") + name);
}

std::int64_t value_of(const char *name) {
  return read_value(find(name));
}

}  // namespace

std::span<const tunable> tunables() {
  return table;
}

settings settings_load() {
  settings s{};
  s.shm_ring_size = static_cast<std::size_t>(value_of("IRIS_SHM_RING_SIZE"));
  s.shm_fragment_size = static_cast<std::size_t>(value_of("IRIS_SHM_FRAGMENT_SIZE"));
  s.spin_count = static_cast<int>(value_of("IRIS_SPIN_COUNT"));
  s.poll_batch = static_cast<int>(value_of("IRIS_POLL_BATCH"));
  s.debug = value_of("IRIS_DEBUG") != 0;
  return s;
}

std::string tunables_describe() {
  std::string out;
  for (const tunable &t : table) {
    const char *now = std::getenv(t.name);
    out += std::string(t.name) + " = " + (now != nullptr ? now : std::to_string(t.default_value)) +
           " (default " + std::to_string(t.default_value) + ")\n    " + t.help + "\n";
  }
  return out;
}

}  // namespace iris::device
