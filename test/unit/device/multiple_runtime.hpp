// A runtime of one process with MPI_THREAD_MULTIPLE's locking on, for the
// unit tests of the MULTIPLE paths (no transports, no PMI): made by the
// constructor, torn down by the destructor, one per test. And the locking
// alone (multiple_receives), for a test that makes its runtime itself.
#pragma once

#include "device/recv_multiple.hpp"
#include "device/runtime.hpp"
#include "device/threading.hpp"

namespace iris::device {

struct multiple_runtime {
  multiple_runtime() {
    rt = new runtime;
    rt->rank = 0;
    rt->size = 1;
    rt->spin_limit = 50;    // waits yield soon: the stress tests oversubscribe the cores
    rt->next_context = 40;  // agreements start above the predefined contexts
    threads_enabled = true;
  }
  ~multiple_runtime() {
    threads_enabled = false;
    delete rt;
    rt = nullptr;
  }
  multiple_runtime(const multiple_runtime &) = delete;
  multiple_runtime &operator=(const multiple_runtime &) = delete;
};

// MULTIPLE's locking on over a runtime the test made itself, with the
// delivery of receives that took a message run by each new holder of the
// call lock, as runtime_init sets it.
struct multiple_receives {
  multiple_receives() {
    threads_enabled = true;
    call_lock_entered = recv_taken_drain;
  }
  ~multiple_receives() {
    threads_enabled = false;
    call_lock_entered = nullptr;
  }
  multiple_receives(const multiple_receives &) = delete;
  multiple_receives &operator=(const multiple_receives &) = delete;
};

}  // namespace iris::device
