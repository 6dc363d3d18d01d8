// IRIS_NETMOD=auto (probe.cpp): the leaders of the nodes measure the
// netmods they share, between the two fences of MPI_Init.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace iris::device {

struct runtime;
class net_transport;

struct probe_figures {
  double small_us = 0;  // half the round trip of an 8-byte message
  double large_us = 0;  // a 64 KiB record of a stream
};

// What the lower leader of a pair of nodes found: the netmod it kept and
// its figures ("ofi 9.1 us + 21.0 us/64 KiB vs tcp ..."); empty when the
// pair shared fewer than two netmods.
struct probe_verdict {
  std::string netmod;
  std::string text;
};

// The netmods this rank and `peer` both offer and that reach, in the lower
// rank's order.
using candidates_of = std::function<std::vector<net_transport *>(int peer)>;

// The leader of each rank's node: its lowest rank.
std::vector<int> node_leaders(const runtime &r);
// A leader measures with every other leader and puts its verdicts; then
// every rank fences (the second fence of MPI_Init). Records of the device
// a leader read meanwhile go to their net transport (hold).
void probe_leaders(runtime &r, const std::vector<int> &leader, const candidates_of &candidates);
// The verdict of the nodes whose leaders are `low_leader` < `high_leader`,
// after probe_leaders; `cache` keeps the verdicts read.
probe_verdict probe_verdict_of(runtime &r, int low_leader, int high_leader,
                               std::vector<std::pair<std::pair<int, int>, probe_verdict>> &cache);

}  // namespace iris::device
