// MPI completion bindings: the Wait and Test families (Request_free, Cancel
// and Request_get_status are request.cpp).
#include <sched.h>

#include "device/api/check.hpp"
#include "device/api/p2p/completion.hpp"
#include "device/api/p2p/wait.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/rendezvous.hpp"

using namespace iris;
using namespace iris::api::completion;

namespace {

// Finishes every completed request; returns how many (MPI_UNDEFINED when all
// are null).
int finish_some(int count, MPI_Request requests[], int indices[], MPI_Status statuses[],
                bool &any_error) {
  int done = 0;
  bool any_active = false;
  for (int i = 0; i < count; ++i) {
    if (inactive(requests[i])) continue;
    any_active = true;
    if (!is_done(live(requests[i]))) continue;
    const int error = request_finish(&requests[i], status_at(statuses, done));
    status_error_note(statuses, done, error, any_error);
    indices[done++] = i;
  }
  return any_active ? done : MPI_UNDEFINED;
}

// The bodies of MPI_Wait, MPI_Test and MPI_Waitall: the whole call below
// MULTIPLE, and under MULTIPLE (with the call lock held) whatever cannot run
// without it.
[[gnu::always_inline]] inline int wait_body(MPI_Request *request, MPI_Status *status) {
  const char *call = "MPI_Wait";
  if (int err = api::check_not_null(call, nullptr, request, "request")) return err;
  if (int err = check_requests(call, 1, request)) return err;
  if (*request == MPI_REQUEST_NULL) {
    api::status_empty(status);
    return MPI_SUCCESS;
  }
  device::request &r = live(*request);
  device::progress_until([&r] { return is_done(r); });
  const device::communicator *comm = r.comm;
  return single_result(call, comm, request_finish(request, status));
}

[[gnu::always_inline]] inline int test_body(MPI_Request *request, int *flag, MPI_Status *status) {
  const char *call = "MPI_Test";
  if (int err = api::check_not_null(call, nullptr, request, "request")) return err;
  if (int err = api::check_not_null(call, nullptr, flag, "flag")) return err;
  if (int err = check_requests(call, 1, request)) return err;
  if (*request == MPI_REQUEST_NULL) {
    *flag = 1;
    api::status_empty(status);
    return MPI_SUCCESS;
  }
  device::request &r = live(*request);
  if (!is_done(r)) device::progress_poll();
  *flag = is_done(r) ? 1 : 0;
  if (*flag == 0) return MPI_SUCCESS;
  const device::communicator *comm = r.comm;
  return single_result(call, comm, request_finish(request, status));
}

[[gnu::always_inline]] inline int waitall_body(int count, MPI_Request requests[],
                                               MPI_Status statuses[]) {
  const char *call = "MPI_Waitall";
  int first_open = 0;  // everything before it is complete
  // Each handle is looked up once (the first remembered_requests of them),
  // and a done ordinary request is finished first: a window of 64 eager
  // sends took the sender 144 instructions a request here, 99 now
  // (callgrind; bench/README.md).
  device::request *known[remembered_requests];
  if (int err = check_requests(call, count, requests, &first_open, known)) return err;
  // As a lookup would: a request finished already (a handle the array holds
  // twice) counts as null.
  const auto request_at = [&](int i) -> device::request * {
    if (i >= remembered_requests) return device::rt->requests.from_handle(requests[i]);
    device::request *r = known[i];
    return r != nullptr && r->in_use ? r : nullptr;
  };
  device::progress_until([&] {
    while (first_open < count && finished(request_at(first_open))) ++first_open;
    return first_open == count;
  });
  bool any_error = false;
  for (int i = 0; i < count; ++i) {
    MPI_Status *status = status_at(statuses, i);
    device::request *r = request_at(i);
    if (r == nullptr) {
      api::status_empty(status);
      continue;
    }
    const int error = request_finish(r, &requests[i], status);
    status_error_note(statuses, i, error, any_error);
  }
  return in_status_result(call, any_error);
}

// MPI_THREAD_MULTIPLE's Wait, Test and Waitall (device/README.md,
// "Threads"): an ordinary send or receive request is looked up and its
// completion read without the call lock (request_done: an acquire that
// pairs with request_complete's release). The waiting thread takes the lock
// only to poll, with a try-lock: while another thread holds it, it polls
// what it may without it (progress_poll_aside: eager messages into
// receives posted without the lock) and spins on its requests instead of
// queueing behind that thread. A send complete at once
// (an unlocked MPI_Isend's) and a receive of plain bytes without an error
// go back into this thread's cache without the lock (finish_unlocked); any
// other is finished under it. Anything else (null or bad
// arguments, persistent, extended or collective requests, a call from inside
// a callback that holds the lock) runs the body under the call lock.

// An ordinary request named by `handle`, which this thread may wait for
// without the call lock, or nullptr. Reads only what the request's creator
// wrote before the handle was handed out (the pool's table is stable:
// pool.hpp).
device::request *unlocked_request(MPI_Request handle) {
  device::request *r = device::rt->requests.from_handle(handle);
  if (r == nullptr || r->ext != nullptr || r->kind == device::request_kind::coll ||
      r->persistent.op != device::persistent_op::none) {
    return nullptr;
  }
  return r;
}

// Whether the arguments allow the unlocked path at all. Not once a failure
// or revocation is known (recovery): the locked paths answer for it
// (MPIX_ERR_PROC_FAILED_PENDING for a wildcard receive, completion.hpp).
bool unlocked_ok() {
  return device::rt != nullptr && !device::call_lock_held() && !device::rt->troubled;
}

// A wait without the call lock leaves it for the locked one when a failure
// or revocation becomes known meanwhile.
bool troubled() {
  return device::rt->troubled.load(std::memory_order_relaxed);
}

// One poll: the whole of it when the call lock is free, else what a thread
// may deliver without it (progress_poll_aside). Its events.
int poll_once() {
  if (!device::call_lock_try_enter()) return device::progress_poll_aside();
  const int events = device::progress_poll();
  device::call_lock_leave();
  return events;
}

// Until done(): polls (poll_once, or `poll`: its events) while done() does
// not hold; gives the core away after IRIS_SPIN_COUNT passes without an
// event.
template <typename Done, typename Poll>
void unlocked_until(Done done, Poll poll) {
  int idle = 0;
  const int spin_limit = device::rt->spin_limit;
  while (!done()) {
    const int events = poll();
    if (events > 0) {
      idle = 0;
    } else if (++idle > spin_limit) {
      sched_yield();
    }
  }
}

template <typename Done>
void unlocked_until(Done done) {
  unlocked_until(done, poll_once);
}

// poll_once for a wait on `r`: an aside send's data goes out from here too
// once its CTS is in, under its VC's lock (rendezvous.hpp, "aside sends").
int poll_for(const device::request &r) {
  int events = 0;
  if (r.kind == device::request_kind::send && r.stream_aside) {
    events = device::rendezvous_push_aside(device::rt->vcs[static_cast<std::size_t>(r.peer)]);
  }
  return events + poll_once();
}

// Whether the complete request `r` may be finished without the call lock:
// a send complete at once (known to nobody else), an aside send (plain
// bytes, nothing exposed: rendezvous.hpp, "aside sends"), or a receive of
// plain bytes (no datatype to let go of) without an error to raise. Nothing
// touches a request after its completing store (request_complete).
bool recyclable(const device::request &r) {
  return r.at_once || (r.kind == device::request_kind::send && r.stream_aside) ||
         (r.kind == device::request_kind::recv && r.status_error == MPI_SUCCESS &&
          r.scratch == nullptr && r.unpack_type == nullptr);
}

// Recycles a complete request that may be finished without the call lock
// into this thread's cache (an aside send, failing that, to the call lock's
// next holder), after filling `status`; false when it must be
// finished under the lock.
bool finish_unlocked(MPI_Request *handle, device::request &r, MPI_Status *status) {
  if (!recyclable(r)) return false;
  api::status_fill(status, r);
  if (!device::request_cache_recycle(&r)) {
    // An aside send came from the pool (its RTS went under the lock), so
    // the cache is often full: the lock's next holder releases it.
    if (r.kind != device::request_kind::send || !r.stream_aside) return false;
    device::request_release_later(&r);
  }
  *handle = MPI_REQUEST_NULL;
  return true;
}

// Tests in a row on this thread (MULTIPLE only) that found nothing complete
// and polled no event. Past IRIS_SPIN_COUNT each gives the core away, as a
// wait's spin does (unlocked_until): threads looping on a Test would
// otherwise keep the call lock's holder, and other ranks, off the cores
// whenever threads outnumber them (test/mpi/threads.c, phase H, at 4 ranks
// with the load at 27: 38 s of MPI_Test loops against 0.03 s of MPI_Wait).
constinit thread_local int tests_idle = 0;

void test_idle(int events) {
  int &idle = tests_idle;  // one lookup of the thread_local
  if (events > 0) {
    idle = 0;
    return;
  }
  if (++idle > device::rt->spin_limit) sched_yield();
}

void test_found() {
  tests_idle = 0;
}

}  // namespace

