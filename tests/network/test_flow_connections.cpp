/**
 * @file test_flow_connections.cpp
 * Persistent connections at flow level (docs/flow_level.md "Connections"): a connection is
 * one fluid flow that drains its messages one after another in (start, id) order, at the
 * times the packet level's connection gives them on an idle path; it keeps its rate and
 * path while a next message has started (no filling), arrives again at a later message's
 * start, keeps its ECMP path for its whole life, and gives the same results for 1 and 2
 * threads and for lookahead Δ and Δ/2.
 */
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "network/flow_builder.hpp"
#include "network/flow_sim.hpp"
#include "tests/support/net_scenario.hpp"
#include "topologies/generators.hpp"

using namespace mv;
using namespace mv::test;

namespace {
constexpr int64_t kRate = 100'000'000'000;  // 100 Gb/s
constexpr int64_t kDelay = 1'000'000;       // 1 µs

struct FluidConnRun {
  std::vector<net::FlowResult> flows;
  net::FluidNetState counters;
  uint32_t status = 0;
};

/// Runs `c` (its one-shot flows, id i, and its connections with their messages, ids as
/// net_scenario numbers them) at flow level on `threads` threads, lookahead Δ / `divide`.
FluidConnRun runFluidConnections(const NetCase& c, int threads = 2, int64_t divide = 1) {
  net::FluidWorld world(1, TableCapacity{1 << 12, 1 << 12});
  const net::NetworkLayout layout = makeNetworkLayout(*c.topo, computeRouting(*c.topo), c.cfg.payload_bytes);
  world.clock(0).lookahead_ps = layout.min_delay_ps / divide;
  net::buildFluidNetwork(world, 0, layout, c.cfg);
  for (uint32_t i = 0; i < c.flows.size(); ++i) {
    net::addFluidFlow(world, 0, c.flows[i].src, c.flows[i].dst, c.flows[i].bytes, c.flows[i].start_ps, i);
  }
  auto& flows = world.table<net::FluidFlow>();
  int64_t total = static_cast<int64_t>(c.flows.size());
  for (uint32_t j = 0; j < c.connections.size(); ++j) {
    const ConnectionDef& k = c.connections[j];
    const uint64_t id = (uint64_t{1} << 30) + j;
    world.createHost<net::FluidFlow>(0, net::flowKey(k.src, id), net::FlowSpec{k.src, k.dst, 0, 0, id, 3, 1},
                                     net::FluidFlowState{}, net::FluidListSlot{}, net::FluidMessageNow{});
    world.commitHost<net::FluidFlow>();
    Entity conn;
    for (int64_t r = flows.expBegin(0); r < flows.expEnd(0); ++r) {
      if (flows.key[r] == net::flowKey(k.src, id)) conn = flows.entity[r];
    }
    for (uint32_t m = 0; m < k.messages.size(); ++m) {
      const uint64_t msg = uint64_t{1'000'000} * (j + 1) + m;
      world.createHost<net::Message>(0, net::flowKey(k.src, msg),
                                     net::MessageSpec{conn, msg, k.messages[m].bytes, k.messages[m].start_ps, -1, 0});
    }
    total += static_cast<int64_t>(k.messages.size());
  }
  world.commitAllHost();
  world.grow<net::FlowRecord>(TableCapacity{total + 16, total + 16});
  const RunReport r = CpuExecutor(threads).runToEnd<net::FluidGraph>(world.view());
  FluidConnRun out;
  auto& records = world.table<net::FlowRecord>();
  for (int64_t row = records.expBegin(0); row < records.expEnd(0); ++row) {
    out.flows.push_back(records.get<net::FlowResult>(row));
  }
  std::sort(out.flows.begin(), out.flows.end(),
            [](const net::FlowResult& a, const net::FlowResult& b) { return a.id < b.id; });
  out.counters = net::fluidNetState(world, 0);
  out.status = r.status;
  return out;
}

/// The record with `id` (message m of connection j: 1,000,000 · (j + 1) + m).
template <class R>
const net::FlowResult& recordOf(const R& r, uint64_t id) {
  const auto it = std::find_if(r.flows.begin(), r.flows.end(), [&](const net::FlowResult& f) { return f.id == id; });
  REQUIRE(it != r.flows.end());
  return *it;
}
uint64_t messageId(uint32_t j, uint32_t m) { return uint64_t{1'000'000} * (j + 1) + m; }

SpineLeafParams twoLeaves(uint32_t spines) {
  SpineLeafParams p;
  p.leaves = 2;
  p.nics_per_leaf = 2;
  p.spines = spines;
  p.oversubscription = 1.0;
  p.fabric_rate = BitsPerSecond{0};
  return p;
}
}  // namespace

