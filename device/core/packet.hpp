// The one packet format every transport carries. Transports move packets;
// only device/ interprets them.
//
// Message packets (eager, eager_sync, rts) carry an envelope and are matched;
// they travel in send order. Control packets (cts, fin, data, credit,
// sync_ack) name a request and are never matched; they need no credits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace iris::device {

enum class packet_type : std::uint8_t {
  eager = 1,          // a whole message: header + all of its bytes; costs a credit
  eager_sync = 2,     // as eager, and the receiver answers sync_ack once matched
  rts = 3,            // rendezvous request to send: envelope, length, rts_payload
  cts = 4,            // clear to send: stream `length` bytes to `receiver_request`
  data = 5,           // rendezvous data for `receiver_request`, at `offset`
  fin = 6,            // the receiver has read the data (CMA): `sender_request` done
  credit = 7,         // nothing but returned credits
  sync_ack = 8,       // a synchronous send matched: `sender_request` done
  cancel_send = 9,    // the sender asks to withdraw `sender_request` if unmatched
  cancel_reply = 10,  // the answer: `length` 1 if it was withdrawn, 0 if too late
  active = 11,        // an active-message operation (device/am/): active_payload, then bytes
  port = 12,          // MPI_Comm_connect/accept between roots: `tag` the port, `source` the
                      // step (port_step), then `length` bytes of the step's table
  recovery = 13,      // after a rank died (protocols/recovery.hpp): `tag` the step, `context` the
                      // communicator, `source` the sender's rank there, then `length` bytes
};

// The steps of a connection through an MPI port (protocols/port.hpp).
enum class port_step : std::int32_t {
  request = 1,   // connect root -> accept root: the connecting group
  reply = 2,     // accept root -> connect root: the accepting group, or a refusal
  withdraw = 3,  // connect root -> accept root: the connect gave up (its time ran out)
};

struct packet_header {
  packet_type type;
  std::uint8_t flags;              // none defined yet; must be zero
  std::uint16_t credits;           // eager credit units (64 B) returned to this packet's receiver
  std::int32_t source;             // message packets: sender's rank in the communicator
  std::uint32_t context;           // message packets: context id of the communicator
  std::int32_t tag;                // message packets: the tag
  std::uint64_t length;            // message length (cts: bytes wanted; data: fragment bytes)
  std::uint64_t sender_request;    // the sender's request id (0: none)
  std::uint64_t receiver_request;  // cts/data: the receiver's request id; data: offset below
  std::uint64_t offset;            // data: where this fragment goes
};
static_assert(sizeof(packet_header) == 48, "the packet header is part of the wire format");

// What an RTS carries after its header: where the receiver may read the data
// itself, when it can: by cross-memory attach (shared memory), or through
// the netmod's RMA when `rma` is 1 (then rma_address and rma_key name the
// region the netmod exposed). A non-contiguous send read by CMA also names
// the description of its layout (dtype_describe): `layout_bytes` bytes at
// `layout` in the sender, `address` being its buffer's origin.
struct rts_payload {
  std::int64_t pid;
  std::uint64_t address;
  std::uint64_t rma;
  std::uint64_t rma_address;
  std::uint64_t rma_key;
  std::uint64_t layout;
  std::uint64_t layout_bytes;
};

// What an active packet carries first (device/am/, after IBM LAPI): one
// step of an operation, then up to `length - sizeof(active_payload)` bytes
// of its stream. A message's stream is its user header, then its data; a
// put's is its data; a get's reply is the bytes read. Every field is
// checked by the active-message layer before use.
enum class active_kind : std::uint8_t {
  message = 1,   // a piece of an MPIX_Amsend's stream (offset 0: the first)
  put = 2,       // a piece of an MPIX_Put's data, for `address` + offset
  get = 3,       // asks for `total` bytes at `address`
  get_data = 4,  // a piece of the bytes a get asked for, for origin op `op`
  notify = 5,    // an operation done by shared memory: increment `counter`, then ack
  ack = 6,       // origin op `op` is complete at the target; `status` 0 or an MPI error class
  fence = 7,     // ack op `op` once every earlier step from this origin is done
};
// active_payload::flags
inline constexpr std::uint8_t active_pull = 1;  // message: the target reads the data at `address`
inline constexpr std::uint8_t active_ack = 2;   // message, put: ack even when all went well
struct active_payload {
  active_kind kind;
  std::uint8_t flags;  // active_pull, active_ack
  std::uint16_t uhdr_length;
  std::int32_t handler;   // message: the handler id
  std::uint32_t context;  // message: the communicator's context id
  std::int32_t origin;    // message: the origin's rank in that communicator
  std::uint64_t op;       // the origin's operation id (acks and get replies name it)
  std::uint64_t total;    // bytes of the whole stream (get: bytes asked for)
  std::uint64_t offset;   // where this packet's bytes go in the stream
  std::uint64_t address;  // put, get: in the target; a pulled message: in the origin
  std::uint64_t counter;  // the target counter's address (0: none)
  std::int32_t status;    // ack: MPI_SUCCESS or the error class of a refusal
  std::uint32_t reason;   // ack: which refusal (device/am/state.hpp, am_refusal)
};
static_assert(sizeof(active_payload) == 64, "part of the wire format");

// The largest message length the device accepts in a header.
inline constexpr std::uint64_t max_message_length = std::uint64_t{1} << 48;

inline bool is_message(packet_type t) {
  return t == packet_type::eager || t == packet_type::eager_sync || t == packet_type::rts;
}

// Checks a header that arrived from outside, before anything uses it.
// `payload` is the number of bytes that came after the header in the same
// record. Returns nullptr when the header is sound, else why it is not.
[[nodiscard]] const char *packet_check(const packet_header &h, std::size_t payload, int world_size);

struct vc;

// What each protocol's handler of one packet type looks like.
using packet_handler = const char *(*)(vc &from, const packet_header &h, const std::byte *payload);

}  // namespace iris::device
