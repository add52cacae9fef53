/**
 * @file test_network_basic.cpp
 * Packet-level network against exact expectations on idle paths, and the invariants:
 * identical results for 1 and 2 threads and for lookahead Δ and Δ/2.
 */
#include <catch2/catch.hpp>

#include "tests/support/net_scenario.hpp"

using namespace mv;
using namespace mv::test;

namespace {
constexpr int64_t kRate = 100'000'000'000;  // 100 Gb/s
constexpr int64_t kDelay = 1'000'000;       // 1 µs
}  // namespace

TEST_CASE("one flow on an idle path finishes at its exact wire time", "[network]") {
  const Topology star = makeStar(2, BitsPerSecond{kRate}, Picoseconds{kDelay});
  for (net::CcKind cc : {net::CcKind::kDcqcn, net::CcKind::kDctcp, net::CcKind::kHpcc}) {
    NetCase c;
    c.topo = &star;
    c.cfg.cc = cc;
    c.flows = {FlowDef{0, 1, 10'500, 5'000'000}};  // 10 full packets and one of 500 bytes
    const NetResult r = runNet(c);
    REQUIRE(r.flows.size() == 1u);
    // Packets leave the NIC back to back and the switch forwards each as soon as it is in
    // (store and forward). Full packet k reaches the switch at (k+1)·s_full + d and leaves
    // it at (k+2)·s_full + d. The short last packet is in at 10·s_full + s_last + d, before
    // the switch has finished full packet 9 (11·s_full + d), so it waits for it and reaches
    // the receiver at 11·s_full + s_last + 2d. Its ACK then crosses two idle links.
    const int32_t full = net::dataWireBytes(1000, cc);
    const int32_t last = net::dataWireBytes(500, cc);
    const int32_t ack = cc == net::CcKind::kHpcc ? net::kAckIntBytes : net::kAckBytes;
    const int64_t s_full = serializationTime(Bytes{full}, BitsPerSecond{kRate}).ps;
    const int64_t s_last = serializationTime(Bytes{last}, BitsPerSecond{kRate}).ps;
    const int64_t s_ack = serializationTime(Bytes{ack}, BitsPerSecond{kRate}).ps;
    const int64_t data_done = 11 * s_full + s_last + 2 * kDelay;
    const int64_t expected_fct = data_done + 2 * (s_ack + kDelay);
    CHECK(r.flows[0].finish_ps - r.flows[0].start_ps == expected_fct);
    CHECK(r.counters.drops == 0);
    CHECK(r.counters.retransmits == 0);
    CHECK(r.counters.packets_sent == 11);
  }
}

TEST_CASE("RoCEv2 frames: MTU payloads behind 82 B of headers and gap, 86 B ACKs", "[network][roce]") {
  const Topology star = makeStar(2, BitsPerSecond{kRate}, Picoseconds{kDelay});
  for (net::CcKind cc : {net::CcKind::kDcqcn, net::CcKind::kHpcc}) {
    NetCase c;
    c.topo = &star;
    c.cfg.cc = cc;
    c.cfg.wire = net::WireFormat::kRoce;
    c.cfg.payload_bytes = net::kRoceMaxMtu;
    c.flows = {FlowDef{0, 1, 10'500, 5'000'000}};  // 2 packets of 4096 B and one of 2308 B
    const NetResult r = runNet(c);
    REQUIRE(r.flows.size() == 1u);
    CHECK(r.counters.packets_sent == 3);
    // Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 + preamble and gap 20 (+ INT).
    const int32_t header = 82 + (cc == net::CcKind::kHpcc ? net::kIntHeaderBytes : 0);
    CHECK(net::dataWireBytes(4096, cc, net::WireFormat::kRoce) == 4096 + header);
    const int32_t ack = 86 + (cc == net::CcKind::kHpcc ? net::kAckIntBytes - net::kAckBytes : 0);
    CHECK(net::ackWireBytes(cc, net::WireFormat::kRoce) == ack);
    const int64_t s_full = serializationTime(Bytes{4096 + header}, BitsPerSecond{kRate}).ps;
    const int64_t s_last = serializationTime(Bytes{2308 + header}, BitsPerSecond{kRate}).ps;
    const int64_t s_ack = serializationTime(Bytes{ack}, BitsPerSecond{kRate}).ps;
    // As the ns-3 packet above: the short last packet waits at the switch for the full one.
    CHECK(r.flows[0].finish_ps - r.flows[0].start_ps == 3 * s_full + s_last + 2 * kDelay + 2 * (s_ack + kDelay));
  }
}
