// The rendezvous engine chooser (device/engine_choice.hpp): which engine it
// names as rates are measured, when it tries the slower one again, and that
// size classes learn apart. Times are given, not read: deterministic.
#include "device/engine_choice.hpp"

#include <gtest/gtest.h>

namespace iris::device {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::uint64_t ms = 1'000'000;

TEST(EngineChoice, TheRuleFirstThenTheOtherOnceThenTheFaster) {
  engine_choice c;
  std::uint64_t now = 1000 * ms;
  // Nothing timed: the rule's engine (the pipeline here), again and again.
  EXPECT_FALSE(c.pick(mib, false, now));
  EXPECT_FALSE(c.pick(mib, false, now));
  c.measured(mib, mib, false, mib / 30, now);  // the pipeline: 30 bytes/ns
  // Timed: CMA is tried once...
  EXPECT_TRUE(c.pick(mib, false, now));
  // ...and not again before its time comes back or probe_ns passes.
  EXPECT_FALSE(c.pick(mib, false, now + ms));
  c.measured(mib, mib, true, mib / 12, now + ms);  // CMA: 12 bytes/ns
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(c.pick(mib, false, now + 2 * ms));
  // probe_ns after its last try, CMA is tried again, once.
  now += engine_choice::probe_ns + ms;
  EXPECT_TRUE(c.pick(mib, false, now));
  EXPECT_FALSE(c.pick(mib, false, now));
}

TEST(EngineChoice, FollowsTheMachineWhenThePipelineSlowsDown) {
  engine_choice c;
  std::uint64_t now = 1000 * ms;
  c.measured(mib, mib, false, mib / 30, now);
  c.measured(mib, mib, true, mib / 12, now);
  EXPECT_FALSE(c.pick(mib, false, now));
  // The cores stop sharing a cache: the pipeline drops to 2.5 bytes/ns.
  for (int i = 0; i < 8; ++i) c.measured(mib, mib, false, mib * 2 / 5, now);
  EXPECT_LT(c.rate_of(mib, false), 12.0 / engine_choice::margin);
  EXPECT_TRUE(c.pick(mib, false, now));  // CMA now carries them
  // The pipeline, now the slower, is tried again after probe_ns, once; back
  // at 30 it wins again (CMA, untimed as long, is tried once first).
  now += engine_choice::probe_ns;
  EXPECT_FALSE(c.pick(mib, false, now));
  EXPECT_TRUE(c.pick(mib, false, now));
  for (int i = 0; i < 8; ++i) c.measured(mib, mib, false, mib / 30, now);
  EXPECT_TRUE(c.pick(mib, false, now));
  EXPECT_FALSE(c.pick(mib, false, now));
  EXPECT_FALSE(c.pick(mib, false, now + ms));
}

TEST(EngineChoice, AnEngineWithinTheMarginDoesNotDisplaceTheRule) {
  engine_choice c;
  const std::uint64_t now = 1000 * ms;
  c.measured(mib, mib, true, mib / 10, now);   // the rule's CMA: 10 bytes/ns
  c.measured(mib, mib, false, mib / 12, now);  // the pipeline: 12, under 1.25x
  EXPECT_TRUE(c.pick(mib, true, now));
}

TEST(EngineChoice, SizeClassesLearnApart) {
  engine_choice c;
  const std::uint64_t now = 1000 * ms;
  c.measured(64 * 1024, 64 * 1024, false, 64 * 1024 / 30, now);
  c.measured(64 * 1024, 64 * 1024, true, 64 * 1024 / 3, now);
  c.measured(4 * mib, 4 * mib, false, 4 * mib / 3, now);
  c.measured(4 * mib, 4 * mib, true, 4 * mib / 12, now);
  EXPECT_FALSE(c.pick(64 * 1024, false, now));
  EXPECT_TRUE(c.pick(4 * mib, false, now));
  EXPECT_EQ(c.rate_of(256 * 1024, false), 0.0);  // a class never timed
  EXPECT_FALSE(c.pick(256 * 1024, false, now));  // keeps the rule
}

}  // namespace
}  // namespace iris::device
