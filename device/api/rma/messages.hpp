// The messages of one-sided operations between an origin and the target's
// handler (handlers.cpp), for targets whose memory or control block the
// origin does not map: what ops.cpp sends and handlers.cpp serves.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "device/am/am.hpp"
#include "device/api/rma/rma.hpp"

namespace iris::api::rma {

// A request is a request_head and a body: for put, get, accumulate and
// compare_swap the (address, bytes) pairs of the target's segments, then
// the data (a put's bytes, the operands); none for the others. A batch's
// body is requests, each [request_head][u64 body length][body]: a lazy
// lock's step, the ops of its epoch, maybe its release (ops.cpp,
// batch_settle).
enum class message_kind : std::uint32_t {
  accumulate = 1,
  compare_swap,
  lock,
  post,
  done,
  put,
  get,
  batch
};

// A request whose answer comes back in a batch's reply names the fetch
// slot that takes it; no_token: it returns nothing.
inline constexpr std::uint32_t no_token = UINT32_MAX;

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

// The answer: the request's token, its status (a batch's: the first
// error), the lock step's grant (a batch's: whether its lock was granted;
// if not, nothing of it ran), and as body what the request returns (old
// values, a get's bytes); a batch's, for each of its requests with a
// token, a batch_part and the bytes.
struct reply_head {
  std::uint32_t token;
  std::int32_t status;
  std::int64_t answer;
};
struct batch_part {
  std::uint32_t token;
  std::int32_t status;
  std::uint64_t length;
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

// Appends request `h` with body [body, body + length) to a batch.
inline void batch_add(std::vector<std::byte> &batch, const request_head &h, const void *body,
                      std::size_t length) {
  const std::uint64_t n = length;
  const std::size_t at = batch.size();
  batch.resize(at + sizeof h + sizeof n + length);
  std::memcpy(batch.data() + at, &h, sizeof h);
  std::memcpy(batch.data() + at + sizeof h, &n, sizeof n);
  if (length > 0) std::memcpy(batch.data() + at + sizeof h + sizeof n, body, length);
}

// Frees the reply bodies this rank's handlers sent that have left.
void replies_collect();

}  // namespace iris::api::rma
