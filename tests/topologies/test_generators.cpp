/**
 * @file test_generators.cpp
 * Fat-tree, rail-optimised and spine-leaf generators against counts, degrees and wiring
 * derived independently from the textbook definitions.
 */
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "tests/topologies/test_support.hpp"
#include "topologies/generators.hpp"

using namespace mv;
using Catch::Matchers::Contains;
using mv::test::topologyErrorOf;

namespace {

/// Number of links at node `n` whose far end is a NIC / a switch of `tier`.
uint32_t neighbours(const Topology& topo, uint32_t n, NodeKind kind, uint8_t tier = 0) {
  uint32_t count = 0;
  for (const auto& port : topo.ports(n)) {
    const auto& peer = topo.node(port.peer);
    if (peer.kind == kind && peer.tier == tier) ++count;
  }
  return count;
}

/// Pod of every node of a fat-tree: connected components once the cores are removed (kNoIndex for cores).
std::vector<uint32_t> fatTreePods(const Topology& topo, uint32_t& pods) {
  std::vector<uint32_t> pod(topo.nodeCount(), kNoIndex);
  pods = 0;
  for (uint32_t start = 0; start < topo.nodeCount(); ++start) {
    if (pod[start] != kNoIndex || topo.node(start).tier == 3) continue;
    std::vector<uint32_t> stack{start};
    pod[start] = pods;
    while (!stack.empty()) {
      const uint32_t n = stack.back();
      stack.pop_back();
      for (const auto& port : topo.ports(n)) {
        if (pod[port.peer] == kNoIndex && topo.node(port.peer).tier != 3) {
          pod[port.peer] = pods;
          stack.push_back(port.peer);
        }
      }
    }
    ++pods;
  }
  return pod;
}

void checkFatTree(uint32_t k) {
  INFO("k = " << k);
  FatTreeParams params;
  params.k = k;
  params.nic_rate = gigabitsPerSecond(100);
  params.fabric_rate = gigabitsPerSecond(400);
  params.fabric_delay = nanoseconds(700);
  const Topology topo = makeFatTree(params);
  const uint32_t half = k / 2;

  CHECK(topo.nicCount() == k * k * k / 4);
  CHECK(topo.switches().size() == 5 * k * k / 4);
  CHECK(topo.nodeCount() == k * k * k / 4 + 5 * k * k / 4);
  CHECK(topo.linkCount() == 3 * k * k * k / 4);
  CHECK(topo.serverCount() == k * k * k / 4);

  std::map<uint8_t, uint32_t> per_tier;
  for (const auto s : topo.switches()) {
    ++per_tier[topo.node(s).tier];
    CHECK(topo.ports(s).size() == k);
    switch (topo.node(s).tier) {
      case 1:
        CHECK(neighbours(topo, s, NodeKind::kNic) == half);
        CHECK(neighbours(topo, s, NodeKind::kSwitch, 2) == half);
        break;
      case 2:
        CHECK(neighbours(topo, s, NodeKind::kSwitch, 1) == half);
        CHECK(neighbours(topo, s, NodeKind::kSwitch, 3) == half);
        break;
      default:
        CHECK(neighbours(topo, s, NodeKind::kSwitch, 2) == k);
    }
  }
  CHECK(per_tier == std::map<uint8_t, uint32_t>{{1, k * half}, {2, k * half}, {3, half * half}});
  for (const auto n : topo.nics()) {
    REQUIRE(topo.ports(n).size() == 1);
    CHECK(topo.node(topo.ports(n)[0].peer).tier == 1);
  }

  // k pods of k/2 edges, k/2 aggregations and (k/2)^2 NICs; every core reaches every pod once.
  uint32_t pods = 0;
  const auto pod = fatTreePods(topo, pods);
  CHECK(pods == k);
  std::vector<uint32_t> nics_in_pod(k, 0);
  for (const auto n : topo.nics()) ++nics_in_pod[pod[n]];
  CHECK(nics_in_pod == std::vector<uint32_t>(k, half * half));
  for (const auto s : topo.switches()) {
    if (topo.node(s).tier != 3) continue;
    std::set<uint32_t> reached;
    for (const auto& port : topo.ports(s)) reached.insert(pod[port.peer]);
    CHECK(reached.size() == k);
  }

  // NIC i sits on edge i / (k/2) of pod i / (k/2)^2 (the documented numbering).
  for (uint32_t i = 0; i < topo.nicCount(); ++i) {
    CHECK((topo.nicSwitch(i) == topo.nicSwitch(i - i % half)));
    CHECK(pod[topo.nicNode(i)] == i / (half * half));
  }

  for (const auto& link : topo.links()) {
    const bool to_nic = topo.isNic(link.a) || topo.isNic(link.b);
    CHECK(link.rate == (to_nic ? gigabitsPerSecond(100) : gigabitsPerSecond(400)));
    CHECK(link.delay == (to_nic ? microseconds(1) : nanoseconds(700)));
  }
  CHECK_NOTHROW(validateTopology(topo, k * k * k / 4));
}

/// Sum of the rates of node `n`'s links to NICs and to switches.
std::pair<int64_t, int64_t> downUpBps(const Topology& topo, uint32_t n) {
  int64_t down = 0;
  int64_t up = 0;
  for (const auto& port : topo.ports(n)) {
    (topo.isNic(port.peer) ? down : up) += topo.link(port.link).rate.bps;
  }
  return {down, up};
}

}  // namespace

