/**
 * @file test_flow_level.cpp
 * The flow-level (fluid) network: exact finish times on idle paths (equal to the packet
 * level's), equal sharing, max-min rates, rate changes when flows join and leave, the
 * rounding rule, agreement with the packet level on a fat-tree permutation, and the
 * invariants: identical results for 1 and 2 threads, lookahead Δ and Δ/2, alone and in a batch,
 * and alongside a packet-level experiment in one world.
 */
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <numeric>
#include <utility>
#include <vector>

#include "network/flow_builder.hpp"
#include "network/flow_sim.hpp"
#include "tests/support/net_scenario.hpp"
#include "tests/support/random_flows.hpp"
#include "topologies/generators.hpp"

using namespace mv;
using namespace mv::test;

namespace {

constexpr int64_t kRate = 100'000'000'000;  // 100 Gb/s
constexpr int64_t kDelay = 1'000'000;       // 1 µs
constexpr int64_t kPsPerByteAt100G = 80;

/// One experiment of the fluid model (the same inputs as a packet-level NetCase).
struct FluidCase {
  const Topology* topo = nullptr;
  net::NetworkConfig cfg;
  std::vector<FlowDef> flows;
  int64_t lookahead_ps = 0;  ///< 0 = the smallest link delay
  uint32_t max_active_flows = net::kDefaultFluidActiveFlows;
  bool recompute_all = false;  ///< FluidNetInfo::recompute_all (a check)
};

struct FluidRun {
  std::vector<net::FlowResult> flows;  ///< sorted by (src, id)
  net::FluidNetState counters;
  uint32_t status = 0;
};

bool sameRecords(const std::vector<net::FlowResult>& a, const std::vector<net::FlowResult>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].src_nic != b[i].src_nic || a[i].dst_nic != b[i].dst_nic ||
        a[i].start_ps != b[i].start_ps || a[i].finish_ps != b[i].finish_ps)
      return false;
  }
  return true;
}

/// Builds a world holding one experiment per case (flow i of a case has id i), runs it to
/// the end on `threads` threads; `steps` > 0 stops after that many steps instead.
std::vector<FluidRun> runFluidBatch(const std::vector<FluidCase>& cases, int threads = 2, int64_t steps = 0) {
  net::FluidWorld world(static_cast<uint32_t>(cases.size()), TableCapacity{1 << 12, 1 << 12});
  for (ExpId e = 0; e < cases.size(); ++e) {
    const FluidCase& c = cases[e];
    const net::NetworkLayout layout = makeNetworkLayout(*c.topo, computeRouting(*c.topo), c.cfg.payload_bytes);
    world.clock(e).lookahead_ps = c.lookahead_ps > 0 ? c.lookahead_ps : layout.min_delay_ps;
    net::buildFluidNetwork(world, e, layout, c.cfg, c.max_active_flows);
    auto& nets = world.table<net::FluidNet>();
    nets.get<net::FluidNetInfo>(nets.expBegin(e)).recompute_all = c.recompute_all ? 1u : 0u;
    for (uint32_t i = 0; i < c.flows.size(); ++i) {
      const FlowDef& f = c.flows[i];
      net::addFluidFlow(world, e, f.src, f.dst, f.bytes, f.start_ps, i, f.prio);
    }
  }
  world.commitAllHost();
  int64_t total = 0;
  for (const FluidCase& c : cases) total += static_cast<int64_t>(c.flows.size());
  world.grow<net::FlowRecord>(TableCapacity{total + 16, total + 16});
  const CpuExecutor cpu(threads);
  const RunReport r = steps > 0 ? cpu.run<net::FluidGraph>(world.view(), steps) : cpu.runToEnd<net::FluidGraph>(world.view());
  std::vector<FluidRun> out;
  auto& records = world.table<net::FlowRecord>();
  for (ExpId e = 0; e < cases.size(); ++e) {
    FluidRun run;
    for (int64_t row = records.expBegin(e); row < records.expEnd(e); ++row) {
      run.flows.push_back(records.get<net::FlowResult>(row));
    }
    run.counters = net::fluidNetState(world, e);
    run.status = r.status;
    out.push_back(std::move(run));
  }
  return out;
}

