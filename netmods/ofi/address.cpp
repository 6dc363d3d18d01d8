// Business cards ("token:address", both hex, under the key iris.ofi) and
// the address vector: a peer's address goes in from its card on first use.
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "netmods/ofi/ofi_netmod.hpp"
#include "pmi/pmi.hpp"

namespace iris::netmod::ofi {

std::string card_format(std::uint64_t token, const std::string &address) {
  return hex_encode(std::as_bytes(std::span(&token, 1))) + ":" + address;
}

bool card_parse(std::string_view card, std::uint64_t &token, std::vector<std::byte> &address) {
  const std::size_t colon = card.find(':');
  std::vector<std::byte> t;
  if (colon == std::string_view::npos || !hex_decode(card.substr(0, colon), t) ||
      t.size() != sizeof(token)) {
    return false;
  }
  std::memcpy(&token, t.data(), sizeof(token));
  return hex_decode(card.substr(colon + 1), address);
}

// The peer's address in the address vector, inserted from its card on
// first use. False (and the peer lost) when its card is unusable.
bool ofi_netmod::address_of(int peer, fi_addr_t &out) {
  peer_state &p = peers_[static_cast<std::size_t>(peer)];
  if (losses_.lost(peer)) return false;
  if (p.address != FI_ADDR_NOTAVAIL) {
    out = p.address;
    return true;
  }
  std::string card;
  try {
    card = pmi_->get(peer, card_key);
  } catch (const std::exception &e) {
    losses_.note(peer, std::string("no ofi business card: ") + e.what());
    return false;
  }
  std::vector<std::byte> raw;
  std::uint64_t token = 0;
  if (!card_parse(card, token, raw)) {
    losses_.note(
        peer, "its ofi business card is not 'token:address' in hex: '" + card.substr(0, 64) + "'");
    return false;
  }
  fi_addr_t a = FI_ADDR_NOTAVAIL;
  int inserted = 0;
  {
    // The address, once set, tells send_concurrent that the token is too.
    const lock_if guard(domain_lock_, conf_.concurrent_sends);
    inserted = fi_av_insert(av_, raw.data(), 1, &a, 0, nullptr);
    if (inserted == 1) {
      p.token = token;
      p.address = a;
    }
  }
  if (inserted != 1) {
    losses_.note(peer, "fi_av_insert refused its address " + card.substr(0, 64) + ": " +
                           fi_text(*lib_, inserted < 0 ? inserted : -FI_EINVAL));
    return false;
  }
  out = a;
  return true;
}

}  // namespace iris::netmod::ofi
