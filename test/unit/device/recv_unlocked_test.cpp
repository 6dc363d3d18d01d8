// MPI_THREAD_MULTIPLE's receives matched without the call lock
// (device/recv_multiple.hpp): a seeded stress test of three threads posting
// receives under their context's lock alone (matcher::take_or_post) while a
// fourth, holding the call lock, delivers arriving messages
// (message_arrived) and pauses as a waiting thread does. Every message
// reaches exactly one receive, each thread's k-th receive its k-th message,
// and nothing is left behind: a message that parked while a receive that
// matches it was posted would leave both waiting. ThreadSanitizer watches
// the requests' plain fields and the queues.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "device/base/threading.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/recv_multiple.hpp"
#include "device/runtime/runtime.hpp"
#include "multiple_runtime.hpp"

namespace iris::device {
namespace {

TEST(UnlockedReceives, SeededStressMatchesEachMessageOnceInEachThreadsOrder) {
  ASSERT_EQ(rt, nullptr);
  rt = new runtime;
  rt->rank = 0;
  rt->size = 1;
  rt->vcs.resize(1);
  rt->vcs[0].flow_controlled = false;  // no credits to return to anyone
  rt->matching.share();
  communicator comm;
  comm.context = world_context;
  comm.rank = 0;
  comm.size = 1;
  comm.world_rank = {0};
  const multiple_receives on;
  constexpr int receivers = 3;
  constexpr int receives = 3000;
  // Made under the call lock, as a thread's request cache is.
  std::vector<std::vector<request *>> made(receivers);
  std::vector<std::vector<int>> got(receivers, std::vector<int>(receives, -1));
  call_lock_enter();
  comm.queues = rt->matching.queues_of(comm.context);
  ASSERT_NE(comm.queues, nullptr);
  for (auto &mine : made) {
    for (int i = 0; i < receives; ++i) {
      mine.push_back(rt->requests.allocate(request_kind::recv, &comm));
    }
  }
  call_lock_leave();
  std::atomic<int> done{0};
  std::vector<std::thread> pool;
  for (int id = 0; id < receivers; ++id) {
    pool.emplace_back([&, id] {
      std::mt19937 random(static_cast<unsigned>(31 + id));
      int i = 0;
      for (request *r : made[static_cast<std::size_t>(id)]) {
        // Its own tag, from rank 0 or any source: as recv_unlocked sets it up.
        r->key = match_key{comm.context, random() % 2 == 0 ? 0 : any_source, id};
        r->buffer = reinterpret_cast<std::byte *>(
            &got[static_cast<std::size_t>(id)][static_cast<std::size_t>(i++)]);
        r->bytes = sizeof(int);
        recv_post_unlocked(*comm.queues, *r);
        if (random() % 64 == 0) std::this_thread::yield();
        if (random() % 256 == 0) {  // now and then a locked call: delivers on entry
          call_lock_enter();
          call_lock_leave();
        }
      }
      done.fetch_add(1);
    });
  }
  // The poller: each tag's messages numbered 0, 1, ... in arrival order,
  // the tags interleaved at random, pausing now and then as a wait does.
  std::mt19937 random(7);
  std::vector<int> sent(receivers, 0);
  int left = receivers * receives;
  call_lock_enter();
  while (left > 0) {
    const int id = static_cast<int>(random() % receivers);
    if (sent[static_cast<std::size_t>(id)] == receives) continue;
    const int value = sent[static_cast<std::size_t>(id)]++;
    --left;
    packet_header h{};
    h.type = packet_type::eager;
    h.context = comm.context;
    h.source = 0;
    h.tag = id;
    h.length = sizeof(int);
    std::byte payload[sizeof(int)];
    std::memcpy(payload, &value, sizeof(int));
    ASSERT_EQ(message_arrived(rt->vcs[0], h, payload), nullptr);
    if (random() % 32 == 0) call_lock_pause(true);
  }
  while (done.load() != receivers) call_lock_pause(true);
  call_lock_pause(false);  // delivers the last ones taken
  for (auto &t : pool) t.join();
  for (int id = 0; id < receivers; ++id) {
    for (int i = 0; i < receives; ++i) {
      const request *r = made[static_cast<std::size_t>(id)][static_cast<std::size_t>(i)];
      ASSERT_TRUE(request_done(*r)) << "thread " << id << " receive " << i << " got nothing";
      EXPECT_EQ(r->status_tag, id);
      EXPECT_EQ(got[static_cast<std::size_t>(id)][static_cast<std::size_t>(i)], i)
          << "thread " << id << " receive " << i << " out of order";
    }
  }
  EXPECT_EQ(rt->matching.unexpected_counts().depth, 0U);
  for (int id = 0; id < receivers; ++id) {
    EXPECT_EQ(rt->matching.match_posted(match_key{comm.context, 0, id}), nullptr);
  }
  call_lock_leave();
  delete rt;
  rt = nullptr;
}

}  // namespace
}  // namespace iris::device
