// The messages of one-sided operations between an origin and the target's
// handler (handlers.cpp), for targets whose memory or control block the
// origin does not map: what ops.cpp sends and handlers.cpp serves.
#pragma once

#include <cstdint>

#include "device/am/am.hpp"
#include "device/api/rma/rma.hpp"

namespace iris::api::rma {

enum class message_kind : std::uint32_t { accumulate = 1, compare_swap, lock, post, done };

struct request_head {
  message_kind kind;
  std::int32_t op;
  std::int32_t basic;
  std::uint32_t elem;
  std::uint32_t token;
  std::uint32_t segments;  // (address, bytes) pairs ahead of the data
  std::int64_t extent;
  std::int64_t lock;       // a lock step
  std::uint32_t fetching;  // the old values go back
  std::uint32_t pad;
};

struct reply_head {
  std::uint32_t token;
  std::int32_t status;
  std::int64_t answer;
};

// The handler ids (handlers_register).
int request_handler_id();
int reply_handler_id();

inline device::am_route route_to(const window &w, int rank) {
  return {w.targets[static_cast<std::size_t>(rank)].world, w.comm->handle, w.comm->context,
          w.comm->rank};
}

// Whether [address, address + bytes) lies in this rank's part of `w` (a
// dynamic window's: in attached regions, one or several adjacent ones).
bool inside(const window &w, std::uint64_t address, std::uint64_t bytes);

// Frees the reply bodies this rank's handlers sent that have left.
void replies_collect();

}  // namespace iris::api::rma
