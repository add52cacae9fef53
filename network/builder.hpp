/**
 * @file builder.hpp
 * Host-side construction of one experiment's network in a world: NIC, switch, port and
 * link rows, packet pools sized from the rates and delays, routing rows, counters. Static
 * tables must be filled experiment by experiment in increasing order.
 */
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecs/quantity.hpp"
#include "ecs/units.hpp"
#include "ecs/world.hpp"
#include "network/components.hpp"
#include "network/layout.hpp"
#include "network/nic_system.hpp"

namespace mv::net {

/// Full-size packets a link of `rate_bps` and `delay_ps` has on the wire in (delay + 2
/// lookahead), i.e. the most one of its rings holds while it carries full-size data back to
/// back (a packet stays in the ring until the receiver's step after its arrival). In 64
/// bits: in-range rates and delays stay far inside them.
inline int64_t packetsInFlight(int64_t rate_bps, int64_t delay_ps, int64_t lookahead_ps, int32_t full_wire_bytes) {
  const int64_t span = delay_ps + 2 * lookahead_ps;
  const int64_t per_packet = serializationTime(Bytes{full_wire_bytes}, BitsPerSecond{rate_bps}).ps;
  return (span + per_packet - 1) / per_packet;
}

/// Link-ring slots of an experiment with `links` directed links, `units` NICs and switches,
/// and `in_flight` full-size packets on the wire when all links are busy (the sum of
/// packetsInFlight): one chunk per link (each ring always holds one), a full chunk cache per
/// unit (so that what the units keep never starves the rings), and `factor` × `in_flight`
/// in chunks, shared by all rings. ACKs (60 B) and PFC frames share the rings, so a link can
/// hold more than its full-size packets; the pool absorbs that while not every link is
/// busy, and a run that still exhausts it starts again with the factor doubled.
inline int64_t linkPoolSlots(int64_t links, int64_t units, int64_t in_flight, int32_t factor) {
  const int64_t chunks = links + units * kChunkCacheSize + (factor * in_flight + kLinkChunkSlots - 1) / kLinkChunkSlots;
  return kLinkChunkSlots * chunks;
}

/// Slots of a NIC's control ring: network.nic_control_slots rounded up to a power of two.
inline uint32_t controlCapacity(const NetworkConfig& cfg) {
  uint32_t capacity = 1;
  while (capacity < static_cast<uint32_t>(cfg.nic_control_slots)) capacity <<= 1;
  return capacity;
}

/// Packet records one experiment's network holds from the start, whatever it runs.
struct PacketStorage {
  int64_t link_slots = 0;    ///< the link rings' chunks (linkPoolSlots)
  int64_t nic_slots = 0;     ///< every NIC's control ring
  int64_t switch_slots = 0;  ///< the switches' shared pool

