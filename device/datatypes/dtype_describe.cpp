// The layout descriptions of a datatype (dtype_describe, dtype_read_description):
// the words a single-copy reader gets in a rendezvous request to rebuild the
// sender's layout, and dtype_runs, the contiguous runs of one instance.
#include <algorithm>
#include <cstring>
#include <limits>

#include "device/datatypes/dtype.hpp"

namespace iris::device {
namespace {

using node = dtype_node;
using kind = dtype_node::kind;

std::size_t saturating_mul(std::size_t a, std::size_t b) {
  std::size_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::size_t>::max() : r;
}

std::size_t node_runs(const node &n) {
  switch (n.k) {
    case kind::run:
      return 1;
    case kind::vector:
      return saturating_mul(n.count, node_runs(*n.child));
    case kind::list: {
      std::size_t runs = 0;
      for (const node::entry &e : n.entries) {
        const std::size_t more = node_runs(*e.child);
        runs = runs > std::numeric_limits<std::size_t>::max() - more
                   ? std::numeric_limits<std::size_t>::max()
                   : runs + more;
      }
      return runs;
    }
  }
  return 1;
}

// The description's words: a header, then the tree in preorder.
constexpr std::uint64_t description_magic = 0x3179614c73697249ULL;  // "IrisLay1"
constexpr std::size_t description_header = 4;                 // magic, count, extent, packed size
constexpr int description_depth = 32;                         // deeper trees are not described
constexpr std::uint64_t max_packed = std::uint64_t{1} << 48;  // bytes of one node, at most
// A list of runs only (an indexed type of one basic type) is written as
// word_runs: its entries as (displacement, length) pairs, two words each.
enum : std::uint64_t { word_run = 0, word_vector = 1, word_list = 2, word_runs = 3 };

struct word_writer {
  std::uint64_t *out;
  std::size_t room;  // in words
  std::size_t used = 0;
  bool put(std::uint64_t w) {
    if (used == room) return false;
    out[used++] = w;
    return true;
  }
};

bool describe_node(const node &n, word_writer &w, int depth) {
  if (depth > description_depth) return false;
  switch (n.k) {
    case kind::run:
      return w.put(word_run) && w.put(n.packed);
    case kind::vector:
      return w.put(word_vector) && w.put(n.count) && w.put(static_cast<std::uint64_t>(n.stride)) &&
             describe_node(*n.child, w, depth + 1);
    case kind::list: {
      const bool runs = std::all_of(n.entries.begin(), n.entries.end(),
                                    [](const node::entry &e) { return e.child->k == kind::run; });
      if (runs) {
        if (!w.put(word_runs) || !w.put(n.entries.size())) return false;
        for (const node::entry &e : n.entries) {
          if (!w.put(static_cast<std::uint64_t>(e.displ)) || !w.put(e.child->packed)) return false;
        }
        return true;
      }
      if (!w.put(word_list) || !w.put(n.entries.size())) return false;
      for (const node::entry &e : n.entries) {
        if (!w.put(static_cast<std::uint64_t>(e.displ)) || !describe_node(*e.child, w, depth + 1)) {
          return false;
        }
      }
      return true;
    }
  }
  return false;
}

struct word_reader {
  const std::byte *in;
  std::size_t words;
  std::size_t at = 0;
  bool get(std::uint64_t &w) {
    if (at == words) return false;
    std::memcpy(&w, in + at * sizeof(w), sizeof(w));
    ++at;
    return true;
  }
};

// Rebuilds one node; nullptr when the words are not a sound tree.
dtype_tree read_node(word_reader &r, int depth) {
  std::uint64_t k = 0;
  if (depth > description_depth || !r.get(k)) return nullptr;
  auto n = std::make_shared<node>();
  if (k == word_run) {
    std::uint64_t packed = 0;
    if (!r.get(packed) || packed == 0 || packed > max_packed) return nullptr;
    n->k = kind::run;
    n->packed = packed;
    return n;
  }
  if (k == word_vector) {
    std::uint64_t count = 0;
    std::uint64_t stride = 0;
    if (!r.get(count) || !r.get(stride) || count == 0) return nullptr;
    n->k = kind::vector;
    n->count = count;
    n->stride = static_cast<std::int64_t>(stride);
    n->child = read_node(r, depth + 1);
    if (!n->child || __builtin_mul_overflow(count, n->child->packed, &n->packed) ||
        n->packed > max_packed) {
      return nullptr;
    }
    return n;
  }
  if (k == word_runs) {
    std::uint64_t entries = 0;
    if (!r.get(entries) || entries == 0 || entries > r.words) return nullptr;
    n->k = kind::list;
    n->entries.reserve(entries);
    for (std::uint64_t i = 0; i < entries; ++i) {
      std::uint64_t displ = 0;
      std::uint64_t packed = 0;
      if (!r.get(displ) || !r.get(packed) || packed == 0 || packed > max_packed) return nullptr;
      auto run = std::make_shared<node>();
      run->packed = packed;
      n->entries.push_back({static_cast<std::int64_t>(displ), std::move(run), n->packed});
      n->packed += packed;
      if (n->packed > max_packed) return nullptr;
    }
    return n;
  }
  if (k == word_list) {
    std::uint64_t entries = 0;
    if (!r.get(entries) || entries == 0 || entries > r.words) return nullptr;
    n->k = kind::list;
    n->entries.reserve(entries);
    for (std::uint64_t i = 0; i < entries; ++i) {
      std::uint64_t displ = 0;
      if (!r.get(displ)) return nullptr;
      dtype_tree child = read_node(r, depth + 1);
      if (!child) return nullptr;
      n->entries.push_back({static_cast<std::int64_t>(displ), child, n->packed});
      if (__builtin_add_overflow(n->packed, child->packed, &n->packed) || n->packed > max_packed) {
        return nullptr;
      }
    }
    return n;
  }
  return nullptr;
}

}  // namespace

std::size_t dtype_runs(const dtype &t) {
  return t.packed_size == 0 ? 0 : node_runs(*t.tree);
}

std::size_t dtype_describe(const dtype &t, int count, std::byte *out, std::size_t room) {
  const std::size_t words = room / sizeof(std::uint64_t);
  if (words < description_header || t.packed_size == 0) return 0;
  word_writer w{reinterpret_cast<std::uint64_t *>(out), words};
  if (!w.put(description_magic) || !w.put(static_cast<std::uint64_t>(count)) ||
      !w.put(static_cast<std::uint64_t>(t.extent)) || !w.put(t.packed_size) ||
      !describe_node(*t.tree, w, 0)) {
    return 0;
  }
  return w.used * sizeof(std::uint64_t);
}

bool dtype_read_description(const std::byte *in, std::size_t bytes, dtype &t, int &count) {
  if (bytes % sizeof(std::uint64_t) != 0) return false;
  word_reader r{in, bytes / sizeof(std::uint64_t)};
  std::uint64_t magic = 0;
  std::uint64_t elements = 0;
  std::uint64_t extent = 0;
  std::uint64_t packed = 0;
  if (!r.get(magic) || magic != description_magic || !r.get(elements) || elements == 0 ||
      elements > static_cast<std::uint64_t>(std::numeric_limits<int>::max()) || !r.get(extent) ||
      !r.get(packed)) {
    return false;
  }
  dtype_tree tree = read_node(r, 0);
  if (!tree || tree->packed != packed || r.at != r.words) return false;
  t = dtype{};
  t.tree = std::move(tree);
  t.size = t.packed_size = packed;
  t.extent = static_cast<std::int64_t>(extent);
  t.committed = true;
  count = static_cast<int>(elements);
  return true;
}

}  // namespace iris::device
