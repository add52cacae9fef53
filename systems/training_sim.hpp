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
#include "workloads/task_graph.hpp"

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

/// Experiment x's iteration from its compute alone (the compute model's pipeline with its
/// bubble and optimizer step, no communication): a lower bound of its simulated iteration;
/// zero for a Chakra workload, whose tasks the model does not describe.
Picoseconds computeOnlyIteration(const TrainingExperiment& x);

/// The program experiment x runs: generated from its model and parallelism, or read from its
/// Chakra traces (docs/chakra.md). Throws WorkloadError for traces that cannot run.
TrainingProgram trainingProgramOf(const TrainingExperiment& x);

/// How experiment x's program is generated on `gpu`: its TP collective model and factor,
/// DP bucket, offload copy rate and GEMM overlap slowdown.
ProgramOptions programOptionsOf(const TrainingExperiment& x, const GpuSpec& gpu);

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

/// What one experiment costs the simulator: table rows and the bytes their buffers hold,
/// sized as simulateTraining sizes a batch (static tables fitted to their rows, run tables
/// for the experiment's flows per step): a batch holds about the sum over its experiments.
struct TrainingFootprint {
  int64_t ranks = 0;
  int64_t template_tasks = 0;   ///< tasks over the stage programs (shared by the ranks of a stage)
  int64_t rank_tasks = 0;       ///< per-rank task states
  int64_t rank_comms = 0;       ///< per-rank communication states (sends, receives, collectives)
  int64_t rank_sents = 0;       ///< per-rank send times (receives and their successors)
  int64_t collectives = 0;
  int64_t transfer_states = 0;  ///< per-instance transfer counters (packet fidelity)
  int64_t network_rows = 0;
  int64_t flows_per_step = 0;   ///< most flows the experiment may create in one step
  std::size_t program_bytes = 0;
  std::size_t rank_bytes = 0;
  std::size_t collective_bytes = 0;
  std::size_t network_bytes = 0;  ///< network rows and pooled packet storage
  std::size_t run_bytes = 0;      ///< tables filled during the run: packet flows, flow records, trace spans
  std::size_t total_bytes = 0;
  /// Of the total, the tables a run only reads and that follow from the cluster, the
  /// parallelism and the model's shape alone (stage programs, collective members, shapes and
  /// ring phases, routing): what experiments differing in anything else could share.
  std::size_t structure_bytes = 0;
  /// Host time to generate the programs and fill (or count) the tables.
  double build_seconds = 0;
};

/// How measureFootprint finds an experiment's bytes.
enum class FootprintMethod {
  /// Builds every table but the two that grow with the cluster, the ranks' task states and
  /// the packet pools (link, NIC control and switch slots), whose bytes it counts from their
  /// row counts: what `validate` and the batcher use; a 54,000-GPU experiment is measured in
  /// seconds without holding its states or pools.
  kCount,
  /// Builds every table as a run does (the tests check that both give the same bytes).
  kBuild,
};

/// Builds `x` alone into a world and measures it (nothing is simulated); `options.trace`
/// adds the trace spans. Throws like simulateTraining for an invalid experiment.
TrainingFootprint measureFootprint(const TrainingExperiment& x, const SimulationOptions& options = {},
                                   FootprintMethod how = FootprintMethod::kCount);

/// False when `x` does not fit in its GPUs' memory: simulateTraining reports it as out of
/// memory without simulating it.
bool fitsGpuMemory(const TrainingExperiment& x);

/// The training step graph, printed (text or Graphviz DOT).
std::string describeTrainingGraph(bool dot);

}  // namespace mv
