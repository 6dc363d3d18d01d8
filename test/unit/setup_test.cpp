// Start-up pieces that fail with a clear message: tunables and segments.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "device/core/transport.hpp"
#include "device/setup/tunables.hpp"
#include "netmods/netmod.hpp"
#include "shm/segment.hpp"

namespace iris {
namespace {

TEST(Tunables, DefaultsAndSuffixes) {
  unsetenv("IRIS_SHM_RING_SIZE");
  EXPECT_EQ(device::transport_settings_load().shm.ring_size, 256u * 1024);
  setenv("IRIS_SHM_RING_SIZE", "64k", 1);
  EXPECT_EQ(device::transport_settings_load().shm.ring_size, 64u * 1024);
  setenv("IRIS_SHM_RING_SIZE", "1M", 1);
  EXPECT_EQ(device::transport_settings_load().shm.ring_size, 1024u * 1024);
  unsetenv("IRIS_SHM_RING_SIZE");
}

// IRIS_NETMOD is an ordered list of built netmods (device/transports/).
TEST(Tunables, TheNetmodListKeepsItsOrderAndRefusesWhatIsNotBuilt) {
  const std::string built(netmod::netmods_built());
  const std::string first = built.substr(0, built.find(','));
  // Empty: auto (every netmod built, and the probe) when there are several.
  const bool several = built.find(',') != std::string::npos;
  std::vector<std::string> all;
  for (std::size_t at = 0; at <= built.size();) {
    const std::size_t comma = std::min(built.find(',', at), built.size());
    all.push_back(built.substr(at, comma - at));
    at = comma + 1;
  }
  EXPECT_EQ(device::netmod_list(""), several ? all : std::vector<std::string>{first});
  EXPECT_EQ(device::netmod_list("auto"), all);
  EXPECT_EQ(device::netmod_auto(""), several);
  EXPECT_TRUE(device::netmod_auto("auto"));
  EXPECT_FALSE(device::netmod_auto("tcp"));
  EXPECT_EQ(device::netmod_list("tcp"), std::vector<std::string>{"tcp"});
  if (device::netmod_built("ofi")) {
    EXPECT_EQ(device::netmod_list("ofi,tcp"), (std::vector<std::string>{"ofi", "tcp"}));
    EXPECT_EQ(device::netmod_list("tcp,ofi"), (std::vector<std::string>{"tcp", "ofi"}));
  }
  for (const char *bad : {"carrier", "tcp,carrier", "tcp,tcp", "tcp,", ",tcp", "tcp,,ofi"}) {
    try {
      (void)device::netmod_list(bad);
      ADD_FAILURE() << "accepted IRIS_NETMOD=" << bad;
    } catch (const std::runtime_error &e) {
      const std::string why = e.what();
      EXPECT_EQ(why.rfind("IRIS_NETMOD lists ", 0), 0u) << why;
      EXPECT_NE(why.find("(built: " + built), std::string::npos) << why;
    }
  }
  setenv("IRIS_NETMOD", "tcp,carrier", 1);
  EXPECT_THROW((void)device::transport_settings_load(), std::runtime_error);
  setenv("IRIS_NETMOD", "tcp", 1);
  EXPECT_EQ(device::transport_settings_load().net.netmods, std::vector<std::string>{"tcp"});
  EXPECT_FALSE(device::transport_settings_load().net.probe);
  unsetenv("IRIS_NETMOD");
  EXPECT_EQ(device::transport_settings_load().net.probe, several);
}

TEST(Tunables, MalformedValueNamesTheVariableAndTheRange) {
  setenv("IRIS_POLL_BATCH", "lots", 1);
  try {
    (void)device::settings_load();
    ADD_FAILURE() << "accepted IRIS_POLL_BATCH=lots";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("IRIS_POLL_BATCH=lots"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("between 1 and"), std::string::npos) << e.what();
  }
  setenv("IRIS_POLL_BATCH", "0", 1);
  EXPECT_THROW((void)device::settings_load(), std::runtime_error);
  unsetenv("IRIS_POLL_BATCH");
}

TEST(Tunables, EveryTunableIsDescribed) {
  const std::string text = device::tunables_describe();
  for (const auto &t : device::tunables()) {
    EXPECT_NE(text.find(t.name), std::string::npos) << t.name;
    EXPECT_GT(std::string(t.help).size(), 10u) << t.name;
  }
}

// IRIS_SHM_RING_SIZE=-1 on a node of pair rings: 8 MiB a rank, shared by
// the rings it receives on, a power of two from 256 KiB to 4 MiB.
TEST(Tunables, SmallNodesShareEightMiBARankAmongTheirRings) {
  EXPECT_EQ(device::dense_ring_size(2), std::size_t{4} << 20);
  EXPECT_EQ(device::dense_ring_size(3), std::size_t{4} << 20);
  EXPECT_EQ(device::dense_ring_size(4), std::size_t{2} << 20);
  EXPECT_EQ(device::dense_ring_size(5), std::size_t{2} << 20);
  EXPECT_EQ(device::dense_ring_size(8), std::size_t{1} << 20);
  EXPECT_EQ(device::dense_ring_size(32), device::shm_ring_floor);
  EXPECT_EQ(device::dense_ring_size(1000), device::shm_ring_floor);
}

TEST(Tunables, TheTransportsDeclareTheirOwnInTheOneTable) {
  const auto all = device::tunables();
  for (const auto &t : device::transport_tunables()) {
    const auto found = std::find_if(all.begin(), all.end(), [&](const device::tunable &u) {
      return std::string(u.name) == t.name;
    });
    EXPECT_NE(found, all.end()) << t.name;
  }
  // Not the device's own any more: its settings no longer read them.
  setenv("IRIS_SHM_RING_SIZE", "many", 1);
  EXPECT_NO_THROW((void)device::settings_load());
  EXPECT_THROW((void)device::transport_settings_load(), std::runtime_error);
  unsetenv("IRIS_SHM_RING_SIZE");
}

std::string unique_name(const char *what) {
  return "/iris-unit-" + std::to_string(getpid()) + "-" + what;
}

TEST(Segment, CreateAttachAndTheLastAttacherRemovesTheName) {
  const std::string name = unique_name("a");
  const shm::segment_shape shape{2, 4096};
  shm::segment a = shm::segment::create(name, shape);
  shm::segment b = shm::segment::attach(name, shape);
  // A record written through one mapping is read through the other.
  shm::ring_sender tx = a.sender(0, 1);
  shm::ring_receiver rx = b.receiver(0, 1);
  std::byte *p = tx.reserve(4);
  ASSERT_NE(p, nullptr);
  std::memcpy(p, "iris", 4);
  tx.commit();
  shm::record_view r{};
  ASSERT_EQ(rx.peek(r), shm::peek_status::record);
  EXPECT_EQ(std::memcmp(r.bytes, "iris", 4), 0);
  a.mark_attached();
  EXPECT_EQ(access(("/dev/shm" + name).c_str(), F_OK), 0) << "removed before all attached";
  b.mark_attached();
  EXPECT_NE(access(("/dev/shm" + name).c_str(), F_OK), 0) << "left in /dev/shm";
}

// Minor page faults this process takes while writing one 256 KiB record
// through `s`'s ring from local rank 1 to 0 and reading it back.
long faults_for_a_lap(const shm::segment &s) {
  constexpr std::size_t bytes = 256 * 1024;
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  shm::ring_sender tx = s.sender(1, 0);
  std::byte *p = tx.reserve(bytes);
  if (p == nullptr) return -1;
  std::memset(p, 7, bytes);
  tx.commit();
  shm::ring_receiver rx = s.receiver(1, 0);
  shm::record_view r{};
  if (rx.peek(r) != shm::peek_status::record || r.bytes[bytes - 1] != std::byte{7}) return -1;
  rx.consume();
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  return after.ru_minflt - before.ru_minflt;
}

// Without populate(), a 4 MiB ring takes a page fault every 64 small packets
// of its first lap: 0-2 byte latency was 0.21 us against 0.13 once laps
// were warm (stop 24).
TEST(Segment, PopulateMapsTheRingsOfOneRankUpFront) {
  const std::string name = unique_name("p");
  const shm::segment_shape shape{3, std::size_t{1} << 20};
  shm::segment a = shm::segment::create(name, shape);
  shm::segment cold = shm::segment::attach(name, shape);
  shm::segment warm = shm::segment::attach(name, shape);
  a.mark_attached();
  cold.mark_attached();
  warm.mark_attached();
  warm.populate(1);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Their shadow memory faults too (TSan: 516 faults for a populated lap).
  GTEST_SKIP() << "a sanitizer's shadow pages drown the count";
#endif
  const long pages = 256 * 1024 / sysconf(_SC_PAGESIZE);
  const long cold_faults = faults_for_a_lap(cold);
  EXPECT_GE(cold_faults, pages / 2) << "the check cannot see faults";
  const long warm_faults = faults_for_a_lap(warm);
  EXPECT_GE(warm_faults, 0);
  EXPECT_LT(warm_faults, pages / 16)
      << "populate(1) left ring 1->0 unmapped (" << cold_faults << " faults without)";
}

TEST(Segment, ClearErrors) {
  const std::string name = unique_name("b");
  EXPECT_THROW(shm::segment::create(name, {2, 1000}), shm::error) << "not a power of two";
  EXPECT_THROW(shm::segment::attach(name, {2, 4096}), shm::error) << "no such segment";
  {
    shm::segment a = shm::segment::create(name, {2, 4096});
    EXPECT_THROW(shm::segment::create(name, {2, 4096}), shm::error) << "exists";
    EXPECT_THROW(shm::segment::attach(name, {3, 4096}), shm::error) << "other shape";
    a.mark_attached();
    shm::segment b = shm::segment::attach(name, {2, 4096});
    b.mark_attached();
  }
  // Far larger than /dev/shm: refused before a byte is allocated.
  try {
    shm::segment::create(name, {1024, std::size_t{1} << 30});
    ADD_FAILURE() << "a 1 PiB segment was created";
  } catch (const shm::error &e) {
    EXPECT_NE(std::string(e.what()).find("/dev/shm has"), std::string::npos) << e.what();
  }
  EXPECT_NE(access(("/dev/shm" + name).c_str(), F_OK), 0);
}

}  // namespace
}  // namespace iris
