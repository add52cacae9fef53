/**
 * @file network_layout.hpp
 * Turns a topology and its routing (topologies/) into the layout the packet-level network
 * builds its rows from (network/layout.hpp).
 */
#pragma once

#include "network/layout.hpp"
#include "topologies/routing.hpp"
#include "topologies/topology.hpp"

namespace mv {

/// Idle round trip between two NICs on the first-choice path: 2 × Σ delay + Σ payload
/// serialisation per hop (network.md).
int64_t idleRtt(const Topology& topo, const Routing& routing, uint32_t src, uint32_t dst, int32_t payload_bytes);

/**
 * Earliest a flow alone in the idle network can complete (flows.csv `ideal_fct_ps`): its
 * first packet (`first_wire` bytes on the wire) serialised on every link of the first-choice
 * path, the rest of its `wire` bytes behind it at the slowest link, and the propagation
 * delay there and back (the ACK's own serialisation left out): a lower bound of the FCT.
 */
int64_t idealFct(const Topology& topo, const Routing& routing, uint32_t src, uint32_t dst, int64_t first_wire,
                 int64_t wire);

/// Slowest link rate on the first-choice path between two NICs.
int64_t bottleneckRate(const Topology& topo, const Routing& routing, uint32_t src, uint32_t dst);

/// The network layout of `topo`; `payload_bytes` sets the per-hop serialisation in the RTT.
net::NetworkLayout makeNetworkLayout(const Topology& topo, const Routing& routing, int32_t payload_bytes);

}  // namespace mv