TEST_CASE("a fluid connection drains its messages back to back, as the packet level's connection",
          "[network][flow][connections]") {
  const Topology star = makeStar(2, BitsPerSecond{kRate}, Picoseconds{kDelay});
  NetCase c;
  c.topo = &star;
  // Messages 0 and 1 start together (0 first: lower id), message 2 starts earlier and goes
  // before them, message 3 starts long after all are done (the connection was idle).
  c.connections = {ConnectionDef{0, 1,
                                 {FlowDef{0, 0, 10'500, 6'000'000}, FlowDef{0, 0, 10'500, 6'000'000},
                                  FlowDef{0, 0, 10'500, 5'000'000}, FlowDef{0, 0, 10'500, 300'000'000}}}};
  const FluidConnRun fluid = runFluidConnections(c);
  const NetResult packet = runNet(c);
  REQUIRE(fluid.status == 0u);
  REQUIRE(fluid.flows.size() == 4u);
  for (uint32_t m = 0; m < 4; ++m) {
    INFO("message " << m);
    CHECK(recordOf(fluid, messageId(0, m)).finish_ps == recordOf(packet, messageId(0, m)).finish_ps);
    CHECK(recordOf(fluid, messageId(0, m)).start_ps == recordOf(packet, messageId(0, m)).start_ps);
    CHECK(recordOf(fluid, messageId(0, m)).bytes == 10'500);
  }
  // Message 1 went on after message 0 without leaving its links: the connection arrived
  // three times (5 µs, 6 µs, 300 µs) and each arrival filled its rates once.
  CHECK(recordOf(fluid, messageId(0, 1)).finish_ps > recordOf(fluid, messageId(0, 0)).finish_ps);
  CHECK(fluid.counters.fill_rounds == 3);
}

TEST_CASE("a busy fluid connection's messages change no rate; one-shot flows refill at every one",
          "[network][flow][connections]") {
  // 32 messages of 100 kB posted 1 µs apart (each takes 8.4 µs on the wire) against the
  // same bytes as 32 one-shot flows: the flows share the NIC max-min, each arrival and drain
  // a filling; the connection serialises them (message m drains after m + 1 messages'
  // wire time) with one filling, at its first arrival.
  const Topology star = makeStar(2, BitsPerSecond{kRate}, Picoseconds{kDelay});
  NetCase conn;
  conn.topo = &star;
  NetCase flows;
  flows.topo = &star;
  conn.connections = {ConnectionDef{0, 1, {}}};
  for (uint32_t m = 0; m < 32; ++m) {
    conn.connections[0].messages.push_back(FlowDef{0, 0, 100'000, int64_t{m} * 1'000'000});
    flows.flows.push_back(FlowDef{0, 1, 100'000, int64_t{m} * 1'000'000});
  }
  const FluidConnRun a = runFluidConnections(conn);
  const FluidConnRun b = runFluidConnections(flows);
  REQUIRE(a.flows.size() == 32u);
  REQUIRE(b.flows.size() == 32u);
  CHECK(a.counters.fill_rounds == 1);
  CHECK(b.counters.fill_rounds >= 32);
  const int64_t wire = 100 * int64_t{net::dataWireBytes(1000, net::CcKind::kDcqcn)};
  const int64_t share = serializationTime(Bytes{wire}, BitsPerSecond{kRate}).ps;
  const int64_t latency = recordOf(a, messageId(0, 0)).finish_ps - share;
  for (uint32_t m = 0; m < 32; ++m) {
    CHECK(recordOf(a, messageId(0, m)).finish_ps == latency + (m + 1) * share);
  }
  // The last message and the one-shot flows end together (same bytes through one NIC).
  int64_t last_flow = 0;
  for (const net::FlowResult& f : b.flows) last_flow = std::max(last_flow, f.finish_ps);
  CHECK(std::abs(last_flow - recordOf(a, messageId(0, 31)).finish_ps) < 1'000);
}

TEST_CASE("a fluid connection keeps its ECMP path: a collision lasts for all its messages, as at packet level",
          "[network][flow][connections][ecmp]") {
  // Two leaves of two NICs, two spines at full bisection: connections 0 -> 2 and 1 -> 3 of
  // 40 messages each either share one uplink for all of them or never do, and the packet
  // level (same ids, same hash) draws the same; 40 one-shot flows per pair draw anew each.
  const Topology fabric = makeSpineLeaf(twoLeaves(2));
  bool collided = false;
  bool apart = false;
  for (uint32_t shift = 0; shift < 6; ++shift) {
    NetCase c;
    c.topo = &fabric;
    std::vector<FlowDef> msgs;
    for (uint32_t m = 0; m < 40; ++m) msgs.push_back(FlowDef{0, 0, 50'000, int64_t{m} * 20'000'000});
    c.connections = {ConnectionDef{0, 2, msgs}, ConnectionDef{1, 3, msgs}};
    // Other connections first shift the ids the two connections hash with.
    for (uint32_t k = 0; k < shift; ++k) c.connections.insert(c.connections.begin(), ConnectionDef{2, 0, {}});
    const FluidConnRun fluid = runFluidConnections(c);
    REQUIRE(fluid.flows.size() == 80u);
    const net::FlowResult& first = recordOf(fluid, messageId(shift, 0));
    const int64_t fct = first.finish_ps - first.start_ps;
    for (uint32_t m = 1; m < 40; ++m) {
      const net::FlowResult& f = recordOf(fluid, messageId(shift, m));
      CHECK(f.finish_ps - f.start_ps == fct);
    }
    const NetResult packet = runNet(c);
    const net::FlowResult& p = recordOf(packet, messageId(shift, 0));
    // Alone 50 kB take 4.2 µs on the wire and 8 µs of delays there and back (12.5 µs);
    // sharing an uplink halves the rate (16.6 µs).
    const bool fluid_shared = fct > 14'500'000;
    CHECK(fluid_shared == (p.finish_ps - p.start_ps > 14'500'000));
    (fluid_shared ? collided : apart) = true;
  }
  CHECK(collided);
  CHECK(apart);
}

TEST_CASE("fluid connections give the same records for 1 and 2 threads and for lookahead Δ and Δ/2",
          "[network][flow][connections][determinism]") {
  const Topology fabric = makeSpineLeaf(twoLeaves(2));
  NetCase c;
  c.topo = &fabric;
  for (uint32_t j = 0; j < 4; ++j) {
    std::vector<FlowDef> msgs;
    for (uint32_t m = 0; m < 12; ++m) msgs.push_back(FlowDef{0, 0, 20'000 + 7'000 * m, int64_t{m % 5} * 1'300'000 + j * 70'000});
    c.connections.push_back(ConnectionDef{j, (j + 2) % 4, msgs});
  }
  c.flows = {FlowDef{0, 3, 300'000, 500'000}, FlowDef{2, 1, 150'000, 2'000'000}};
  const FluidConnRun base = runFluidConnections(c, 1);
  REQUIRE(base.flows.size() == 50u);
  for (const FluidConnRun& other : {runFluidConnections(c, 2), runFluidConnections(c, 1, 2), runFluidConnections(c, 2, 2)}) {
    REQUIRE(other.flows.size() == base.flows.size());
    for (std::size_t i = 0; i < base.flows.size(); ++i) {
      CHECK(other.flows[i].id == base.flows[i].id);
      CHECK(other.flows[i].finish_ps == base.flows[i].finish_ps);
    }
  }
}
