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
      // Only HPCC packets carry INT records: without it the INT tables have no rows (their
      // buffers are the initial capacity every table of this world starts with).
      const bool hpcc = cc == net::CcKind::kHpcc;
      const int64_t int_rows = w.view().table<net::LinkSlotInt>().rows + w.view().table<net::NicSlotInt>().rows +
                               w.view().table<net::SwitchSlotInt>().rows;
      CHECK(int_rows == (hpcc ? st.link_slots + st.nic_slots + st.switch_slots : 0));
      const auto held = static_cast<int64_t>(
          w.tableBytes<net::LinkSlot>() + w.tableBytes<net::NicSlot>() + w.tableBytes<net::SwitchSlot>() +
          (hpcc
               ? w.tableBytes<net::LinkSlotInt>() + w.tableBytes<net::NicSlotInt>() + w.tableBytes<net::SwitchSlotInt>()
               : 0));
      const int64_t counted = net::packetStorageBytes<net::NetWorld>(st, cfg);
      // The count misses only what the tables hold beyond their rows.
      INFO("held " << held << " B, counted " << counted << " B");
      CHECK(counted <= held);
      CHECK(held - counted < held / 20);
      // The storage dominates the world: the estimate is what a refusal must be about.
      CHECK(counted > static_cast<int64_t>(w.totalBytes()) / 2);
    }
  }
}

TEST_CASE("link rings at the input limits are counted in 64 bits and refused, not wrapped", "[network][limits]") {
  // 100 Tb/s and 1 s (the largest rate and delay an input may give), the largest factor:
  // 3 s of 1,100-byte packets at 100 Tb/s.
  const int64_t in_flight = net::packetsInFlight(kMaxRateBps, kMaxLatencyPs, kMaxLatencyPs, 1100);
  CHECK(in_flight == (3 * kMaxLatencyPs + 88 - 1) / 88);  // 1,100 B take 88 ps at 100 Tb/s
  const int64_t slots = net::linkPoolSlots(8, 5, in_flight, net::kMaxLinkRingFactor);
  CHECK(slots > int64_t{1} << 32);
  CHECK(slots % net::kLinkChunkSlots == 0);
  CHECK(slots >= net::kMaxLinkRingFactor * in_flight + (8 + 5 * net::kChunkCacheSize) * net::kLinkChunkSlots);
  // A 4-NIC star with 1 s links needs more slots than 32-bit chunk numbers reach: the
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
  const RunReport r = runNetToEnd(*b.world, 1);
  CHECK(r.status == 0u);
  CHECK(r.steps < 100);
  CHECK(b.world->clock(0).outcome == Outcome::kTimeLimit);
  CHECK(b.world->clock(0).now_ps == kTimeHorizonPs);
  CHECK(b.world->view().table<net::FlowRecord>().rows == 0);
}

