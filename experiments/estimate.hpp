/**
 * @file estimate.hpp
 * The memory one experiment's simulation takes, measured on the experiment alone
 * (measureFootprint: programs generated, tables filled and sized as a batch sizes them,
 * the task states and packet pools counted, nothing simulated): what `multiverse validate`
 * prints and what the runner sizes batches by. Experiments that differ only in name and
 * seed give the same tables, so a meter measures each distinct configuration once.
 */
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <unordered_map>
#include <vector>

#include "ecs/quantity.hpp"
#include "experiments/config_reader.hpp"
#include "experiments/sweep.hpp"
#include "systems/training_spec.hpp"

namespace mv {

/// Bytes one experiment adds to a batch, by what takes them.
struct MemoryEstimate {
  int64_t training = 0;  ///< stage programs, ranks and their task states, collectives
  int64_t network = 0;   ///< network rows and pooled packet storage (0 at the analytical fidelity)
  int64_t run = 0;       ///< tables filled during the run: flows, their records, trace spans, flow log
  int64_t total = 0;     ///< every buffer of the experiment's world, the above included
};

/// What a run records besides its results, which takes memory of its own.
struct Recording {
  bool trace = false;           ///< Chrome traces: a span per task
  bool network_detail = false;  ///< logged flows (links.csv's samples follow network.link_bin)
};

/// Measures experiments, one build per distinct configuration (sizingKey).
class MemoryMeter {
 public:
  /// `recording`: what the run records (Chrome trace spans, logged flows are counted). `budget`: the bytes
  /// one experiment may take (--max-memory); a packet network whose storage alone needs
  /// more is refused before it is built (0: no limit).
  explicit MemoryMeter(Recording recording = {}, int64_t budget = 0) : recording_(recording), budget_(budget) {}

  /// The memory of `x`, read from `expanded`; zero when it does not fit in its GPUs'
  /// memory (it is reported as out of memory, not simulated).
  MemoryEstimate measure(const ExpandedExperiment& expanded, const TrainingExperiment& x);

  /// Configurations built so far (those whose build threw included).
  int64_t builds() const { return builds_; }

 private:
  Recording recording_;
  int64_t budget_;
  int64_t builds_ = 0;
  std::unordered_map<std::string, MemoryEstimate> by_key_;
  std::unordered_map<std::string, std::exception_ptr> failed_;  ///< what a configuration's build threw
};

/**
 * Measures experiment `x`, read from `sweep.experiments[i]`: a build that fails or a total
 * above `budget` (when positive) becomes a diagnostic on the sweep file naming it (a failed
 * build's estimate stays zero).
 */
MemoryEstimate measureExperiment(const Sweep& sweep, size_t i, const TrainingExperiment& x, MemoryMeter& meter,
                                 int64_t budget, Diagnostics& diags);

/**
 * Measures experiment i of `xs`, read from `sweep.experiments[i]`, for every i. A build
 * that fails (a limit only building finds, such as tasks per stage) and an experiment that
 * needs more than `budget` bytes (when positive) become diagnostics on the sweep file
 * naming the experiment; a failed build's estimate stays zero.
 */
std::vector<MemoryEstimate> measureSweep(const Sweep& sweep, const std::vector<TrainingExperiment>& xs,
                                         MemoryMeter& meter, int64_t budget, Diagnostics& diags);

/// The default memory budget: half the machine's RAM.
int64_t defaultMemoryBudget();

}  // namespace mv