  PacketStorage& operator+=(const PacketStorage& o) {
    link_slots += o.link_slots;
    nic_slots += o.nic_slots;
    switch_slots += o.switch_slots;
    return *this;
  }
};

/// The largest slot count of one experiment's link rings: their chunks are numbered in 32 bits.
inline constexpr int64_t kMaxLinkSlots = int64_t{UINT32_MAX};

/// The packet storage buildNetwork gives an experiment of `layout` under `cfg`.
inline PacketStorage packetStorage(const NetworkLayout& layout, const NetworkConfig& cfg, int64_t lookahead_ps) {
  const int32_t max_wire = dataWireBytes(cfg.payload_bytes, cfg.cc, cfg.wire);
  // Saturated far above any pool that can be held, so that the product below stays in 64 bits.
  constexpr int64_t kSaturated = int64_t{1} << 50;
  int64_t links = 0;
  int64_t in_flight = 0;
  auto add = [&](int64_t rate_bps, int64_t delay_ps, int64_t count) {
    links += count;
    in_flight = std::min(kSaturated, in_flight + count * packetsInFlight(rate_bps, delay_ps, lookahead_ps, max_wire));
  };
  for (const LayoutNic& n : layout.nics) add(n.rate_bps, n.delay_ps, 2);
  for (const LayoutSwitch& ls : layout.switches) {
    for (const LayoutPort& lp : ls.ports) {
      if (!lp.peer_is_nic) add(lp.rate_bps, lp.delay_ps, 1);
    }
  }
  PacketStorage st;
  const auto units = static_cast<int64_t>(layout.nics.size() + layout.switches.size());
  st.link_slots = linkPoolSlots(links, units, in_flight, cfg.link_ring_factor);
  st.nic_slots = static_cast<int64_t>(layout.nics.size()) * controlCapacity(cfg);
  st.switch_slots = cfg.switch_pool_slots;
  return st;
}

/// Grows the packet-storage tables of `world` to hold `st` more slots (INT records too when
/// `hpcc`), so that experiments appended after it do not grow them step by step: a batch's
/// storage is allocated once, and its peak is the storage, not the doubled tables plus
/// their copy.
template <class WorldT>
void reservePacketStorage(WorldT& world, const PacketStorage& st, bool hpcc) {
  auto reserve = [&](auto header, auto integral, int64_t slots) {
    using H = decltype(header);
    using I = decltype(integral);
    world.template grow<H>(TableCapacity{world.template table<H>().rows + slots, 0});
    if (hpcc) world.template grow<I>(TableCapacity{world.template table<I>().rows + slots, 0});
  };
  reserve(LinkSlot{}, LinkSlotInt{}, st.link_slots);
  reserve(NicSlot{}, NicSlotInt{}, st.nic_slots);
  reserve(SwitchSlot{}, SwitchSlotInt{}, st.switch_slots);
}

/// Bytes packet storage `st` adds to `world` (packet headers, and INT records when `hpcc`):
/// each pool table at its rows plus its slots, less what it holds now, computed by the code
/// that allocates (World::tableBytesAt), so a count matches a build.
template <class WorldT>
int64_t addedPacketStorageBytes(const WorldT& world, const PacketStorage& st, bool hpcc) {
  auto added = [&](auto row, int64_t slots) -> int64_t {
    using A = decltype(row);
    if (slots <= 0) return 0;
    const int64_t rows = world.view().template table<A>().rows;
    return static_cast<int64_t>(world.template tableBytesAt<A>(TableCapacity{rows + slots, 0})) -
           static_cast<int64_t>(world.template tableBytes<A>());
  };
  auto pool = [&](auto header, auto integral, int64_t slots) {
    return added(header, slots) + (hpcc ? added(integral, slots) : 0);
  };
  return pool(LinkSlot{}, LinkSlotInt{}, st.link_slots) + pool(NicSlot{}, NicSlotInt{}, st.nic_slots) +
         pool(SwitchSlot{}, SwitchSlotInt{}, st.switch_slots);
}

/// Bytes of `st` in an empty WorldT (addedPacketStorageBytes under `cfg`'s congestion control).
template <class WorldT>
int64_t packetStorageBytes(const PacketStorage& st, const NetworkConfig& cfg) {
  static const WorldT empty(1, TableCapacity{1, 1});
  return addedPacketStorageBytes(empty, st, cfg.cc == CcKind::kHpcc);
}

/**
 * Why packet storage `st` of `bytes` (under `cfg`) cannot be held: more link-ring slots than
 * their 32-bit positions reach, or more bytes than `budget` when positive; "" when it can.
 */
inline std::string packetStorageProblem(const PacketStorage& st, int64_t bytes, int64_t budget,
                                        const NetworkConfig& cfg) {
  const bool too_many_slots = st.link_slots > kMaxLinkSlots;
  if (!too_many_slots && (budget <= 0 || bytes <= budget)) return "";
  return "its packet storage would take " + formatBytes(bytes) + " (" + std::to_string(st.link_slots) +
         " link-ring slots: the packets every link has on the wire at once, times link_ring_factor " +
         std::to_string(cfg.link_ring_factor) + ")" +
         (too_many_slots ? ", more slots than 2^32 - 1"
                         : ", more than the memory budget of " + formatBytes(budget) + " (--max-memory)") +
         "; shorten the link delays or slow the links";
}

/// The PFC headroom of one priority at switch port `lp`: headroom_rtts times the bytes its
/// link carries in one propagation delay.
inline int64_t portHeadroomBytes(const LayoutPort& lp, const NetworkConfig& cfg) {
  return cfg.pfc.headroom_rtts * bytesInTime(Picoseconds{lp.delay_ps}, BitsPerSecond{lp.rate_bps}).count;
}

/// Why `cfg.pfc.buffer` cannot serve the switches of `layout` ("" when it can): it must hold
/// a packet per port. Without PFC the buffer is where packets drop, and a smaller one never
/// let a flow finish (every packet dropped, retransmitted until the horizon); with PFC a
/// 1-byte buffer queued 444 KB of reserve and headroom. (A buffer above that but below the
/// ports' reserve and headroom is what ns-3's MMU allows too: the shared part is empty and
/// the switch holds reserve and headroom beyond it, docs/netsim.md.)
inline std::string pfcBufferProblem(const NetworkLayout& layout, const NetworkConfig& cfg) {
  const int64_t packet = dataWireBytes(cfg.payload_bytes, cfg.cc, cfg.wire);
  for (const LayoutSwitch& ls : layout.switches) {
    const int64_t need = static_cast<int64_t>(ls.ports.size()) * packet;
    if (cfg.pfc.buffer_bytes >= need) continue;
    return "network.pfc.buffer: " + formatBytes(cfg.pfc.buffer_bytes) + " is less than a packet per port of switch node " +
           std::to_string(ls.node) + " (" + formatBytes(need) + "); no flow through it would finish";
  }
  return "";
}

/// Why `cfg.rto` cannot serve `layout` ("" when it can, or when it is the default): a timeout
/// shorter than the longest idle round trip fires before any ACK can return, so every packet
/// is sent again and again (1 ps: 63.8 M drops and 50 s for two 2 MB flows).
inline std::string rtoProblem(const NetworkLayout& layout, const NetworkConfig& cfg) {
  if (cfg.rto_ps <= 0 || cfg.rto_ps >= layout.max_rtt_ps) return "";
  return "network.rto: " + formatDuration(cfg.rto_ps) + " is shorter than the topology's longest idle round trip (" +
         formatDuration(layout.max_rtt_ps) + "): every packet would time out before its ACK returns";
}

/// Why HPCC cannot run on `layout` under `cfg` ("" when it can): its packets carry an INT
/// record of at most kMaxIntHops switches, and a longer route's bottleneck could go unseen.
inline std::string intHopProblem(const NetworkLayout& layout, const NetworkConfig& cfg) {
  if (cfg.cc != CcKind::kHpcc || layout.max_switch_hops <= static_cast<uint32_t>(kMaxIntHops)) return "";
  return "network.cc hpcc: a route of this topology crosses " + std::to_string(layout.max_switch_hops) +
         " switches, and HPCC's packets record INT of at most " + std::to_string(kMaxIntHops) +
         " (the bottleneck of a longer path could go unseen); use dcqcn or dctcp, or a topology of fewer tiers";
}

/// Why the network of `layout` cannot run under `cfg` ("" when it can): HPCC's INT record,
/// the PFC buffer, the retransmission timeout (intHopProblem, pfcBufferProblem, rtoProblem).
inline std::string layoutProblem(const NetworkLayout& layout, const NetworkConfig& cfg) {
  std::string problem = intHopProblem(layout, cfg);
  if (problem.empty()) problem = pfcBufferProblem(layout, cfg);
  if (problem.empty()) problem = rtoProblem(layout, cfg);
  return problem;
}

/// What a run's pooled-storage status bits mean, with the knob that fixes each ("" when none
/// is set).
inline std::string pooledStorageMessage(uint32_t status) {
  std::string m;
  if (status & kStatusSwitchPool) m += "a switch ran out of packet slots (raise network.switch_pool_slots); ";
  if (status & kStatusLinkRing) m += "the link rings ran out of packet slots (raise network.link_ring_factor); ";
  if (status & kStatusNicControl) m += "a NIC's ACK queue filled up (raise network.nic_control_slots); ";
  return m.empty() ? m : m.substr(0, m.size() - 2);
}

/**
 * `cfg` with the pooled packet storage that ran out (status bits) doubled, for another
 * attempt: the switch pool, the link rings, the NIC control rings. False when a knob that
 * ran out is at its limit already. Results never depend on these sizes, only whether a run
 * fits, so a run that starts again with more storage gives the results it would have given.
 */
inline bool growPooledStorage(uint32_t status, NetworkConfig& cfg) {
  bool grown = true;
  auto twice = [&](int32_t& knob, int32_t limit) {
    if (knob >= limit) grown = false;
    knob = std::min(2 * knob, limit);
  };
  if (status & kStatusSwitchPool) twice(cfg.switch_pool_slots, kMaxSwitchPoolSlots);
  if (status & kStatusLinkRing) twice(cfg.link_ring_factor, kMaxLinkRingFactor);
  if (status & kStatusNicControl) twice(cfg.nic_control_slots, kMaxNicControlSlots);
  return grown;
}

/// Appends `count` slots of the packet pool (H headers, I INT records) of experiment `e`;
/// INT records only when it runs HPCC.
template <class H, class I, class WorldT>
void appendPacketSlots(WorldT& world, ExpId e, int64_t count, const NetworkConfig& cfg) {
  world.template appendStatic<H>(e, count);
  world.template appendStatic<I>(e, cfg.cc == CcKind::kHpcc ? count : 0);
}

/// Idle RTT and BDP of an experiment for CC (network.md: T = max RTT, W_init = T × rate).
inline NetExperiment pathQuantities(const NetworkLayout& layout, const NetworkConfig& cfg) {
  NetExperiment ne;
  ne.network = cfg;
  ne.base_rtt_ps = cfg.hpcc.base_rtt_ps > 0 ? cfg.hpcc.base_rtt_ps : layout.max_rtt_ps;
  int64_t line = 0;
  for (const LayoutNic& n : layout.nics) line = std::max(line, n.rate_bps);
  ne.bdp_bytes = bytesInTime(Picoseconds{ne.base_rtt_ps}, BitsPerSecond{line}).count;
  // A timeout shorter than a full buffer's drain time fires on packets that are only queued.
  ne.rto_ps = cfg.rto_ps > 0 ? cfg.rto_ps
                             : 2 * serializationTime(Bytes{cfg.pfc.buffer_bytes}, BitsPerSecond{line}).ps + ne.base_rtt_ps;
  return ne;
}

/**
 * Appends and fills experiment e's equal-cost routing rows: switch s owns rows
 * [s · edge_count, (s + 1) · edge_count) of `IndexA`, one per edge switch, naming the
 * `SetA` row of its next-hop set, whose ports are consecutive `PortA` rows. Shared by the
 * packet-level and the flow-level builders (their tables differ, the rows do not).
 */
template <class IndexA, class SetA, class PortA, class WorldT>
void appendRouteRows(WorldT& world, ExpId e, const NetworkLayout& layout) {
  const auto sw_count = static_cast<uint32_t>(layout.switches.size());
  uint32_t set_rows = 0;
  uint32_t port_rows = 0;
  for (const LayoutSwitch& ls : layout.switches) {
    set_rows += static_cast<uint32_t>(ls.sets.size());
    for (const auto& set : ls.sets) port_rows += static_cast<uint32_t>(set.size());
  }
  auto& index = world.template table<IndexA>();
  const int64_t index0 = world.template appendStatic<IndexA>(e, int64_t{sw_count} * layout.edge_count);
  auto& sets = world.template table<SetA>();
  const int64_t set0 = world.template appendStatic<SetA>(e, set_rows);
  auto& ports = world.template table<PortA>();
  const int64_t port0 = world.template appendStatic<PortA>(e, port_rows);
  uint32_t set_next = 0;
  uint32_t port_next = 0;
  for (uint32_t s = 0; s < sw_count; ++s) {
    const LayoutSwitch& ls = layout.switches[s];
    for (uint32_t k = 0; k < ls.sets.size(); ++k) {
      sets.template get<RouteSet>(set0 + set_next + k) = RouteSet{port_next, static_cast<uint32_t>(ls.sets[k].size())};
      for (uint32_t port : ls.sets[k]) ports.template get<RoutePort>(port0 + port_next++) = RoutePort{port};
    }
    for (uint32_t edge = 0; edge < layout.edge_count; ++edge) {
      const uint32_t k = edge < ls.set_of_edge.size() ? ls.set_of_edge[edge] : 0;
      index.template get<RouteIndex>(index0 + int64_t{s} * layout.edge_count + edge) = RouteIndex{set_next + k};
    }
    set_next += static_cast<uint32_t>(ls.sets.size());
  }
}

/// Fills the network rows of experiment `e` (call for e = 0, 1, ... in order). Without
/// `pools`, the packet pools (link rings, NIC control rings, the switch pool: packetStorage)
/// are left out, for a caller that counts them instead of holding them.
template <class WorldT>
void buildNetwork(WorldT& world, ExpId e, const NetworkLayout& layout, const NetworkConfig& cfg, int64_t lookahead_ps,
                  bool pools = true) {
  if (layout.nics.empty() || layout.switches.empty()) throw std::invalid_argument("network layout is empty");
  const uint32_t nic_count = static_cast<uint32_t>(layout.nics.size());
  const uint32_t sw_count = static_cast<uint32_t>(layout.switches.size());

  // Directed links: NIC uplinks first (2i: NIC->switch, 2i+1: switch->NIC), then one per
  // switch port towards another switch.
  std::vector<uint32_t> port_base(sw_count + 1, 0);
  for (uint32_t s = 0; s < sw_count; ++s) port_base[s + 1] = port_base[s] + static_cast<uint32_t>(layout.switches[s].ports.size());
  auto outLinkOfSwitchPort = [&](uint32_t s, uint32_t p) -> uint32_t {
    const LayoutPort& lp = layout.switches[s].ports[p];
    if (lp.peer_is_nic) return 2 * lp.peer + 1;
    return 2 * nic_count + port_base[s] + p;
  };
  auto inLinkOfSwitchPort = [&](uint32_t s, uint32_t p) -> uint32_t {
    const LayoutPort& lp = layout.switches[s].ports[p];
    if (lp.peer_is_nic) return 2 * lp.peer;
    return 2 * nic_count + port_base[lp.peer] + lp.peer_port;
  };
  const uint32_t link_count = 2 * nic_count + port_base[sw_count];

  const PacketStorage storage = packetStorage(layout, cfg, lookahead_ps);
  if (storage.link_slots > kMaxLinkSlots) {
    throw std::length_error("the link rings would need " + std::to_string(storage.link_slots) +
                            " packet slots, more than 2^32 - 1 (shorter link delays or slower links)");
  }
  auto& links = world.template table<Link>();
  const int64_t link0 = world.template appendStatic<Link>(e, link_count);
  // Each link starts with a chunk of its own (numbered in the order links are set: the
  // rows of NIC-facing switch ports are not links); the others are the free LinkPool.
  uint32_t first_free_chunk = 0;
  auto setLink = [&](uint32_t l, int64_t rate, int64_t delay) {
    LinkInfo& li = links.template get<LinkInfo>(link0 + l);
    li.rate_bps = rate;
    li.delay_ps = delay;
    li.ps_per_byte = exactPsPerByte(BitsPerSecond{rate});
    li.whole_ns = cfg.whole_ns ? 1u : 0u;
    LinkRing& r = links.template get<LinkRing>(link0 + l);
    r.head_chunk = first_free_chunk;
    r.tail_chunk = first_free_chunk;
    first_free_chunk += 1;
  };
  for (uint32_t i = 0; i < nic_count; ++i) {
    setLink(2 * i, layout.nics[i].rate_bps, layout.nics[i].delay_ps);
    setLink(2 * i + 1, layout.nics[i].rate_bps, layout.nics[i].delay_ps);
  }
  for (uint32_t s = 0; s < sw_count; ++s) {
    for (uint32_t p = 0; p < layout.switches[s].ports.size(); ++p) {
      const LayoutPort& lp = layout.switches[s].ports[p];
      if (!lp.peer_is_nic) setLink(2 * nic_count + port_base[s] + p, lp.rate_bps, lp.delay_ps);
    }
  }
  const auto chunks = static_cast<uint32_t>(storage.link_slots / kLinkChunkSlots);
  LinkPool link_pool;
  if (pools) {
    appendPacketSlots<LinkSlot, LinkSlotInt>(world, e, storage.link_slots, cfg);
    static_cast<FreeStack&>(link_pool) = FreeStack::withTaken(first_free_chunk, chunks);
  }

  // NICs, their control rings and where they attach.
  auto& nics = world.template table<Nic>();
  const int64_t nic0 = world.template appendStatic<Nic>(e, nic_count);
  auto& routes = world.template table<NicRouteTable>();
  const int64_t route0 = world.template appendStatic<NicRouteTable>(e, nic_count);
  const uint32_t ctrl_capacity = controlCapacity(cfg);
  for (uint32_t i = 0; i < nic_count; ++i) {
    const LayoutNic& ln = layout.nics[i];
    NicInfo& ni = nics.template get<NicInfo>(nic0 + i);
    ni.nic = i;
    ni.tor = ln.tor;
    ni.tor_port = ln.tor_port;
    ni.tx_link = 2 * i;
    ni.rx_link = 2 * i + 1;
    ni.ctrl_base = i * ctrl_capacity;
    ni.ctrl_capacity = ctrl_capacity;
    ni.rate_bps = ln.rate_bps;
    ni.delay_ps = ln.delay_ps;
    routes.template get<NicRoute>(route0 + i) = NicRoute{ln.edge, ln.tor, ln.tor_port};
  }
  if (pools) appendPacketSlots<NicSlot, NicSlotInt>(world, e, int64_t{nic_count} * ctrl_capacity, cfg);

  // Switches, ports, packet pools, routing.
  auto& switches = world.template table<Switch>();
  const int64_t sw0 = world.template appendStatic<Switch>(e, sw_count);
  auto& ports = world.template table<Port>();
  const int64_t port0 = world.template appendStatic<Port>(e, port_base[sw_count]);
  int64_t nic_rate = 0;
  for (const LayoutNic& n : layout.nics) nic_rate = std::max(nic_rate, n.rate_bps);
  for (uint32_t s = 0; s < sw_count; ++s) {
    const LayoutSwitch& ls = layout.switches[s];
    SwitchInfo& si = switches.template get<SwitchInfo>(sw0 + s);
    SwitchState& ss = switches.template get<SwitchState>(sw0 + s);
    si.node = ls.node;
    si.port_base = port_base[s];
    si.port_count = static_cast<uint32_t>(ls.ports.size());
    si.route_base = s * layout.edge_count;
    (void)ss;
    for (uint32_t p = 0; p < ls.ports.size(); ++p) {
      const LayoutPort& lp = ls.ports[p];
      PortInfo& pi = ports.template get<PortInfo>(port0 + port_base[s] + p);
      PortQueue& pq = ports.template get<PortQueue>(port0 + port_base[s] + p);
      pi.out_link = outLinkOfSwitchPort(s, p);
      pi.in_link = inLinkOfSwitchPort(s, p);
      pi.peer_nic = lp.peer_is_nic ? lp.peer : kNone32;
      pi.rate_bps = lp.rate_bps;
      pi.delay_ps = lp.delay_ps;
      const int64_t ratio = nic_rate > 0 ? lp.rate_bps / nic_rate : 1;
      pi.pfc_shift = ratio >= 4 ? 1u : (ratio >= 2 ? 2u : 3u);
      pi.headroom_bytes = portHeadroomBytes(lp, cfg);
      if (cfg.cc == CcKind::kDctcp) {
        pi.kmin_bytes = pi.kmax_bytes = static_cast<int64_t>(
            (static_cast<Int128>(cfg.dctcp.k_per_10g_bytes) * lp.rate_bps) / 10'000'000'000LL);
      } else {
        pi.kmin_bytes = static_cast<int64_t>((static_cast<Int128>(cfg.ecn.kmin_per_25g_bytes) * lp.rate_bps) /
                                             25'000'000'000LL);
        pi.kmax_bytes = static_cast<int64_t>((static_cast<Int128>(cfg.ecn.kmax_per_25g_bytes) * lp.rate_bps) /
                                             25'000'000'000LL);
      }
      for (int c = 0; c < kPriorities; ++c) {
        pq.head[c] = kNone32;
        pq.tail[c] = kNone32;
      }
      si.total_headroom += pi.headroom_bytes;
      si.total_reserve += cfg.pfc.reserve_bytes * (kPriorities - 1);
    }
  }
  appendRouteRows<RouteIndexTable, RouteSetTable, RoutePortTable>(world, e, layout);
  SwitchPool switch_pool;
  if (pools) {
    appendPacketSlots<SwitchSlot, SwitchSlotInt>(world, e, cfg.switch_pool_slots, cfg);
    static_cast<FreeStack&>(switch_pool) = FreeStack::withTaken(0, cfg.switch_pool_slots);
  }
  auto& stats = world.template table<NetStats>();
  const int64_t stats0 = world.template appendStatic<NetStats>(e, 1);
  stats.template get<SwitchPool>(stats0) = switch_pool;
  stats.template get<LinkPool>(stats0) = link_pool;
}

/// The totals of experiment `e`: the sum of its NICs' and switches' counters.
template <class WorldT>
NetCounters experimentCounters(WorldT& world, ExpId e) {
  NetCounters total;
  auto add = [&total](const NetCounters& c) {
    total.packets_sent += c.packets_sent;
    total.packet_hops += c.packet_hops;
    total.ecn_marks += c.ecn_marks;
    total.cnps += c.cnps;
    total.pauses += c.pauses;
    total.paused_ps += c.paused_ps;
    total.drops += c.drops;
    total.retransmits += c.retransmits;
    total.timeouts += c.timeouts;
    total.nacks += c.nacks;
    total.flows_done += c.flows_done;
    total.overflow += c.overflow;
  };
  auto& nics = world.template table<Nic>();
  for (int64_t r = nics.expBegin(e); r < nics.expEnd(e); ++r) add(nics.template get<NetCounters>(r));
  auto& switches = world.template table<Switch>();
  for (int64_t r = switches.expBegin(e); r < switches.expEnd(e); ++r) add(switches.template get<NetCounters>(r));
  return total;
}

static_assert(kMaxInputBytes < (int64_t{1} << (kSeqBits - 1)), "a flow's sequence numbers fit a packet's field");

/// Throws std::invalid_argument unless a flow of `bytes` with `id` and priority `prio` can be
/// added: 1 to kMaxInputBytes bytes, an id below 2^kFlowIdBits, priority 1..7.
inline void checkFlowArguments(int64_t bytes, uint64_t id, uint32_t prio) {
  if (bytes <= 0) throw std::invalid_argument("a flow carries at least one byte");
  if (bytes > kMaxInputBytes) throw std::invalid_argument("a flow carries at most 16 TiB");
  if (id >= (uint64_t{1} << kFlowIdBits)) throw std::invalid_argument("a flow id must be below 2^40");
  if (prio == kControlPriority || prio >= kPriorities) throw std::invalid_argument("flow priority must be 1..7");
}

/// Adds a flow of experiment `e` from the host. `id` must be unique among the flows of
/// its source NIC (checkFlowArguments).
template <class WorldT>
void addFlow(WorldT& world, ExpId e, uint32_t src, uint32_t dst, int64_t bytes, int64_t start_ps, uint64_t id,
             uint32_t prio = 3) {
  checkFlowArguments(bytes, id, prio);
  world.template createHost<Flow>(e, flowKey(src, id), FlowSpec{src, dst, bytes, start_ps, id, prio, 0}, FlowSend{},
                                  FlowCc{}, FlowRecv{});
}

}  // namespace mv::net