TEST_CASE("star: NICs first, one switch after them, one link each", "[topology][star]") {
  const Topology t = makeStar(3, gigabitsPerSecond(40), microseconds(2));
  REQUIRE(t.nicCount() == 3);
  REQUIRE(t.switches() == std::vector<uint32_t>{3});
  CHECK(t.linkCount() == 3);
  CHECK(t.serverCount() == 3);
  for (uint32_t i = 0; i < 3; ++i) {
    CHECK(t.nicNode(i) == i);
    CHECK(t.ports(i).size() == 1);
  }
  CHECK(t.ports(3).size() == 3);
  for (const auto& link : t.links()) {
    CHECK(link.rate == gigabitsPerSecond(40));
    CHECK(link.delay == microseconds(2));
  }
  CHECK_THROWS_AS(makeStar(0), TopologyError);
}

TEST_CASE("fat-tree k=4 and k=8: counts, degrees, pods and link classes", "[topology][fat-tree]") {
  checkFatTree(4);
  checkFatTree(8);
  const Topology k8 = makeFatTree(FatTreeParams{});
  CHECK(k8.nicCount() == 128);
  CHECK(k8.switches().size() == 80);
  CHECK_THAT(k8.summary(), Contains("fat-tree k=8: 208 nodes, 384 links"));
}

TEST_CASE("fat-tree servers and parameter errors", "[topology][fat-tree]") {
  FatTreeParams params;
  params.k = 4;
  params.nics_per_server = 2;
  const Topology topo = makeFatTree(params);
  CHECK(topo.serverCount() == 8);
  for (uint32_t i = 0; i < topo.nicCount(); ++i) CHECK(topo.serverOf(i) == i / 2);

  params.nics_per_server = 3;
  CHECK_THAT(topologyErrorOf([&] { makeFatTree(params); }), Contains("nics_per_server 3 does not divide the 16 NICs"));
  params.nics_per_server = 1;
  params.k = 5;
  CHECK_THAT(topologyErrorOf([&] { makeFatTree(params); }), Contains("k must be an even number"));
  params.k = 4;
  params.fabric_delay = Picoseconds{0};
  CHECK_THAT(topologyErrorOf([&] { makeFatTree(params); }), Contains("fabric_delay must be positive"));
}

TEST_CASE("rail-optimized: NIC r of every server on leaf r, every leaf on every spine", "[topology][rail]") {
  RailParams params;
  params.servers = 4;
  params.spines = 3;
  const Topology topo = makeRailOptimized(params);
  const uint32_t rails = params.nics_per_server;
  CHECK(topo.nicCount() == 4 * rails);
  CHECK(topo.switches().size() == rails + 3);
  CHECK(topo.linkCount() == 4 * rails + rails * 3);
  for (uint32_t s = 0; s < 4; ++s) {
    for (uint32_t r = 0; r < rails; ++r) {
      const uint32_t nic = s * rails + r;
      CHECK(topo.serverOf(nic) == s);
      CHECK(topo.nicSwitch(nic) == topo.nicSwitch(r));  // same leaf as NIC r of server 0
      CHECK(topo.link(topo.ports(topo.nicNode(nic))[0].link).rate == gigabitsPerSecond(400));
      CHECK(topo.link(topo.ports(topo.nicNode(nic))[0].link).delay == nanoseconds(500));
    }
  }
  std::set<uint32_t> leaves;
  for (uint32_t r = 0; r < rails; ++r) leaves.insert(topo.nicSwitch(r));
  CHECK(leaves.size() == rails);
  for (const auto s : topo.switches()) {
    if (topo.node(s).tier == 1) {
      CHECK(neighbours(topo, s, NodeKind::kNic) == 4);
      CHECK(neighbours(topo, s, NodeKind::kSwitch, 2) == 3);
    } else {
      CHECK(topo.node(s).tier == 2);
      CHECK(neighbours(topo, s, NodeKind::kSwitch, 1) == rails);
    }
  }
  CHECK_NOTHROW(validateTopology(topo, 32));
}

