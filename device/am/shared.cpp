// Put and get to a peer of this node without the peer's help: the origin
// reads the target's exposure table and moves the bytes itself, both by
// the transport's peer_access (CMA). Only a target counter needs the
// target: a notify step, which the target's progress (its thread, or its
// next MPI call) answers with an ack.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "device/am/am.hpp"
#include "device/am/exposure.hpp"
#include "device/am/state.hpp"
#include "device/runtime/runtime.hpp"

namespace iris::device {

namespace {

// Where `peer`'s exposure table lives in its process (its card), or 0.
std::uint64_t table_address(am_peer &p, int peer) {
  if (p.exposure_address == 0) {
    p.exposure_address = 1;
    try {
      unsigned long long at = 0;
      const std::string card = rt->pmi->get(peer, "iris.am");
      if (std::sscanf(card.c_str(), "%llx", &at) == 1 && at > 1) p.exposure_address = at;
    } catch (const std::exception &) {
      // No card: packets then.
    }
  }
  return p.exposure_address > 1 ? p.exposure_address : 0;
}

// Reads `peer`'s table into p.table (used slots only). false: it could
// not be read.
bool table_read(vc &v, am_peer &p, std::uint64_t at) {
  // The head first (one read covers most tables); the whole used part
  // only when it is longer. Read again only when the target's version
  // moved: never on an op's path.
  struct {
    std::uint64_t used;
    std::uint64_t slots[exposure_head_slots][slot_words];
  } head;
  static_assert(offsetof(exposure_table, slots) == sizeof(std::uint64_t));
  if (v.via->peer_access(v, false, at, &head, sizeof head) != xfer::done) return false;
  if (head.used > exposure_slots) return false;
  if (head.used <= exposure_head_slots) {
    p.table.assign(&head.slots[0][0], &head.slots[0][0] + head.used * slot_words);
    return true;
  }
  std::vector<std::uint64_t> whole(1 + head.used * slot_words);
  if (v.via->peer_access(v, false, at, whole.data(), whole.size() * sizeof(std::uint64_t)) !=
      xfer::done) {
    return false;
  }
  const std::uint64_t used = whole[0];
  if (used > head.used) return false;  // grew meanwhile: its version moved, read at the next op
  p.table.assign(whole.begin() + 1,
                 whole.begin() + 1 + static_cast<std::ptrdiff_t>(used * slot_words));
  return true;
}

// The slot of the target's table, as read last, that holds [address,
// address + bytes) (nullptr: none), read again when the target's published
// version moved (or it publishes none); `covered`: that slot, or adjacent
// regions, hold it. false: the table could not be read (send packets).
bool target_exposes(vc &v, am_peer &p, std::uint64_t address, std::uint64_t bytes,
                    const std::uint64_t *&slot, bool &covered) {
  const std::uint64_t at = table_address(p, v.world_rank);
  if (at == 0) return false;
  const std::atomic<std::uint64_t> *word = v.via->peer_published_word(v);
  // Read before the table: a change after it shows at the next op.
  const std::uint64_t version =
      word != nullptr ? word->load(std::memory_order_acquire) : UINT64_MAX;
  if (word == nullptr || version != p.table_version) {
    if (!table_read(v, p, at)) return false;
    p.table_version = word != nullptr ? version : UINT64_MAX;
  }
  const std::size_t used = p.table.size() / slot_words;
  slot = exposure_covering(p.table.data(), used, address, bytes);
  covered = slot != nullptr || exposure_chain(p.table.data(), used, address, bytes);
  return true;
}

// Where [address, ...) lies in this process's mapping of the target's
// block, when the region is in one that maps here; else nullptr. Such a
// region becomes the peer's hit, which the next op checks first.
std::byte *mapped_at(vc &v, am_peer &p, const std::uint64_t *slot, std::uint64_t address) {
  if (slot[slot_block] == 0) return nullptr;
  std::byte *block = v.via->peer_block(v, slot[slot_block], slot[slot_block_bytes]);
  if (block == nullptr) return nullptr;
  std::byte *base = block + slot[slot_block_offset];
  p.hit.word = v.via->peer_published_word(v);
  p.hit.version = p.table_version;
  p.hit.base = slot[slot_base];
  p.hit.end = slot[slot_base] + slot[slot_bytes];
  p.hit.mapped = p.hit.word != nullptr ? base : nullptr;
  return base + (address - slot[slot_base]);
}

// The op's bytes moved: done, or waiting for the target counter's ack.
void moved(am_state &s, am_op &op) {
  ++s.stats_shared;
  const std::uint64_t id = am_op_id(s, op);
  // The origin buffer is free (a put's) or filled (a get's) already.
  counter_bump(op.origin_counter);
  op.origin_counter = nullptr;
  if (op.step.counter == 0) {
    am_op_complete(s, id, MPI_SUCCESS, nullptr);
    return;
  }
  active_payload step{};
  step.kind = active_kind::notify;
  step.op = id;
  step.counter = op.step.counter;
  am_control(s, op.target, step);
}

bool shared_move(am_state &s, am_op &op, bool write) {
  vc &v = rt->vcs[static_cast<std::size_t>(op.target)];
  if (!v.via->peer_accessible(v)) return false;
  am_peer &p = s.peers[static_cast<std::size_t>(op.target)];
  const std::uint64_t *slot = nullptr;
  bool covered = false;
  if (!target_exposes(v, p, op.step.address, op.step.total, slot, covered)) return false;
  if (!covered) {
    ++s.stats_shared;
    counter_bump(op.origin_counter);
    op.origin_counter = nullptr;
    am_op_complete(s, am_op_id(s, op), MPI_ERR_RMA_RANGE,
                   am_refusal_text(static_cast<std::uint32_t>(am_refusal::range)));
    return true;
  }
  const auto bytes = static_cast<std::size_t>(op.step.total);
  if (bytes != 0) {
    // Across adjacent regions: by CMA, or else packets.
    if (std::byte *there = slot != nullptr ? mapped_at(v, p, slot, op.step.address) : nullptr) {
      // Mapped here: plain copies. The counters' release (or the notify's
      // packet) publishes them.
      if (write) {
        std::memcpy(there, op.data, bytes);
      } else {
        std::memcpy(op.into, there, bytes);
      }
      ++s.stats_mapped;
    } else {
      void *local = write ? const_cast<std::byte *>(op.data) : static_cast<void *>(op.into);
      if (v.via->peer_access(v, write, op.step.address, local, bytes) != xfer::done) return false;
    }
  }
  moved(s, op);
  return true;
}

}  // namespace

std::byte *am_mapped(int target, std::uint64_t address, std::size_t bytes) {
  vc &v = rt->vcs[static_cast<std::size_t>(target)];
  if (!v.via->peer_accessible(v)) return nullptr;
  am_state &s = am_state_get();
  am_peer &p = s.peers[static_cast<std::size_t>(target)];
  const std::uint64_t *slot = nullptr;
  bool covered = false;
  if (!target_exposes(v, p, address, bytes, slot, covered) || slot == nullptr) return nullptr;
  return mapped_at(v, p, slot, address);
}

bool am_mapped_hit(int target, bool write, void *local, std::size_t bytes, std::uint64_t address) {
  if (am == nullptr) return false;
  am_state &s = *am;
  const am_peer &p = s.peers[static_cast<std::size_t>(target)];
  // Read before the bytes move, as target_exposes reads it: a region
  // concealed after this read is the program's race, as with the table.
  if (p.hit.mapped == nullptr || address < p.hit.base || address > p.hit.end ||
      bytes > p.hit.end - address || p.hit.word->load(std::memory_order_acquire) != p.hit.version) {
    return false;
  }
  std::byte *there = p.hit.mapped + (address - p.hit.base);
  if (write) {
    std::memcpy(there, local, bytes);
  } else {
    std::memcpy(local, there, bytes);
  }
  ++(write ? s.stats_puts : s.stats_gets);
  ++s.stats_mapped;
  ++s.stats_shared;
  return true;
}

bool am_shared_direct(am_state &s, int target, bool write, void *local, std::size_t bytes,
                      std::uint64_t address) {
  vc &v = rt->vcs[static_cast<std::size_t>(target)];
  if (!v.via->peer_accessible(v)) return false;
  am_peer &p = s.peers[static_cast<std::size_t>(target)];
  const std::uint64_t *slot = nullptr;
  bool covered = false;
  if (!target_exposes(v, p, address, bytes, slot, covered)) return false;
  if (!covered) {
    if (p.refused == MPI_SUCCESS) {
      p.refused = MPI_ERR_RMA_RANGE;
      p.refused_why = am_refusal_text(static_cast<std::uint32_t>(am_refusal::range));
    }
  } else if (bytes != 0) {
    if (std::byte *there = slot != nullptr ? mapped_at(v, p, slot, address) : nullptr) {
      if (write) {
        std::memcpy(there, local, bytes);
      } else {
        std::memcpy(local, there, bytes);
      }
      ++s.stats_mapped;
    } else if (v.via->peer_access(v, write, address, local, bytes) != xfer::done) {
      return false;
    }
  }
  ++s.stats_shared;
  return true;
}

bool am_shared_put(am_state &s, am_op &op) {
  return shared_move(s, op, true);
}

bool am_shared_get(am_state &s, am_op &op) {
  return shared_move(s, op, false);
}

void am_exposures_changed() {
  if (rt == nullptr) return;
  for (const auto &t : rt->transports) {
    // Pairs with an origin's acquire in target_exposes; after the table's stores.
    if (std::atomic<std::uint64_t> *word = t->published_word()) {
      word->fetch_add(1, std::memory_order_release);
    }
  }
}

void am_card_put() {
  char text[32];
  std::snprintf(text, sizeof(text), "%llx",
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(&exposures())));
  rt->pmi->put("iris.am", text);
}

}  // namespace iris::device
