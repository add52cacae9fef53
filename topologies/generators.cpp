/**
 * @file generators.cpp
 * Fat-tree, rail-optimised and spine-leaf generators.
 */
#include "topologies/generators.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace mv {

namespace {

void requirePositive(const char* topology, const char* field, uint64_t value) {
  if (value == 0) throw TopologyError(std::string(topology) + ": " + field + " must be at least 1");
}

void requireLinkParams(const char* topology, BitsPerSecond nic_rate, Picoseconds nic_delay, BitsPerSecond fabric_rate,
                       Picoseconds fabric_delay) {
  const std::string prefix = std::string(topology) + ": ";
  if (nic_rate.bps <= 0) throw TopologyError(prefix + "nic_rate must be positive");
  if (fabric_rate.bps <= 0) throw TopologyError(prefix + "fabric_rate must be positive");
  if (nic_delay.ps <= 0) throw TopologyError(prefix + "nic_delay must be positive");
  if (fabric_delay.ps <= 0) throw TopologyError(prefix + "fabric_delay must be positive");
}

void requireSize(const char* topology, uint64_t nodes) {
  if (nodes > kMaxNodes) {
    throw TopologyError(std::string(topology) + ": " + std::to_string(nodes) + " nodes exceed the limit of " +
                        std::to_string(kMaxNodes));
  }
}

void requireServerSplit(const char* topology, uint32_t nics, uint32_t nics_per_server) {
  requirePositive(topology, "nics_per_server", nics_per_server);
  if (nics % nics_per_server != 0) {
    throw TopologyError(std::string(topology) + ": nics_per_server " + std::to_string(nics_per_server) +
                        " does not divide the " + std::to_string(nics) + " NICs");
  }
}

/// A ratio or count for messages: "1", "1.5", "1.33333333".
std::string formatNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  return buf;
}

/// True when down_bps == spines * up_bps * oversubscription, exact to the bit per second.
bool ratioHolds(double down_bps, uint32_t spines, int64_t up_bps, double oversubscription) {
  return std::abs(static_cast<double>(spines) * static_cast<double>(up_bps) * oversubscription - down_bps) < 0.5;
}

}  // namespace

Topology makeStar(uint32_t nics, BitsPerSecond rate, Picoseconds delay) {
  if (nics == 0) throw TopologyError("star: needs at least one NIC");
  Topology t;
  for (uint32_t i = 0; i < nics; ++i) t.addNic(i);
  const uint32_t sw = t.addSwitch(1);
  for (uint32_t i = 0; i < nics; ++i) t.addLink(t.nicNode(i), sw, rate, delay);
  return t;
}

Topology makeFatTree(const FatTreeParams& params) {
  const uint32_t k = params.k;
  if (k < 2 || k % 2 != 0 || k > 256) {
    throw TopologyError("fat-tree: k must be an even number from 2 to 256, got " + std::to_string(k));
  }
  requireLinkParams("fat-tree", params.nic_rate, params.nic_delay, params.fabric_rate, params.fabric_delay);
  const uint32_t half = k / 2;
  const uint32_t nics = k * half * half;
  requireServerSplit("fat-tree", nics, params.nics_per_server);

  Topology topo;
  topo.setName("fat-tree k=" + std::to_string(k));
  for (uint32_t i = 0; i < nics; ++i) topo.addNic(i / params.nics_per_server);
  const uint32_t first_edge = topo.nodeCount();
  for (uint32_t i = 0; i < k * half; ++i) topo.addSwitch(1);
  const uint32_t first_agg = topo.nodeCount();
  for (uint32_t i = 0; i < k * half; ++i) topo.addSwitch(2);
  const uint32_t first_core = topo.nodeCount();
  for (uint32_t i = 0; i < half * half; ++i) topo.addSwitch(3);

  for (uint32_t i = 0; i < nics; ++i) topo.addLink(i, first_edge + i / half, params.nic_rate, params.nic_delay);
  for (uint32_t pod = 0; pod < k; ++pod) {
    for (uint32_t e = 0; e < half; ++e) {
      for (uint32_t a = 0; a < half; ++a) {
        topo.addLink(first_edge + pod * half + e, first_agg + pod * half + a, params.fabric_rate, params.fabric_delay);
      }
    }
  }
  for (uint32_t pod = 0; pod < k; ++pod) {
    for (uint32_t a = 0; a < half; ++a) {
      for (uint32_t c = 0; c < half; ++c) {
        topo.addLink(first_agg + pod * half + a, first_core + a * half + c, params.fabric_rate, params.fabric_delay);
      }
    }
  }
  return topo;
}

Topology makeRailOptimized(const RailParams& params) {
  constexpr const char* kWhat = "rail-optimized";
  requirePositive(kWhat, "servers", params.servers);
  requirePositive(kWhat, "nics_per_server", params.nics_per_server);
  requirePositive(kWhat, "leaf_radix_down", params.leaf_radix_down);
  requirePositive(kWhat, "spines", params.spines);
  requireLinkParams(kWhat, params.nic_rate, params.nic_delay, params.fabric_rate, params.fabric_delay);
  const uint32_t rails = params.nics_per_server;
  const uint32_t segments = (params.servers + params.leaf_radix_down - 1) / params.leaf_radix_down;
  const uint64_t nics = uint64_t{params.servers} * rails;
  const uint64_t leaves = uint64_t{segments} * rails;
  requireSize(kWhat, nics + leaves + params.spines);

  Topology topo;
  topo.setName("rail-optimized: " + std::to_string(params.servers) + " servers x " + std::to_string(rails) +
               " rails, " + std::to_string(segments) + (segments == 1 ? " segment, " : " segments, ") +
               std::to_string(params.spines) + " spines");
  for (uint32_t s = 0; s < params.servers; ++s) {
    for (uint32_t r = 0; r < rails; ++r) topo.addNic(s);
  }
  const uint32_t first_leaf = topo.nodeCount();
  for (uint64_t l = 0; l < leaves; ++l) topo.addSwitch(1);
  const uint32_t first_spine = topo.nodeCount();
  for (uint32_t p = 0; p < params.spines; ++p) topo.addSwitch(2);

  for (uint32_t s = 0; s < params.servers; ++s) {
    const uint32_t segment = s / params.leaf_radix_down;
    for (uint32_t r = 0; r < rails; ++r) {
      topo.addLink(s * rails + r, first_leaf + segment * rails + r, params.nic_rate, params.nic_delay);
    }
  }
  for (uint32_t l = 0; l < leaves; ++l) {
    for (uint32_t p = 0; p < params.spines; ++p) {
      topo.addLink(first_leaf + l, first_spine + p, params.fabric_rate, params.fabric_delay);
    }
  }
  return topo;
}