TEST_CASE("rail-optimized: servers beyond the leaf radix form further segments", "[topology][rail]") {
  RailParams params;
  params.servers = 5;
  params.nics_per_server = 4;
  params.leaf_radix_down = 2;
  params.spines = 2;
  const Topology topo = makeRailOptimized(params);
  CHECK(topo.switches().size() == 3 * 4 + 2);  // segments of 2, 2 and 1 servers
  for (uint32_t a = 0; a < topo.nicCount(); ++a) {
    for (uint32_t b = 0; b < topo.nicCount(); ++b) {
      const bool same_segment = a / 4 / 2 == b / 4 / 2;
      const bool same_rail = a % 4 == b % 4;
      CHECK((topo.nicSwitch(a) == topo.nicSwitch(b)) == (same_segment && same_rail));
    }
  }
  CHECK_THAT(topo.summary(), Contains("5 servers x 4 rails, 3 segments, 2 spines"));
  CHECK_NOTHROW(validateTopology(topo, 20));
  params.spines = 0;
  CHECK_THAT(topologyErrorOf([&] { makeRailOptimized(params); }), Contains("spines must be at least 1"));
}

TEST_CASE("spine-leaf: the spine count or the uplink rate is derived from the oversubscription",
          "[topology][spine-leaf]") {
  SpineLeafParams params;  // 4 leaves x 16 NICs at 100 Gb/s, 400 Gb/s uplinks
  const auto check_ratio = [](const Topology& topo, double expected) {
    for (const auto s : topo.switches()) {
      if (topo.node(s).tier != 1) continue;
      const auto [down, up] = downUpBps(topo, s);
      CHECK(static_cast<double>(down) / static_cast<double>(up) == Approx(expected));
    }
  };

  const Topology non_blocking = makeSpineLeaf(params);  // 1.6 Tb/s down / 400 Gb/s = 4 spines
  CHECK(non_blocking.nicCount() == 64);
  CHECK(non_blocking.switches().size() == 4 + 4);
  CHECK(non_blocking.linkCount() == 64 + 4 * 4);
  check_ratio(non_blocking, 1.0);
  CHECK_NOTHROW(validateTopology(non_blocking, 64));

  params.oversubscription = 2.0;  // 800 Gb/s up: 2 spines
  const Topology two_to_one = makeSpineLeaf(params);
  CHECK(two_to_one.switches().size() == 4 + 2);
  check_ratio(two_to_one, 2.0);

  params.oversubscription = 3.0;  // 533.3 Gb/s up: 1.33 spines of 400 Gb/s
  CHECK_THAT(topologyErrorOf([&] { makeSpineLeaf(params); }), Contains("would need 1.33333333 spines of 400 Gb/s"));

  params.spines = 4;  // derive the uplink rate: 1.6 Tb/s / (4 * 3) is not whole bits per second
  params.fabric_rate = BitsPerSecond{0};
  CHECK_THAT(topologyErrorOf([&] { makeSpineLeaf(params); }), Contains("not a whole number of bits per second"));

  params.oversubscription = 2.0;  // 800 Gb/s up over 4 spines: 200 Gb/s uplinks
  const Topology derived_rate = makeSpineLeaf(params);
  CHECK(derived_rate.switches().size() == 4 + 4);
  for (const auto& link : derived_rate.links()) {
    if (derived_rate.isSwitch(link.a) && derived_rate.isSwitch(link.b)) CHECK(link.rate == gigabitsPerSecond(200));
  }
  check_ratio(derived_rate, 2.0);

  params.oversubscription = 1.5;  // both given: 2 spines x 400 Gb/s is 2:1, not 1.5:1
  params.spines = 2;
  params.fabric_rate = gigabitsPerSecond(400);
  CHECK_THAT(topologyErrorOf([&] { makeSpineLeaf(params); }), Contains("(that is oversubscription 2)"));
  params.oversubscription = 2.0;
  CHECK(makeSpineLeaf(params).switches().size() == 4 + 2);

  params.spines = 0;
  params.fabric_rate = BitsPerSecond{0};
  CHECK_THAT(topologyErrorOf([&] { makeSpineLeaf(params); }), Contains("give spines or fabric_rate"));
  params.fabric_rate = gigabitsPerSecond(400);
  params.oversubscription = 0.0;
  CHECK_THAT(topologyErrorOf([&] { makeSpineLeaf(params); }), Contains("oversubscription must be a positive"));
}

TEST_CASE("spine-leaf servers", "[topology][spine-leaf]") {
  SpineLeafParams params;
  params.nics_per_server = 8;
  const Topology topo = makeSpineLeaf(params);
  CHECK(topo.serverCount() == 8);
  CHECK(topo.serverOf(17) == 2);
  params.nics_per_server = 5;
  CHECK_THAT(topologyErrorOf([&] { makeSpineLeaf(params); }),
             Contains("nics_per_server 5 does not divide the 64 NICs"));
}
