// MPI_THREAD_MULTIPLE's confirming round for an intercommunicator's context
// (device/comm.hpp, context_confirm; device/README.md, "Threads"), without
// messages: `max_all` stands for the rounds over both groups, and a second
// agreement "in another thread" runs inside the first one's rounds, as it
// would while the first waits with the call lock given up. Before the
// confirming round, an intercommunicator's context (the larger of its two
// groups' values, plus two) was new to one group and handed out unchecked,
// so another agreement of that process could settle on it too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>

#include "device/base/threading.hpp"
#include "device/core/comm.hpp"
#include "device/runtime/runtime.hpp"
#include "multiple_runtime.hpp"

namespace iris::device {
namespace {

bool agreed_here(std::uint32_t c) {
  return std::count(rt->contexts_agreed.begin(), rt->contexts_agreed.end(), c) == 1;
}

// This process is the only member: the maximum is its own value.
std::uint32_t only_member(std::uint32_t v) {
  return v;
}

TEST(ContextConfirm, AValueNobodyHoldsIsAgreedAsItIs) {
  ASSERT_EQ(rt, nullptr);
  const multiple_runtime on;
  const std::uint32_t c = context_confirm(60, 7, only_member);
  EXPECT_EQ(c, 60U);
  EXPECT_TRUE(agreed_here(60));
  EXPECT_TRUE(rt->contexts_tentative.empty());
}

// The other agreement was done first: its value is taken here, so this one
// moves above it.
TEST(ContextConfirm, AValueAlreadyAgreedHereIsRefused) {
  ASSERT_EQ(rt, nullptr);
  const multiple_runtime on;
  const std::uint32_t first = context_confirm(60, 7, only_member);
  const std::uint32_t second = context_confirm(60, 9, only_member);
  EXPECT_EQ(first, 60U);
  EXPECT_NE(second, 60U);
  EXPECT_GE(second, 62U);
  EXPECT_EQ(second % 2, 0U);
  EXPECT_TRUE(agreed_here(60) && agreed_here(second));
}

// Two at once on one value: the second starts while the first waits in its
// confirming round. It sees the first's tentative value and moves; the
// first, whose other members saw no clash, keeps its value.
TEST(ContextConfirm, TwoAtOnceOnOneValueEndOnTwo) {
  ASSERT_EQ(rt, nullptr);
  const multiple_runtime on;
  std::uint32_t inner = 0;
  int rounds = 0;
  const std::uint32_t outer = context_confirm(60, 7, [&](std::uint32_t v) {
    if (rounds++ == 0) inner = context_confirm(60, 9, only_member);
    return v;
  });
  EXPECT_EQ(outer, 60U);
  EXPECT_NE(inner, 60U);
  EXPECT_EQ(rounds, 1);
  EXPECT_TRUE(agreed_here(60) && agreed_here(inner));
  EXPECT_TRUE(rt->contexts_tentative.empty());
}

// A member of the other group saw a clash (there, the value was another
// agreement's): every member proposes again, above it, and the largest
// proposal is confirmed by a second round.
TEST(ContextConfirm, AClashInTheOtherGroupMovesEveryMember) {
  ASSERT_EQ(rt, nullptr);
  const multiple_runtime on;
  int round = 0;
  std::uint32_t proposed = 0;
  const std::uint32_t c = context_confirm(60, 7, [&](std::uint32_t v) {
    switch (round++) {
      case 0:  // the clash round: the other group clashed
        EXPECT_EQ(v, 0U);
        return std::uint32_t{1};
      case 1:  // the new proposals: the other group's is larger
        proposed = v;
        EXPECT_GE(v, 62U);
        return v + 100;
      default:  // the second clash round: none
        EXPECT_EQ(v, 0U);
        return v;
    }
  });
  EXPECT_EQ(round, 3);
  EXPECT_EQ(c, proposed + 100);
  EXPECT_TRUE(agreed_here(c));
  EXPECT_FALSE(agreed_here(60));
  EXPECT_TRUE(rt->contexts_tentative.empty());
}

// A value some other agreement holds tentatively when this one checks: this
// one says so, and moves.
TEST(ContextConfirm, AnotherAgreementsTentativeValueClashesHere) {
  ASSERT_EQ(rt, nullptr);
  const multiple_runtime on;
  rt->contexts_tentative.push_back(60);
  int round = 0;
  const std::uint32_t c = context_confirm(60, 7, [&](std::uint32_t v) {
    if (round++ == 0) {
      EXPECT_EQ(v, 1U);  // this member's clash
    }
    return v;
  });
  EXPECT_NE(c, 60U);
  EXPECT_EQ(round, 3);
  EXPECT_EQ(rt->contexts_tentative.size(), 1U);  // the other's, still there
}

}  // namespace
}  // namespace iris::device
