/**
 * @file test_connections.cpp
 * Persistent connections (docs/network.md "Connections"): a connection sends its messages
 * one after another in (start, id) order without a gap, opens a later message at its start,
 * keeps its congestion-control state from one message to the next and its ECMP path for
 * its whole life.
 */
#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/support/net_scenario.hpp"
#include "topologies/generators.hpp"

using namespace mv;
using namespace mv::test;

namespace {
constexpr int64_t kRate = 100'000'000'000;  // 100 Gb/s
constexpr int64_t kDelay = 1'000'000;       // 1 µs

/// The record of message `m` of connection `j` (ids as ConnectionDef numbers them).
const net::FlowResult& messageOf(const NetResult& r, uint32_t j, uint32_t m) {
  const uint64_t id = uint64_t{1'000'000} * (j + 1) + m;
  const auto it = std::find_if(r.flows.begin(), r.flows.end(), [&](const net::FlowResult& f) { return f.id == id; });
  REQUIRE(it != r.flows.end());
  return *it;
}

/// Switch ports that sent at least 90 % of the busiest one's bytes.
int64_t portsNearBusiest(const NetResult& r) {
  int64_t most = 0;
  for (const PortStats& p : r.ports) most = std::max(most, p.tx_bytes);
  return std::count_if(r.ports.begin(), r.ports.end(), [&](const PortStats& p) { return p.tx_bytes * 10 >= most * 9; });
}
}  // namespace

