/**
 * @file training_world.hpp
 * The world and the step graph of the training simulation (DESIGN.md §5), in a header of
 * their own so that every backend instantiates the same graph: the CPU executor in
 * training_sim.cpp and the CUDA megakernel in systems/cuda/.
 */
#pragma once

#include "ecs/graph.hpp"
#include "ecs/world.hpp"
#include "network/components.hpp"
#include "network/flow_level.hpp"
#include "systems/training_systems.hpp"

namespace mv {

/// Per-experiment configuration of a training world: its network and its training knobs.
struct TrainWorldConfig {
  net::NetExperiment net;
  train::TrainConfig train;
};

/// Packet-level and fluid network rows plus the training rows of a batch of experiments.
/// A class (not an alias) so that SimulationOptions can name it before it is complete.
using TrainWorldBase =
    WorldOfT<TrainWorldConfig, ConcatT<ConcatT<net::NetworkArchetypes, net::FluidArchetypes>, train::TrainingArchetypes>>;
struct TrainWorld : TrainWorldBase {
  using TrainWorldBase::TrainWorldBase;
};

using TrainView = TrainWorld::View;

/// nic | switch | fluid_messages → fluid_prepare → fluid | flow_completion → rank → commit →
/// advance_clocks.
using TrainGraph = Graph<System<net::NicSystem<TrainView>>, System<net::SwitchSystem<TrainView>>,
                         System<net::FluidMessageSystem<TrainView>>, System<net::FluidPrepareSystem<TrainView>>,
                         System<net::FluidSystem<TrainView>>,
                         System<train::FlowCompletionSystem<TrainView>>, System<train::RankSystem<TrainView>>,
                         CommitAll, AdvanceClocks>;

/// Steps a training world runs per executor call before results are collected.
inline constexpr int64_t kTrainingStepsPerRun = 4096;

}  // namespace mv
