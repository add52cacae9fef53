/**
 * @file topology.hpp
 * Host-side network graph: NIC and switch nodes, full-duplex links with a rate and a
 * propagation delay, and per node an ordered port list. Generators, the ns-3 loader and
 * routing build on it; the simulator copies what it needs into its own pools.
 */
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ecs/units.hpp"

namespace mv {

/// A bad topology or topology parameter: a user error, reported with what is wrong and where.
class TopologyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "No such node / index": returned or stored where an id does not apply.
inline constexpr uint32_t kNoIndex = std::numeric_limits<uint32_t>::max();

/// Largest node count the generators and the loader accept (ids stay far from kNoIndex).
inline constexpr uint32_t kMaxNodes = uint32_t{1} << 26;

/// What a node is. NICs are the endpoints; only switches forward.
enum class NodeKind : uint8_t { kNic, kSwitch };

/// One node of the graph.
struct TopoNode {
  NodeKind kind = NodeKind::kNic;
  /// Switch tier: 1 = edge/leaf/ToR, 2 = aggregation/spine, 3 = core; 0 for NICs and unknown.
  uint8_t tier = 0;
  /// Server that hosts this NIC (kNoIndex for switches).
  uint32_t server = kNoIndex;
};

/// A bidirectional, full-duplex link between nodes `a` and `b`; both directions share rate and delay.
struct TopoLink {
  uint32_t a = 0;
  uint32_t b = 0;
  BitsPerSecond rate;
  Picoseconds delay;
};

/// Port `p` of a node: the link it drives, the node at the other end and that node's port number.
struct TopoPort {
  uint32_t link = 0;
  uint32_t peer = 0;
  uint32_t peer_port = 0;
};

/**
 * The network graph. Node ids are dense from 0 in creation order; link ids likewise. Port
 * numbers of a node follow the order in which its links were added. NIC index i is the
 * i-th NIC by increasing node id.
 */
class Topology {
 public:
  /// Appends a NIC hosted by `server` and returns its node id.
  uint32_t addNic(uint32_t server);
  /// Appends a switch of `tier` (0 = unknown) and returns its node id.
  uint32_t addSwitch(uint8_t tier);
  /// Connects `a` and `b` (existing nodes) and returns the link id; each end gains one port.
  uint32_t addLink(uint32_t a, uint32_t b, BitsPerSecond rate, Picoseconds delay);

  /// Sets the human-readable description used by summary() (e.g. "fat-tree k=8").
  void setName(std::string name) { name_ = std::move(name); }
  /// The description given by the generator or loader.
  const std::string& name() const { return name_; }

  /// Number of nodes (NICs and switches).
  uint32_t nodeCount() const { return static_cast<uint32_t>(nodes_.size()); }
  /// Number of links.
  uint32_t linkCount() const { return static_cast<uint32_t>(links_.size()); }
  /// Number of NICs.
  uint32_t nicCount() const { return static_cast<uint32_t>(nics_.size()); }
  /// Number of servers: one more than the largest server index of any NIC.
  uint32_t serverCount() const { return server_count_; }

  /// Node `n`.
  const TopoNode& node(uint32_t n) const { return nodes_[n]; }
  /// True when node `n` is a NIC.
  bool isNic(uint32_t n) const { return nodes_[n].kind == NodeKind::kNic; }
  /// True when node `n` is a switch.
  bool isSwitch(uint32_t n) const { return nodes_[n].kind == NodeKind::kSwitch; }

  /// NIC node ids in increasing order; position = NIC index.
  const std::vector<uint32_t>& nics() const { return nics_; }
  /// Node id of NIC index `i`.
  uint32_t nicNode(uint32_t i) const { return nics_[i]; }
  /// NIC index of node `n`, or kNoIndex when `n` is a switch.
  uint32_t nicIndex(uint32_t n) const { return nic_index_[n]; }
  /// Switch node ids in increasing order; position = switch index.
  const std::vector<uint32_t>& switches() const { return switches_; }
  /// Switch index of node `n`, or kNoIndex when `n` is a NIC.
  uint32_t switchIndex(uint32_t n) const { return switch_index_[n]; }

  /// Ports of node `n` in port-number order.
  std::span<const TopoPort> ports(uint32_t n) const { return ports_[n]; }
  /// Link `l`.
  const TopoLink& link(uint32_t l) const { return links_[l]; }
  /// All links, by link id.
  const std::vector<TopoLink>& links() const { return links_; }

  /// Switch node NIC index `i` attaches to. Requires the NIC to have exactly one link.
  uint32_t nicSwitch(uint32_t i) const;
  /// Port number on nicSwitch(i) that leads to NIC index `i`.
  uint32_t nicSwitchPort(uint32_t i) const;
  /// Server hosting NIC index `i`.
  uint32_t serverOf(uint32_t i) const { return nodes_[nics_[i]].server; }

  /// Multi-line description: name, node, NIC, server and per-tier switch counts, links, rates and delays.
  std::string summary() const;

 private:
  std::string name_;
  std::vector<TopoNode> nodes_;
  std::vector<TopoLink> links_;
  std::vector<std::vector<TopoPort>> ports_;
  std::vector<uint32_t> nics_;
  std::vector<uint32_t> switches_;
  std::vector<uint32_t> nic_index_;
  std::vector<uint32_t> switch_index_;
  uint32_t server_count_ = 0;
};

/**
 * Checks what the simulator relies on and throws TopologyError naming the culprit: at least
 * `required_nics` NICs; every link between two distinct nodes with a positive rate and delay;
 * at most one link per node pair; every NIC with exactly one link, to a switch (multi-homed
 * endpoints are not supported); every node reachable from node 0.
 */
void validateTopology(const Topology& topo, uint32_t required_nics);

/// A rate for messages: "400 Gb/s", "25 Gb/s", "10 Mb/s", "533.333333333 Gb/s".
std::string formatRate(BitsPerSecond rate);
/// A delay for messages: "1 us", "500 ns", "1.5 us".
std::string formatDelay(Picoseconds delay);

}  // namespace mv
