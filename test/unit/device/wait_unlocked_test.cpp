// MPI_THREAD_MULTIPLE's completion read without the call lock (device/README.md,
// "Threads", steps 1 and 2), one seeded stress test per step, run under
// ThreadSanitizer by test/suite.sh:
//   - request_complete's release store and request_done's acquire load: the
//     outcome written before a request completes is what its waiter reads;
//   - the request pool's table of chunks: lookups from several threads while
//     the call lock's holder grows the pool;
//   - MPI_Wait, MPI_Test and MPI_Waitall from three threads on their own
//     requests, which a fourth completes under the call lock in a shuffled
//     order; requests complete at once (an unlocked MPI_Isend's) go back
//     into their thread's cache;
//   - MPI_Waitany, MPI_Testany, MPI_Testall, MPI_Waitsome and MPI_Testsome
//     the same way, on slices of one shared array and on private arrays,
//     with a null entry, a truncated receive now and then (MPI_ERR_IN_STATUS
//     in the calls with an array of statuses), and the all-null array after.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "device/api/check.hpp"
#include "device/base/threading.hpp"
#include "device/runtime/runtime.hpp"
#include "multiple_runtime.hpp"

namespace iris::device {
namespace {

// The two stress tests of the Wait and Test calls: `waiters` threads, each
// with `rounds` rounds of `window` receives.
constexpr int waiters = 3;
constexpr int rounds = 300;
constexpr int window = 4;
struct round {
  std::atomic<int> handles[window];
};

// Sizes `work` and allocates every receive in it under the call lock;
// returns them in a shuffled order (`seed`) for complete_in_order.
std::vector<request *> allocate_rounds(std::vector<std::vector<round>> &work, unsigned seed) {
  for (auto &w : work) w = std::vector<round>(rounds);
  std::vector<request *> all;
  call_lock_enter();
  for (auto &w : work) {
    for (round &here : w) {
      for (std::atomic<int> &handle : here.handles) {
        request *r = rt->requests.allocate(request_kind::recv, nullptr);
        handle.store(request_handle(*r), std::memory_order_relaxed);
        all.push_back(r);
      }
    }
  }
  call_lock_leave();
  std::shuffle(all.begin(), all.end(), std::mt19937(seed));
  return all;
}

// A thread that completes `all` in order, a few under one hold of the call
// lock as a poll does, as receives from rank 1 whose tag is their index;
// with `truncate`, every seventh is truncated.
std::thread complete_in_order(const std::vector<request *> &all, unsigned seed, bool truncate) {
  return std::thread([&all, seed, truncate] {
    std::mt19937 random(seed);
    std::size_t next = 0;
    while (next < all.size()) {
      call_lock_enter();
      for (int m = static_cast<int>(random() % 8); m >= 0 && next < all.size(); --m) {
        request *r = all[next++];
        r->status_source = 1;
        r->status_tag = static_cast<int>(r->index);
        r->status_bytes = r->index;
        if (truncate && r->index % 7 == 0) r->status_error = MPI_ERR_TRUNCATE;
        request_complete(*r);
      }
      call_lock_leave();
      if (random() % 4 == 0) std::this_thread::yield();
    }
  });
}

// A send complete at once from this thread's cache, as an unlocked
// MPI_Isend leaves it (tag -7), or nullptr when the cache is empty.
request *at_once_send() {
  request *r = request_cache_take();
  if (r == nullptr) return nullptr;
  r->complete = true;
  r->at_once = true;
  r->status_tag = -7;
  return r;
}

// Which of `mine`, this round's requests, went back to this thread's cache
// fresh when finished rather than to the pool: the cache's top is the last
// one recycled (the round began one short of full: at_once_send), so it is
// one of them; -1 when it is none of them or not fresh.
int recycled(const std::vector<request *> &mine) {
  request *again = request_cache_take();
  int which = -1;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (again == mine[i] && !again->complete && !again->at_once && again->in_use) {
      which = static_cast<int>(i);
    }
  }
  request_cache_put(again);
  return which;
}

TEST(UnlockedCompletion, SeededStressOutcomeWrittenBeforeCompleteIsSeen) {
  ASSERT_EQ(rt, nullptr);
  const multiple_runtime on;
  constexpr int waiters = 3;
  constexpr int each = 3000;
  std::vector<request *> all;
  call_lock_enter();
  for (int i = 0; i < waiters * each; ++i)
    all.push_back(rt->requests.allocate(request_kind::recv, nullptr));
  call_lock_leave();
  std::vector<request *> order = all;
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  std::thread completer([&] {
    std::mt19937 random(11);
    for (request *r : order) {
      r->status_source = static_cast<int>(r->index);
      r->status_tag = static_cast<int>(r->index) * 3;
      r->status_bytes = r->index + 17;
      request_complete(*r);  // a release: the three fields above go first
      if (random() % 128 == 0) std::this_thread::yield();
    }
  });
  std::atomic<int> bad{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < waiters; ++w) {
    pool.emplace_back([&, w] {
      for (int i = 0; i < each; ++i) {
        const request &r = *all[static_cast<std::size_t>(w * each + i)];
        while (!request_done(r)) std::this_thread::yield();
        if (r.status_source != static_cast<int>(r.index) ||
            r.status_tag != static_cast<int>(r.index) * 3 || r.status_bytes != r.index + 17) {
          bad.fetch_add(1);
        }
      }
    });
  }
  completer.join();
  for (auto &t : pool) t.join();
  EXPECT_EQ(bad.load(), 0);
  for (request *r : all) rt->requests.release(r);
}

TEST(UnlockedCompletion, SeededStressLookupsWhileThePoolGrows) {
  ASSERT_EQ(rt, nullptr);
  const multiple_runtime on;
  constexpr int readers = 3;
  constexpr int grown = 40000;  // chunks 0..7: seven grows while the readers look
  // Handles published one by one (release), as MPI_Isend hands one to the user.
  std::vector<std::atomic<int>> handles(grown);
  std::atomic<int> published{0};
  std::thread grower([&] {
    std::mt19937 random(5);
    for (int i = 0; i < grown; ++i) {
      call_lock_enter();
      request *r = rt->requests.allocate(request_kind::send, nullptr);
      call_lock_leave();
      handles[static_cast<std::size_t>(i)].store(request_handle(*r), std::memory_order_relaxed);
      published.store(i + 1, std::memory_order_release);
      if (random() % 512 == 0) std::this_thread::yield();
    }
  });
  std::atomic<int> bad{0};
  std::vector<std::thread> pool;
  for (int id = 0; id < readers; ++id) {
    pool.emplace_back([&, id] {
      std::mt19937 random(static_cast<unsigned>(23 + id));
      for (;;) {
        const int n = published.load(std::memory_order_acquire);
        if (n == 0) continue;
        const int i = static_cast<int>(random() % static_cast<unsigned>(n));
        const int handle = handles[static_cast<std::size_t>(i)].load(std::memory_order_relaxed);
        const request *r = rt->requests.from_handle(handle);
        if (r == nullptr || request_handle(*r) != handle) bad.fetch_add(1);
        if (n == grown) break;
      }
      // An index past the last chunk names nothing.
      if (rt->requests.from_handle(handle_make(handle_kind::request, 0x07fffff0)) != nullptr)
        bad.fetch_add(1);
    });
  }
  grower.join();
  for (auto &t : pool) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(rt->requests.live(), static_cast<std::size_t>(grown));
}

TEST(UnlockedCompletion, SeededStressWaitTestWaitallWithoutTheCallLock) {
  ASSERT_EQ(rt, nullptr);
  const multiple_runtime on;
  // Each round a waiter gets `window` receives that the completer finishes
  // in a shuffled order, and one send complete at once (as send_unlocked
  // leaves it), which it finishes into its cache.
  std::vector<std::vector<round>> work(waiters);
  const std::vector<request *> to_complete = allocate_rounds(work, 3);
  std::thread completer = complete_in_order(to_complete, 9, false);
  std::atomic<int> bad{0};
  std::atomic<int> receives_recycled{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < waiters; ++w) {
    pool.emplace_back([&, w] {
      std::mt19937 random(static_cast<unsigned>(41 + w));
      call_lock_enter();
      request_cache_fill();
      call_lock_leave();
      for (int k = 0; k < rounds; ++k) {
        round &here = work[static_cast<std::size_t>(w)][static_cast<std::size_t>(k)];
        MPI_Request reqs[window + 1];
        int tags[window];
        std::vector<request *> mine;
        for (int j = 0; j < window; ++j) {
          reqs[j] = here.handles[j].load(std::memory_order_relaxed);
          mine.push_back(rt->requests.from_handle(reqs[j]));
          tags[j] = static_cast<int>(mine.back()->index);
        }
        request *at_once = at_once_send();
        if (at_once == nullptr) {
          bad.fetch_add(1);
          return;
        }
        mine.push_back(at_once);
        reqs[window] = request_handle(*at_once);
        MPI_Status st[window + 1];
        switch (random() % 3) {
          case 0:
            for (int j = 0; j <= window; ++j) {
              if (MPI_Wait(&reqs[j], &st[j]) != MPI_SUCCESS) bad.fetch_add(1);
            }
            break;
          case 1:
            for (int j = 0; j <= window; ++j) {
              int flag = 0;
              while (flag == 0) {
                if (MPI_Test(&reqs[j], &flag, &st[j]) != MPI_SUCCESS) bad.fetch_add(1);
              }
            }
            break;
          default:
            if (MPI_Waitall(window + 1, reqs, st) != MPI_SUCCESS) bad.fetch_add(1);
        }
        for (int j = 0; j <= window; ++j) {
          if (reqs[j] != MPI_REQUEST_NULL) bad.fetch_add(1);
        }
        for (int j = 0; j < window; ++j) {
          if (st[j].MPI_SOURCE != 1 || st[j].MPI_TAG != tags[j]) bad.fetch_add(1);
        }
        if (st[window].MPI_TAG != -7) bad.fetch_add(1);
        // The first finished went back to the cache, not to the pool: the
        // receives too (plain bytes, no error), not only the send.
        const int which = recycled(mine);
        if (which < 0) bad.fetch_add(1);
        if (which >= 0 && which < window) receives_recycled.fetch_add(1);
      }
      call_lock_enter();
      request_cache_drop();
      call_lock_leave();
    });
  }
  completer.join();
  for (auto &t : pool) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(receives_recycled.load(), 0);
  EXPECT_EQ(rt->requests.live(), 0U);  // every receive released, every cache dropped
}

// A call of the five on `reqs`: each round's `n` entries finished in some
// number of calls; `seen[i]` counts request i's completions and `st[i]`
// holds its status. Returns false on a broken rule.
bool finish_array(int mode, int n, MPI_Request reqs[], MPI_Status st[], int seen[]) {
  MPI_Status one;
  MPI_Status many[8];
  int indices[8];
  int left = 0;
  for (int i = 0; i < n; ++i) left += reqs[i] != MPI_REQUEST_NULL ? 1 : 0;
  while (left > 0) {
    for (MPI_Status &m : many) m.MPI_ERROR = -1;
    one.MPI_ERROR = -1;
    int index = -2;
    int flag = 0;
    int outcount = -2;
    int err = MPI_SUCCESS;
    switch (mode) {
      case 0:
        err = MPI_Waitany(n, reqs, &index, &one);
        flag = 1;
        break;
      case 1:
        err = MPI_Testany(n, reqs, &index, &flag, &one);
        if (flag == 0 && index != MPI_UNDEFINED) return false;
        break;
      case 2:
        err = MPI_Testall(n, reqs, &flag, many);
        if (flag == 0) continue;
        for (int i = 0; i < n; ++i) {
          if (reqs[i] != MPI_REQUEST_NULL) return false;
          seen[i] = 1;
          st[i] = many[i];
          // With MPI_ERR_IN_STATUS every status says how its request went.
          if (err == MPI_ERR_IN_STATUS && many[i].MPI_ERROR == -1) return false;
        }
        left = 0;
        if (err != MPI_SUCCESS && err != MPI_ERR_IN_STATUS) return false;
        continue;
      case 3:
      default:
        err = mode == 3 ? MPI_Waitsome(n, reqs, &outcount, indices, many)
                        : MPI_Testsome(n, reqs, &outcount, indices, many);
        if (outcount < 0 || outcount > left || (mode == 3 && outcount == 0)) return false;
        for (int k = 0; k < outcount; ++k) {
          const int i = indices[k];
          if (i < 0 || i >= n || reqs[i] != MPI_REQUEST_NULL || seen[i]++ != 0) return false;
          st[i] = many[k];
          if (err == MPI_ERR_IN_STATUS && many[k].MPI_ERROR == -1) return false;
          --left;
        }
        if (err != MPI_SUCCESS && err != MPI_ERR_IN_STATUS) return false;
        continue;
    }
    if (flag == 0) continue;
    if (index < 0 || index >= n || reqs[index] != MPI_REQUEST_NULL || seen[index]++ != 0) {
      return false;
    }
    // A single status: the error is the call's, never MPI_ERR_IN_STATUS.
    if (err != MPI_SUCCESS && err != MPI_ERR_TRUNCATE) return false;
    one.MPI_ERROR = err;
    st[index] = one;
    --left;
  }
  // All null now: MPI_UNDEFINED, a flag set, an empty status.
  int index = -2;
  int flag = 0;
  int outcount = -2;
  switch (mode) {
    case 0:
      return MPI_Waitany(n, reqs, &index, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
             index == MPI_UNDEFINED;
    case 1:
      return MPI_Testany(n, reqs, &index, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
             index == MPI_UNDEFINED && flag == 1;
    case 2:
      return MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE) == MPI_SUCCESS && flag == 1;
    case 3:
      return MPI_Waitsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE) == MPI_SUCCESS &&
             outcount == MPI_UNDEFINED;
    default:
      return MPI_Testsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE) == MPI_SUCCESS &&
             outcount == MPI_UNDEFINED;
  }
}

