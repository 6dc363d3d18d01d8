// Copies that bypass the cache on the way out: for data far larger than the
// cache, which the program will not read again soon.
//
//   copy_streaming(dst, src, n)  memcpy's contract, non-temporal stores
//                                for the 16-byte-aligned middle of dst;
//                                ordered before the caller's later stores
//   copy_streaming_unfenced      the same, not yet ordered: a caller that
//                                copies many short runs (a derived type's
//                                blocks) fences once, after the last
//                                (streaming_fence), instead of once a run
#pragma once

#include <cstddef>

namespace iris::device {

void copy_streaming(void *dst, const void *src, std::size_t n);
void copy_streaming_unfenced(void *dst, const void *src, std::size_t n);
void streaming_fence();

}  // namespace iris::device