FluidRun runFluid(const FluidCase& c, int threads = 2) { return runFluidBatch({c}, threads).front(); }

/// Runs `c` refilling only the components each event touches, then refilling every flow at
/// every event (recompute_all); checks that both give the same records and events.
std::pair<FluidRun, FluidRun> runLocalAndWhole(FluidCase c) {
  FluidRun local = runFluid(c, 1);
  c.recompute_all = true;
  FluidRun all = runFluid(c, 1);
  REQUIRE(local.flows.size() == c.flows.size());
  CHECK(sameRecords(local.flows, all.flows));
  CHECK(local.counters.events == all.counters.events);
  CHECK(all.counters.whole_refills == all.counters.events);
  return {std::move(local), std::move(all)};
}

/// Rates (b/s) of the flows of a single experiment after its first step, in flow order.
std::vector<int64_t> ratesAfterFirstStep(const FluidCase& c) {
  net::FluidWorld world(1, TableCapacity{1 << 10, 1 << 10});
  const net::NetworkLayout layout = makeNetworkLayout(*c.topo, computeRouting(*c.topo), c.cfg.payload_bytes);
  world.clock(0).lookahead_ps = layout.min_delay_ps;
  net::buildFluidNetwork(world, 0, layout, c.cfg);
  for (uint32_t i = 0; i < c.flows.size(); ++i) {
    net::addFluidFlow(world, 0, c.flows[i].src, c.flows[i].dst, c.flows[i].bytes, c.flows[i].start_ps, i);
  }
  world.commitAllHost();
  CpuExecutor(1).run<net::FluidGraph>(world.view(), 1);
  std::vector<int64_t> rates;
  auto& flows = world.table<net::FluidFlow>();
  for (int64_t row = flows.expBegin(0); row < flows.expEnd(0); ++row) {
    rates.push_back(flows.get<net::FluidFlowState>(row).rate_bps);
  }
  return rates;
}

int64_t ser(int64_t bytes, int64_t rate_bps) { return serializationTime(Bytes{bytes}, BitsPerSecond{rate_bps}).ps; }

/// Wire bytes of a flow of `bytes` with 1000-byte payloads and 48-byte headers (DCQCN).
int64_t wireBytes(int64_t bytes) { return bytes + (bytes + 999) / 1000 * 48; }

/// Drain -> finish on a star at 100 Gb/s (two links): one full packet's serialisation at the
/// switch, two delays, and the ACK's two serialisations and delays.
int64_t starLatency() { return ser(1048, kRate) + 2 * kDelay + 2 * (ser(net::kAckBytes, kRate) + kDelay); }

const net::FlowResult& byId(const FluidRun& r, uint64_t id) {
  const auto it = std::find_if(r.flows.begin(), r.flows.end(), [id](const net::FlowResult& f) { return f.id == id; });
  REQUIRE(it != r.flows.end());
  return *it;
}

/// One flow from every NIC of a k=4 fat-tree to the NIC 8 further on (another pod), with
/// start times spread over `spread_ps`.
std::vector<FlowDef> fatTreePermutation(int64_t bytes, int64_t spread_ps) {
  std::vector<FlowDef> flows;
  for (uint32_t i = 0; i < 16; ++i) {
    flows.push_back(FlowDef{i, (i + 8 + i / 4) % 16, bytes, spread_ps * ((i * 7) % 16) / 16});
  }
  return flows;
}

double meanFct(const std::vector<net::FlowResult>& flows) {
  double sum = 0;
  for (const net::FlowResult& f : flows) sum += static_cast<double>(f.finish_ps - f.start_ps);
  return sum / static_cast<double>(flows.size());
}

}  // namespace

