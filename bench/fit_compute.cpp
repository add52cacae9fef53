/**
 * @file fit_compute.cpp
 * Fits the compute model's knobs (GEMM ceiling, small-tile speed, gradient GEMMs' efficiency,
 * HBM efficiency, TP bandwidth factor) to the published Megatron-LM runs
 * (systems/calibration.hpp) and prints, per run, the measured and simulated iteration, the
 * error of the fit and the error when the run is left out of the fit (leave one out), then
 * checks one layer's forward and backward against Korthikanti et al.'s per-layer
 * measurements and lists that layer's kernels, operator by operator; between them, where
 * each run's simulated iteration goes (compute, exposed communication, bubble). `--evaluate`
 * only simulates the runs with the shipped defaults.
 */
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "systems/calibration.hpp"

namespace mv {
namespace {

void printKnobs(const char* what, const CalibrationKnobs& k) {
  const ComputeModelParams& p = k.compute;
  std::printf(
      "%s: gemm_ceiling %.4f, gemm_small_tile %.4f, gemm_gradient %.4f, memory_efficiency %.4f, tp_bandwidth_factor "
      "%.4f\n",
      what, p.gemm.ceiling, p.gemm.small_tile, p.gemm.gradient, p.memory_efficiency, k.tp_bandwidth_factor);
}

double worstOf(const std::vector<double>& e) {
  double w = 0;
  for (double x : e) w = std::max(w, std::abs(x));
  return w;
}

/// One layer of the 22B model against Korthikanti et al.'s Table 4 (in the fit).
void printLayerCheck(const CalibrationKnobs& knobs) {
  std::printf("\nPer layer, 22B model (Korthikanti et al. 2022, Table 4; in the fit), ms:\n\n");
  std::printf("| experiment | forward measured | simulated | error | backward measured | simulated | error |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  double worst = 0;
  for (const LayerMeasurement& row : korthikantiLayerTable()) {
    const LayerPassTimes t = simulatedLayer(row, knobs);
    const double fwd = t.forward().toSeconds() * 1e3;
    const double bwd = t.backward().toSeconds() * 1e3;
    worst = std::max({worst, std::abs(fwd / row.forward_ms - 1), std::abs(bwd / row.backward_ms - 1)});
    std::printf("| %s | %.1f | %.2f | %+.1f %% | %.1f | %.2f | %+.1f %% |\n", row.name.c_str(), row.forward_ms, fwd,
                100 * (fwd / row.forward_ms - 1), row.backward_ms, bwd, 100 * (bwd / row.backward_ms - 1));
  }
  std::printf("largest per-layer |error|: %.1f %%\n", 100 * worst);
}

/// The kernels of one layer of the 22B run (`x`: micro-batch 4, TP 8) without and with
/// sequence parallelism, with `knobs`: where the per-layer passes' time goes.
void printLayerOperators(TrainingExperiment x, const CalibrationKnobs& knobs) {
  std::printf("\nPer operator, the same layer with the knobs above (no recomputation), ms:\n\n");
  std::printf("| operator | kind | forward | backward | forward with SP | backward with SP |\n");
  std::printf("|---|---|---|---|---|---|\n");
  const ComputeModel cm(computeSpecOf(clusterGpu(x.cluster)), knobs.compute, x.operator_times);
  const TrainingPrecision precision = x.training.precision;
  x.parallelism.recompute = Recompute::kNone;
  x.parallelism.sequence_parallel = false;
  const std::vector<Operator> plain = layerOperators(x.model, x.training, x.parallelism);
  x.parallelism.sequence_parallel = true;
  const std::vector<Operator> sp = layerOperators(x.model, x.training, x.parallelism);
  const auto ms = [](Picoseconds t) { return t.toSeconds() * 1e3; };
  for (size_t i = 0; i < plain.size() && i < sp.size(); ++i) {
    const Operator& op = plain[i];
    std::printf("| %s | %s%s | %.3f | %.3f | %.3f | %.3f |\n", std::string(op.name).c_str(),
                op.kind == OpKind::kGemm ? "GEMM" : "memory", op.attention_core ? ", attention core" : "",
                ms(cm.forwardTime(op, precision)), ms(cm.backwardTime(op, precision)),
                ms(cm.forwardTime(sp[i], precision)), ms(cm.backwardTime(sp[i], precision)));
  }
  const LayerPassTimes without = simulatedLayer(LayerMeasurement{"", false, Recompute::kNone, 0, 0}, knobs);
  const LayerPassTimes with = simulatedLayer(LayerMeasurement{"", true, Recompute::kNone, 0, 0}, knobs);
  std::printf("| TP collectives | exposed | %.3f | %.3f | %.3f | %.3f |\n", ms(without.tp_forward),
              ms(without.tp_backward), ms(with.tp_forward), ms(with.tp_backward));
  std::printf("| the pass | | %.3f | %.3f | %.3f | %.3f |\n", ms(without.forward()), ms(without.backward()),
              ms(with.forward()), ms(with.backward()));
}

/**
 * Where each run's simulated iteration goes, in seconds: the critical rank's compute and
 * exposed TP, PP and DP time, its bubble, and the part of that bubble a balanced pipeline
 * has while it fills and drains, (p − 1)/(v·m) of compute + TP (p stages, v model chunks
 * per GPU, m micro-batches); the rest of the bubble is waiting on slower stages (the last
 * stage's output layer and loss) and on pipeline messages.
 */
void printBreakdown(const std::vector<CalibrationRun>& runs, const std::vector<TrainingResult>& results) {
  std::printf("\nWhere each simulated iteration goes, s (the critical rank):\n\n");
  std::printf(
      "| run | measured | simulated | compute | exposed TP | exposed PP | exposed DP | bubble | of it, the "
      "pipeline's fill | the rest |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < runs.size(); ++i) {
    const TrainingExperiment& x = runs[i].experiment;
    const TrainingResult& r = results[i];
    const double p = std::max<uint32_t>(x.parallelism.pp, 1);
    const double v = std::max<uint32_t>(x.parallelism.vpp, 1);
    const double m = microBatchCount(x.training, x.parallelism);
    const double busy = r.compute.toSeconds() + r.exposed_tp.toSeconds();
    const double fill = std::min(r.bubble.toSeconds(), busy * (p - 1) / (v * m));
    std::printf("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", x.name.c_str(),
                runs[i].measured.toSeconds(), r.iteration.toSeconds(), r.compute.toSeconds(), r.exposed_tp.toSeconds(),
                r.exposed_pp.toSeconds(), r.exposed_dp.toSeconds(), r.bubble.toSeconds(), fill,
                r.bubble.toSeconds() - fill);
  }
}

int run(int argc, char** argv) {
  CLI::App app{"Fit the compute model to published Megatron-LM runs, with leave-one-out errors"};
  uint32_t threads = 2;
  uint32_t rounds = 2;
  bool evaluate = false;
  app.add_option("--threads", threads, "simulation threads")->check(CLI::Range(1, 256));
  app.add_option("--rounds", rounds, "simulate-then-search rounds of the fit")->check(CLI::Range(1, 10));
  app.add_flag("--evaluate", evaluate, "only simulate the runs with the shipped defaults");
  CLI11_PARSE(app, argc, argv);

  const auto begin = std::chrono::steady_clock::now();
  const std::vector<CalibrationRun> runs = megatronCalibrationRuns();
  CalibrationFit fit;
  if (!evaluate) fit = fitComputeModel(runs, CalibrationKnobs{}, rounds, true, threads);
  const std::vector<TrainingResult> results = simulatedResults(runs, fit.knobs, threads);
  if (evaluate) fit.fit_error = iterationErrors(runs, results);
  std::printf("| run | source | TP | PP | GPUs | recompute | measured s | %s | held out |\n",
              evaluate ? "defaults" : "fit");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < runs.size(); ++i) {
    const TrainingExperiment& x = runs[i].experiment;
    const char* recompute = x.parallelism.recompute == Recompute::kFull ? "full" : "selective + SP";
    std::string held = "";
    if (!fit.held_out_error.empty()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%+.1f %%", 100 * fit.held_out_error[i]);
      held = buf;
    }
    std::printf("| %s | %s | %u | %u | %u | %s | %.3f | %+.1f %% | %s |\n", x.name.c_str(), runs[i].source.c_str(),
                x.parallelism.tp, x.parallelism.pp, x.cluster.gpus, recompute, runs[i].measured.toSeconds(),
                100 * fit.fit_error[i], held.c_str());
  }
  printKnobs(evaluate ? "defaults" : "fitted to all runs", fit.knobs);
  std::printf("largest |error|: %.1f %%", 100 * worstOf(fit.fit_error));
  if (!fit.held_out_error.empty()) std::printf(", held out %.1f %%", 100 * worstOf(fit.held_out_error));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::printf(" (%.0f s)\n", seconds);
  for (size_t i = 0; i < fit.held_out_knobs.size(); ++i) {
    printKnobs(("  without " + runs[i].experiment.name).c_str(), fit.held_out_knobs[i]);
  }
  printBreakdown(runs, results);
  printLayerCheck(fit.knobs);
  for (const CalibrationRun& r : runs) {
    if (r.experiment.name == "megatron-22b") printLayerOperators(r.experiment, fit.knobs);
  }
  return 0;
}

}  // namespace
}  // namespace mv

int main(int argc, char** argv) {
  return mv::run(argc, argv);
}
