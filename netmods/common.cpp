#include "netmods/common.hpp"

#include <unistd.h>

#include <utility>

#include "pmi/pmi.hpp"

namespace iris::netmod {

void log_line(int rank, std::string_view netmod, std::string_view what) {
  std::string line = "iris: rank " + std::to_string(rank) + ": ";
  line.append(netmod).append(": ").append(what).append("\n");
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

std::string hex_encode(std::span<const std::byte> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * bytes.size());
  for (std::byte b : bytes) {
    const auto v = static_cast<unsigned>(b);
    s += digits[v >> 4];
    s += digits[v & 15];
  }
  return s;
}

bool hex_decode(std::string_view hex, std::vector<std::byte> &out) {
  if (hex.empty() || hex.size() % 2 != 0) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::vector<std::byte> bytes;
  bytes.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]);
    const int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    bytes.push_back(static_cast<std::byte>(hi << 4 | lo));
  }
  out = std::move(bytes);
  return true;
}

void netmod_base::join(pmi::client &pmi, const config &conf) {
  pmi_ = &pmi;
  conf_ = conf;
  rank_ = pmi.rank();
  size_ = pmi.size();
}

void peer_losses::note(int peer, std::string why) {
  entry &e = peers_[static_cast<std::size_t>(peer)];
  if (e.lost) return;
  e.lost = true;
  e.why = std::move(why);
  ++unreported_;
}

int peer_losses::report(record_sink &sink) {
  int told = 0;
  for (std::size_t peer = 0; peer < peers_.size() && unreported_ > 0; ++peer) {
    entry &e = peers_[peer];
    if (!e.lost || e.reported) continue;
    e.reported = true;
    --unreported_;
    ++told;
    sink.peer_lost(static_cast<int>(peer), e.why.c_str());
  }
  return told;
}

}  // namespace iris::netmod