TEST_CASE("a fluid flow's drain time: exact below int64, never past it", "[network][flow]") {
  // 1 MB at 100 Gb/s from t = 5 ps: 80 µs, rounded up.
  const Int128 mb = Int128{8'000'000} * 1'000'000'000'000;
  CHECK(net::fluidDrainTime(5, mb, 100'000'000'000) == 5 + 80'000'000);
  CHECK(net::fluidDrainTime(5, mb + 1, 100'000'000'000) == 5 + 80'000'001);
  // 16 TiB (10^-12 bits) at 200 b/s: 7·10^23 ps, past int64: never, not a wrap-around.
  const Int128 huge = (Int128{1} << 44) * 8 * 1'000'000'000'000;
  CHECK(net::fluidDrainTime(0, huge, 200) == INT64_MAX);
  CHECK(net::fluidDrainTime(100, huge, 0) == INT64_MAX);
  // Just inside: the same work at 10 Gb/s from the horizon.
  CHECK(net::fluidDrainTime(kTimeHorizonPs, huge, 10'000'000'000) ==
        kTimeHorizonPs + static_cast<int64_t>(huge / 10'000'000'000));
}

TEST_CASE("one fluid flow on an idle path finishes exactly when the packet-level flow does", "[network][flow]") {
  const Topology star = makeStar(2, BitsPerSecond{kRate}, Picoseconds{kDelay});
  for (net::CcKind cc : {net::CcKind::kDcqcn, net::CcKind::kDctcp, net::CcKind::kHpcc}) {
    FluidCase c;
    c.topo = &star;
    c.cfg.cc = cc;
    c.flows = {FlowDef{0, 1, 10'500, 5'000'000}};  // 10 full packets and one of 500 bytes
    const FluidRun r = runFluid(c);
    REQUIRE(r.status == 0u);
    REQUIRE(r.flows.size() == 1u);
    // The wire bytes drain at 100 Gb/s (10 full packets and the short one back to back),
    // the switch adds one full packet's serialisation, then two delays and the ACK's return.
    const int64_t full = net::dataWireBytes(1000, cc);
    const int64_t last = net::dataWireBytes(500, cc);
    const int64_t ack = cc == net::CcKind::kHpcc ? net::kAckIntBytes : net::kAckBytes;
    const int64_t expected = 10 * ser(full, kRate) + ser(last, kRate) + ser(full, kRate) + 2 * kDelay +
                             2 * (ser(ack, kRate) + kDelay);
    CHECK(r.flows[0].finish_ps - r.flows[0].start_ps == expected);
    CHECK(r.flows[0].bytes == 10'500);
    NetCase p;
    p.topo = &star;
    p.cfg.cc = cc;
    p.flows = c.flows;
    CHECK(runNet(p).flows[0].finish_ps == r.flows[0].finish_ps);
  }
}

TEST_CASE("one fluid flow across a fat-tree matches the packet level; a one-packet flow too", "[network][flow]") {
  const Topology tree = makeFatTree(FatTreeParams{4});
  for (int64_t bytes : {int64_t{300}, int64_t{64'123}}) {
    FluidCase c;
    c.topo = &tree;
    c.cfg.cc = net::CcKind::kDctcp;
    c.flows = {FlowDef{1, 14, bytes, 0}};
    const FluidRun r = runFluid(c);
    REQUIRE(r.flows.size() == 1u);
    // Six links at 100 Gb/s: drain + 5 extra serialisations of the largest packet + 6 delays,
    // then the ACK over six links.
    const int64_t largest = net::dataWireBytes(static_cast<int32_t>(std::min<int64_t>(bytes, 1000)), c.cfg.cc);
    const int64_t expected = wireBytes(bytes) * kPsPerByteAt100G + 5 * ser(largest, kRate) + 6 * kDelay +
                             6 * (ser(net::kAckBytes, kRate) + kDelay);
    CHECK(r.flows[0].finish_ps == expected);
    NetCase p;
    p.topo = &tree;
    p.cfg = c.cfg;
    p.flows = c.flows;
    CHECK(runNet(p).flows[0].finish_ps == expected);
  }
}

TEST_CASE("N fluid flows into one receiver share it equally and finish together", "[network][flow]") {
  constexpr uint32_t kSenders = 4;
  const Topology star = makeStar(kSenders + 1, BitsPerSecond{kRate}, Picoseconds{kDelay});
  FluidCase c;
  c.topo = &star;
  for (uint32_t i = 1; i <= kSenders; ++i) c.flows.push_back(FlowDef{i, 0, 1'000'000, 0});
  CHECK(ratesAfterFirstStep(c) == std::vector<int64_t>(kSenders, kRate / kSenders));
  const FluidRun r = runFluid(c);
  REQUIRE(r.flows.size() == kSenders);
  const int64_t expected = kSenders * wireBytes(1'000'000) * kPsPerByteAt100G + starLatency();
  for (const net::FlowResult& f : r.flows) CHECK(f.finish_ps == expected);
  CHECK(r.counters.events == 2);  // all arrive at 0, all drain at the same picosecond
  CHECK(r.counters.flows_done == kSenders);
}

TEST_CASE("fluid rates are max-min fair: 3 flows over 2 bottlenecks", "[network][flow]") {
  // NICs 0, 1 on switch X; NICs 2, 3, 4 on switch Y; X-Y at 100 Gb/s; NIC 3's link at 40 Gb/s.
  // f0: 0 -> 3 crosses X->Y and Y->3; f1: 1 -> 2 crosses X->Y; f2: 4 -> 3 crosses Y->3.
  // Y->3 (40 Gb/s) is the first bottleneck: f0 = f2 = 20 Gb/s; f1 takes the rest of X->Y, 80 Gb/s.
  constexpr int64_t kSlow = 40'000'000'000;
  Topology t;
  for (uint32_t i = 0; i < 5; ++i) t.addNic(i);
  const uint32_t x = t.addSwitch(1);
  const uint32_t y = t.addSwitch(1);
  t.addLink(t.nicNode(0), x, BitsPerSecond{kRate}, Picoseconds{kDelay});
  t.addLink(t.nicNode(1), x, BitsPerSecond{kRate}, Picoseconds{kDelay});
  t.addLink(t.nicNode(2), y, BitsPerSecond{kRate}, Picoseconds{kDelay});
  t.addLink(t.nicNode(3), y, BitsPerSecond{kSlow}, Picoseconds{kDelay});
  t.addLink(t.nicNode(4), y, BitsPerSecond{kRate}, Picoseconds{kDelay});
  t.addLink(x, y, BitsPerSecond{kRate}, Picoseconds{kDelay});
  FluidCase c;
  c.topo = &t;
  constexpr int64_t kBytes = 1'000'000;
  c.flows = {FlowDef{0, 3, kBytes, 0}, FlowDef{1, 2, kBytes, 0}, FlowDef{4, 3, kBytes, 0}};
  CHECK(ratesAfterFirstStep(c) == std::vector<int64_t>{20'000'000'000, 80'000'000'000, 20'000'000'000});
  const FluidRun r = runFluid(c);
  REQUIRE(r.flows.size() == 3u);
  // f1 leaves first; f0 and f2 stay at 20 Gb/s (Y->3 is still their bottleneck).
  const int64_t wire_ps_at_1g = wireBytes(kBytes) * 8000;  // ps to drain the wire bytes at 1 Gb/s
  const int64_t s100 = ser(1048, kRate);
  const int64_t s40 = ser(1048, kSlow);
  const int64_t a100 = ser(net::kAckBytes, kRate);
  const int64_t a40 = ser(net::kAckBytes, kSlow);
  // Pipeline: one full packet on every link but the slowest; ACK back over the same links.
  const int64_t lat_f0 = (s100 + s100 + s40 - s40) + 3 * kDelay + (a40 + a100 + a100 + 3 * kDelay);
  const int64_t lat_f1 = (3 * s100 - s100) + 3 * kDelay + (3 * a100 + 3 * kDelay);
  const int64_t lat_f2 = (s100 + s40 - s40) + 2 * kDelay + (a40 + a100 + 2 * kDelay);
  CHECK(byId(r, 0).finish_ps == wire_ps_at_1g / 20 + lat_f0);
  CHECK(byId(r, 1).finish_ps == wire_ps_at_1g / 80 + lat_f1);
  CHECK(byId(r, 2).finish_ps == wire_ps_at_1g / 20 + lat_f2);
}

TEST_CASE("fluid rates change exactly when a flow joins and when one leaves", "[network][flow]") {
  const Topology star = makeStar(3, BitsPerSecond{kRate}, Picoseconds{kDelay});
  FluidCase c;
  c.topo = &star;
  constexpr int64_t kJoin = 10'000'000;  // 10 µs
  c.flows = {FlowDef{0, 2, 1'000'000, 0}, FlowDef{1, 2, 1'000'000, kJoin}};
  const FluidRun r = runFluid(c);
  REQUIRE(r.flows.size() == 2u);
  // f0 alone at 100 Gb/s for 10 µs: 125,000 bytes. Then 50 Gb/s each (160 ps per byte)
  // until f0's remaining 923,000 bytes are gone; then f1 alone drains its last 125,000.
  const int64_t wire = wireBytes(1'000'000);
  const int64_t first_alone = kJoin / kPsPerByteAt100G;
  const int64_t f0_drained = kJoin + (wire - first_alone) * 2 * kPsPerByteAt100G;
  const int64_t f1_drained = f0_drained + (wire - (wire - first_alone)) * kPsPerByteAt100G;
  CHECK(f0_drained == 157'680'000);
  CHECK(byId(r, 0).finish_ps == f0_drained + starLatency());
  CHECK(byId(r, 1).finish_ps == f1_drained + starLatency());
  CHECK(r.counters.events == 4);
}

TEST_CASE("fluid rates are whole b/s rounded down and drain times are rounded up", "[network][flow]") {
  const Topology star = makeStar(4, BitsPerSecond{kRate}, Picoseconds{kDelay});
  FluidCase c;
  c.topo = &star;
  for (uint32_t i = 1; i <= 3; ++i) c.flows.push_back(FlowDef{i, 0, 1'000'000, 0});
  const int64_t third = kRate / 3;  // 33,333,333,333 b/s
  CHECK(ratesAfterFirstStep(c) == std::vector<int64_t>(3, third));
  const FluidRun r = runFluid(c);
  const Int128 work = static_cast<Int128>(wireBytes(1'000'000)) * 8 * 1'000'000'000'000LL;  // 10^-12 bits
  const auto drained = static_cast<int64_t>((work + third - 1) / third);
  CHECK(drained == 251'520'001);  // exact 3 × 1,048,000 × 80 = 251,520,000; one ps late, never early
  for (const net::FlowResult& f : r.flows) CHECK(f.finish_ps == drained + starLatency());
}

TEST_CASE("fluid flows that exceed the path blocks stop the run with a status", "[network][flow]") {
  const Topology star = makeStar(4, BitsPerSecond{kRate}, Picoseconds{kDelay});
  FluidCase c;
  c.topo = &star;
  c.max_active_flows = 2;
  for (uint32_t i = 1; i <= 3; ++i) c.flows.push_back(FlowDef{i, 0, 10'000, 0});
  const FluidRun r = runFluid(c);
  CHECK((r.status & net::kStatusFluidPaths) != 0u);
  CHECK(r.counters.overflow == 1);
  c.flows.back().start_ps = 10'000'000;  // after the first two are done, a block is free again
  const FluidRun ok = runFluid(c);
  CHECK(ok.status == 0u);
  CHECK(ok.flows.size() == 3u);
}

TEST_CASE("fluid and packet level agree on the mean FCT of a k=4 fat-tree permutation", "[network][flow][fabric]") {
  const Topology tree = makeFatTree(FatTreeParams{4});
  const std::vector<FlowDef> flows = fatTreePermutation(1'000'000, 0);
  FluidCase fc;
  fc.topo = &tree;
  fc.flows = flows;
  const FluidRun fluid = runFluid(fc);
  REQUIRE(fluid.flows.size() == flows.size());
  for (net::CcKind cc : {net::CcKind::kDctcp, net::CcKind::kHpcc}) {
    NetCase pc;
    pc.topo = &tree;
    pc.cfg.cc = cc;
    // ACKs share the data's class with DCTCP and HPCC and converge on some links in bursts
    // that overflow the default rings (factor 3, 128 slots) here; netsim and sweeps would
    // start again with factor 6, this harness does not.
    pc.cfg.link_ring_factor = 4;
    pc.flows = flows;
    fc.cfg.cc = cc;
    const FluidRun f = runFluid(fc);
    const NetResult p = runNet(pc);
    REQUIRE(p.flows.size() == flows.size());
    const double gap = meanFct(f.flows) / meanFct(p.flows) - 1.0;
    std::printf("k=4 fat-tree permutation, 16 x 1 MB: mean FCT fluid %.2f us, packet (%s) %.2f us, gap %+.2f %%\n",
                meanFct(f.flows) * 1e-6, cc == net::CcKind::kDctcp ? "DCTCP" : "HPCC", meanFct(p.flows) * 1e-6,
                gap * 100);
    CHECK(std::abs(gap) < 0.10);
  }
}

TEST_CASE("fluid results are identical for 1 and 2 threads and for lookahead Δ and Δ/2", "[network][flow][determinism]") {
  const Topology tree = makeFatTree(FatTreeParams{4});
  FluidCase c;
  c.topo = &tree;
  c.flows = fatTreePermutation(500'000, 30'000'000);
  for (uint32_t i = 0; i < 16; ++i) c.flows.push_back(FlowDef{i, (i * 5 + 3) % 16, 20'000 + 1'000 * i, 2'000'000 * i});
  const FluidRun base = runFluid(c, 1);
  REQUIRE(base.flows.size() == c.flows.size());
  CHECK(sameRecords(base.flows, runFluid(c, 2).flows));
  c.lookahead_ps = kDelay / 2;
  CHECK(sameRecords(base.flows, runFluid(c, 2).flows));
  c.lookahead_ps = 333'333;  // windows that do not divide any event time
  CHECK(sameRecords(base.flows, runFluid(c, 1).flows));
}

TEST_CASE("a fluid flow's record is created in the step whose window holds its finish", "[network][flow]") {
  // One 10 kB flow on a star from t = 0: drained after 10 packets' serialisation, finished
  // 4 µs later (two delays out, two back). A window of 1 ms holds both: the record exists
  // after the first step, made by the event loop that drained the flow. A window of one link
  // delay holds the drain but not the finish: the record waits for the next step, whose
  // window the clock moves to the finish (nothing happens in between), and is listed then by
  // fluid_prepare.
  const Topology star = makeStar(2, BitsPerSecond{kRate}, Picoseconds{kDelay});
  FluidCase c;
  c.topo = &star;
  c.flows = {FlowDef{0, 1, 10'000, 0}};
  const int64_t finish = 10 * ser(net::dataWireBytes(1000, c.cfg.cc), kRate) + starLatency();
  c.lookahead_ps = 1'000'000'000;
  const FluidRun wide = runFluidBatch({c}, 2, 1).front();
  REQUIRE(wide.flows.size() == 1u);
  CHECK(wide.flows[0].finish_ps == finish);
  CHECK(wide.counters.flows_done == 1);
  c.lookahead_ps = kDelay;
  REQUIRE(finish > kDelay);
  CHECK(runFluidBatch({c}, 2, 1).front().flows.empty());
  const FluidRun narrow = runFluidBatch({c}, 2, 2).front();
  REQUIRE(narrow.flows.size() == 1u);
  CHECK(narrow.flows[0].finish_ps == finish);
}

TEST_CASE("refilling only the components an event touches gives the rates of refilling every flow",
          "[network][flow][determinism]") {
  // 64 flows of a k=8 fat-tree (128 NICs) between pseudo-random NICs, of mixed sizes,
  // arriving over 40 µs: many arrivals and drains, each touching a component of a few flows;
  // components grow together and fall apart as flows come and go.
  const Topology tree = makeFatTree(FatTreeParams{8});
  FluidCase c;
  c.topo = &tree;
  c.flows = randomFlows<FlowDef>(128, 64, 400'000, 40'000'000, 12345);
  const auto [local, all] = runLocalAndWhole(c);
  // Each event refilled a part: fewer bottleneck rounds than refilling everything.
  CHECK(local.counters.whole_refills == 0);
  CHECK(local.counters.fill_rounds < all.counters.fill_rounds / 2);
  // Every flow drained: no link is left on the busy list whole refills walk.
  CHECK(local.counters.busy_links == 0);
  CHECK(all.counters.busy_links == 0);
}

TEST_CASE("an event whose components hold most active flows refills every flow, with the same rates",
          "[network][flow][determinism]") {
  // 400 flows on a k=4 fat-tree (16 NICs), arriving over 20 µs: early events find few flows
  // active and refill their components; once hundreds share the small fabric, an event's
  // components soon hold more than half of them and the search gives up.
  const Topology tree = makeFatTree(FatTreeParams{4});
  FluidCase c;
  c.topo = &tree;
  c.flows = randomFlows<FlowDef>(16, 400, 200'000, 20'000'000, 2024);
  const auto [local, all] = runLocalAndWhole(c);
  // Some events gave up (527 of 800 when written), the others refilled components only.
  CHECK(local.counters.whole_refills > 0);
  CHECK(local.counters.whole_refills < local.counters.events);
  CHECK(local.counters.fill_rounds < all.counters.fill_rounds);
}

TEST_CASE("a batch of fluid experiments gives each the result it has alone", "[network][flow][batch]") {
  const Topology tree = makeFatTree(FatTreeParams{4});
  const Topology star = makeStar(5, BitsPerSecond{kRate}, Picoseconds{kDelay});
  std::vector<FluidCase> cases(3);
  cases[0].topo = &tree;
  cases[0].flows = fatTreePermutation(200'000, 5'000'000);
  cases[1].topo = &star;
  for (uint32_t i = 1; i <= 4; ++i) cases[1].flows.push_back(FlowDef{i, 0, 100'000 * i, 1'000'000 * i});
  cases[1].cfg.cc = net::CcKind::kHpcc;
  cases[2].topo = &tree;
  cases[2].flows = fatTreePermutation(50'000, 0);
  const std::vector<FluidRun> batch = runFluidBatch(cases);
  for (std::size_t e = 0; e < cases.size(); ++e) {
    const FluidRun alone = runFluid(cases[e], 1);
    CHECK(alone.flows.size() == cases[e].flows.size());
    CHECK(sameRecords(batch[e].flows, alone.flows));
    CHECK(batch[e].counters.events == alone.counters.events);
  }
}

TEST_CASE("packet-level and flow-level experiments run side by side in one world", "[network][flow][batch]") {
  // A world with both archetype lists and both systems in one level: experiment 0 is built at
  // packet level, experiment 1 at flow level; each has rows only in its own fidelity's tables.
  using MixedWorld = WorldOfT<net::NetSimConfig, ConcatT<net::NetworkArchetypes, net::FluidArchetypes>>;
  using MixedView = MixedWorld::View;
  using MixedGraph =
      Graph<System<net::NicSystem<MixedView>>, System<net::SwitchSystem<MixedView>>,
            System<net::FluidMessageSystem<MixedView>>, System<net::FluidPrepareSystem<MixedView>>,
            System<net::FluidSystem<MixedView>>, CommitAll, AdvanceClocks>;
  const Topology tree = makeFatTree(FatTreeParams{4});
  const std::vector<FlowDef> flows = fatTreePermutation(300'000, 4'000'000);
  const net::NetworkConfig cfg;
  const net::NetworkLayout layout = makeNetworkLayout(tree, computeRouting(tree), cfg.payload_bytes);
  MixedWorld world(2, TableCapacity{1 << 12, 1 << 12});
  for (ExpId e = 0; e < 2; ++e) world.clock(e).lookahead_ps = layout.min_delay_ps;
  world.config(0).net = net::pathQuantities(layout, cfg);
  net::buildNetwork(world, 0, layout, cfg, layout.min_delay_ps);
  net::buildFluidNetwork(world, 1, layout, cfg);
  for (uint32_t i = 0; i < flows.size(); ++i) {
    net::addFlow(world, 0, flows[i].src, flows[i].dst, flows[i].bytes, flows[i].start_ps, i);
    net::addFluidFlow(world, 1, flows[i].src, flows[i].dst, flows[i].bytes, flows[i].start_ps, i);
  }
  world.commitAllHost();
  const RunReport r = CpuExecutor(2).runToEnd<MixedGraph>(world.view());
  REQUIRE(r.status == 0u);
  auto& records = world.table<net::FlowRecord>();
  std::vector<net::FlowResult> packet;
  std::vector<net::FlowResult> fluid;
  for (int64_t row = records.expBegin(0); row < records.expEnd(0); ++row) packet.push_back(records.get<net::FlowResult>(row));
  for (int64_t row = records.expBegin(1); row < records.expEnd(1); ++row) fluid.push_back(records.get<net::FlowResult>(row));
  NetCase pc;
  pc.topo = &tree;
  pc.flows = flows;
  CHECK(sameFlows(packet, runNet(pc).flows));
  FluidCase fc;
  fc.topo = &tree;
  fc.flows = flows;
  CHECK(sameRecords(fluid, runFluid(fc).flows));
}
