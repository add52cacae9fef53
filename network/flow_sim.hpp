/**
 * @file flow_sim.hpp
 * A world and graph for flow-level (fluid) network-only experiments: the fluid archetypes,
 * Message (what a connection drains), FlowRecord for results, and the step graph
 *   fluid_messages  ->  fluid_prepare  ->  fluid  ->  commit  ->  advance_clocks.
 * The fluid system reads no configuration row, so its archetypes and node may also join a
 * packet-level world (one experiment per fidelity, each with rows in its own tables only).
 */
#pragma once

#include "ecs/graph.hpp"
#include "ecs/world.hpp"
#include "network/components.hpp"
#include "network/flow_level.hpp"

namespace mv::net {

/// Per-experiment configuration row of a flow-level world (the fluid model keeps its
/// parameters in the experiment's FluidNet row).
struct FluidSimConfig {};

using FluidWorld = WorldOfT<FluidSimConfig, ConcatT<FluidArchetypes, TypeList<Message, FlowRecord>>>;
using FluidView = FluidWorld::View;
using FluidGraph =
    Graph<System<FluidMessageSystem<FluidView>>, System<FluidPrepareSystem<FluidView>>, System<FluidSystem<FluidView>>,
          CommitAll, AdvanceClocks>;

}  // namespace mv::net