bool iris::api::wait_unlocked(MPI_Request *request, MPI_Status *status) {
  device::request *r = unlocked_request(*request);
  if (r == nullptr) return false;
  unlocked_until([r] { return device::request_done(*r) || troubled(); },
                 [r] { return poll_for(*r); });
  return device::request_done(*r) && finish_unlocked(request, *r, status);
}

namespace {

[[gnu::noinline]] int wait_multiple(MPI_Request *request, MPI_Status *status) {
  if (request != nullptr && *request != MPI_REQUEST_NULL && unlocked_ok() &&
      api::wait_unlocked(request, status)) {
    return MPI_SUCCESS;
  }
  const device::api_guard guard;
  return wait_body(request, status);
}

[[gnu::noinline]] int test_multiple(MPI_Request *request, int *flag, MPI_Status *status) {
  device::request *r = nullptr;
  if (request != nullptr && flag != nullptr && *request != MPI_REQUEST_NULL && unlocked_ok()) {
    r = unlocked_request(*request);
  }
  if (r != nullptr) {
    const int events = device::request_done(*r) ? 0 : poll_once();
    if (!device::request_done(*r)) {
      test_idle(events);
      *flag = 0;
      return MPI_SUCCESS;
    }
    test_found();
    if (finish_unlocked(request, *r, status)) {
      *flag = 1;
      return MPI_SUCCESS;
    }
  }
  const device::api_guard guard;
  return test_body(request, flag, status);
}

// The bodies of MPI_Testall, MPI_Waitany, MPI_Testany, MPI_Waitsome and
// MPI_Testsome: the whole call below MULTIPLE, and under MULTIPLE (with the
// call lock held) whatever cannot run without it. Templates only so that
// the MULTIPLE fallback's copy (Fallback) has lambdas of its own: with one
// copy, progress_until's instance for Waitany's lambda had two callers and
// was no longer inlined below MULTIPLE (callgrind: 25 more instructions a
// Waitany).
template <bool Fallback>
[[gnu::always_inline]] inline int testall_body(int count, MPI_Request requests[], int *flag,
                                               MPI_Status statuses[]) {
  const char *call = "MPI_Testall";
  if (int err = api::check_not_null(call, nullptr, flag, "flag")) return err;
  if (int err = check_requests(call, count, requests)) return err;
  device::progress_poll();
  *flag = 0;
  for (int i = 0; i < count; ++i) {
    if (!finished(requests[i])) return MPI_SUCCESS;
  }
  *flag = 1;
  bool any_error = false;
  for (int i = 0; i < count; ++i) {
    if (requests[i] == MPI_REQUEST_NULL) {
      api::status_empty(status_at(statuses, i));
      continue;
    }
    const int error = request_finish(&requests[i], status_at(statuses, i));
    status_error_note(statuses, i, error, any_error);
  }
  return in_status_result(call, any_error);
}

template <bool Fallback>
[[gnu::always_inline]] inline int waitany_body(int count, MPI_Request requests[], int *index,
                                               MPI_Status *status) {
  const char *call = "MPI_Waitany";
  if (int err = api::check_not_null(call, nullptr, index, "index")) return err;
  if (int err = check_requests(call, count, requests)) return err;
  int found = -1;
  device::progress_until([&] { return (found = first_finished(count, requests)) != -1; });
  *index = found;
  if (found == MPI_UNDEFINED) {
    api::status_empty(status);
    return MPI_SUCCESS;
  }
  const device::communicator *comm = live(requests[found]).comm;
  return single_result(call, comm, request_finish(&requests[found], status));
}

template <bool Fallback>
[[gnu::always_inline]] inline int testany_body(int count, MPI_Request requests[], int *index,
                                               int *flag, MPI_Status *status) {
  const char *call = "MPI_Testany";
  if (int err = api::check_not_null(call, nullptr, index, "index")) return err;
  if (int err = api::check_not_null(call, nullptr, flag, "flag")) return err;
  if (int err = check_requests(call, count, requests)) return err;
  device::progress_poll();
  const int found = first_finished(count, requests);
  *flag = found != -1 ? 1 : 0;
  *index = found == -1 ? MPI_UNDEFINED : found;
  if (found == -1) return MPI_SUCCESS;
  if (found == MPI_UNDEFINED) {
    api::status_empty(status);
    return MPI_SUCCESS;
  }
  const device::communicator *comm = live(requests[found]).comm;
  return single_result(call, comm, request_finish(&requests[found], status));
}

template <bool Fallback>
[[gnu::always_inline]] inline int waitsome_body(int incount, MPI_Request requests[], int *outcount,
                                                int indices[], MPI_Status statuses[]) {
  const char *call = "MPI_Waitsome";
  if (int err = api::check_not_null(call, nullptr, outcount, "outcount")) return err;
  if (int err = check_requests(call, incount, requests)) return err;
  if (incount > 0) {
    if (int err = api::check_not_null(call, nullptr, indices, "array_of_indices")) return err;
  }
  device::progress_until([&] { return first_finished(incount, requests) != -1; });
  bool any_error = false;
  *outcount = finish_some(incount, requests, indices, statuses, any_error);
  return in_status_result(call, any_error);
}

template <bool Fallback>
[[gnu::always_inline]] inline int testsome_body(int incount, MPI_Request requests[], int *outcount,
                                                int indices[], MPI_Status statuses[]) {
  const char *call = "MPI_Testsome";
  if (int err = api::check_not_null(call, nullptr, outcount, "outcount")) return err;
  if (int err = check_requests(call, incount, requests)) return err;
  if (incount > 0) {
    if (int err = api::check_not_null(call, nullptr, indices, "array_of_indices")) return err;
  }
  device::progress_poll();
  bool any_error = false;
  *outcount = finish_some(incount, requests, indices, statuses, any_error);
  return in_status_result(call, any_error);
}

// MPI_THREAD_MULTIPLE's Waitany, Waitsome, Testall, Testany and Testsome,
// as waitall_multiple: when every handle of the array is null or names an
// ordinary send or receive request (unlocked_request), and one at least is
// not null, the completions are read without the call lock and the waits
// poll through the try-lock (unlocked_until; a Test polls once, if the lock
// is free). The requests finish_unlocked takes go back to this thread's
// cache; any other is finished under the call lock. Anything
// else (all null, bad arguments, persistent, extended or collective
// requests, a callback's call) runs the body under the call lock.

// Whether `requests` allows the unlocked path: see above.
bool unlocked_array(int count, const MPI_Request requests[]) {
  if (count <= 0 || requests == nullptr || !unlocked_ok()) return false;
  bool any = false;
  for (int i = 0; i < count; ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    if (unlocked_request(requests[i]) == nullptr) return false;
    any = true;
  }
  return any;
}

// The index of the first complete request of an array unlocked_array
// accepted, or -1.
int first_done_unlocked(int count, const MPI_Request requests[]) {
  for (int i = 0; i < count; ++i) {
    if (requests[i] != MPI_REQUEST_NULL &&
        device::request_done(*device::rt->requests.from_handle(requests[i]))) {
      return i;
    }
  }
  return -1;
}

bool all_done_unlocked(int count, const MPI_Request requests[]) {
  for (int i = 0; i < count; ++i) {
    if (requests[i] != MPI_REQUEST_NULL &&
        !device::request_done(*device::rt->requests.from_handle(requests[i]))) {
      return false;
    }
  }
  return true;
}

// MPI_Waitany's and MPI_Testany's end: finishes complete request `i`.
int finish_one_unlocked(const char *call, MPI_Request requests[], int i, MPI_Status *status) {
  device::request &r = *device::rt->requests.from_handle(requests[i]);
  if (finish_unlocked(&requests[i], r, status)) return MPI_SUCCESS;
  const device::api_guard guard;
  const device::communicator *comm = r.comm;
  return single_result(call, comm, request_finish(&requests[i], status));
}

// MPI_Waitall's and MPI_Testall's end, every request complete.
int finish_all_unlocked(const char *call, int count, MPI_Request requests[],
                        MPI_Status statuses[]) {
  bool rest = false;
  for (int i = 0; i < count; ++i) {
    MPI_Status *status = status_at(statuses, i);
    if (requests[i] == MPI_REQUEST_NULL) {
      api::status_empty(status);
    } else if (!finish_unlocked(&requests[i], *device::rt->requests.from_handle(requests[i]),
                                status)) {
      rest = true;
    }
  }
  if (!rest) return MPI_SUCCESS;
  bool any_error = false;
  {
    const device::api_guard guard;
    for (int i = 0; i < count; ++i) {
      // Null now: null before, or finished above (its status is filled).
      const int error = requests[i] == MPI_REQUEST_NULL
                            ? MPI_SUCCESS
                            : request_finish(&requests[i], status_at(statuses, i));
      status_error_note(statuses, i, error, any_error);
    }
  }
  return in_status_result(call, any_error);
}

// MPI_Waitsome's and MPI_Testsome's end: finishes every complete request.
int finish_some_unlocked(const char *call, int count, MPI_Request requests[], int *outcount,
                         int indices[], MPI_Status statuses[]) {
  int done = 0;
  bool rest = false;
  for (int i = 0; i < count; ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    device::request &r = *device::rt->requests.from_handle(requests[i]);
    if (!device::request_done(r)) continue;
    if (finish_unlocked(&requests[i], r, status_at(statuses, done))) {
      indices[done++] = i;
    } else {
      rest = true;
    }
  }
  bool any_error = false;
  if (rest) {
    const device::api_guard guard;
    for (int i = 0; i < count; ++i) {
      if (requests[i] == MPI_REQUEST_NULL || !device::request_done(live(requests[i]))) continue;
      const int error = request_finish(&requests[i], status_at(statuses, done));
      status_error_note(statuses, done, error, any_error);
      indices[done++] = i;
    }
  }
  *outcount = done;
  return in_status_result(call, any_error);
}

[[gnu::noinline]] int waitany_multiple(int count, MPI_Request requests[], int *index,
                                       MPI_Status *status) {
  if (index != nullptr && unlocked_array(count, requests)) {
    int found = -1;
    unlocked_until(
        [&] { return (found = first_done_unlocked(count, requests)) >= 0 || troubled(); });
    if (found >= 0) {
      *index = found;
      return finish_one_unlocked("MPI_Waitany", requests, found, status);
    }
  }
  const device::api_guard guard;
  return waitany_body<true>(count, requests, index, status);
}

[[gnu::noinline]] int testany_multiple(int count, MPI_Request requests[], int *index, int *flag,
                                       MPI_Status *status) {
  if (index != nullptr && flag != nullptr && unlocked_array(count, requests)) {
    int found = first_done_unlocked(count, requests);
    if (found < 0) {
      const int events = poll_once();
      found = first_done_unlocked(count, requests);
      if (found < 0) test_idle(events);
    }
    *flag = found >= 0 ? 1 : 0;
    *index = found >= 0 ? found : MPI_UNDEFINED;
    if (found < 0) return MPI_SUCCESS;
    test_found();
    return finish_one_unlocked("MPI_Testany", requests, found, status);
  }
  const device::api_guard guard;
  return testany_body<true>(count, requests, index, flag, status);
}

[[gnu::noinline]] int waitall_multiple(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (unlocked_array(count, requests)) {
    int first_open = 0;  // everything before it is complete
    unlocked_until(
        [&] {
          while (first_open < count &&
                 (requests[first_open] == MPI_REQUEST_NULL ||
                  device::request_done(*device::rt->requests.from_handle(requests[first_open])))) {
            ++first_open;
          }
          return first_open == count || troubled();
        },
        [&] { return poll_for(*device::rt->requests.from_handle(requests[first_open])); });
    if (first_open == count) return finish_all_unlocked("MPI_Waitall", count, requests, statuses);
  }
  const device::api_guard guard;
  return waitall_body(count, requests, statuses);
}

[[gnu::noinline]] int testall_multiple(int count, MPI_Request requests[], int *flag,
                                       MPI_Status statuses[]) {
  if (flag != nullptr && unlocked_array(count, requests)) {
    if (!all_done_unlocked(count, requests)) {
      const int events = poll_once();
      if (!all_done_unlocked(count, requests)) {
        test_idle(events);
        *flag = 0;
        return MPI_SUCCESS;
      }
    }
    test_found();
    *flag = 1;
    return finish_all_unlocked("MPI_Testall", count, requests, statuses);
  }
  const device::api_guard guard;
  return testall_body<true>(count, requests, flag, statuses);
}

[[gnu::noinline]] int waitsome_multiple(int incount, MPI_Request requests[], int *outcount,
                                        int indices[], MPI_Status statuses[]) {
  if (outcount != nullptr && indices != nullptr && unlocked_array(incount, requests)) {
    unlocked_until([&] { return first_done_unlocked(incount, requests) >= 0 || troubled(); });
    if (first_done_unlocked(incount, requests) >= 0) {
      return finish_some_unlocked("MPI_Waitsome", incount, requests, outcount, indices, statuses);
    }
  }
  const device::api_guard guard;
  return waitsome_body<true>(incount, requests, outcount, indices, statuses);
}

[[gnu::noinline]] int testsome_multiple(int incount, MPI_Request requests[], int *outcount,
                                        int indices[], MPI_Status statuses[]) {
  if (outcount != nullptr && indices != nullptr && unlocked_array(incount, requests)) {
    if (first_done_unlocked(incount, requests) >= 0) {
      test_found();
    } else {
      const int events = poll_once();
      if (first_done_unlocked(incount, requests) < 0) {
        test_idle(events);
      } else {
        test_found();
      }
    }
    return finish_some_unlocked("MPI_Testsome", incount, requests, outcount, indices, statuses);
  }
  const device::api_guard guard;
  return testsome_body<true>(incount, requests, outcount, indices, statuses);
}
}  // namespace

