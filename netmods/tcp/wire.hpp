// What the TCP netmod puts on a socket, and the parsing of it: pure
// functions, unit-tested without sockets.
//
// Once its hello is acknowledged a connection carries records both ways.
// A rank sends every record for one peer on one connection, chosen at its
// first send and kept (so records stay in order): the connection the peer
// already opened to it, if any, else one it opens itself. When two ranks
// open connections to each other at the same moment, each keeps sending on
// its own and reads from both: the race needs no tie-break.
//
//   dialler  -> acceptor   hello (40 bytes): magic, the acceptor's token
//                          from its business card, both ranks, the job
//   acceptor -> dialler    ack (8 bytes), only when the hello checks out
//   either way             frames: [u32 length][record], length > 0, and at
//                          MPI_Finalize one goodbye frame (length 0)
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
// The acceptor's answer when both ranks dialled each other: the lower rank's
// connection carries the pair, so the higher rank's is refused with this.
inline constexpr char crossed_magic[8] = {'I', 'R', 'I', 'S', 'X', 'E', 'D', '1'};
inline constexpr std::size_t frame_prefix = sizeof(std::uint32_t);

// Why a hello was refused, or nullptr when it is ours. `me` is this rank,
// `size` the job size.
[[nodiscard]] const char *hello_check(const hello &h, const token &mine, std::uint64_t job, int me,
                                      int size);
// The same for a hello from another job (h.job differs from this job's):
// a process that learnt this rank's card from an MPI port name.
[[nodiscard]] const char *hello_check_foreign(const hello &h, const token &mine, int me);

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

// Where a host's IPv4 routes lead (its main routing table): what a rank
// puts beside its card, "192.0.2.0/24,203.0.113.0/24", or "0.0.0.0/0" for
// a host with a default route (or more routes than a card holds), which
// reaches every address.
struct route {
  std::uint32_t network = 0;  // host order, masked
  std::uint32_t mask = 0;     // host order
};
inline constexpr std::size_t max_card_routes = 16;
std::string routes_format(const std::vector<route> &routes);
// nullopt when `text` is not such a list; "none" is a host without routes
// (no interface up but loopback).
std::optional<std::vector<route>> routes_parse(std::string_view text);
// The main table as /proc/net/route lists it, the routes that are up and
// lead somewhere (not unreachable, prohibit or blackhole): "0.0.0.0/0"
// when there is a default route or more than max_card_routes; nullopt when
// the text is not such a table.
std::optional<std::vector<route>> routes_from_table(std::string_view table);
// Whether a host with `routes` reaches the rank whose card lists
// `addresses`: some address of the card that is not loopback lies in one
// of the routes. A card of loopback addresses only (a host with no
// interface up, or IRIS_TCP_IF=lo) is taken at its word; loopback beside
// other addresses is the peer's own host's and reaches nobody elsewhere.
bool routes_reach(const std::vector<route> &routes, const std::vector<std::string> &addresses);

}  // namespace iris::netmod::tcp
