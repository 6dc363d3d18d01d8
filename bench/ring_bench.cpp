// The shared-memory ring alone, between two threads (Google Benchmark): the
// cost of one record through the queue, without MPI on top.
//   build/bench/ring_bench
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "shm/ring.hpp"

namespace {

using namespace iris::shm;

struct ring_memory {
  explicit ring_memory(std::size_t capacity)
      : base(static_cast<std::byte *>(std::aligned_alloc(4096, ring_footprint(capacity)))) {
    std::memset(base, 0, ring_footprint(capacity));
    control = new (base) ring_control{};
    control->capacity = capacity;
  }
  ~ring_memory() { std::free(base); }
  std::byte *data() const { return base + sizeof(ring_control); }
  std::byte *base;
  ring_control *control;
};

// Streams records of state.range(0) payload bytes from this thread to a
// consumer thread that reads every byte.
void BM_RingStream(benchmark::State &state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  ring_memory memory(64 * 1024);
  ring_sender tx(memory.control, memory.data());
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    ring_receiver rx(memory.control, memory.data());
    record_view r{};
    unsigned sum = 0;
    for (;;) {
      if (rx.peek(r) == peek_status::record) {
        for (std::size_t i = 0; i < r.length; i += 64) sum += static_cast<unsigned>(r.bytes[i]);
        rx.consume();
      } else if (done.load(std::memory_order_acquire)) {
        if (rx.peek(r) == peek_status::empty) break;
      }
    }
    benchmark::DoNotOptimize(sum);
  });
  std::byte payload[8192] = {};
  for (auto _ : state) {
    std::byte *p = nullptr;
    while ((p = tx.reserve(bytes)) == nullptr) {
    }
    std::memcpy(p, payload, bytes);
    tx.commit();
  }
  done.store(true, std::memory_order_release);
  consumer.join();
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_RingStream)->Arg(8)->Arg(64)->Arg(1024)->Arg(8192)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
