/**
 * @file network_layout.cpp
 * Topology + routing -> network layout, and the idle RTT that sizes CC windows.
 */
#include "systems/network_layout.hpp"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "ecs/units.hpp"

namespace mv {

int64_t idleRtt(const Topology& topo, const Routing& routing, uint32_t src, uint32_t dst, int32_t payload_bytes) {
  int64_t rtt = 0;
  for (uint32_t l : routing.firstPath(src, dst)) {
    const TopoLink& link = topo.link(l);
    rtt += 2 * link.delay.ps + serializationTime(Bytes{payload_bytes}, link.rate).ps;
  }
  return rtt;
}

int64_t idealFct(const Topology& topo, const Routing& routing, uint32_t src, uint32_t dst, int64_t first_wire,
                 int64_t wire) {
  int64_t t = 0;
  for (uint32_t l : routing.firstPath(src, dst)) {
    const TopoLink& link = topo.link(l);
    t += 2 * link.delay.ps + serializationTime(Bytes{first_wire}, link.rate).ps;
  }
  const BitsPerSecond slowest{bottleneckRate(topo, routing, src, dst)};
  return t + serializationTime(Bytes{wire - first_wire}, slowest).ps;
}

int64_t bottleneckRate(const Topology& topo, const Routing& routing, uint32_t src, uint32_t dst) {
  int64_t rate = INT64_MAX;
  for (uint32_t l : routing.firstPath(src, dst)) rate = std::min(rate, topo.link(l).rate.bps);
  return rate;
}

net::NetworkLayout makeNetworkLayout(const Topology& topo, const Routing& routing, int32_t payload_bytes) {
  net::NetworkLayout layout;
  layout.edge_count = routing.edgeCount();
  const auto& switch_of_node = routing.switchOfNode();
  for (uint32_t i = 0; i < topo.nicCount(); ++i) {
    const TopoLink& link = topo.link(routing.nicLink()[i]);
    layout.nics.push_back(net::LayoutNic{switch_of_node[topo.nicSwitch(i)], routing.nicPort()[i], routing.nicEdge()[i],
                                         link.rate.bps, link.delay.ps});
  }
  const auto& switches = topo.switches();
  for (uint32_t s = 0; s < switches.size(); ++s) {
    net::LayoutSwitch ls;
    ls.node = switches[s];
    for (const TopoPort& p : topo.ports(switches[s])) {
      const TopoLink& link = topo.link(p.link);
      const bool to_nic = topo.isNic(p.peer);
      ls.ports.push_back(net::LayoutPort{to_nic, to_nic ? topo.nicIndex(p.peer) : switch_of_node[p.peer],
                                         to_nic ? 0u : p.peer_port, link.rate.bps, link.delay.ps});
    }
    for (uint32_t g = routing.switchSetBegin()[s]; g < routing.switchSetBegin()[s + 1]; ++g) {
      ls.sets.emplace_back(routing.setPorts().begin() + routing.setOffset()[g],
                           routing.setPorts().begin() + routing.setOffset()[g + 1]);
    }
    for (uint32_t edge = 0; edge < layout.edge_count; ++edge) {
      const uint16_t local = routing.setIndex()[s * layout.edge_count + edge];
      ls.set_of_edge.push_back(local == Routing::kDeliver ? 0u : local);
    }
    layout.switches.push_back(std::move(ls));
  }
  // The longest idle RTT: one representative NIC per edge switch covers every path shape.
  // Of those paths, the ones between edge switches that host one rail (the same index
  // among their server's NICs) join NICs of one rail; inside one edge switch, two NICs of
  // one rail on it do.
  std::vector<uint32_t> representative(layout.edge_count, kNoIndex);
  std::vector<uint64_t> rails(layout.edge_count, 0);
  std::vector<std::pair<uint32_t, uint32_t>> same_rail(layout.edge_count, {kNoIndex, kNoIndex});
  std::unordered_map<uint64_t, uint32_t> first_of_rail;  // edge · 64 + rail → its first NIC there
  uint32_t server_first = 0;
  for (uint32_t i = 0; i < topo.nicCount(); ++i) {
    const uint32_t edge = layout.nics[i].edge;
    if (representative[edge] == kNoIndex) representative[edge] = i;
    if (i == 0 || topo.serverOf(i) != topo.serverOf(i - 1)) server_first = i;
    const uint32_t rail = (i - server_first) % 64;
    rails[edge] |= uint64_t{1} << rail;
    const auto [it, fresh] = first_of_rail.emplace(uint64_t{edge} * 64 + rail, i);
    if (!fresh && same_rail[edge].first == kNoIndex) same_rail[edge] = {it->second, i};
  }
  for (uint32_t ea = 0; ea < layout.edge_count; ++ea) {
    for (uint32_t eb = 0; eb < layout.edge_count; ++eb) {
      const uint32_t a = representative[ea];
      const uint32_t b = representative[eb];
      const uint32_t dst = a == b ? (topo.nicCount() > 1 ? (a + 1) % topo.nicCount() : a) : b;
      if (dst == a) continue;
      const int64_t rtt = idleRtt(topo, routing, a, dst, payload_bytes);
      layout.max_switch_hops = std::max(layout.max_switch_hops, routing.hopCount(a, dst) - 1);
      layout.max_rtt_ps = std::max(layout.max_rtt_ps, rtt);
      if (ea != eb && (rails[ea] & rails[eb]) != 0) layout.rail_rtt_ps = std::max(layout.rail_rtt_ps, rtt);
    }
    const auto [x, y] = same_rail[ea];
    if (x != kNoIndex) layout.rail_rtt_ps = std::max(layout.rail_rtt_ps, idleRtt(topo, routing, x, y, payload_bytes));
  }
  if (layout.rail_rtt_ps == 0) layout.rail_rtt_ps = layout.max_rtt_ps;
  layout.min_delay_ps = INT64_MAX;
  for (const TopoLink& link : topo.links()) layout.min_delay_ps = std::min(layout.min_delay_ps, link.delay.ps);
  return layout;
}

}  // namespace mv
