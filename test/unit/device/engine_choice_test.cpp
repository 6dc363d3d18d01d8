// The rendezvous engine chooser (device/engine_choice.hpp): which engine it
// names as rates are measured, when and for how long it tries the slower
// one, and that size classes learn apart. Times are given, not read:
// deterministic.
#include "device/protocols/engine_choice.hpp"

#include <gtest/gtest.h>

namespace iris::device {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::uint64_t ms = 1'000'000;
constexpr int tries = engine_choice::try_messages;

// `bytes` moved at `per_ns` bytes per nanosecond.
std::uint64_t at_rate(std::size_t bytes, double per_ns) {
  return static_cast<std::uint64_t>(static_cast<double>(bytes) / per_ns);
}

// CMA reads of the engine in use, a group of them (the figure it counts).
void cma_group(engine_choice &c, std::size_t bytes, double per_ns, std::uint64_t now) {
  for (int i = 1; i < tries; ++i) c.measured(bytes, bytes, true, at_rate(bytes, per_ns), now);
}

TEST(EngineChoice, TheRuleFirstThenATryOfTheOtherThenTheFaster) {
  engine_choice c;
  std::uint64_t now = 1000 * ms;
  // Nothing timed: the rule's engine (the pipeline here), again and again.
  EXPECT_FALSE(c.pick(mib, false, now));
  EXPECT_FALSE(c.pick(mib, false, now));
  c.measured(mib, mib, false, at_rate(mib, 30), now);
  // Timed: CMA is tried, for try_messages messages...
  for (int i = 0; i < tries; ++i) EXPECT_TRUE(c.pick(mib, false, now)) << "message " << i;
  // ...whose times but the first (a cold read) make its rate.
  c.measured(mib, mib, true, at_rate(mib, 0.5), now);
  for (int i = 1; i < tries; ++i) c.measured(mib, mib, true, at_rate(mib, 12), now);
  EXPECT_NEAR(c.rate_of(mib, true), 12.0, 0.01);
  // The pipeline, faster, carries them.
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(c.pick(mib, false, now + 2 * ms));
  // CMA, timed once, is tried again after a tenth of probe_ns...
  now += engine_choice::probe_ns / 10;
  for (int i = 0; i < tries; ++i) EXPECT_TRUE(c.pick(mib, false, now));
  for (int i = 0; i < tries; ++i) c.measured(mib, mib, true, at_rate(mib, 12), now);
  EXPECT_FALSE(c.pick(mib, false, now));
  // ...and from then on once every probe_ns.
  EXPECT_FALSE(c.pick(mib, false, now + engine_choice::probe_ns / 2));
  EXPECT_TRUE(c.pick(mib, false, now + engine_choice::probe_ns));
}

TEST(EngineChoice, FollowsTheMachineWhenThePipelineSlowsDown) {
  engine_choice c;
  std::uint64_t now = 1000 * ms;
  c.measured(mib, mib, false, at_rate(mib, 30), now);
  cma_group(c, mib, 12, now);
  EXPECT_FALSE(c.pick(mib, false, now));
  // The machine slows down: the pipeline streams 2.5 bytes/ns.
  for (int i = 0; i < 8; ++i) c.measured(mib, mib, false, at_rate(mib, 2.5), now);
  EXPECT_LT(c.rate_of(mib, false), 12.0 / engine_choice::margin);
  EXPECT_TRUE(c.pick(mib, false, now));  // CMA now carries them
  // The pipeline, now the slower, is tried after probe_ns: one run of
  // try_messages messages, timed as one.
  now += engine_choice::probe_ns;
  for (int i = 0; i < tries; ++i) EXPECT_FALSE(c.pick(mib, false, now)) << "message " << i;
  c.measured(mib, 7 * mib, false, at_rate(7 * mib, 30), now);
  EXPECT_NEAR(c.rate_of(mib, false), 30.0, 0.01);  // replaced, not averaged
  // Back at 30 it wins again; CMA, untimed as long, gets a try first.
  for (int i = 0; i < tries; ++i) EXPECT_TRUE(c.pick(mib, false, now));
  for (int i = 0; i < tries; ++i) c.measured(mib, mib, true, at_rate(mib, 12), now);
  EXPECT_FALSE(c.pick(mib, false, now));
  EXPECT_FALSE(c.pick(mib, false, now + ms));
}

TEST(EngineChoice, AnEngineWithinTheMarginDoesNotDisplaceTheRule) {
  engine_choice c;
  const std::uint64_t now = 1000 * ms;
  cma_group(c, mib, 10, now);                          // the rule's CMA
  c.measured(mib, mib, false, at_rate(mib, 12), now);  // the pipeline, under 1.25x
  EXPECT_TRUE(c.pick(mib, true, now));
}

// While this rank streams out too, the pipeline's figure counts half: a try
// of it beside the other direction's CMA reads timed 15-17 against CMA's
// 10-12, took the streams, and both directions then moved 12-13 GB/s
// together against CMA's 20-22 (bench/results/, stop 32).
TEST(EngineChoice, BothWaysThePipelineMustBeatCmaByTwiceTheMargin) {
  engine_choice c;
  const std::uint64_t now = 1000 * ms;
  for (const bool both : {false, true}) {
    for (int i = 1; i < tries; ++i)
      c.measured(4 * mib, 4 * mib, true, at_rate(4 * mib, 11), now, both);
    c.measured(4 * mib, 4 * mib, false, at_rate(4 * mib, 16), now, both);
  }
  EXPECT_FALSE(c.pick(4 * mib, true, now)) << "one way, 16 against 11 is the pipeline's";
  EXPECT_TRUE(c.pick(4 * mib, true, now, true)) << "both ways, 16 counts as 8";
  // Twice the margin over CMA still wins both ways.
  for (int i = 0; i < 5; ++i) {
    c.measured(4 * mib, 4 * mib, false, at_rate(4 * mib, 40), now, true);
  }
  ASSERT_GT(c.rate_of(4 * mib, false, true), 2 * engine_choice::margin * 11);
  EXPECT_FALSE(c.pick(4 * mib, true, now, true));
}

// Both ways, the pipeline gets no try while its one-way figure, halved,
// could not beat CMA: each try costs 8 messages at about half CMA's rate.
TEST(EngineChoice, BothWaysAHopelessPipelineIsNotTried) {
  engine_choice c;
  std::uint64_t now = 1000 * ms;
  c.measured(mib, mib, false, at_rate(mib, 20), now);  // one way: 20, halved 10
  for (int i = 1; i < tries; ++i) c.measured(mib, mib, true, at_rate(mib, 19), now, true);
  for (int i = 0; i < 100; ++i) {
    now += engine_choice::probe_ns / 4;
    ASSERT_TRUE(c.pick(mib, true, now, true)) << "pick " << i;
  }
  // Once one way says it could win (40, halved 20, against 19 x 1.25 = 23.75:
  // not yet; 60, halved 30: yes), it is tried again.
  for (int i = 0; i < 8; ++i) c.measured(mib, mib, false, at_rate(mib, 60), now);
  ASSERT_GT(c.rate_of(mib, false) / 2, 19 * engine_choice::margin);
  now += engine_choice::probe_ns;
  EXPECT_FALSE(c.pick(mib, true, now, true)) << "a try of the pipeline";
}

// What bidirectional streams timed does not decide one-way streams: both
// engines move about half as much a direction there, and 2 MiB both ways
// followed by 4 MiB one way read the latter with CMA at 11-12 GB/s where
// the pipeline moves 17-18 (bench/results/, stop 32).
TEST(EngineChoice, OneWayAndBothWaysLearnApart) {
  engine_choice c;
  const std::uint64_t now = 1000 * ms;
  c.measured(4 * mib, 4 * mib, false, at_rate(4 * mib, 17), now);  // one way
  cma_group(c, 4 * mib, 12, now);
  EXPECT_FALSE(c.pick(4 * mib, false, now));
  // Both ways, the pipeline is timed at 6 and CMA at 10...
  c.measured(4 * mib, 4 * mib, false, at_rate(4 * mib, 6), now, true);
  for (int i = 1; i < tries; ++i)
    c.measured(4 * mib, 4 * mib, true, at_rate(4 * mib, 10), now, true);
  EXPECT_TRUE(c.pick(4 * mib, true, now, true));
  // ...and one way the pipeline still carries them.
  EXPECT_NEAR(c.rate_of(4 * mib, false), 17.0, 0.01);
  EXPECT_FALSE(c.pick(4 * mib, false, now));
}

TEST(EngineChoice, SizeClassesLearnApart) {
  engine_choice c;
  const std::uint64_t now = 1000 * ms;
  constexpr std::size_t kib64 = 64 * 1024;
  c.measured(kib64, kib64, false, at_rate(kib64, 30), now);
  cma_group(c, kib64, 3, now);
  c.measured(4 * mib, 4 * mib, false, at_rate(4 * mib, 3), now);
  cma_group(c, 4 * mib, 12, now);
  EXPECT_FALSE(c.pick(kib64, false, now));
  EXPECT_TRUE(c.pick(4 * mib, false, now));
  EXPECT_EQ(c.rate_of(256 * 1024, false), 0.0);  // a class never timed
  EXPECT_EQ(c.rate_of(32 * 1024, false), 0.0);   // one fragment: apart from 64 KiB
  EXPECT_FALSE(c.pick(256 * 1024, false, now));  // keeps the rule
}

// A try's figure is the median of its timed reads: a few slow ones do not
// hide what CMA moves. The reads of a try measured on this machine (GB/s):
// their sum made 20, within the margin of the pipeline's 16.7.
TEST(EngineChoice, ATryCountsItsMedianRead) {
  engine_choice c;
  const std::uint64_t now = 1000 * ms;
  constexpr std::size_t kib128 = 128 * 1024;
  c.measured(kib128, kib128, false, at_rate(kib128, 16.7), now);
  for (int i = 0; i < tries; ++i) ASSERT_TRUE(c.pick(kib128, false, now));
  for (const double read : {0.71, 14.4, 26.5, 13.3, 26.6, 27.7, 27.2, 27.3}) {
    c.measured(kib128, kib128, true, at_rate(kib128, read), now);
  }
  EXPECT_NEAR(c.rate_of(kib128, true), 26.6, 0.05);
  EXPECT_TRUE(c.pick(kib128, false, now));  // CMA carries them
}

// In use, CMA's reads count by groups too: two slow reads in a row do not
// hand the streams back to a pipeline that would move them slower.
TEST(EngineChoice, SlowReadsInUseDoNotTurnTheChoice) {
  engine_choice c;
  std::uint64_t now = 1000 * ms;
  c.measured(mib, mib, false, at_rate(mib, 16), now);
  cma_group(c, mib, 27, now);
  ASSERT_TRUE(c.pick(mib, false, now));
  for (int round = 0; round < 5; ++round) {
    now += ms;
    for (const double read : {27.0, 4.0, 3.9, 27.5, 26.8, 27.2, 28.0}) {
      c.measured(mib, mib, true, at_rate(mib, read), now);
      EXPECT_TRUE(c.pick(mib, false, now)) << "round " << round << ", after a read of " << read;
    }
  }
  EXPECT_GT(c.rate_of(mib, true), 26.0);
}

}  // namespace
}  // namespace iris::device
