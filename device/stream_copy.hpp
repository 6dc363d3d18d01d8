// Copies that bypass the cache on the way out: for data far larger than the
// cache, which the program will not read again soon.
//
//   copy_streaming(dst, src, n)  memcpy's contract, non-temporal stores
//                                for the 16-byte-aligned middle of dst;
//                                ordered before the caller's later stores
#pragma once

#include <cstddef>

namespace iris::device {

void copy_streaming(void *dst, const void *src, std::size_t n);

}  // namespace iris::device