TEST_CASE("a connection sends its messages back to back in start then id order, a later one at its start",
          "[network][connections]") {
  const Topology star = makeStar(2, BitsPerSecond{kRate}, Picoseconds{kDelay});
  for (net::CcKind cc : {net::CcKind::kDcqcn, net::CcKind::kDctcp, net::CcKind::kHpcc}) {
    INFO("cc " << static_cast<int>(cc));
    NetCase c;
    c.topo = &star;
    c.cfg.cc = cc;
    // Messages 0 and 1 start together (0 goes first: lower id), message 2 starts 1 µs
    // earlier and goes before them; message 3 starts long after all are acknowledged.
    c.connections = {ConnectionDef{0, 1,
                                   {FlowDef{0, 0, 10'500, 6'000'000}, FlowDef{0, 0, 10'500, 6'000'000},
                                    FlowDef{0, 0, 10'500, 5'000'000}, FlowDef{0, 0, 10'500, 300'000'000}}}};
    const NetResult r = runNet(c);
    REQUIRE(r.flows.size() == 4u);
    CHECK(r.counters.retransmits == 0);
    CHECK(r.counters.packets_sent == 44);
    // As one flow on an idle path (test_network_basic.cpp): 10 full packets and one of 500
    // bytes, store and forward, then the last ACK over two links. The messages queued behind
    // it follow without a gap, each from the next packet boundary.
    const int64_t s_full = serializationTime(Bytes{net::dataWireBytes(1000, cc)}, BitsPerSecond{kRate}).ps;
    const int64_t s_last = serializationTime(Bytes{net::dataWireBytes(500, cc)}, BitsPerSecond{kRate}).ps;
    const int32_t ack = cc == net::CcKind::kHpcc ? net::kAckIntBytes : net::kAckBytes;
    const int64_t s_ack = serializationTime(Bytes{ack}, BitsPerSecond{kRate}).ps;
    const int64_t ack_back = 2 * (s_ack + kDelay);
    // n messages leave the NIC by n·(10·s_full + s_last); the last short packet waits at the
    // switch for the full one before it, so it is in one s_full and two delays later.
    auto done_after = [&](int n) { return (10 * n + 1) * s_full + n * s_last + 2 * kDelay; };
    // Message 2 is sent by 6 µs; then 0 and 1 go back to back.
    CHECK(messageOf(r, 0, 2).finish_ps == 5'000'000 + done_after(1) + ack_back);
    CHECK(messageOf(r, 0, 0).finish_ps == 6'000'000 + done_after(1) + ack_back);
    CHECK(messageOf(r, 0, 1).finish_ps == 6'000'000 + done_after(2) + ack_back);
    // DCQCN's timers and DCTCP's unmarked window leave the idle connection at line rate;
    // HPCC keeps the rate its last INT samples (of a busy link) gave it, as a QP does.
    if (cc == net::CcKind::kHpcc) {
      CHECK(messageOf(r, 0, 3).finish_ps >= 300'000'000 + done_after(1) + ack_back);
    } else {
      CHECK(messageOf(r, 0, 3).finish_ps == 300'000'000 + done_after(1) + ack_back);
    }
    // A record per message: its own bytes and the start it was posted with.
    CHECK(messageOf(r, 0, 0).bytes == 10'500);
    CHECK(messageOf(r, 0, 0).start_ps == 6'000'000);
  }
}

TEST_CASE("a connection keeps its DCQCN state: a message after an incast starts at the cut rate",
          "[network][connections][dcqcn]") {
  const Topology star = makeStar(3, BitsPerSecond{kRate}, Picoseconds{kDelay});
  // NIC 0's connection and a flow from NIC 1 meet at NIC 2: DCQCN cuts both.
  NetCase incast;
  incast.topo = &star;
  incast.cfg.cc = net::CcKind::kDcqcn;
  incast.flows = {FlowDef{1, 2, 2'000'000, 0}};
  incast.connections = {ConnectionDef{0, 2, {FlowDef{0, 0, 2'000'000, 0}}}};
  const NetResult first = runNet(incast);
  REQUIRE(first.counters.cnps > 0);
  const int64_t after = std::max(first.flows[0].finish_ps, first.flows[1].finish_ps) + 1'000'000;
  // 200 kB more from NIC 0 once the incast is over: on the connection, or as a new flow.
  NetCase on_connection = incast;
  on_connection.connections[0].messages.push_back(FlowDef{0, 0, 200'000, after});
  NetCase fresh = incast;
  fresh.flows.push_back(FlowDef{0, 2, 200'000, after});
  const std::vector<NetResult> r = runNetBatch({on_connection, fresh});
  const net::FlowResult& kept = messageOf(r[0], 0, 1);
  const auto it = std::find_if(r[1].flows.begin(), r[1].flows.end(), [](const net::FlowResult& f) { return f.id == 1; });
  REQUIRE(it != r[1].flows.end());
  const int64_t fct_kept = kept.finish_ps - kept.start_ps;
  const int64_t fct_fresh = it->finish_ps - it->start_ps;
  // The new flow starts at line rate on an idle path: 200 full packets, store and forward.
  const int64_t s_full = serializationTime(Bytes{net::dataWireBytes(1000, net::CcKind::kDcqcn)}, BitsPerSecond{kRate}).ps;
  const int64_t s_ack = serializationTime(Bytes{net::kAckBytes}, BitsPerSecond{kRate}).ps;
  CHECK(fct_fresh == 201 * s_full + 2 * kDelay + 2 * (s_ack + kDelay));
  // The connection's message starts at the rate the incast left and recovers by DCQCN's timers.
  CHECK(static_cast<double>(fct_kept) > 1.05 * static_cast<double>(fct_fresh));
}

TEST_CASE("a connection's messages all take its one ECMP path; separate flows spread", "[network][connections][ecmp]") {
  // Two leaves of two NICs and four spines: 16 messages of one connection from NIC 0 to
  // NIC 2 cross one uplink, one spine and the last downlink; 16 flows cross four uplinks.
  SpineLeafParams p;
  p.leaves = 2;
  p.nics_per_leaf = 2;
  p.spines = 4;
  p.oversubscription = 0.5;
  p.fabric_rate = BitsPerSecond{0};
  const Topology fabric = makeSpineLeaf(p);
  NetCase conn;
  conn.topo = &fabric;
  conn.connections = {ConnectionDef{0, 2, std::vector<FlowDef>(16, FlowDef{0, 0, 50'000, 0})}};
  NetCase flows;
  flows.topo = &fabric;
  flows.flows = std::vector<FlowDef>(16, FlowDef{0, 2, 50'000, 0});
  const std::vector<NetResult> r = runNetBatch({conn, flows});
  CHECK(r[0].flows.size() == 16u);
  CHECK(portsNearBusiest(r[0]) == 3);
  CHECK(portsNearBusiest(r[1]) == 1);
}

TEST_CASE("a connection recovers lost packets inside and across its messages", "[network][connections][loss]") {
  // Two connections into one NIC through a 40 kB buffer without PFC: packets are dropped,
  // and go-back-N (ECMP) or the out-of-order receiver (spraying) resends them, from inside
  // a message that is not a whole number of packets into the ones opened after it.
  const Topology star = makeStar(3, BitsPerSecond{kRate}, Picoseconds{kDelay});
  for (net::LoadBalance lb : {net::LoadBalance::kEcmp, net::LoadBalance::kSpray}) {
    INFO("load balance " << static_cast<int>(lb));
    NetCase c;
    c.topo = &star;
    c.cfg.cc = net::CcKind::kNone;
    c.cfg.load_balance = lb;
    c.cfg.pfc.enabled = false;
    c.cfg.pfc.buffer_bytes = 40'000;
    c.connections = {ConnectionDef{0, 2, std::vector<FlowDef>(60, FlowDef{0, 0, 1'500, 0})},
                     ConnectionDef{1, 2, std::vector<FlowDef>(60, FlowDef{0, 0, 2'500, 0})}};
    const NetResult r = runNet(c);
    CHECK(r.counters.drops > 0);
    CHECK(r.counters.retransmits > 0);
    REQUIRE(r.flows.size() == 120u);
    for (uint32_t m = 0; m < 60; ++m) {
      CHECK(messageOf(r, 0, m).bytes == 1'500);
      CHECK(messageOf(r, 1, m).bytes == 2'500);
    }
    // Messages complete in the order they were opened (same start: by id).
    for (uint32_t m = 1; m < 60; ++m) CHECK(messageOf(r, 0, m).finish_ps >= messageOf(r, 0, m - 1).finish_ps);
    // Resent packets keep the packet grid: 240 kB take 56 µs (ECMP) and 52 µs (spraying) with
    // the drops. A resend that ended an earlier message and went on off the grid, into the
    // next, cost go-back-N 6,287 resends and 428 µs, spraying 72 µs.
    int64_t last = 0;
    for (const net::FlowResult& f : r.flows) last = std::max(last, f.finish_ps);
    CHECK(last < 65'000'000);
  }
}
