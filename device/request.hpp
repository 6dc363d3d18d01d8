// Requests: one per nonblocking operation (and per blocking one that could
// not finish at once). They live in a pool and are named by int handles.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/match.hpp"
#include "device/pool.hpp"

namespace iris::device {

struct communicator;
struct unexpected_msg;

enum class request_kind : std::uint8_t { send, recv };

struct request {
  request *next = nullptr;  // free list, posted queue or a VC's send queue
  request *prev = nullptr;
  std::uint32_t index = 0;
  match_key key{};  // recv: pattern (may hold wildcards); send: the message's key
  request_kind kind = request_kind::send;
  bool in_use = false;
  bool complete = false;
  std::byte *buffer = nullptr;  // recv: where the data goes; send: the user's data
  std::size_t bytes = 0;        // recv: capacity; send: message length
  std::size_t sent = 0;         // send: bytes handed to the transport so far
  int peer = -1;                // send: destination rank in MPI_COMM_WORLD
  const communicator *comm = nullptr;
  // The outcome, valid once complete.
  int status_source = 0;
  int status_tag = 0;
  int status_error = 0;
  std::size_t status_bytes = 0;
};

// An eager message that arrived before its receive was posted.
struct unexpected_msg {
  static constexpr std::size_t inline_capacity = 224;

  unexpected_msg *next = nullptr;
  unexpected_msg *prev = nullptr;
  std::uint32_t index = 0;
  match_key key{};
  std::size_t length = 0;     // of the whole message
  std::size_t arrived = 0;    // bytes arrived so far
  std::byte *data = nullptr;  // inline_data, or the heap for longer messages
  int from = 0;               // sender's rank in the world
  std::byte inline_data[inline_capacity];
};

inline constexpr int request_handle_kind = 0x70000000;

inline int request_handle(const request &r) {
  return request_handle_kind | static_cast<int>(r.index + 1);
}

class request_pool {
 public:
  request *allocate(request_kind kind, const communicator *comm) {
    request *r = pool_.allocate();
    r->kind = kind;
    r->comm = comm;
    r->in_use = true;
    return r;
  }
  void release(request *r) {
    r->in_use = false;
    pool_.release(r);
  }
  // The live request named by `handle`, or nullptr.
  request *from_handle(int handle) const {
    const auto bits = static_cast<std::uint32_t>(handle);
    if ((bits >> 28) != (request_handle_kind >> 28) || (bits & 0x0fffffffU) == 0) return nullptr;
    request *r = pool_.at((bits & 0x0fffffffU) - 1);
    return r != nullptr && r->in_use ? r : nullptr;
  }
  std::size_t live() const { return pool_.live(); }

 private:
  pool<request> pool_;
};

}  // namespace iris::device
