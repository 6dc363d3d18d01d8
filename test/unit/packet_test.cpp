// Validation of packet headers that arrive from outside.
#include <gtest/gtest.h>

#include "device/packet.hpp"

namespace iris::device {
namespace {

packet_header eager(std::uint64_t length) {
  packet_header h{};
  h.type = packet_type::eager;
  h.source = 1;
  h.context = 0;
  h.tag = 3;
  h.length = length;
  return h;
}

TEST(PacketCheck, SoundHeadersPass) {
  EXPECT_EQ(packet_check(eager(0), 0, 4), nullptr);
  EXPECT_EQ(packet_check(eager(100), 100, 4), nullptr);
  packet_header first = eager(1000);
  first.type = packet_type::eager_first;
  EXPECT_EQ(packet_check(first, 400, 4), nullptr);
  packet_header more = eager(1000);
  more.type = packet_type::eager_more;
  more.offset = 400;
  EXPECT_EQ(packet_check(more, 600, 4), nullptr);
}

TEST(PacketCheck, EveryImpossibleFieldIsRefused) {
  packet_header h = eager(8);
  h.source = 4;
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "source == world size";
  h.source = -1;
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "negative source";
  h = eager(8);
  h.tag = -5;
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "negative tag";
  h = eager(8);
  h.flags = 1;
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "unknown flags";
  h = eager(8);
  h.type = static_cast<packet_type>(99);
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "unknown type";
  h = eager(max_message_length + 1);
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "impossible length";
  EXPECT_NE(packet_check(eager(8), 7, 4), nullptr) << "payload shorter than the message";
  EXPECT_NE(packet_check(eager(8), 9, 4), nullptr) << "payload longer than the message";
}

TEST(PacketCheck, FragmentsMustLieInsideTheirMessage) {
  packet_header first = eager(1000);
  first.type = packet_type::eager_first;
  EXPECT_NE(packet_check(first, 1000, 4), nullptr) << "a first fragment that is the whole";
  EXPECT_NE(packet_check(first, 0, 4), nullptr) << "an empty first fragment";
  packet_header more = eager(1000);
  more.type = packet_type::eager_more;
  more.offset = 900;
  EXPECT_NE(packet_check(more, 101, 4), nullptr) << "runs past the end";
  more.offset = 0;
  EXPECT_NE(packet_check(more, 10, 4), nullptr) << "offset 0 is the first fragment's";
  more.offset = 1001;
  EXPECT_NE(packet_check(more, 0, 4), nullptr) << "starts past the end";
}

}  // namespace
}  // namespace iris::device
