// Validation of packet headers that arrive from outside.
#include <gtest/gtest.h>

#include "device/core/packet.hpp"

namespace iris::device {
namespace {

packet_header message(packet_type type, std::uint64_t length) {
  packet_header h{};
  h.type = type;
  h.source = 1;
  h.context = 0;
  h.tag = 3;
  h.length = length;
  h.sender_request = 7;
  return h;
}

packet_header control(packet_type type) {
  packet_header h{};
  h.type = type;
  h.sender_request = 5;
  h.receiver_request = 9;
  return h;
}

TEST(PacketCheck, SoundHeadersPass) {
  EXPECT_EQ(packet_check(message(packet_type::eager, 0), 0, 4), nullptr);
  EXPECT_EQ(packet_check(message(packet_type::eager, 100), 100, 4), nullptr);
  EXPECT_EQ(packet_check(message(packet_type::eager_sync, 8), 8, 4), nullptr);
  EXPECT_EQ(packet_check(message(packet_type::rts, 1 << 20), sizeof(rts_payload), 4), nullptr);
  packet_header cts = control(packet_type::cts);
  cts.length = 1 << 20;
  EXPECT_EQ(packet_check(cts, 0, 4), nullptr);
  packet_header data = control(packet_type::data);
  data.length = 4096;
  data.offset = 8192;
  EXPECT_EQ(packet_check(data, 4096, 4), nullptr);
  EXPECT_EQ(packet_check(control(packet_type::fin), 0, 4), nullptr);
  EXPECT_EQ(packet_check(control(packet_type::sync_ack), 0, 4), nullptr);
  packet_header credit{};
  credit.type = packet_type::credit;
  credit.credits = 30;
  EXPECT_EQ(packet_check(credit, 0, 4), nullptr);
}

TEST(PacketCheck, ImpossibleEnvelopesAreRefused) {
  packet_header h = message(packet_type::eager, 8);
  h.source = 4;
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "source == world size";
  h.source = -1;
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "negative source";
  h = message(packet_type::rts, 8);
  h.tag = -5;
  EXPECT_NE(packet_check(h, sizeof(rts_payload), 4), nullptr) << "negative tag";
  h = message(packet_type::eager, 8);
  h.flags = 1;
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "unknown flags";
  h = message(packet_type::eager, 8);
  h.type = static_cast<packet_type>(99);
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "unknown type";
  h = message(packet_type::eager, max_message_length + 1);
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "impossible length";
}

TEST(PacketCheck, PayloadsMustFitTheirType) {
  EXPECT_NE(packet_check(message(packet_type::eager, 8), 7, 4), nullptr) << "eager too short";
  EXPECT_NE(packet_check(message(packet_type::eager, 8), 9, 4), nullptr) << "eager too long";
  EXPECT_NE(packet_check(message(packet_type::rts, 8), 0, 4), nullptr) << "rts without payload";
  packet_header rts = message(packet_type::rts, 8);
  rts.sender_request = 0;
  EXPECT_NE(packet_check(rts, sizeof(rts_payload), 4), nullptr) << "rts without request";
  EXPECT_NE(packet_check(control(packet_type::cts), 8, 4), nullptr) << "cts with payload";
  packet_header data = control(packet_type::data);
  data.length = 10;
  EXPECT_NE(packet_check(data, 11, 4), nullptr) << "data length differs from payload";
  EXPECT_NE(packet_check(data, 0, 4), nullptr) << "empty data";
  data.receiver_request = 0;
  EXPECT_NE(packet_check(data, 10, 4), nullptr) << "data for no request";
  packet_header fin = control(packet_type::fin);
  fin.sender_request = 0;
  EXPECT_NE(packet_check(fin, 0, 4), nullptr) << "fin for no request";
  packet_header credit{};
  credit.type = packet_type::credit;
  EXPECT_NE(packet_check(credit, 4, 4), nullptr) << "credit with payload";
  packet_header sync = message(packet_type::eager_sync, 8);
  sync.sender_request = 0;
  EXPECT_NE(packet_check(sync, 8, 4), nullptr) << "eager_sync without a request to acknowledge";
  packet_header cancel = control(packet_type::cancel_reply);
  cancel.length = 2;
  EXPECT_NE(packet_check(cancel, 0, 4), nullptr) << "cancel answer that is neither yes nor no";
  cancel.length = 1;
  EXPECT_EQ(packet_check(cancel, 0, 4), nullptr);
}

// Recovery packets (protocols/recovery.hpp): a step in 1..4, a payload of
// the length the header says. What the payload holds, and whether the
// sender belongs to the communicator, recovery_on_packet checks.
TEST(PacketCheck, RecoveryStepsAreKnownAndSized) {
  packet_header h{};
  h.type = packet_type::recovery;
  h.tag = 2;
  h.length = 16;
  EXPECT_EQ(packet_check(h, 16, 4), nullptr);
  EXPECT_NE(packet_check(h, 8, 4), nullptr) << "payload shorter than its length";
  h.tag = 0;
  EXPECT_NE(packet_check(h, 16, 4), nullptr) << "step 0";
  h.tag = 5;
  EXPECT_NE(packet_check(h, 16, 4), nullptr) << "step 5";
}

}  // namespace
}  // namespace iris::device
