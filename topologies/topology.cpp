/**
 * @file topology.cpp
 * Topology construction and accessors, the printable summary and validation.
 */
#include "topologies/topology.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

#include "ecs/macros.hpp"

namespace mv {

namespace {

/// `value / scale` with up to 12 significant digits and no trailing zeros, then `unit`.
std::string formatScaled(int64_t value, int64_t scale, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g %s", static_cast<double>(value) / static_cast<double>(scale), unit);
  return buf;
}

/// "node 5 (NIC 5 of server 0)" or "node 17 (tier-2 switch)".
std::string describeNode(const Topology& topo, uint32_t n) {
  std::string text = "node " + std::to_string(n) + " (";
  if (topo.isNic(n)) {
    text += "NIC " + std::to_string(topo.nicIndex(n)) + " of server " + std::to_string(topo.node(n).server);
  } else if (topo.node(n).tier != 0) {
    text += "tier-" + std::to_string(topo.node(n).tier) + " switch";
  } else {
    text += "switch";
  }
  return text + ")";
}

}  // namespace

std::string formatRate(BitsPerSecond rate) {
  constexpr int64_t kKilo = 1000;
  const int64_t bps = rate.bps;
  if (bps >= kKilo * kKilo * kKilo * kKilo) return formatScaled(bps, kKilo * kKilo * kKilo * kKilo, "Tb/s");
  if (bps >= kKilo * kKilo * kKilo) return formatScaled(bps, kKilo * kKilo * kKilo, "Gb/s");
  if (bps >= kKilo * kKilo) return formatScaled(bps, kKilo * kKilo, "Mb/s");
  if (bps >= kKilo) return formatScaled(bps, kKilo, "Kb/s");
  return formatScaled(bps, 1, "b/s");
}

std::string formatDelay(Picoseconds delay) {
  constexpr int64_t kKilo = 1000;
  const int64_t ps = delay.ps;
  if (ps >= kKilo * kKilo * kKilo * kKilo) return formatScaled(ps, kKilo * kKilo * kKilo * kKilo, "s");
  if (ps >= kKilo * kKilo * kKilo) return formatScaled(ps, kKilo * kKilo * kKilo, "ms");
  if (ps >= kKilo * kKilo) return formatScaled(ps, kKilo * kKilo, "us");
  if (ps >= kKilo) return formatScaled(ps, kKilo, "ns");
  return formatScaled(ps, 1, "ps");
}

uint32_t Topology::addNic(uint32_t server) {
  MV_ASSERT(server != kNoIndex, "a NIC needs a server index");
  const auto id = nodeCount();
  nodes_.push_back(TopoNode{NodeKind::kNic, 0, server});
  ports_.emplace_back();
  nic_index_.push_back(nicCount());
  switch_index_.push_back(kNoIndex);
  nics_.push_back(id);
  server_count_ = std::max(server_count_, server + 1);
  return id;
}

uint32_t Topology::addSwitch(uint8_t tier) {
  const auto id = nodeCount();
  nodes_.push_back(TopoNode{NodeKind::kSwitch, tier, kNoIndex});
  ports_.emplace_back();
  nic_index_.push_back(kNoIndex);
  switch_index_.push_back(static_cast<uint32_t>(switches_.size()));
  switches_.push_back(id);
  return id;
}

uint32_t Topology::addLink(uint32_t a, uint32_t b, BitsPerSecond rate, Picoseconds delay) {
  MV_ASSERT(a < nodeCount() && b < nodeCount(), "link endpoints must be existing nodes");
  const auto id = linkCount();
  links_.push_back(TopoLink{a, b, rate, delay});
  const auto port_a = static_cast<uint32_t>(ports_[a].size());
  // A self-loop takes two ports of the same node; validateTopology rejects it.
  const auto port_b = static_cast<uint32_t>(ports_[b].size()) + (a == b ? 1 : 0);
  ports_[a].push_back(TopoPort{id, b, port_b});
  ports_[b].push_back(TopoPort{id, a, port_a});
  return id;
}

uint32_t Topology::nicSwitch(uint32_t i) const {
  const auto& nic_ports = ports_[nics_[i]];
  MV_ASSERT(nic_ports.size() == 1, "a NIC must have exactly one link (see validateTopology)");
  return nic_ports[0].peer;
}

uint32_t Topology::nicSwitchPort(uint32_t i) const {
  const auto& nic_ports = ports_[nics_[i]];
  MV_ASSERT(nic_ports.size() == 1, "a NIC must have exactly one link (see validateTopology)");
  return nic_ports[0].peer_port;
}

std::string Topology::summary() const {
  std::string text = (name_.empty() ? std::string("topology") : name_) + ": " + std::to_string(nodeCount()) +
                     " nodes, " + std::to_string(linkCount()) + " links\n";
  text += "  NICs: " + std::to_string(nicCount()) + " in " + std::to_string(serverCount()) + " servers\n";

  std::map<uint8_t, uint32_t> per_tier;
  for (const auto s : switches_) ++per_tier[nodes_[s].tier];
  text += "  switches: " + std::to_string(switches_.size());
  if (!per_tier.empty()) {
    text += " (";
    bool first = true;
    for (const auto& [tier, count] : per_tier) {
      if (!first) text += ", ";
      first = false;
      text += (tier == 0 ? std::string("tier unknown") : "tier " + std::to_string(tier)) + ": " + std::to_string(count);
    }
    text += ")";
  }
  text += "\n";

  // Link classes, NIC links first: (is fabric, rate, delay) -> count.
  std::map<std::tuple<bool, int64_t, int64_t>, uint32_t> classes;
  for (const auto& l : links_) ++classes[{isSwitch(l.a) && isSwitch(l.b), l.rate.bps, l.delay.ps}];
  for (const auto& [key, count] : classes) {
    const auto& [fabric, bps, ps] = key;
    text += "  " + std::to_string(count) + (fabric ? " fabric" : " NIC") + " links at " +
            formatRate(BitsPerSecond{bps}) + ", " + formatDelay(Picoseconds{ps}) + "\n";
  }
  return text;
}

void validateTopology(const Topology& topo, uint32_t required_nics) {
  if (topo.nicCount() < required_nics) {
    throw TopologyError("topology has " + std::to_string(topo.nicCount()) + " NICs, the job needs " +
                        std::to_string(required_nics));
  }
  if (topo.nicCount() == 0) throw TopologyError("topology has no NICs");

  for (uint32_t l = 0; l < topo.linkCount(); ++l) {
    const auto& link = topo.link(l);
    const std::string what =
        "link " + std::to_string(l) + " (" + describeNode(topo, link.a) + " - " + describeNode(topo, link.b) + ")";
    if (link.a == link.b) throw TopologyError(what + " connects a node to itself");
    if (link.rate.bps <= 0) {
      throw TopologyError(what + " has a non-positive rate (" + std::to_string(link.rate.bps) + " b/s)");
    }
    if (link.delay.ps <= 0) {
      throw TopologyError(what + " has a non-positive delay (" + std::to_string(link.delay.ps) + " ps)");
    }
    if (topo.isNic(link.a) && topo.isNic(link.b)) {
      throw TopologyError(what + " connects two NICs directly; every NIC must attach to a switch");
    }
  }

  for (const auto n : topo.nics()) {
    const auto degree = topo.ports(n).size();
    if (degree == 0) throw TopologyError(describeNode(topo, n) + " has no link");
    if (degree > 1) {
      throw TopologyError(describeNode(topo, n) + " has " + std::to_string(degree) +
                          " links: multi-homed endpoints are not supported (give each NIC of a "
                          "multi-NIC server its own node with one link)");
    }
  }

  // Parallel links: sort (low end, high end, link id) so that duplicates are adjacent.
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> pairs;
  pairs.reserve(topo.linkCount());
  for (uint32_t l = 0; l < topo.linkCount(); ++l) {
    const auto& link = topo.link(l);
    pairs.emplace_back(std::min(link.a, link.b), std::max(link.a, link.b), l);
  }
  std::sort(pairs.begin(), pairs.end());
  for (size_t i = 1; i < pairs.size(); ++i) {
    const auto& [a, b, l] = pairs[i];
    const auto& [prev_a, prev_b, prev_l] = pairs[i - 1];
    if (a == prev_a && b == prev_b) {
      throw TopologyError("links " + std::to_string(prev_l) + " and " + std::to_string(l) + " both connect " +
                          describeNode(topo, a) + " and " + describeNode(topo, b) +
                          ": duplicate links between the same pair are not supported");
    }
  }

  std::vector<bool> reached(topo.nodeCount(), false);
  std::vector<uint32_t> frontier{0};
  reached[0] = true;
  while (!frontier.empty()) {
    const auto n = frontier.back();
    frontier.pop_back();
    for (const auto& port : topo.ports(n)) {
      if (!reached[port.peer]) {
        reached[port.peer] = true;
        frontier.push_back(port.peer);
      }
    }
  }
  const auto unreached = std::find(reached.begin(), reached.end(), false);
  if (unreached != reached.end()) {
    const auto n = static_cast<uint32_t>(unreached - reached.begin());
    throw TopologyError(describeNode(topo, n) + " cannot be reached from " + describeNode(topo, 0) +
                        ": the topology is disconnected");
  }
}

}  // namespace mv
