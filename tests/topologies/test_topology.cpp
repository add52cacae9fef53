/**
 * @file test_topology.cpp
 * The graph data model (ids, ports, NIC attachment, summary) and every validation error.
 */
#include <catch2/catch.hpp>

#include "tests/topologies/test_support.hpp"
#include "topologies/topology.hpp"

using namespace mv;
using Catch::Matchers::Contains;
using mv::test::topologyErrorOf;

namespace {

const BitsPerSecond kRate = gigabitsPerSecond(100);
const Picoseconds kDelay = microseconds(1);

/// One switch (node 0, before the NICs, unlike makeStar) with `nics` NICs, each its own server.
Topology switchFirstStar(uint32_t nics) {
  Topology topo;
  const uint32_t sw = topo.addSwitch(1);
  for (uint32_t i = 0; i < nics; ++i) topo.addLink(sw, topo.addNic(i), kRate, kDelay);
  return topo;
}

}  // namespace

TEST_CASE("nodes, NIC and switch indices, ports and attachment", "[topology]") {
  Topology topo;
  const uint32_t s0 = topo.addSwitch(1);                           // node 0
  const uint32_t n0 = topo.addNic(0);                              // node 1
  const uint32_t s1 = topo.addSwitch(2);                           // node 2
  const uint32_t n1 = topo.addNic(0);                              // node 3
  const uint32_t n2 = topo.addNic(3);                              // node 4
  topo.addLink(s0, s1, gigabitsPerSecond(400), nanoseconds(500));  // link 0
  topo.addLink(n0, s0, kRate, kDelay);                             // link 1
  topo.addLink(s0, n1, kRate, kDelay);                             // link 2
  topo.addLink(n2, s1, gigabitsPerSecond(25), kDelay);             // link 3

  CHECK(topo.nodeCount() == 5);
  CHECK(topo.linkCount() == 4);
  CHECK(topo.nics() == std::vector<uint32_t>{1, 3, 4});
  CHECK(topo.switches() == std::vector<uint32_t>{0, 2});
  CHECK(topo.nicNode(2) == 4);
  CHECK(topo.nicIndex(3) == 1);
  CHECK(topo.nicIndex(0) == kNoIndex);
  CHECK(topo.switchIndex(2) == 1);
  CHECK(topo.switchIndex(1) == kNoIndex);
  CHECK(topo.node(2).tier == 2);
  CHECK(topo.node(1).tier == 0);
  CHECK(topo.node(0).kind == NodeKind::kSwitch);
  CHECK(topo.serverOf(0) == 0);
  CHECK(topo.serverOf(2) == 3);
  CHECK(topo.serverCount() == 4);

  // Ports follow link insertion order at each node; peer_port points back.
  REQUIRE(topo.ports(s0).size() == 3);
  CHECK(topo.ports(s0)[0].peer == s1);
  CHECK(topo.ports(s0)[1].peer == n0);
  CHECK(topo.ports(s0)[2].peer == n1);
  CHECK(topo.ports(s0)[2].link == 2);
  CHECK(topo.ports(s1)[1].peer == n2);
  CHECK(topo.ports(s1)[1].peer_port == 0);
  CHECK(topo.ports(n2)[0].peer_port == 1);

  CHECK(topo.nicSwitch(0) == s0);
  CHECK(topo.nicSwitchPort(0) == 1);
  CHECK(topo.nicSwitch(1) == s0);
  CHECK(topo.nicSwitchPort(1) == 2);
  CHECK(topo.nicSwitch(2) == s1);
  CHECK(topo.nicSwitchPort(2) == 1);
  CHECK(topo.link(3).rate == gigabitsPerSecond(25));

  topo.setName("hand-made");
  const std::string summary = topo.summary();
  CHECK_THAT(summary, Contains("hand-made: 5 nodes, 4 links"));
  CHECK_THAT(summary, Contains("NICs: 3 in 4 servers"));
  CHECK_THAT(summary, Contains("switches: 2 (tier 1: 1, tier 2: 1)"));
  CHECK_THAT(summary, Contains("1 fabric links at 400 Gb/s, 500 ns"));
  CHECK_THAT(summary, Contains("2 NIC links at 100 Gb/s, 1 us"));
  CHECK_THAT(summary, Contains("1 NIC links at 25 Gb/s, 1 us"));
  CHECK_NOTHROW(validateTopology(topo, 3));
}

