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

/// The network layout of `topo`; `payload_bytes` sets the per-hop serialisation in the RTT.
net::NetworkLayout makeNetworkLayout(const Topology& topo, const Routing& routing, int32_t payload_bytes);

}  // namespace mv
