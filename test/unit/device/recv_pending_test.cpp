// MPI_THREAD_MULTIPLE's receives posted without the call lock
// (device/recv_multiple.hpp): a seeded stress test of three threads pushing
// receives while a fourth, holding the call lock, drains them between
// pauses, as a waiting thread does. Every receive is posted exactly once,
// each thread's in the order it pushed them; ThreadSanitizer watches the
// requests' plain fields and the matcher.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "device/recv_multiple.hpp"
#include "device/runtime.hpp"
#include "device/threading.hpp"

namespace iris::device {
namespace {

struct multiple_on {
  multiple_on() {
    threads_enabled = true;
    call_lock_entered = recv_pending_drain;  // as runtime_init sets it under MULTIPLE
  }
  ~multiple_on() {
    threads_enabled = false;
    call_lock_entered = nullptr;
  }
};

TEST(PendingReceives, SeededStressPostsEachOnceInEachThreadsOrder) {
  ASSERT_EQ(rt, nullptr);
  rt = new runtime;
  rt->rank = 0;
  rt->size = 1;
  communicator comm;
  comm.context = world_context;
  comm.rank = 0;
  comm.size = 1;
  comm.world_rank = {0};
  const multiple_on on;
  constexpr int pushers = 3;
  constexpr int receives = 2000;
  // Made under the call lock, as a thread's request cache is.
  std::vector<std::vector<request *>> made(pushers);
  call_lock_enter();
  for (auto &mine : made) {
    for (int i = 0; i < receives; ++i) {
      mine.push_back(rt->requests.allocate(request_kind::recv, &comm));
    }
  }
  call_lock_leave();
  std::atomic<int> done{0};
  std::vector<std::thread> pool;
  for (int id = 0; id < pushers; ++id) {
    pool.emplace_back([&, id] {
      std::mt19937 random(static_cast<unsigned>(31 + id));
      int i = 0;
      for (request *r : made[static_cast<std::size_t>(id)]) {
        r->key = match_key{comm.context, any_source, id};  // one pattern per thread
        r->bytes = static_cast<std::size_t>(i++);          // its place in the thread's order
        recv_post_pending(*r);
        if (random() % 64 == 0) std::this_thread::yield();
        if (random() % 256 == 0) {  // now and then a locked call: drains on entry
          call_lock_enter();
          call_lock_leave();
        }
      }
      done.fetch_add(1);
    });
  }
  call_lock_enter();
  while (done.load() != pushers) call_lock_pause(true);  // drains, lets the others in
  call_lock_pause(false);                                // the last ones
  for (auto &t : pool) t.join();
  for (int id = 0; id < pushers; ++id) {
    for (int i = 0; i < receives; ++i) {
      request *r = rt->matching.match_posted(match_key{comm.context, 0, id});
      ASSERT_NE(r, nullptr) << "thread " << id << " receive " << i << " was not posted";
      EXPECT_EQ(r->bytes, static_cast<std::size_t>(i)) << "thread " << id << " out of order";
    }
    EXPECT_EQ(rt->matching.match_posted(match_key{comm.context, 0, id}), nullptr);
  }
  EXPECT_EQ(rt->stats.unlocked_receives, static_cast<std::uint64_t>(pushers * receives));
  call_lock_leave();
  delete rt;
  rt = nullptr;
}

}  // namespace
}  // namespace iris::device
