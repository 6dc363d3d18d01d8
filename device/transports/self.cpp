#include "device/transports/self.hpp"

#include <cstring>
#include <vector>

#include "device/protocols/dispatch.hpp"
#include "device/runtime/errors.hpp"

namespace iris::device {

xfer self_transport::send(vc &to, const packet_header &h, std::span<const iovec> payload) {
  const std::byte *bytes = nullptr;
  std::size_t length = 0;
  std::vector<std::byte> joined;  // only for a payload in several parts, which no protocol sends
  if (payload.size() == 1) {
    bytes = static_cast<const std::byte *>(payload[0].iov_base);
    length = payload[0].iov_len;
  } else if (payload.size() > 1) {
    for (const iovec &part : payload) {
      const auto *p = static_cast<const std::byte *>(part.iov_base);
      joined.insert(joined.end(), p, p + part.iov_len);
    }
    bytes = joined.data();
    length = joined.size();
  }
  if (const char *why = packet_deliver(to, h, bytes, length)) {
    fatal("send to self", "refused its own packet: %s", why);
  }
  return xfer::done;
}

}  // namespace iris::device
