// The matching queues: wildcards, MPI's oldest-first order, removal.
#include <gtest/gtest.h>

#include <vector>

#include "device/match.hpp"

namespace iris::device {
namespace {

struct entry {
  entry *next = nullptr;
  entry *prev = nullptr;
  match_key key{};
  int id = 0;
};

TEST(MatchKey, WildcardsMatchAnySourceAndTagButNeverAnotherContext) {
  const match_key message{4, 2, 7};
  EXPECT_TRUE(key_matches({4, 2, 7}, message));
  EXPECT_TRUE(key_matches({4, any_source, 7}, message));
  EXPECT_TRUE(key_matches({4, 2, any_tag}, message));
  EXPECT_TRUE(key_matches({4, any_source, any_tag}, message));
  EXPECT_FALSE(key_matches({5, any_source, any_tag}, message));
  EXPECT_FALSE(key_matches({4, 3, any_tag}, message));
  EXPECT_FALSE(key_matches({4, any_source, 8}, message));
}

TEST(IntrusiveQueue, PushRemoveAndPopKeepOrder) {
  intrusive_queue<entry> q;
  entry e[4];
  for (int i = 0; i < 4; ++i) {
    e[i].id = i;
    q.push_back(&e[i]);
  }
  EXPECT_EQ(q.size(), 4u);
  q.remove(&e[1]);  // middle
  q.remove(&e[3]);  // tail
  EXPECT_EQ(q.pop_front()->id, 0);
  EXPECT_EQ(q.pop_front()->id, 2);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.pop_front(), nullptr);
  q.push_back(&e[3]);  // reusable after removal
  EXPECT_EQ(q.front()->id, 3);
}

// Posted queue: an incoming message takes the OLDEST posted receive that
// matches, whether that one was posted with wildcards or not.
TEST(PostedQueue, IncomingMessageTakesTheOldestMatchingReceive) {
  intrusive_queue<entry> posted;
  entry r[4];
  r[0] = {nullptr, nullptr, {0, 1, 5}, 0};                 // source 1 tag 5
  r[1] = {nullptr, nullptr, {0, any_source, any_tag}, 1};  // anything
  r[2] = {nullptr, nullptr, {0, 2, any_tag}, 2};           // source 2
  r[3] = {nullptr, nullptr, {1, any_source, any_tag}, 3};  // other context
  for (auto &x : r) posted.push_back(&x);
  EXPECT_EQ(match_oldest(posted, {0, 2, 9})->id, 1);  // wildcard is older than r[2]
  EXPECT_EQ(match_oldest(posted, {0, 2, 9})->id, 2);
  EXPECT_EQ(match_oldest(posted, {0, 2, 9}), nullptr);
  EXPECT_EQ(match_oldest(posted, {0, 1, 5})->id, 0);
  EXPECT_EQ(match_oldest(posted, {1, 0, 0})->id, 3);
  EXPECT_TRUE(posted.empty());
}

// Unexpected queue: a new receive takes the OLDEST message it matches, so
// two messages of one sender are received in the order sent.
TEST(UnexpectedQueue, NewReceiveTakesTheOldestMatchingMessage) {
  intrusive_queue<entry> unexpected;
  entry m[5];
  m[0] = {nullptr, nullptr, {0, 1, 3}, 0};
  m[1] = {nullptr, nullptr, {0, 2, 3}, 1};
  m[2] = {nullptr, nullptr, {0, 1, 4}, 2};
  m[3] = {nullptr, nullptr, {0, 1, 3}, 3};
  m[4] = {nullptr, nullptr, {7, 1, 3}, 4};
  for (auto &x : m) unexpected.push_back(&x);
  EXPECT_EQ(find_oldest_for_pattern(unexpected, {0, 1, 4})->id, 2);  // probe: stays
  EXPECT_EQ(take_oldest_for_pattern(unexpected, {0, 1, 4})->id, 2);
  EXPECT_EQ(take_oldest_for_pattern(unexpected, {0, 1, any_tag})->id, 0);
  EXPECT_EQ(take_oldest_for_pattern(unexpected, {0, any_source, 3})->id, 1);
  EXPECT_EQ(take_oldest_for_pattern(unexpected, {0, any_source, any_tag})->id, 3);
  EXPECT_EQ(take_oldest_for_pattern(unexpected, {0, any_source, any_tag}), nullptr);
  EXPECT_EQ(take_oldest_for_pattern(unexpected, {7, any_source, any_tag})->id, 4);
}

}  // namespace
}  // namespace iris::device
