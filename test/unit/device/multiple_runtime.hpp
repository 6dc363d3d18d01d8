// A runtime of one process with MPI_THREAD_MULTIPLE's locking on, for the
// unit tests of the MULTIPLE paths (no transports, no PMI): made by the
// constructor, torn down by the destructor, one per test.
#pragma once

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

}  // namespace iris::device
