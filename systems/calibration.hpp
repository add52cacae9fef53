/**
 * @file calibration.hpp
 * The published Megatron-LM runs the compute model is fitted to, and the fit itself: the
 * roofline's GEMM and memory knobs chosen so that whole simulated iterations (compute plus
 * the simulated TP, PP and DP communication, analytical fidelity) reproduce the measured
 * ones, with each run's error when it is left out of the fit (docs/workloads.md
 * "Calibration"). Host-side only; `mv_fit_compute` (bench/) prints the tables.
 */
#pragma once

#include <compare>  // ecs/units.hpp uses <=> without including it
#include <cstdint>
#include <string>
#include <vector>

#include "systems/training_spec.hpp"
#include "workloads/task_graph.hpp"

namespace mv {

/// One published run as an experiment, with the iteration time its publication implies.
struct CalibrationRun {
  std::string source;  ///< "SC'21 Table 1", "Megatron-LM README", "Korthikanti Table 5", ...
  TrainingExperiment experiment;
  Picoseconds measured;
};

/**
 * Megatron-LM SC'21 Table 1 (ten runs, full recomputation; iteration = formula FLOPs with
 * recomputation / (GPUs · achieved TFLOP/s)); the Megatron-LM README's MFU table (four
 * runs, selective recomputation and sequence parallelism, DP 1; iteration = model FLOPs /
 * (GPUs · MFU · 312 TFLOP/s)), each followed by the same run with full recomputation and
 * no sequence parallelism (Korthikanti et al. 2022, Table 5); and the README's 530B run with
 * 8-way data parallelism (their Section 6.3): A100 80GB, each SC'21 run with the
 * micro-batch, schedule and DP overlap it was launched with (MegatronRow), the 2022 runs
 * with their micro-batch and schedule (MegatronMfuRow), eight 200 Gb/s NICs per server on a
 * rail-optimised fabric, analytical fidelity, default knobs.
 */
std::vector<CalibrationRun> megatronCalibrationRuns();

/// What the fit moves: the GEMM ceiling, small-tile speed and gradient GEMMs' efficiency,
/// the HBM efficiency, and the TP bandwidth factor (ClusterSpec::tp_bandwidth_factor).
struct CalibrationKnobs {
  ComputeModelParams compute = megatronA100Params();
  double tp_bandwidth_factor = kMegatronTpBandwidthFactor;
};

/// Each run's simulated result with `knobs` (one batch on `threads` threads).
std::vector<TrainingResult> simulatedResults(const std::vector<CalibrationRun>& runs, const CalibrationKnobs& knobs,
                                             uint32_t threads);

/// simulated / measured − 1 of each run's iteration, from its simulated result.
std::vector<double> iterationErrors(const std::vector<CalibrationRun>& runs,
                                    const std::vector<TrainingResult>& results);

/// simulated / measured − 1 of each run with `knobs` (one batch on `threads` threads).
std::vector<double> simulatedErrors(const std::vector<CalibrationRun>& runs, const CalibrationKnobs& knobs,
                                    uint32_t threads);

struct CalibrationFit {
  CalibrationKnobs knobs;
  /// Per run: simulated / measured − 1 with `knobs`.
  std::vector<double> fit_error;
  /// Per run: simulated / measured − 1 with the knobs fitted to the other runs (empty
  /// unless asked for).
  std::vector<double> held_out_error;
  /// Per run: the knobs fitted without it (empty unless asked for).
  std::vector<CalibrationKnobs> held_out_knobs;
};

/**
 * Fits the knobs, starting from `start`, to minimise the largest |error| over `runs` and
 * the per-layer measurements (korthikantiLayerTable, always in the fit: the leave-one-out
 * leaves out iteration runs only). Each
 * round simulates every run once and splits its iteration into the compute model's own
 * iteration, the TP time on the critical path and the rest (other exposed communication,
 * overlap); the knobs are then searched on that sum, the compute part recomputed and the TP
 * part scaled by the factor (Nelder–Mead from a grid of starts); `rounds` rounds. With
 * `leave_one_out`, each run is also predicted by a fit to the others (a full simulation
 * with those knobs).
 */
CalibrationFit fitComputeModel(const std::vector<CalibrationRun>& runs, const CalibrationKnobs& start, uint32_t rounds,
                               bool leave_one_out, uint32_t threads);

/**
 * One row of Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
 * Transformer Models", MLSys 2023), Table 4: one transformer layer of their 22B model
 * (Table 3: h 6144, 64 heads, TP 8, micro-batch 4, seq 2048) on Selene's A100s, forward
 * and backward (with recomputation, and the layer's TP communication), milliseconds.
 */
struct LayerMeasurement {
  std::string name;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  double forward_ms = 0;
  double backward_ms = 0;
};
std::vector<LayerMeasurement> korthikantiLayerTable();

/// The per-layer passes the simulator charges for `row` with `knobs` (layerPassTimes of
/// the 22B run, micro-batch 4, with the row's recomputation and sequence parallelism).
LayerPassTimes simulatedLayer(const LayerMeasurement& row, const CalibrationKnobs& knobs);

}  // namespace mv
