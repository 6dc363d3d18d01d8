// A runtime of one process with MPI_THREAD_MULTIPLE's locking on, for the
// unit tests of the MULTIPLE paths (no transports, no PMI): made by the
// constructor, torn down by the destructor, one per test. And the locking
// alone (multiple_receives), for a test that makes its runtime itself.
#pragma once

#include <memory>

#include "device/base/threading.hpp"
#include "device/core/transport.hpp"
#include "device/protocols/recv_multiple.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

struct multiple_runtime {
  multiple_runtime() {
    rt = new runtime;
    rt->rank = 0;
    rt->size = 1;
    rt->spin_limit = 50;    // waits yield soon: the stress tests oversubscribe the cores
    rt->next_context = 40;  // agreements start above the predefined contexts
    threads_enabled = true;
    call_guard = call_guarding::locked;
  }
  ~multiple_runtime() {
    threads_enabled = false;
    call_guard = call_guarding::none;
    delete rt;
    rt = nullptr;
  }
  multiple_runtime(const multiple_runtime &) = delete;
  multiple_runtime &operator=(const multiple_runtime &) = delete;
};

// A runtime of rank 0 of 2 for the aside paths' tests (recv_aside_test,
// send_aside_test): the peer, rank 1, a shared VC (as runtime_init sets it
// under MULTIPLE) reached through `via`, which the runtime keeps; the
// matcher shared; `comm` the world communicator with its queues. Returns
// the peer's VC. Torn down with `delete rt`.
inline vc &peer_runtime(std::unique_ptr<transport> via, communicator &comm) {
  rt = new runtime;
  rt->config = settings_load();
  rt->rank = 0;
  rt->size = 2;
  rt->next_context = 40;
  rt->vcs.resize(2);
  rt->sending.reserve(2);
  rt->vcs[0].flow_controlled = false;
  vc &p = rt->vcs[1];
  p.world_rank = 1;
  p.via = via.get();
  p.eager_limit = 256;
  p.credits = p.window = 64;
  p.shared = true;
  rt->transports.push_back(std::move(via));
  rt->matching.share();
  comm.context = world_context;
  comm.rank = 0;
  comm.size = 2;
  comm.world_rank = {0, 1};
  call_lock_enter();
  comm.queues = rt->matching.queues_of(comm.context);
  call_lock_leave();
  return p;
}

// MULTIPLE's locking alone, on for one test as MPI_Init_thread turns it on.
struct multiple_on {
  multiple_on() {
    threads_enabled = true;
    call_guard = call_guarding::locked;
  }
  ~multiple_on() {
    threads_enabled = false;
    call_guard = call_guarding::none;
  }
  multiple_on(const multiple_on &) = delete;
  multiple_on &operator=(const multiple_on &) = delete;
};

// MULTIPLE's locking on over a runtime the test made itself, with the
// delivery of receives that took a message run by each new holder of the
// call lock, as runtime_init sets it.
struct multiple_receives {
  multiple_receives() {
    threads_enabled = true;
    call_guard = call_guarding::locked;
    call_lock_entered = recv_taken_drain;
  }
  ~multiple_receives() {
    threads_enabled = false;
    call_guard = call_guarding::none;
    call_lock_entered = nullptr;
  }
  multiple_receives(const multiple_receives &) = delete;
  multiple_receives &operator=(const multiple_receives &) = delete;
};

}  // namespace iris::device
