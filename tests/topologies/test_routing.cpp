/**
 * @file test_routing.cpp
 * Routing tables against closed-form hop counts and ECMP widths of the textbook
 * topologies, against a per-NIC breadth-first-search oracle, and their memory footprint.
 */
#include <catch2/catch.hpp>
#include <cstdio>

#include "tests/topologies/test_support.hpp"
#include "topologies/generators.hpp"
#include "topologies/routing.hpp"

using namespace mv;
using Catch::Matchers::Contains;
using mv::test::checkRoutingWithBfs;
using mv::test::topologyErrorOf;

namespace {

/// True when switch `s` has a port to switch `other`.
bool adjacent(const Topology& topo, uint32_t s, uint32_t other) {
  for (const auto& port : topo.ports(s)) {
    if (port.peer == other) return true;
  }
  return false;
}

/// Every port of `hops` at switch `s` leads to a node of `tier` (NICs have tier 0).
bool allLeadTo(const Topology& topo, uint32_t s, std::span<const uint16_t> hops, uint8_t tier) {
  for (const auto p : hops) {
    if (topo.node(topo.ports(s)[p].peer).tier != tier) return false;
  }
  return true;
}

void requireBfsAgreement(const Topology& topo, const Routing& routing) {
  const auto check = checkRoutingWithBfs(topo, routing);
  INFO("first mismatch: " << check.first);
  CHECK(check.mismatches == 0);
}

void checkFatTreeEcmp(uint32_t k) {
  INFO("k = " << k);
  FatTreeParams params;
  params.k = k;
  const Topology topo = makeFatTree(params);
  const Routing routing = computeRouting(topo);
  const uint32_t half = k / 2;
  CHECK(routing.edgeCount() == k * half);
  CHECK(routing.switchCount() == 5 * k * k / 4);

  for (const auto s : topo.switches()) {
    for (uint32_t d = 0; d < topo.nicCount(); ++d) {
      const auto hops = routing.nextHops(s, d);
      const uint32_t dst_edge = topo.nicSwitch(d);
      switch (topo.node(s).tier) {
        case 1:
          if (s == dst_edge) {
            REQUIRE(hops.size() == 1);
            CHECK(topo.ports(s)[hops[0]].peer == topo.nicNode(d));
          } else {
            CHECK(hops.size() == half);  // edge up: any aggregation switch
            CHECK(allLeadTo(topo, s, hops, 2));
          }
          break;
        case 2:
          if (adjacent(topo, s, dst_edge)) {
            REQUIRE(hops.size() == 1);  // same pod: straight down
            CHECK(topo.ports(s)[hops[0]].peer == dst_edge);
          } else {
            CHECK(hops.size() == half);  // other pod: any core
            CHECK(allLeadTo(topo, s, hops, 3));
          }
          break;
        default:
          REQUIRE(hops.size() == 1);  // core: the one aggregation switch of the destination's pod
          CHECK(adjacent(topo, topo.ports(s)[hops[0]].peer, dst_edge));
      }
    }
  }
  // Distinct sets: edges keep one (all uplinks); aggregations one up plus k/2 down; cores k.
  CHECK(routing.setCount() == k * half * 1 + k * half * (1 + half) + half * half * k);
  requireBfsAgreement(topo, routing);
}

}  // namespace

TEST_CASE("fat-tree k=4: hop count of every NIC pair", "[topology][routing]") {
  FatTreeParams params;
  params.k = 4;
  const Topology topo = makeFatTree(params);
  const Routing routing = computeRouting(topo);
  // NIC i: edge i / 2, pod i / 4 (the generator's documented numbering).
  for (uint32_t a = 0; a < 16; ++a) {
    for (uint32_t b = 0; b < 16; ++b) {
      const uint32_t expected = a == b ? 0 : a / 2 == b / 2 ? 2 : a / 4 == b / 4 ? 4 : 6;
      INFO(a << " -> " << b);
      CHECK(routing.hopCount(a, b) == expected);
      CHECK(routing.firstPath(a, b).size() == expected);
    }
  }
}

TEST_CASE("fat-tree k=4 and k=8: ECMP width at every tier and BFS agreement", "[topology][routing]") {
  checkFatTreeEcmp(4);
  checkFatTreeEcmp(8);
}

TEST_CASE("first path gives the idle one-way delay", "[topology][routing]") {
  FatTreeParams params;
  params.k = 4;
  params.nic_delay = nanoseconds(300);
  params.fabric_delay = microseconds(1);
  const Topology topo = makeFatTree(params);
  const Routing routing = computeRouting(topo);
  const auto path = routing.firstPath(0, 15);
  REQUIRE(path.size() == 6);
  Picoseconds one_way;
  for (const auto l : path) one_way += topo.link(l).delay;
  CHECK(one_way == nanoseconds(300) * 2 + microseconds(1) * 4);
  CHECK(path.front() == routing.nicLink()[0]);
  CHECK(path.back() == routing.nicLink()[15]);
  CHECK(routing.firstPath(3, 3).empty());
}

