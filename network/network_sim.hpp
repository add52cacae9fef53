/**
 * @file network_sim.hpp
 * A world and graph for network-only experiments (flow lists): the network archetypes, a
 * per-experiment config with the network parameters, and the step graph
 *   nic | switch  ->  commit  ->  advance_clocks.
 * NICs and switches form one level: they interact only through links (delay >= lookahead).
 */
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "ecs/graph.hpp"
#include "ecs/world.hpp"
#include "network/components.hpp"
#include "network/nic_system.hpp"
#include "network/switch_system.hpp"

namespace mv {
template <class WorldT>
class StepSession;
}  // namespace mv

namespace mv::net {

/// Per-experiment configuration row of a network-only world.
struct NetSimConfig {
  NetExperiment net;
};

using NetWorld = WorldOfT<NetSimConfig, NetworkArchetypes>;
using NetView = NetWorld::View;
using NetGraph = Graph<System<NicSystem<NetView>>, System<SwitchSystem<NetView>>, CommitAll, AdvanceClocks>;

/// Opens a session that runs a network world on a backend other than the CPU executor
/// (systems/cuda/network_device.hpp: one CUDA device, which keeps the world for the session).
using NetworkStepRunner = std::function<std::unique_ptr<StepSession<NetWorld>>(NetWorld& world)>;

}  // namespace mv::net
