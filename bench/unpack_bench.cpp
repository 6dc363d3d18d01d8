// The datatype engine's unpack alone, one thread (Google Benchmark): 32 MiB
// of a vector of `block`-byte blocks at a stride of two blocks, unpacked in
// 64 KiB pieces as a rendezvous receive does, through the cache or around it
// (the streaming unpack of messages at or above IRIS_NONTEMPORAL_MIN).
//   build/bench/unpack_bench
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "device/datatypes/dtype.hpp"

namespace {

using namespace iris::device;

constexpr std::size_t message = std::size_t{32} << 20;
constexpr std::size_t piece = std::size_t{64} << 10;

// state.range(0): block bytes; state.range(1): 1 for the streaming unpack.
void BM_UnpackVector(benchmark::State &state) {
  const auto block = static_cast<std::size_t>(state.range(0));
  const bool streaming = state.range(1) != 0;
  const dtype byte = dtype_basic(1, 1);
  const dtype v = dtype_vector(message / block, block, static_cast<std::int64_t>(2 * block), byte);
  std::vector<std::byte> packed(message, std::byte{1});
  std::vector<std::byte> layout(2 * message);
  for (auto _ : state) {
    for (std::size_t at = 0; at < message; at += piece) {
      dtype_unpack_range(packed.data() + at, at, piece, layout.data(), 1, v, streaming);
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * message));
}
BENCHMARK(BM_UnpackVector)
    ->ArgNames({"block", "streaming"})
    ->ArgsProduct({{32, 64, 256, 1024, 4096}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
