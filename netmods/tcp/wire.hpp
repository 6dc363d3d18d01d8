// What the TCP netmod puts on a socket, and the parsing of it: pure
// functions, unit-tested without sockets.
//
// A connection carries one direction only: the rank that connected sends
// records, the rank that accepted receives them. Each ordered pair of ranks
// therefore has its own connection, and two ranks that connect to each other
// at the same moment simply get two connections: there is no race to settle.
//
//   connector -> acceptor   hello (40 bytes): magic, the acceptor's token
//                           from its business card, both ranks
//   acceptor  -> connector  ack (8 bytes), only when the hello checks out
//   connector -> acceptor   frames: [u32 length][record], length > 0
//                           and then one goodbye frame (length 0) at the end
//
// The token is random per listener and published only in its business card,
// which only the job's ranks can read through the process manager: a process
// that is not part of the job cannot open a connection that is accepted.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iris::netmod::tcp {

inline constexpr std::size_t token_size = 16;
using token = std::array<std::uint8_t, token_size>;

struct hello {
  char magic[8];      // hello_magic
  token acceptor;     // the acceptor's token, from its card
  std::int32_t from;  // the connecting rank
  std::int32_t to;    // the rank it means to reach
  std::uint64_t job;  // a hash of the job id, so that two jobs never mix
};
static_assert(sizeof(hello) == 40, "hello is part of the wire format");

inline constexpr char hello_magic[8] = {'I', 'R', 'I', 'S', 'T', 'C', 'P', '1'};
inline constexpr char ack_magic[8] = {'I', 'R', 'I', 'S', 'A', 'C', 'K', '1'};
inline constexpr std::size_t frame_prefix = sizeof(std::uint32_t);

// Why a hello was refused, or nullptr when it is ours. `me` is this rank,
// `size` the job size.
[[nodiscard]] const char *hello_check(const hello &h, const token &mine, std::uint64_t job, int me,
                                      int size);

// The first frame at `data` (`length` bytes available).
struct frame {
  enum class kind {
    partial,   // more bytes needed
    record,    // a record of `record_length` bytes starts at data + frame_prefix
    goodbye,   // the sender is done: nothing follows
    too_long,  // the length prefix exceeds max_record: the stream is not ours
  };
  kind what;
  std::size_t record_length;
};
[[nodiscard]] frame frame_parse(const std::byte *data, std::size_t length, std::size_t max_record);

// A business card: "token:port:address,address,...", the token in hex, the
// addresses dotted IPv4, the preferred first.
struct card {
  token tok{};
  std::uint16_t port = 0;
  std::vector<std::string> addresses;
};
std::string card_format(const card &c);
// nullopt when `text` is not a card.
std::optional<card> card_parse(std::string_view text);

// A 64-bit hash (FNV-1a) of the job id.
std::uint64_t job_hash(std::string_view job_id);

}  // namespace iris::netmod::tcp
