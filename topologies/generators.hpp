/**
 * @file generators.hpp
 * Ways to build a Topology: the fat-tree, rail-optimised and spine-leaf generators used in
 * the literature, and the ns-3/HPCC `topology.txt` loader. Every generator numbers NICs
 * first (NIC index == node id), then switches tier by tier, and throws TopologyError for
 * parameters it cannot build.
 */
#pragma once

#include <cstdint>
#include <filesystem>

#include "ecs/units.hpp"
#include "topologies/topology.hpp"

namespace mv {

/// `nics` NICs, each its own server, around one switch (node `nics`), every link with the
/// same rate and delay: the smallest fabric, for self-checks and tests. Throws for no NIC.
Topology makeStar(uint32_t nics, BitsPerSecond rate = gigabitsPerSecond(100), Picoseconds delay = microseconds(1));

/// A 3-tier k-ary fat-tree (Al-Fares et al.); the HPCC paper's cluster is a variant of it.
struct FatTreeParams {
  /// Switch radix, even: k pods of k/2 edge + k/2 aggregation switches, (k/2)^2 cores, k^3/4 NICs.
  uint32_t k = 8;
  /// Rate and propagation delay of a NIC-to-edge link.
  BitsPerSecond nic_rate = gigabitsPerSecond(100);
  Picoseconds nic_delay = microseconds(1);
  /// Rate and propagation delay of edge-aggregation and aggregation-core links.
  BitsPerSecond fabric_rate = gigabitsPerSecond(100);
  Picoseconds fabric_delay = microseconds(1);
  /// NICs per server: server s owns NICs s*n .. s*n+n-1 (must divide k^3/4).
  uint32_t nics_per_server = 1;
};

/**
 * Builds a k-ary fat-tree. Node order: NICs (pod-major, then edge, then position), edge
 * switches (tier 1, pod-major), aggregation switches (tier 2, pod-major), cores (tier 3).
 * Wiring: NIC i on edge i/(k/2); edge j of pod p to every aggregation switch of pod p; agg i
 * of every pod to cores i*(k/2) .. i*(k/2)+k/2-1. k=8 gives 128 NICs and 80 switches.
 */
Topology makeFatTree(const FatTreeParams& params);

/// A rail-optimised two-tier fabric (SimAI templates): one leaf per rail per segment.
struct RailParams {
  /// Servers in the cluster.
  uint32_t servers = 16;
  /// NICs per server, one per GPU; NIC r of a server sits on rail r.
  uint32_t nics_per_server = 8;
  /// Downlinks per leaf = servers per segment; more servers form further segments.
  uint32_t leaf_radix_down = 64;
  /// Spine switches; every leaf has one link to every spine.
  uint32_t spines = 16;
  /// Rate and propagation delay of a NIC-to-leaf link.
  BitsPerSecond nic_rate = gigabitsPerSecond(400);
  Picoseconds nic_delay = nanoseconds(500);
  /// Rate and propagation delay of a leaf-to-spine link.
  BitsPerSecond fabric_rate = gigabitsPerSecond(400);
  Picoseconds fabric_delay = nanoseconds(500);
};

/**
 * Builds a rail-optimised fabric. Servers are split into segments of `leaf_radix_down`
 * (the last may be partial); segment g has leaves g*R .. g*R+R-1 (R = nics_per_server) and
 * leaf r of a segment serves NIC r of every server in it. Node order: NICs (server-major),
 * leaves (tier 1, segment-major), spines (tier 2).
 */
Topology makeRailOptimized(const RailParams& params);

/**
 * A two-tier spine-leaf (Clos) fabric with a chosen oversubscription
 * (NIC bandwidth of a leaf) / (uplink bandwidth of a leaf). One of `spines` and
 * `fabric_rate` may be left 0 and is then derived so that the ratio holds exactly.
 */
struct SpineLeafParams {
  /// Leaf (ToR) switches.
  uint32_t leaves = 4;
  /// NICs attached to each leaf.
  uint32_t nics_per_leaf = 16;
  /// Spine switches, each linked once to every leaf; 0 = derive from fabric_rate.
  uint32_t spines = 0;
  /// (nics_per_leaf * nic_rate) / (spines * fabric_rate); 1 = non-blocking.
  double oversubscription = 1.0;
  /// Rate and propagation delay of a NIC-to-leaf link.
  BitsPerSecond nic_rate = gigabitsPerSecond(100);
  Picoseconds nic_delay = microseconds(1);
  /// Rate of a leaf-to-spine link; 0 = derive from spines (must come out in whole bits per second).
  BitsPerSecond fabric_rate = gigabitsPerSecond(400);
  /// Propagation delay of a leaf-to-spine link.
  Picoseconds fabric_delay = microseconds(1);
  /// NICs per server: server s owns NICs s*n .. s*n+n-1 (must divide leaves * nics_per_leaf).
  uint32_t nics_per_server = 1;
};

/**
 * Builds a spine-leaf fabric. With spines = 0 the spine count is derived, with
 * fabric_rate = 0 the uplink rate; with both given they must already satisfy the ratio.
 * Throws TopologyError when the ratio cannot be met exactly (a fractional spine count or
 * a rate that is not a whole number of bits per second). Node order: NICs (leaf-major),
 * leaves (tier 1), spines (tier 2).
 */
Topology makeSpineLeaf(const SpineLeafParams& params);

/**
 * Loads an ns-3/HPCC `topology.txt`: first line `nodes switches links`, then the switch
 * ids (whitespace-separated, possibly over several lines), then one link per line
 * `src dst rate delay error_rate` (e.g. `3 7 100Gbps 0.001ms 0`). Rates take bps, Kbps,
 * Mbps, Gbps or Tbps; delays s, ms, us, ns or ps; decimals are converted exactly. Nodes
 * not listed as switches are NICs, each its own server; node ids equal the file's ids and
 * switch tiers are 0 (unknown). Blank lines are ignored. Throws TopologyError naming the
 * file, the line and the offending token for: unreadable files, non-numeric or
 * out-of-range fields, ids out of range, self-links, zero rates or delays, non-zero error
 * rates (random loss is not modelled), and fewer or more link lines than announced.
 */
Topology loadNs3Topology(const std::filesystem::path& path);

}  // namespace mv