TEST_CASE("rail-optimized: same rail 2 links, otherwise 4", "[topology][routing]") {
  RailParams params;
  params.servers = 8;
  params.nics_per_server = 4;
  params.leaf_radix_down = 4;  // two segments of four servers
  params.spines = 3;
  const Topology topo = makeRailOptimized(params);
  const Routing routing = computeRouting(topo);
  for (uint32_t a = 0; a < topo.nicCount(); ++a) {
    for (uint32_t b = 0; b < topo.nicCount(); ++b) {
      const bool same_leaf = a % 4 == b % 4 && a / 16 == b / 16;
      const uint32_t expected = a == b ? 0 : same_leaf ? 2 : 4;
      INFO(a << " -> " << b);
      CHECK(routing.hopCount(a, b) == expected);
      if (!same_leaf) CHECK(routing.nextHops(topo.nicSwitch(a), b).size() == 3);  // any spine
    }
  }
  requireBfsAgreement(topo, routing);
}

TEST_CASE("spine-leaf: ECMP over every spine between leaves", "[topology][routing]") {
  SpineLeafParams params;
  params.leaves = 3;
  params.nics_per_leaf = 8;
  params.oversubscription = 2.0;  // 800 Gb/s down, 400 Gb/s up: two spines of 200 Gb/s
  params.fabric_rate = gigabitsPerSecond(200);
  const Topology topo = makeSpineLeaf(params);
  const Routing routing = computeRouting(topo);
  CHECK(routing.nextHops(topo.nicSwitch(0), 8).size() == 2);
  CHECK(routing.hopCount(0, 7) == 2);
  CHECK(routing.hopCount(0, 8) == 4);
  requireBfsAgreement(topo, routing);
}

TEST_CASE("irregular topology with interleaved ids: a switch ring splits ECMP both ways", "[topology][routing]") {
  // Ring of switches 0-2-4-6-0 (ids interleaved with NICs); NICs on switches 0 and 4.
  Topology topo;
  const auto rate = gigabitsPerSecond(100);
  const auto delay = microseconds(1);
  const uint32_t s0 = topo.addSwitch(0);
  const uint32_t n0 = topo.addNic(0);
  const uint32_t s2 = topo.addSwitch(0);
  const uint32_t n1 = topo.addNic(1);
  const uint32_t s4 = topo.addSwitch(0);
  const uint32_t n2 = topo.addNic(2);
  const uint32_t s6 = topo.addSwitch(0);
  topo.addLink(s0, s2, rate, delay);
  topo.addLink(s2, s4, rate, delay);
  topo.addLink(s4, s6, rate, delay);
  topo.addLink(s6, s0, rate, delay);
  topo.addLink(n0, s0, rate, delay);
  topo.addLink(n1, s4, rate, delay);
  topo.addLink(s4, n2, rate, delay);
  REQUIRE_NOTHROW(validateTopology(topo, 3));
  const Routing routing = computeRouting(topo);
  CHECK(routing.edgeCount() == 2);
  const auto hops = routing.nextHops(s0, 1);
  CHECK(std::vector<uint16_t>(hops.begin(), hops.end()) == std::vector<uint16_t>{0, 1});
  CHECK(routing.hopCount(0, 2) == 4);
  CHECK(routing.hopCount(1, 2) == 2);
  requireBfsAgreement(topo, routing);
}

TEST_CASE("routing refuses topologies it cannot route", "[topology][routing]") {
  const auto rate = gigabitsPerSecond(100);
  const auto delay = microseconds(1);
  Topology split;
  split.addLink(split.addNic(0), split.addSwitch(1), rate, delay);
  split.addLink(split.addNic(1), split.addSwitch(1), rate, delay);
  CHECK_THAT(topologyErrorOf([&] { computeRouting(split); }), Contains("cannot reach edge switch node"));

  Topology multi_homed;
  const uint32_t nic = multi_homed.addNic(0);
  multi_homed.addLink(nic, multi_homed.addSwitch(1), rate, delay);
  multi_homed.addLink(nic, multi_homed.addSwitch(1), rate, delay);
  CHECK_THAT(topologyErrorOf([&] { computeRouting(multi_homed); }), Contains("must have exactly one link"));
}

TEST_CASE("routing at 1024 NICs: BFS agreement and small memory", "[topology][routing][memory]") {
  constexpr size_t kLimit = size_t{4} << 20;
  FatTreeParams fat;
  fat.k = 8;
  const size_t k8 = computeRouting(makeFatTree(fat)).bytes();

  fat.k = 16;
  const Topology k16_topo = makeFatTree(fat);
  REQUIRE(k16_topo.nicCount() == 1024);
  const Routing k16 = computeRouting(k16_topo);
  CHECK(k16.nextHops(k16_topo.nicSwitch(0), 1023).size() == 8);
  CHECK(k16.hopCount(0, 1023) == 6);
  requireBfsAgreement(k16_topo, k16);

  RailParams rail;
  rail.servers = 128;  // 1024 NICs in two segments of 64 servers
  rail.spines = 64;
  const Topology rail_topo = makeRailOptimized(rail);
  REQUIRE(rail_topo.nicCount() == 1024);
  const Routing rail_routing = computeRouting(rail_topo);
  CHECK(rail_routing.hopCount(0, 8) == 2);
  CHECK(rail_routing.hopCount(0, 1) == 4);
  requireBfsAgreement(rail_topo, rail_routing);

  std::printf(
      "routing memory: fat-tree k=8 (128 NICs) %zu B, fat-tree k=16 (1024 NICs) %zu B, "
      "rail-optimized 128x8 (1024 NICs, 16 leaves, 64 spines) %zu B\n",
      k8, k16.bytes(), rail_routing.bytes());
  CHECK(k8 < kLimit);
  CHECK(k16.bytes() < kLimit);
  CHECK(rail_routing.bytes() < kLimit);
}
