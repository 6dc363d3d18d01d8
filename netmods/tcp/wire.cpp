#include "netmods/tcp/wire.hpp"

#include <charconv>
#include <span>

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
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    c.addresses.emplace_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  if (c.addresses.empty()) return std::nullopt;
  return c;
}

}  // namespace iris::netmod::tcp
