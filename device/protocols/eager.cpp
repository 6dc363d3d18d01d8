#include "device/protocols/eager.hpp"

#include <cstring>

#include "device/core/request.hpp"
#include "device/datatypes/dtype.hpp"
#include "device/protocols/credit.hpp"
#include "device/protocols/recv.hpp"
#include "device/protocols/sync.hpp"

namespace iris::device {

const char *eager_on_message(vc &from, const packet_header &h, const std::byte *payload) {
  return message_arrived(from, h, payload);
}

void eager_matched(request &r, vc &from, packet_type type, std::size_t length,
                   std::uint64_t sender_request, const std::byte *data) {
  if (r.typed_stream) {
    dtype_unpack_range(data, 0, r.status_bytes, r.unpack_to, r.unpack_count, *r.unpack_type);
  } else if (r.status_bytes != 0) {
    std::memcpy(r.buffer, data, r.status_bytes);
  }
  request_complete(r);
  credit_return(from, length);
  if (type == packet_type::eager_sync) sync_ack_send(from, sender_request);
}

}  // namespace iris::device
