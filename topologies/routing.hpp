/**
 * @file routing.hpp
 * Shortest-path ECMP next hops for every switch, stored per destination edge switch
 * rather than per destination NIC: every NIC hangs off exactly one edge switch, so the
 * table is (switches x edge switches) small set ids into a per-switch list of distinct
 * port sets. All arrays are flat and index-based so the simulator can copy them into its
 * pools as they are.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "topologies/topology.hpp"

namespace mv {

/**
 * Equal-cost next hops from every switch toward every NIC (hop count metric). Switch s
 * forwards a packet for NIC d over any port of nextHops(s, d); at d's own edge switch the
 * only choice is the port to d. Built by computeRouting(); immutable afterwards.
 *
 * Layout (switch index = position in Topology::switches(); edge index = position in
 * edgeSwitches()): local = setIndex()[switch * edgeCount() + edge]; if local is kDeliver
 * the port is nicPort()[d]; otherwise the set is global id g = switchSetBegin()[switch] +
 * local, whose ports are setPorts()[setOffset()[g] .. setOffset()[g + 1]), ascending.
 */
class Routing {
 public:
  /// setIndex() value at the destination's own edge switch: deliver on the NIC's port.
  static constexpr uint16_t kDeliver = 0xFFFF;
  /// The most ports (and distinct next-hop sets) one switch may have: port ids are 16-bit
  /// and kDeliver is taken.
  static constexpr uint32_t kMaxSwitchPorts = kDeliver - 1u;

  /// Equal-cost egress ports (ascending) at switch node `switch_node` toward NIC index `dst_nic`.
  std::span<const uint16_t> nextHops(uint32_t switch_node, uint32_t dst_nic) const;
  /// Links on a shortest path between two NICs (0 for the same NIC; 2 under one switch).
  uint32_t hopCount(uint32_t src_nic, uint32_t dst_nic) const;
  /// Link ids of one shortest path from `src_nic` to `dst_nic`, taking the first next hop at each switch.
  std::vector<uint32_t> firstPath(uint32_t src_nic, uint32_t dst_nic) const;
  /// Memory held by the tables, in bytes.
  size_t bytes() const;

  /// Number of edge switches (switches with at least one NIC).
  uint32_t edgeCount() const { return static_cast<uint32_t>(edge_switch_.size()); }
  /// Number of switches.
  uint32_t switchCount() const { return static_cast<uint32_t>(switch_set_begin_.size()) - 1; }
  /// Number of distinct next-hop sets, summed over switches.
  uint32_t setCount() const { return static_cast<uint32_t>(set_offset_.size()) - 1; }

  /// Edge index -> switch node id.
  const std::vector<uint32_t>& edgeSwitches() const { return edge_switch_; }
  /// Node id -> switch index (kNoIndex for NICs).
  const std::vector<uint32_t>& switchOfNode() const { return switch_of_node_; }
  /// NIC index -> edge index of the switch it attaches to.
  const std::vector<uint32_t>& nicEdge() const { return nic_edge_; }
  /// NIC index -> port number on its edge switch.
  const std::vector<uint16_t>& nicPort() const { return nic_port_; }
  /// NIC index -> id of its only link.
  const std::vector<uint32_t>& nicLink() const { return nic_link_; }
  /// [switch index * edgeCount() + edge index] -> local set id, or kDeliver.
  const std::vector<uint16_t>& setIndex() const { return set_index_; }
  /// Switch index -> global id of its first set (switchCount() + 1 entries).
  const std::vector<uint32_t>& switchSetBegin() const { return switch_set_begin_; }
  /// Global set id -> offset of its first port in setPorts() (setCount() + 1 entries).
  const std::vector<uint32_t>& setOffset() const { return set_offset_; }
  /// Ports of all sets, concatenated.
  const std::vector<uint16_t>& setPorts() const { return set_ports_; }
  /// Switch index -> offset of its port 0 in portLink() / portPeer() (switchCount() + 1 entries).
  const std::vector<uint32_t>& portOffset() const { return port_offset_; }
  /// Link id behind each switch port.
  const std::vector<uint32_t>& portLink() const { return port_link_; }
  /// Node id at the far end of each switch port.
  const std::vector<uint32_t>& portPeer() const { return port_peer_; }

 private:
  friend Routing computeRouting(const Topology& topo);

  /// Walks the first-choice path; appends its links to `links` when given; returns the link count.
  uint32_t walk(uint32_t src_nic, uint32_t dst_nic, std::vector<uint32_t>* links) const;

  std::vector<uint32_t> edge_switch_;
  std::vector<uint32_t> switch_of_node_;
  std::vector<uint32_t> nic_edge_;
  std::vector<uint16_t> nic_port_;
  std::vector<uint32_t> nic_link_;
  std::vector<uint16_t> set_index_;
  std::vector<uint32_t> switch_set_begin_{0};
  std::vector<uint32_t> set_offset_{0};
  std::vector<uint16_t> set_ports_;
  std::vector<uint32_t> port_offset_{0};
  std::vector<uint32_t> port_link_;
  std::vector<uint32_t> port_peer_;
};

/**
 * Computes shortest-path routing with one breadth-first search over switches per edge
 * switch. Throws TopologyError when routing is impossible: a NIC without exactly one link
 * to a switch, a switch that cannot reach some edge switch, or more than 65534 ports or
 * distinct next-hop sets on one switch. Run validateTopology() first for full diagnostics.
 */
Routing computeRouting(const Topology& topo);

}  // namespace mv