Topology makeSpineLeaf(const SpineLeafParams& params) {
  constexpr const char* kWhat = "spine-leaf";
  requirePositive(kWhat, "leaves", params.leaves);
  requirePositive(kWhat, "nics_per_leaf", params.nics_per_leaf);
  if (!(params.oversubscription > 0.0) || !std::isfinite(params.oversubscription)) {
    throw TopologyError("spine-leaf: oversubscription must be a positive number");
  }
  if (params.nic_rate.bps <= 0) throw TopologyError("spine-leaf: nic_rate must be positive");
  if (params.fabric_rate.bps < 0) throw TopologyError("spine-leaf: fabric_rate must not be negative");

  // Bandwidth from the NICs of one leaf, and what its uplinks must carry in total.
  const double down_bps = static_cast<double>(params.nics_per_leaf) * static_cast<double>(params.nic_rate.bps);
  const double up_bps = down_bps / params.oversubscription;
  const std::string demand = std::to_string(params.nics_per_leaf) + " NICs x " + formatRate(params.nic_rate) +
                             " per leaf at oversubscription " + formatNumber(params.oversubscription);
  uint32_t spines = params.spines;
  BitsPerSecond fabric_rate = params.fabric_rate;
  if (spines == 0 && fabric_rate.bps == 0) {
    throw TopologyError("spine-leaf: give spines or fabric_rate (the other is derived)");
  }
  if (spines == 0) {
    const double exact = up_bps / static_cast<double>(fabric_rate.bps);
    const double rounded = std::round(exact);
    if (rounded < 1.0 || rounded > static_cast<double>(kMaxNodes) ||
        !ratioHolds(down_bps, static_cast<uint32_t>(rounded), fabric_rate.bps, params.oversubscription)) {
      throw TopologyError("spine-leaf: " + demand + " would need " + formatNumber(exact) + " spines of " +
                          formatRate(fabric_rate) + "; change fabric_rate, spines or oversubscription");
    }
    spines = static_cast<uint32_t>(rounded);
  } else if (fabric_rate.bps == 0) {
    const double rounded = std::round(up_bps / spines);
    if (rounded < 1.0 || !ratioHolds(down_bps, spines, static_cast<int64_t>(rounded), params.oversubscription)) {
      throw TopologyError("spine-leaf: " + demand + " would need uplinks of " +
                          formatRate(BitsPerSecond{static_cast<int64_t>(rounded)}) + " to " + std::to_string(spines) +
                          " spines, not a whole number of bits per second; change spines or oversubscription");
    }
    fabric_rate = BitsPerSecond{static_cast<int64_t>(rounded)};
  } else if (!ratioHolds(down_bps, spines, fabric_rate.bps, params.oversubscription)) {
    throw TopologyError("spine-leaf: " + demand + " does not match " + std::to_string(spines) + " spines of " +
                        formatRate(fabric_rate) + " (that is oversubscription " +
                        formatNumber(down_bps / (static_cast<double>(spines) * static_cast<double>(fabric_rate.bps))) +
                        "); set spines or fabric_rate to 0 to derive it");
  }
  requireLinkParams(kWhat, params.nic_rate, params.nic_delay, fabric_rate, params.fabric_delay);
  const uint64_t nics = uint64_t{params.leaves} * params.nics_per_leaf;
  requireSize(kWhat, nics + params.leaves + spines);
  requireServerSplit(kWhat, static_cast<uint32_t>(nics), params.nics_per_server);

  Topology topo;
  topo.setName("spine-leaf: " + std::to_string(params.leaves) + " leaves x " + std::to_string(params.nics_per_leaf) +
               " NICs, " + std::to_string(spines) + " spines at " + formatRate(fabric_rate) + ", oversubscription " +
               formatNumber(params.oversubscription));
  for (uint32_t i = 0; i < nics; ++i) topo.addNic(i / params.nics_per_server);
  const uint32_t first_leaf = topo.nodeCount();
  for (uint32_t l = 0; l < params.leaves; ++l) topo.addSwitch(1);
  const uint32_t first_spine = topo.nodeCount();
  for (uint32_t p = 0; p < spines; ++p) topo.addSwitch(2);

  for (uint32_t i = 0; i < nics; ++i) {
    topo.addLink(i, first_leaf + i / params.nics_per_leaf, params.nic_rate, params.nic_delay);
  }
  for (uint32_t l = 0; l < params.leaves; ++l) {
    for (uint32_t p = 0; p < spines; ++p) {
      topo.addLink(first_leaf + l, first_spine + p, fabric_rate, params.fabric_delay);
    }
  }
  return topo;
}

}  // namespace mv
