/**
 * @file test_packet_storage.cpp
 * The packet storage an experiment is refused by (issue #23): counted from the topology
 * before anything is built, it equals what a build fills; it never wraps at the input
 * limits; and the engine's time horizon stops a run instead of overflowing its clock.
 */
#include <catch2/catch.hpp>

#include "kernels/cpu/cpu_executor.hpp"
#include "topologies/generators.hpp"
#include "tests/support/net_scenario.hpp"

using namespace mv;
using namespace mv::test;

namespace {
constexpr int64_t kRate = 100'000'000'000;  // 100 Gb/s

/// A one-experiment world of `topo` under `cfg`, built and fitted as netsim builds it.
struct Built {
  net::NetworkLayout layout;
  std::unique_ptr<net::NetWorld> world;
};
Built build(const Topology& topo, const net::NetworkConfig& cfg) {
  Built b;
  const Routing routing = computeRouting(topo);
  b.layout = makeNetworkLayout(topo, routing, cfg.payload_bytes);
  b.world = std::make_unique<net::NetWorld>(1, TableCapacity{1024, 1024});
  b.world->config(0).net = net::pathQuantities(b.layout, cfg);
  b.world->clock(0).lookahead_ps = b.layout.min_delay_ps;
  net::buildNetwork(*b.world, 0, b.layout, cfg, b.layout.min_delay_ps);
  b.world->commitAllHost();
  b.world->fitStaticTables();
  return b;
}
}  // namespace

TEST_CASE("packet storage counted from the layout equals what a build fills", "[network][limits]") {
  FatTreeParams ft{4, BitsPerSecond{kRate}, Picoseconds{1'000'000}, BitsPerSecond{4 * kRate}, Picoseconds{3'000'000}, 1};
  const Topology fat_tree = makeFatTree(ft);
  const Topology star = makeStar(17, BitsPerSecond{kRate}, Picoseconds{100'000'000});
  for (const Topology* topo : {&fat_tree, &star}) {
    for (const net::CcKind cc : {net::CcKind::kDcqcn, net::CcKind::kHpcc}) {
      net::NetworkConfig cfg;
      cfg.cc = cc;
      const Built b = build(*topo, cfg);
      const net::PacketStorage st = net::packetStorage(b.layout, cfg, b.layout.min_delay_ps);
      const net::NetWorld& w = *b.world;
      CHECK(w.view().table<net::LinkSlot>().rows == st.link_slots);
      CHECK(w.view().table<net::NicSlot>().rows == st.nic_slots);
      CHECK(w.view().table<net::SwitchSlot>().rows == st.switch_slots);
      const auto held = static_cast<int64_t>(
          w.tableBytes<net::LinkSlot>() + w.tableBytes<net::LinkSlotInt>() + w.tableBytes<net::NicSlot>() +
          w.tableBytes<net::NicSlotInt>() + w.tableBytes<net::SwitchSlot>() + w.tableBytes<net::SwitchSlotInt>());
      const int64_t counted = net::packetStorageBytes<net::NetWorld>(st, cfg);
      // The count misses only what the tables hold beyond their rows (under 3 % here).
      INFO("held " << held << " B, counted " << counted << " B");
      CHECK(counted <= held);
      CHECK(held - counted < held / 20);
      // The storage dominates the world: the estimate is what a refusal must be about.
      CHECK(counted > static_cast<int64_t>(w.totalBytes()) / 2);
    }
  }
}

TEST_CASE("link rings at the input limits are counted in 64 bits and refused, not wrapped", "[network][limits]") {
  // 100 Tb/s and 1 s (the largest rate and delay an input may give), the largest factor.
  const int64_t ring = net::ringCapacity(kMaxRateBps, kMaxLatencyPs, kMaxLatencyPs, 1100, net::kMaxLinkRingFactor);
  CHECK(ring > int64_t{1} << 32);
  CHECK((ring & (ring - 1)) == 0);
  // A 4-NIC star with 1 s links needs more slots than 32-bit ring positions reach: the
  // build refuses it before allocating (a 20 s delay used to wrap the total and crash).
  const Topology star = makeStar(4, BitsPerSecond{kRate}, Picoseconds{kMaxLatencyPs});
  net::NetworkConfig cfg;
  cfg.link_ring_factor = 64;
  const Routing routing = computeRouting(star);
  const net::NetworkLayout layout = makeNetworkLayout(star, routing, cfg.payload_bytes);
  const net::PacketStorage st = net::packetStorage(layout, cfg, layout.min_delay_ps);
  CHECK(st.link_slots > net::kMaxLinkSlots);
  net::NetWorld world(1, TableCapacity{16, 16});
  CHECK_THROWS_AS(net::buildNetwork(world, 0, layout, cfg, layout.min_delay_ps), std::length_error);
  CHECK(world.view().table<net::LinkSlot>().rows == 0);
}

TEST_CASE("a run stops at the engine's time horizon instead of overflowing its clock", "[network][limits]") {
  // A flow that starts 10 µs before the horizon and needs 80 ms: the clock jumps to its
  // start, runs 10 µs of steps and stops exactly at the horizon with the flow unfinished.
  const Topology star = makeStar(2, BitsPerSecond{kRate}, Picoseconds{1'000'000});
  net::NetworkConfig cfg;
  cfg.cc = net::CcKind::kDctcp;
  Built b = build(star, cfg);
  net::addFlow(*b.world, 0, 0, 1, 1'000'000'000, kTimeHorizonPs - 10'000'000, 0);
  b.world->commitAllHost();
  b.world->grow<net::FlowRecord>(TableCapacity{16, 16});
  const CpuExecutor exec(1, 0);
  const RunReport r = exec.runToEnd<net::NetGraph>(b.world->view());
  CHECK(r.status == 0u);
  CHECK(r.steps < 100);
  CHECK(b.world->clock(0).outcome == Outcome::kTimeLimit);
  CHECK(b.world->clock(0).now_ps == kTimeHorizonPs);
  CHECK(b.world->view().table<net::FlowRecord>().rows == 0);
}
