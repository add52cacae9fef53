/**
 * @file network_sim.hpp
 * A world and graph for network-only experiments (flow lists): the network archetypes, a
 * per-experiment config with the network parameters, and the step graph
 *   nic | switch  ->  commit  ->  advance_clocks.
 * NICs and switches form one level: they interact only through links (delay >= lookahead).
 */
#pragma once

#include "ecs/graph.hpp"
#include "ecs/world.hpp"
#include "network/components.hpp"
#include "network/nic_system.hpp"
#include "network/switch_system.hpp"

namespace mv::net {

/// Per-experiment configuration row of a network-only world.
struct NetSimConfig {
  NetExperiment net;
};

using NetWorld = WorldOfT<NetSimConfig, NetworkArchetypes>;
using NetView = NetWorld::View;
using NetGraph = Graph<System<NicSystem<NetView>>, System<SwitchSystem<NetView>>, CommitAll, AdvanceClocks>;

}  // namespace mv::net
