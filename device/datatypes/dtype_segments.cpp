// The iovecs of a byte range of a typed buffer (dtype_segments): the pieces
// a single-copy read names instead of copying, walking the type's tree as
// pack and unpack do (dtype.cpp).
#include <algorithm>

#include "device/datatypes/dtype.hpp"

namespace iris::device {
namespace {

using node = dtype_node;
using kind = dtype_node::kind;
using detail::address;
using detail::offset;

// Collects the iovecs of dtype_segments; refuses a piece once full.
struct segment_sink {
  iovec *out;
  std::size_t max;
  std::size_t used = 0;
  std::size_t bytes = 0;

  bool add(address at, std::size_t n) {
    if (n == 0) return true;
    if (used != 0) {
      iovec &last = out[used - 1];
      if (reinterpret_cast<address>(last.iov_base) + last.iov_len == at) {
        last.iov_len += n;
        bytes += n;
        return true;
      }
    }
    if (used == max) return false;
    out[used++] = {reinterpret_cast<void *>(at), n};
    bytes += n;
    return true;
  }
};

bool segment_node(const node &n, address origin, std::size_t skip, std::size_t len,
                  segment_sink &sink);

// As move_vector, but naming the pieces instead of copying them; false
// once the sink is full.
bool segment_vector(const node &child, std::int64_t stride, address origin, std::size_t skip,
                    std::size_t len, segment_sink &sink) {
  const std::size_t cp = child.packed;
  if (cp == 0 || len == 0) return true;
  std::size_t s = skip % cp;
  address at = offset(origin, static_cast<std::int64_t>(skip / cp) * stride);
  while (len != 0) {
    const std::size_t take = std::min(cp - s, len);
    if (child.k == kind::run ? !sink.add(at + s, take) : !segment_node(child, at, s, take, sink)) {
      return false;
    }
    len -= take;
    s = 0;
    at = offset(at, stride);
  }
  return true;
}

bool segment_node(const node &n, address origin, std::size_t skip, std::size_t len,
                  segment_sink &sink) {
  switch (n.k) {
    case kind::run:
      return sink.add(origin + skip, len);
    case kind::vector:
      return segment_vector(*n.child, n.stride, origin, skip, len, sink);
    case kind::list: {
      auto e = std::upper_bound(n.entries.begin(), n.entries.end(), skip,
                                [](std::size_t v, const node::entry &x) { return v < x.before; });
      --e;
      std::size_t s = skip - e->before;
      for (; len != 0; ++e) {
        const std::size_t take = std::min(e->child->packed - s, len);
        if (!segment_node(*e->child, offset(origin, e->displ), s, take, sink)) return false;
        len -= take;
        s = 0;
      }
      return true;
    }
  }
  return true;
}

}  // namespace

std::size_t dtype_segments(std::uintptr_t origin, int count, const dtype &t, std::size_t first,
                           std::size_t n, iovec *out, std::size_t max, std::size_t &used) {
  segment_sink sink{out, max};
  const std::size_t total = static_cast<std::size_t>(count) * t.packed_size;
  if (first < total && max != 0) {
    segment_vector(*t.tree, t.extent, origin, first, std::min(n, total - first), sink);
  }
  used = sink.used;
  return sink.bytes;
}

}  // namespace iris::device
