// The one packet format every transport carries. Transports move packets;
// only device/ interprets them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace iris::device {

enum class packet_type : std::uint8_t {
  eager = 1,        // a whole message: header + all of its bytes
  eager_first = 2,  // the first fragment of a message longer than a record
  eager_more = 3,   // a following fragment; `offset` says where it goes
};

struct packet_header {
  packet_type type;
  std::uint8_t flags;     // none defined yet; must be zero
  std::uint16_t credits;  // eager credits returned to the receiver of this packet
  std::int32_t source;    // sender's rank in the communicator of `context`
  std::uint32_t context;  // context id of the communicator
  std::int32_t tag;
  std::uint64_t length;          // length of the whole message in bytes
  std::uint64_t sender_request;  // the sender's request id (0: none)
  std::uint64_t offset;          // eager_more: where this fragment starts
};
static_assert(sizeof(packet_header) == 40, "the packet header is part of the wire format");

// The largest message length the device accepts in a header.
inline constexpr std::uint64_t max_message_length = std::uint64_t{1} << 48;

// Checks a header that arrived from outside, before anything uses it.
// `payload` is the number of bytes that came after the header in the same
// record. Returns nullptr when the header is sound, else why it is not.
[[nodiscard]] const char *packet_check(const packet_header &h, std::size_t payload, int world_size);

}  // namespace iris::device
