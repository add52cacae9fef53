/**
 * @file training_sim.hpp
 * Simulates training iterations: every experiment of a batch becomes rows of one world
 * (its network, its ranks' programs, its collectives) and one graph advances them all
 * (DESIGN.md §5): nic | switch → flow_completion → rank → commit → advance_clocks.
 */
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "systems/training_spec.hpp"

namespace mv {

/// An experiment that cannot be simulated as given (a user error: the front end reports it).
class TrainingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Checks what the simulation itself requires beyond validateParallelism (GPU names, group
/// placement, topology size, algorithms, table limits); returns one message per problem,
/// each starting with the sweep.yaml key it concerns.
std::vector<std::string> checkTrainingExperiment(const TrainingExperiment& x);

/// The memory of the stage with the largest per-GPU total.
MemoryBreakdown peakStageMemory(const TrainingExperiment& x);

/// Called once per experiment, as soon as its result is known (OOM ones first).
using ResultCallback = std::function<void(std::size_t index, const TrainingResult& result)>;

/**
 * Runs one iteration of every experiment in one batch and returns their results in input
 * order. Experiments that do not fit in GPU memory are reported OOM and not simulated.
 * Throws TrainingError for an invalid experiment (checkTrainingExperiment) and
 * std::runtime_error when the simulation stops on exhausted storage.
 */
std::vector<TrainingResult> simulateTraining(std::span<const TrainingExperiment> experiments,
                                             const SimulationOptions& options, const ResultCallback& on_result = {});

/// The training step graph, printed (text or Graphviz DOT).
std::string describeTrainingGraph(bool dot);

}  // namespace mv