extern "C" {

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  return device::api_send_call(
      // below MULTIPLE
      [&] { return wait_body(request, status); },
      // MULTIPLE: without the call lock when it can
      [&] { return wait_multiple(request, status); });
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  return device::api_send_call(
      // below MULTIPLE
      [&] { return test_body(request, flag, status); },
      // MULTIPLE: without the call lock when it can
      [&] { return test_multiple(request, flag, status); });
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return device::api_send_call(
      // below MULTIPLE
      [&] { return waitall_body(count, requests, statuses); },
      // MULTIPLE: without the call lock when it can
      [&] { return waitall_multiple(count, requests, statuses); });
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
  return device::api_send_call(
      // below MULTIPLE
      [&] { return testall_body<false>(count, requests, flag, statuses); },
      // MULTIPLE: without the call lock when it can
      [&] { return testall_multiple(count, requests, flag, statuses); });
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  return device::api_send_call(
      // below MULTIPLE
      [&] { return waitany_body<false>(count, requests, index, status); },
      // MULTIPLE: without the call lock when it can
      [&] { return waitany_multiple(count, requests, index, status); });
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
  return device::api_send_call(
      // below MULTIPLE
      [&] { return testany_body<false>(count, requests, index, flag, status); },
      // MULTIPLE: without the call lock when it can
      [&] { return testany_multiple(count, requests, index, flag, status); });
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
  return device::api_send_call(
      // below MULTIPLE
      [&] { return waitsome_body<false>(incount, requests, outcount, indices, statuses); },
      // MULTIPLE: without the call lock when it can
      [&] { return waitsome_multiple(incount, requests, outcount, indices, statuses); });
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
  return device::api_send_call(
      // below MULTIPLE
      [&] { return testsome_body<false>(incount, requests, outcount, indices, statuses); },
      // MULTIPLE: without the call lock when it can
      [&] { return testsome_multiple(incount, requests, outcount, indices, statuses); });
}

}  // extern "C"
