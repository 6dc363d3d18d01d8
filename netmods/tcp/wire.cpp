#include "netmods/tcp/wire.hpp"

#include <arpa/inet.h>

#include <bit>
#include <charconv>
#include <span>

#include "device/base/text.hpp"
#include "netmods/common.hpp"

namespace iris::netmod::tcp {

const char *hello_check(const hello &h, const token &mine, std::uint64_t job, int me, int size) {
  if (std::memcmp(h.magic, hello_magic, sizeof(h.magic)) != 0) return "not an Iris hello";
  if (h.job != job) return "a hello from another job";
  if (h.acceptor != mine) return "a hello with the wrong token";
  if (h.to != me) return "a hello meant for another rank";
  if (h.from < 0 || h.from >= size || h.from == me) return "a hello from an impossible rank";
  return nullptr;
}

const char *hello_check_foreign(const hello &h, const token &mine, int me) {
  if (std::memcmp(h.magic, hello_magic, sizeof(h.magic)) != 0) return "not an Iris hello";
  if (h.acceptor != mine) return "a hello with the wrong token";
  if (h.to != me) return "a hello meant for another rank";
  if (h.from < 0) return "a hello from an impossible rank";
  return nullptr;
}

frame frame_parse(const std::byte *data, std::size_t length, std::size_t max_record) {
  if (length < frame_prefix) return {frame::kind::partial, 0};
  std::uint32_t n = 0;
  std::memcpy(&n, data, sizeof(n));
  if (n == 0) return {frame::kind::goodbye, 0};
  if (n > max_record) return {frame::kind::too_long, n};
  if (length - frame_prefix < n) return {frame::kind::partial, n};
  return {frame::kind::record, n};
}

std::string card_format(const card &c) {
  std::string out = hex_encode(std::as_bytes(std::span(c.tok)));
  out += ':' + std::to_string(c.port) + ':';
  for (std::size_t i = 0; i < c.addresses.size(); ++i) {
    if (i != 0) out += ',';
    out += c.addresses[i];
  }
  return out;
}

std::optional<card> card_parse(std::string_view text) {
  card c;
  if (text.size() < 2 * token_size + 1 || text[2 * token_size] != ':') return std::nullopt;
  std::vector<std::byte> tok;
  if (!hex_decode(text.substr(0, 2 * token_size), tok)) return std::nullopt;
  std::memcpy(c.tok.data(), tok.data(), token_size);
  text.remove_prefix(2 * token_size + 1);
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  unsigned port = 0;
  const auto [end, err] = std::from_chars(text.data(), text.data() + colon, port);
  if (err != std::errc() || end != text.data() + colon || port == 0 || port > 65535) {
    return std::nullopt;
  }
  c.port = static_cast<std::uint16_t>(port);
  text.remove_prefix(colon + 1);
  for (const std::string_view address : device::split(text, ',')) {
    if (address.empty()) return std::nullopt;
    c.addresses.emplace_back(address);
  }
  if (c.addresses.empty()) return std::nullopt;
  return c;
}

namespace {

std::optional<std::uint32_t> ipv4_parse(const std::string &text) {
  in_addr a{};
  if (inet_pton(AF_INET, text.c_str(), &a) != 1) return std::nullopt;
  return ntohl(a.s_addr);
}

std::string ipv4_format(std::uint32_t host_order) {
  in_addr a{};
  a.s_addr = htonl(host_order);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, text, sizeof text);
  return text;
}

std::uint32_t prefix_mask(unsigned length) {
  return length == 0 ? 0 : ~std::uint32_t{0} << (32 - length);
}

const std::vector<route> everywhere = {route{0, 0}};

}  // namespace

std::string routes_format(const std::vector<route> &routes) {
  if (routes.empty()) return "none";  // a card is never empty
  std::string out;
  for (const route &r : routes) {
    const unsigned length = static_cast<unsigned>(std::popcount(r.mask));
    out += (out.empty() ? "" : ",") + ipv4_format(r.network) + "/" + std::to_string(length);
  }
  return out;
}

std::optional<std::vector<route>> routes_parse(std::string_view text) {
  std::vector<route> routes;
  if (text == "none") return routes;
  if (text.empty()) return std::nullopt;
  for (const std::string_view item : device::split(text, ',')) {
    const std::size_t slash = item.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    unsigned length = 0;
    const char *end = item.data() + item.size();
    const auto [stop, err] = std::from_chars(item.data() + slash + 1, end, length);
    if (err != std::errc() || stop != end || length > 32) return std::nullopt;
    const auto network = ipv4_parse(std::string(item.substr(0, slash)));
    if (!network) return std::nullopt;
    const std::uint32_t mask = prefix_mask(length);
    routes.push_back(route{*network & mask, mask});
  }
  return routes;
}

std::optional<std::vector<route>> routes_from_table(std::string_view table) {
  // "Iface Destination Gateway Flags RefCnt Use Metric Mask ...": the
  // destination and mask in hex, in network order as the kernel stores it.
  constexpr unsigned route_up = 0x1;        // RTF_UP
  constexpr unsigned route_reject = 0x200;  // RTF_REJECT: unreachable, prohibit, blackhole
  const std::size_t header_end = table.find('\n');
  if (header_end == std::string_view::npos || table.substr(0, 5) != "Iface") return std::nullopt;
  table.remove_prefix(header_end + 1);
  std::vector<route> routes;
  while (!table.empty()) {
    const std::size_t eol = table.find('\n');
    std::string_view line = table.substr(0, eol);
    table = eol == std::string_view::npos ? std::string_view() : table.substr(eol + 1);
    std::vector<std::string_view> fields;
    while (!line.empty()) {
      const std::size_t start = line.find_first_not_of(" \t");
      if (start == std::string_view::npos) break;
      line.remove_prefix(start);
      const std::size_t stop = line.find_first_of(" \t");
      fields.push_back(line.substr(0, stop));
      line = stop == std::string_view::npos ? std::string_view() : line.substr(stop);
    }
    if (fields.empty()) continue;
    if (fields.size() < 8) return std::nullopt;
    std::uint32_t destination = 0;
    std::uint32_t mask = 0;
    unsigned flags = 0;
    const auto hex = [](std::string_view f, auto &out) {
      const auto [stop, err] = std::from_chars(f.data(), f.data() + f.size(), out, 16);
      return err == std::errc() && stop == f.data() + f.size();
    };
    if (!hex(fields[1], destination) || !hex(fields[3], flags) || !hex(fields[7], mask)) {
      return std::nullopt;
    }
    if ((flags & route_up) == 0 || (flags & route_reject) != 0) continue;
    mask = ntohl(mask);
    if (mask == 0) return everywhere;
    routes.push_back(route{ntohl(destination) & mask, mask});
  }
  if (routes.size() > max_card_routes) return everywhere;
  return routes;
}

bool routes_reach(const std::vector<route> &routes, const std::vector<std::string> &addresses) {
  bool only_loopback = true;
  for (const std::string &text : addresses) {
    const auto address = ipv4_parse(text);
    if (!address) continue;
    if ((*address >> 24) == 127) continue;
    only_loopback = false;
    for (const route &r : routes) {
      if ((*address & r.mask) == r.network) return true;
    }
  }
  return only_loopback;
}

}  // namespace iris::netmod::tcp
