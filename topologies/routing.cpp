/**
 * @file routing.cpp
 * Per-edge-switch breadth-first searches, deduplication of next-hop sets per switch, and
 * path walks over the result.
 */
#include "topologies/routing.hpp"

#include <map>
#include <string>

#include "ecs/macros.hpp"

namespace mv {

namespace {

/// Ports and sets per switch are uint16_t; kDeliver (0xFFFF) stays reserved.
constexpr uint32_t kMaxPerSwitch = Routing::kMaxSwitchPorts + 1;

template <class T>
size_t vectorBytes(const std::vector<T>& v) {
  return v.size() * sizeof(T);
}

}  // namespace

std::span<const uint16_t> Routing::nextHops(uint32_t switch_node, uint32_t dst_nic) const {
  const uint32_t s = switch_of_node_[switch_node];
  MV_ASSERT(s != kNoIndex, "nextHops needs a switch node");
  const uint16_t local = set_index_[size_t{s} * edgeCount() + nic_edge_[dst_nic]];
  if (local == kDeliver) return {&nic_port_[dst_nic], 1};
  const uint32_t set = switch_set_begin_[s] + local;
  return {set_ports_.data() + set_offset_[set], set_offset_[set + 1] - set_offset_[set]};
}

uint32_t Routing::walk(uint32_t src_nic, uint32_t dst_nic, std::vector<uint32_t>* links) const {
  if (src_nic == dst_nic) return 0;
  uint32_t count = 1;
  if (links != nullptr) links->push_back(nic_link_[src_nic]);
  uint32_t node = edge_switch_[nic_edge_[src_nic]];
  const uint32_t last = edge_switch_[nic_edge_[dst_nic]];
  while (node != last) {
    // Every hop gets one step closer to `last`, so a walk never exceeds the switch count.
    MV_ASSERT(count <= switchCount(), "routing walk does not converge");
    const uint32_t s = switch_of_node_[node];
    const uint32_t entry = port_offset_[s] + nextHops(node, dst_nic)[0];
    if (links != nullptr) links->push_back(port_link_[entry]);
    node = port_peer_[entry];
    ++count;
  }
  if (links != nullptr) links->push_back(nic_link_[dst_nic]);
  return count + 1;
}

uint32_t Routing::hopCount(uint32_t src_nic, uint32_t dst_nic) const {
  return walk(src_nic, dst_nic, nullptr);
}

std::vector<uint32_t> Routing::firstPath(uint32_t src_nic, uint32_t dst_nic) const {
  std::vector<uint32_t> links;
  walk(src_nic, dst_nic, &links);
  return links;
}

size_t Routing::bytes() const {
  return sizeof(Routing) + vectorBytes(edge_switch_) + vectorBytes(switch_of_node_) + vectorBytes(nic_edge_) +
         vectorBytes(nic_port_) + vectorBytes(nic_link_) + vectorBytes(set_index_) + vectorBytes(switch_set_begin_) +
         vectorBytes(set_offset_) + vectorBytes(set_ports_) + vectorBytes(port_offset_) + vectorBytes(port_link_) +
         vectorBytes(port_peer_);
}

Routing computeRouting(const Topology& topo) {
  Routing r;
  const auto& switches = topo.switches();
  const auto switch_count = static_cast<uint32_t>(switches.size());

  r.switch_of_node_.resize(topo.nodeCount());
  for (uint32_t n = 0; n < topo.nodeCount(); ++n) r.switch_of_node_[n] = topo.switchIndex(n);

  // Switch port tables, and edge switches in switch order.
  std::vector<uint32_t> edge_of_switch(switch_count, kNoIndex);
  for (uint32_t s = 0; s < switch_count; ++s) {
    const auto ports = topo.ports(switches[s]);
    if (ports.size() >= kMaxPerSwitch) {
      throw TopologyError("switch node " + std::to_string(switches[s]) + " has " + std::to_string(ports.size()) +
                          " ports; routing supports at most " + std::to_string(kMaxPerSwitch - 1));
    }
    for (const auto& port : ports) {
      r.port_link_.push_back(port.link);
      r.port_peer_.push_back(port.peer);
      if (topo.isNic(port.peer) && edge_of_switch[s] == kNoIndex) {
        edge_of_switch[s] = r.edgeCount();
        r.edge_switch_.push_back(switches[s]);
      }
    }
    r.port_offset_.push_back(static_cast<uint32_t>(r.port_link_.size()));
  }

  for (uint32_t i = 0; i < topo.nicCount(); ++i) {
    const uint32_t nic = topo.nicNode(i);
    const auto ports = topo.ports(nic);
    if (ports.size() != 1 || !topo.isSwitch(ports[0].peer)) {
      throw TopologyError("cannot route: NIC " + std::to_string(i) + " (node " + std::to_string(nic) +
                          ") must have exactly one link, to a switch (see validateTopology)");
    }
    r.nic_edge_.push_back(edge_of_switch[topo.switchIndex(ports[0].peer)]);
    r.nic_port_.push_back(static_cast<uint16_t>(ports[0].peer_port));
    r.nic_link_.push_back(ports[0].link);
  }

  // One BFS over switches per edge switch; each switch's next-hop set toward that edge is
  // its ports to neighbours one hop closer, interned into the switch's list of distinct sets.
  const uint32_t edges = r.edgeCount();
  r.set_index_.assign(size_t{switch_count} * edges, Routing::kDeliver);
  std::vector<std::map<std::vector<uint16_t>, uint16_t>> interned(switch_count);
  std::vector<std::vector<const std::vector<uint16_t>*>> sets_of(switch_count);
  std::vector<uint32_t> dist(switch_count);
  std::vector<uint32_t> queue;
  std::vector<uint16_t> hops;
  queue.reserve(switch_count);
  for (uint32_t e = 0; e < edges; ++e) {
    const uint32_t target = topo.switchIndex(r.edge_switch_[e]);
    dist.assign(switch_count, kNoIndex);
    dist[target] = 0;
    queue.assign(1, target);
    for (size_t head = 0; head < queue.size(); ++head) {
      const uint32_t s = queue[head];
      for (const auto& port : topo.ports(switches[s])) {
        const uint32_t peer = topo.switchIndex(port.peer);
        if (peer != kNoIndex && dist[peer] == kNoIndex) {
          dist[peer] = dist[s] + 1;
          queue.push_back(peer);
        }
      }
    }
    for (uint32_t s = 0; s < switch_count; ++s) {
      if (s == target) continue;
      if (dist[s] == kNoIndex) {
        throw TopologyError("cannot route: switch node " + std::to_string(switches[s]) +
                            " cannot reach edge switch node " + std::to_string(r.edge_switch_[e]) +
                            " (the topology is disconnected)");
      }
      hops.clear();
      const auto ports = topo.ports(switches[s]);
      for (uint32_t p = 0; p < ports.size(); ++p) {
        const uint32_t peer = topo.switchIndex(ports[p].peer);
        if (peer != kNoIndex && dist[peer] + 1 == dist[s]) hops.push_back(static_cast<uint16_t>(p));
      }
      auto [it, inserted] = interned[s].try_emplace(hops, static_cast<uint16_t>(sets_of[s].size()));
      if (inserted) {
        if (sets_of[s].size() >= kMaxPerSwitch) {
          throw TopologyError("cannot route: switch node " + std::to_string(switches[s]) + " needs more than " +
                              std::to_string(kMaxPerSwitch) + " distinct next-hop sets");
        }
        sets_of[s].push_back(&it->first);
      }
      r.set_index_[size_t{s} * edges + e] = it->second;
    }
  }

  for (uint32_t s = 0; s < switch_count; ++s) {
    for (const auto* set : sets_of[s]) {
      r.set_ports_.insert(r.set_ports_.end(), set->begin(), set->end());
      r.set_offset_.push_back(static_cast<uint32_t>(r.set_ports_.size()));
    }
    r.switch_set_begin_.push_back(r.switch_set_begin_.back() + static_cast<uint32_t>(sets_of[s].size()));
  }
  return r;
}

}  // namespace mv