TEST_CASE("a packet header holds every value a flow can give it, and flows beyond are refused", "[network][limits]") {
  // Each bounded field at its largest value, stored in a pool slot and loaded back.
  net::PacketHeader h;
  h.time_ps = kTimeHorizonPs;
  h.seq = kMaxInputBytes;
  h.flow_id = (uint64_t{1} << net::kFlowIdBits) - 1;
  h.wire_bytes = static_cast<uint16_t>(net::dataWireBytes(9000, net::CcKind::kHpcc));
  h.payload = 9000;
  h.flags = net::kFlagCe | net::kFlagEcnEcho | net::kFlagRetransmit;
  h.hops = net::kMaxIntHops;
  h.src_nic = 0xFFFFFFFEu;
  h.next = 0xFFFFFFFFu;
  h.in_port = 0xFFFFu;
  h.kind = net::PacketKind::kResume;
  h.prio = net::kPriorities - 1;
  std::vector<net::PacketHeader> headers(2);
  std::vector<net::IntStack> ints(2);
  const net::PacketSlots slots{headers.data(), ints.data()};
  net::IntStack records{};
  records.hop[net::kMaxIntHops - 1].rate_mbps = 400'000;
  slots.put(1, h, records.hop);
  CHECK(ints[1].hop[net::kMaxIntHops - 1].rate_mbps == 400'000);  // all `hops` records are stored
  const net::PacketHeader& p = slots[1];
  CHECK(p.time_ps == kTimeHorizonPs);
  CHECK(p.seq == kMaxInputBytes);
  CHECK(p.flow_id == (uint64_t{1} << 40) - 1);
  CHECK(p.wire_bytes == 9000 + net::kDataHeaderBytes + net::kIntHeaderBytes);
  CHECK(p.payload == 9000);
  CHECK(p.flags == 7);
  CHECK(p.hops == 5);
  CHECK(p.src_nic == 0xFFFFFFFEu);
  CHECK(p.next == 0xFFFFFFFFu);
  CHECK(p.in_port == 0xFFFFu);
  CHECK(p.kind == net::PacketKind::kResume);
  CHECK(p.prio == 7);
  CHECK(headers[0].seq == 0);  // the neighbouring slot is untouched

  // A flow whose id takes all 40 bits runs to its end and is recorded under that id.
  const Topology star = makeStar(2, BitsPerSecond{kRate}, Picoseconds{1'000'000});
  const net::NetworkConfig cfg;
  Built b = build(star, cfg);
  const uint64_t top_id = (uint64_t{1} << 40) - 1;
  net::addFlow(*b.world, 0, 0, 1, 100'000, 0, top_id);
  b.world->commitAllHost();
  b.world->grow<net::FlowRecord>(TableCapacity{16, 16});
  const RunReport r = runNetToEnd(*b.world, 1);
  CHECK(r.status == 0u);
  REQUIRE(b.world->view().table<net::FlowRecord>().rows == 1);
  CHECK(b.world->table<net::FlowRecord>().get<net::FlowResult>(0).id == top_id);

  // Beyond the fields' range a flow is refused when it is added, never truncated.
  CHECK_THROWS_WITH(net::addFlow(*b.world, 0, 0, 1, 1000, 0, top_id + 1), "a flow id must be below 2^40");
  CHECK_THROWS_WITH(net::addFlow(*b.world, 0, 0, 1, kMaxInputBytes + 1, 0, 7), "a flow carries at most 16 TiB");
  CHECK_NOTHROW(net::checkFlowArguments(kMaxInputBytes, top_id, 1));
}

TEST_CASE("a link ring runs through pooled chunks: order kept, chunks returned, exhaustion reported",
          "[network][limits]") {
  // One link whose ring starts with chunk 0 and may take chunks 1 and 2 from the pool.
  constexpr uint32_t kChunks = 3;
  std::vector<net::PacketHeader> headers(kChunks * net::kLinkChunkSlots);
  std::vector<net::IntStack> ints(headers.size());
  net::LinkInfo info{};
  net::LinkRing ring{};
  net::LinkBinState bins{};
  net::LinkPool pool;
  auto freeLink = [&](uint32_t c) -> uint32_t& { return headers[c * net::kLinkChunkSlots].next; };
  static_cast<FreeStack&>(pool) = FreeStack::withTaken(1, kChunks);
  FreeCache cache;  // one unit both produces and consumes here: chunks go round through its cache
  const net::PacketSlots slots{headers.data(), ints.data()};
  auto rings = [&](int step) {
    const int par = step & 1;
    return net::LinkRings{&info, &ring, &bins, slots, &pool, &cache, par, par ^ 1};
  };
  auto held = [&] { return pool.capacity - pool.freeCount(freeLink) - cache.count; };  // chunks in the ring
  int64_t sent = 0;
  auto send = [&](const net::LinkRings& r, int count) {
    int pushed = 0;
    for (int i = 0; i < count; ++i) {
      net::PacketHeader p;
      p.seq = sent;
      p.time_ps = sent;
      if (!r.push(0, p, nullptr)) break;
      sent += 1;
      pushed += 1;
    }
    return pushed;
  };
  int64_t received = 0;
  auto receive = [&](const net::LinkRings& r) {
    r.beginConsume(0);
    for (const net::PacketHeader* p = r.peek(0, INT64_MAX); p != nullptr; p = r.peek(0, INT64_MAX)) {
      CHECK(p->seq == received);  // in the order sent, across chunk boundaries
      const int64_t next = r.popNext(0);
      received += 1;
      CHECK(next == (received < ring.tail[r.prev] ? received : INT64_MAX));
    }
  };
  // Step 0: three chunks hold 47 packets; the 48th needs a fourth chunk and is refused.
  rings(0).beginProduce(0);
  CHECK(send(rings(0), 60) == 47);
  CHECK(held() == 3);
  // Step 1: the consumer sees the 47 and returns the two chunks it left; the producer reuses
  // them: position 47 ends chunk 2 (held until the head passes it), then 48..78 fill the two.
  receive(rings(1));
  CHECK(received == 47);
  CHECK(held() == 1);
  CHECK(cache.count == 2);
  rings(1).beginProduce(0);
  CHECK(send(rings(1), 40) == 32);
  CHECK(held() == 3);
  CHECK(cache.count == 0);
  // Step 2: everything arrives; only the chunk of the tail is held.
  receive(rings(2));
  CHECK(received == 79);
  CHECK(held() == 1);
  CHECK(cache.count == 2);
}

TEST_CASE("after a run every link ring is back to one chunk: nothing leaks from the pool", "[network][limits]") {
  // 16 senders into one host (a 17-NIC star) for 100 µs: rings fill and drain many times.
  const Topology star = makeStar(17, BitsPerSecond{kRate}, Picoseconds{1'000'000});
  for (const net::CcKind cc : {net::CcKind::kDcqcn, net::CcKind::kHpcc}) {
    net::NetworkConfig cfg;
    cfg.cc = cc;
    Built b = build(star, cfg);
    for (uint32_t i = 1; i < 17; ++i) net::addFlow(*b.world, 0, i, 0, 200'000, 0, i);
    b.world->commitAllHost();
    b.world->grow<net::FlowRecord>(TableCapacity{16, 16});
    const RunReport r = runNetToEnd(*b.world, 2);
    CHECK(r.status == 0u);
    CHECK(b.world->view().table<net::FlowRecord>().rows == 16);
    const auto& stats = b.world->view().table<net::NetStats>();
    const net::LinkPool& pool = stats.get<net::LinkPool>(stats.expBegin(0));
    const int64_t links = 2 * 17;  // a star has no switch-to-switch links
    int64_t cached = 0;  // free chunks the units keep for themselves
    const auto& nics = b.world->view().table<net::Nic>();
    for (int64_t i = 0; i < nics.rows; ++i) cached += nics.get<net::NicState>(i).link_chunks.count;
    const auto& switches = b.world->view().table<net::Switch>();
    for (int64_t i = 0; i < switches.rows; ++i) cached += switches.get<net::SwitchState>(i).link_chunks.count;
    CHECK(cached > 0);
    const auto& slots = b.world->view().table<net::LinkSlot>();
    const int64_t free = pool.freeCount([&](uint32_t c) -> uint32_t& {
      return slots.get<net::PacketHeader>(slots.expBegin(0) + int64_t{c} * net::kLinkChunkSlots).next;
    });
    CHECK(pool.capacity - free == links + cached);
    // The receiving host's uplink carried an ACK for each of the 16 x 200 data packets,
    // through 200 chunks.
    const auto& ring = b.world->view().table<net::Link>().get<net::LinkRing>(0);
    CHECK(std::max(ring.head[0], ring.head[1]) >= 16 * 200);
  }
}