TEST_CASE("rates and delays format for messages", "[topology]") {
  CHECK(formatRate(gigabitsPerSecond(400)) == "400 Gb/s");
  CHECK(formatRate(megabitsPerSecond(10)) == "10 Mb/s");
  CHECK(formatRate(BitsPerSecond{1'600'000'000'000}) == "1.6 Tb/s");
  CHECK(formatRate(BitsPerSecond{533'333'333'333}) == "533.333333333 Gb/s");
  CHECK(formatDelay(nanoseconds(500)) == "500 ns");
  CHECK(formatDelay(nanoseconds(1500)) == "1.5 us");
  CHECK(formatDelay(milliseconds(2)) == "2 ms");
  CHECK(formatDelay(Picoseconds{7}) == "7 ps");
}

TEST_CASE("validation accepts a well-formed topology", "[topology][validate]") {
  CHECK_NOTHROW(validateTopology(switchFirstStar(4), 4));
  CHECK_NOTHROW(validateTopology(switchFirstStar(4), 0));
}

TEST_CASE("validation: fewer NICs than the job needs", "[topology][validate]") {
  const Topology topo = switchFirstStar(64);
  CHECK(topologyErrorOf([&] { validateTopology(topo, 128); }) == "topology has 64 NICs, the job needs 128");
  CHECK_THAT(topologyErrorOf([&] { validateTopology(Topology{}, 0); }), Contains("no NICs"));
}

TEST_CASE("validation: disconnected graph names the unreachable node", "[topology][validate]") {
  Topology topo = switchFirstStar(2);       // nodes 0 (switch), 1, 2
  const uint32_t lone = topo.addSwitch(1);  // node 3
  topo.addLink(lone, topo.addNic(2), kRate, kDelay);
  const std::string message = topologyErrorOf([&] { validateTopology(topo, 0); });
  CHECK_THAT(message, Contains("node 3 (tier-1 switch) cannot be reached from node 0"));
  CHECK_THAT(message, Contains("disconnected"));
}

TEST_CASE("validation: duplicate links between the same pair", "[topology][validate]") {
  Topology topo = switchFirstStar(2);
  const uint32_t spine = topo.addSwitch(2);
  topo.addLink(0, spine, kRate, kDelay);  // link 2
  topo.addLink(spine, 0, kRate, kDelay);  // link 3, the same pair reversed
  const std::string message = topologyErrorOf([&] { validateTopology(topo, 0); });
  CHECK_THAT(message, Contains("links 2 and 3 both connect node 0"));
  CHECK_THAT(message, Contains("duplicate links"));
}

TEST_CASE("validation: zero or negative rates and delays", "[topology][validate]") {
  const auto with_link = [](BitsPerSecond rate, Picoseconds delay) {
    Topology topo = switchFirstStar(2);
    topo.addLink(0, topo.addSwitch(2), rate, delay);
    return topo;
  };
  CHECK_THAT(topologyErrorOf([&] { validateTopology(with_link(BitsPerSecond{0}, kDelay), 0); }),
             Contains("link 2 (node 0 (tier-1 switch) - node 3 (tier-2 switch)) has a non-positive rate (0 b/s)"));
  CHECK_THAT(topologyErrorOf([&] { validateTopology(with_link(BitsPerSecond{-5}, kDelay), 0); }),
             Contains("non-positive rate (-5 b/s)"));
  CHECK_THAT(topologyErrorOf([&] { validateTopology(with_link(kRate, Picoseconds{0}), 0); }),
             Contains("has a non-positive delay (0 ps)"));
  CHECK_THAT(topologyErrorOf([&] { validateTopology(with_link(kRate, Picoseconds{-1}), 0); }),
             Contains("has a non-positive delay (-1 ps)"));
}

TEST_CASE("validation: multi-homed NICs are not supported", "[topology][validate]") {
  Topology topo = switchFirstStar(2);
  const uint32_t other = topo.addSwitch(1);
  topo.addLink(other, 1, kRate, kDelay);  // NIC 0 (node 1) now has two links
  const std::string message = topologyErrorOf([&] { validateTopology(topo, 0); });
  CHECK_THAT(message, Contains("node 1 (NIC 0 of server 0) has 2 links"));
  CHECK_THAT(message, Contains("multi-homed endpoints are not supported"));
}

TEST_CASE("validation: NIC linked directly to a NIC", "[topology][validate]") {
  Topology topo;
  const uint32_t a = topo.addNic(0);
  topo.addLink(a, topo.addNic(1), kRate, kDelay);
  const std::string message = topologyErrorOf([&] { validateTopology(topo, 0); });
  CHECK_THAT(message, Contains("link 0 (node 0 (NIC 0 of server 0) - node 1 (NIC 1 of server 1))"));
  CHECK_THAT(message, Contains("connects two NICs directly"));
}

TEST_CASE("validation: NIC without a link and self-links", "[topology][validate]") {
  Topology lonely = switchFirstStar(2);
  lonely.addNic(2);
  CHECK_THAT(topologyErrorOf([&] { validateTopology(lonely, 0); }), Contains("node 3 (NIC 2 of server 2) has no link"));

  Topology looped = switchFirstStar(2);
  looped.addLink(0, 0, kRate, kDelay);
  CHECK_THAT(topologyErrorOf([&] { validateTopology(looped, 0); }), Contains("connects a node to itself"));
  CHECK(looped.ports(0)[2].peer_port == 3);
  CHECK(looped.ports(0)[3].peer_port == 2);
}