TEST(UnlockedCompletion, SeededStressAnySomeTestallWithoutTheCallLock) {
  ASSERT_EQ(rt, nullptr);
  const multiple_runtime on;
  // Errors return (a truncated receive): MPI_COMM_WORLD's handler.
  rt->comms.resize(2);
  rt->comms[1] = std::make_unique<communicator>();
  rt->comms[1]->handle = MPI_COMM_WORLD;
  rt->comms[1]->errhandler = MPI_ERRORS_RETURN;
  constexpr int n = window + 2;  // the receives, a send complete at once, a null entry
  std::vector<std::vector<round>> work(waiters);
  const std::vector<request *> to_complete = allocate_rounds(work, 5);
  std::thread completer = complete_in_order(to_complete, 11, true);
  std::vector<MPI_Request> shared(static_cast<std::size_t>(waiters * n));
  std::atomic<int> bad{0};
  std::atomic<int> truncated{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < waiters; ++w) {
    pool.emplace_back([&, w] {
      std::mt19937 random(static_cast<unsigned>(71 + w));
      call_lock_enter();
      request_cache_fill();
      call_lock_leave();
      for (int k = 0; k < rounds; ++k) {
        round &here = work[static_cast<std::size_t>(w)][static_cast<std::size_t>(k)];
        MPI_Request own[n];
        MPI_Request *reqs = k % 2 == 0 ? &shared[static_cast<std::size_t>(w * n)] : own;
        // The receives, the send and the null entry in a shuffled order.
        int order[n];
        for (int i = 0; i < n; ++i) order[i] = i;
        std::shuffle(order, order + n, random);
        int tags[n];
        request *at_once = at_once_send();
        if (at_once == nullptr) {
          bad.fetch_add(1);
          return;
        }
        // What may come back to the cache: the send and the receives that
        // will not be truncated (a truncated one raises its error under the
        // call lock and goes to the pool).
        std::vector<request *> mine{at_once};
        for (int i = 0; i < n; ++i) {
          const int j = order[i];
          if (j < window) {
            reqs[i] = here.handles[j].load(std::memory_order_relaxed);
            request *r = rt->requests.from_handle(reqs[i]);
            tags[i] = static_cast<int>(r->index);
            if (r->index % 7 != 0) mine.push_back(r);
          } else if (j == window) {
            reqs[i] = request_handle(*at_once);
            tags[i] = -7;
          } else {
            reqs[i] = MPI_REQUEST_NULL;
            tags[i] = MPI_ANY_TAG;
          }
        }
        MPI_Status st[n];
        int seen[n] = {};
        const int mode = static_cast<int>(random() % 5);
        if (!finish_array(mode, n, reqs, st, seen)) bad.fetch_add(1);
        for (int i = 0; i < n; ++i) {
          if (reqs[i] != MPI_REQUEST_NULL) bad.fetch_add(1);
          // Each request reported once; the null entry only by MPI_Testall.
          if (seen[i] != (order[i] <= window || mode == 2 ? 1 : 0)) bad.fetch_add(1);
          if (order[i] > window) {
            if (mode == 2 && (st[i].MPI_SOURCE != MPI_ANY_SOURCE || st[i].MPI_TAG != MPI_ANY_TAG))
              bad.fetch_add(1);
            continue;
          }
          if (st[i].MPI_TAG != tags[i]) bad.fetch_add(1);
          if (order[i] < window && st[i].MPI_SOURCE != 1) bad.fetch_add(1);
          const bool cut = order[i] < window && tags[i] % 7 == 0;
          if (cut) truncated.fetch_add(1);
          // Where MPI_ERROR was written (an error somewhere in the call), it
          // is this request's.
          if (st[i].MPI_ERROR != -1 && st[i].MPI_ERROR != (cut ? MPI_ERR_TRUNCATE : MPI_SUCCESS))
            bad.fetch_add(1);
        }
        if (recycled(mine) < 0) bad.fetch_add(1);
      }
      call_lock_enter();
      request_cache_drop();
      call_lock_leave();
    });
  }
  completer.join();
  for (auto &t : pool) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(truncated.load(), 0);
  EXPECT_EQ(rt->requests.live(), 0U);
}

}  // namespace
}  // namespace iris::device
