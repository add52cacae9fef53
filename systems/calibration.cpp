/**
 * @file calibration.cpp
 * The Megatron-LM calibration runs, their simulated errors, and the leave-one-out fit of
 * the compute model's knobs.
 */
#include "systems/calibration.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <span>
#include <stdexcept>

#include "systems/training_sim.hpp"
#include "topologies/generators.hpp"
#include "workloads/flops.hpp"

namespace mv {
namespace {

constexpr uint32_t kSeq = 2048;
constexpr double kA100Peak = 312e12;

/// A Megatron-LM run on Selene: A100 80GB, DGX servers with eight 200 Gb/s NICs on a
/// rail-optimised fabric, analytical fidelity; `vpp` model chunks per GPU (the interleaved
/// schedule when more than one). Collectives between servers are the default ring in NCCL's
/// channels (one per GPU of the group on a server), so a group with several GPUs per server
/// crosses between servers on every rail, as NCCL's does. Pipeline messages are batched and
/// waited on, as Megatron-LM exchanged them.
TrainingExperiment seleneRun(const ModelSpec& model, uint32_t tp, uint32_t pp, uint32_t vpp, uint32_t gpus,
                             uint32_t global_batch, uint32_t micro_batch) {
  TrainingExperiment x;
  x.name = model.name;
  x.id = 0;  // set per run by megatronCalibrationRuns
  x.model = model;
  x.training.global_batch = global_batch;
  x.training.micro_batch = micro_batch;
  x.training.seq = kSeq;
  x.parallelism.tp = tp;
  x.parallelism.pp = pp;
  x.parallelism.vpp = vpp;
  if (vpp > 1) x.parallelism.schedule = PipelineSchedule::kInterleaved;
  x.parallelism.pp_comm_overlap = false;
  x.parallelism.dp = gpus / (tp * pp);
  x.cluster.gpus = gpus;
  RailParams rail;
  rail.servers = std::max<uint32_t>(gpus / 8, 1);
  rail.spines = 8;
  rail.nic_rate = gigabitsPerSecond(200);
  rail.fabric_rate = gigabitsPerSecond(200);
  rail.nic_delay = microseconds(1);
  rail.fabric_delay = microseconds(1);
  x.topology = makeRailOptimized(rail);
  x.fidelity = NetworkFidelity::kAnalytical;
  return x;
}

/// A run of Korthikanti et al. 2022 (the Megatron-LM README's table) with `dp` model
/// instances, the batch per instance kept: selective recomputation and sequence
/// parallelism, the gradient all-reduce not overlapped (their Section 6.3).
TrainingExperiment megatron2022Run(const MegatronMfuRow& row, uint32_t dp) {
  TrainingExperiment x =
      seleneRun(row.model, 8, row.pp, row.vpp, row.gpus * dp, row.global_batch * dp, row.micro_batch);
  x.parallelism.recompute = Recompute::kSelective;
  x.parallelism.sequence_parallel = true;
  x.parallelism.dp_comm_overlap = false;
  return x;
}

Picoseconds fromSeconds(double s) {
  return Picoseconds{static_cast<int64_t>(std::llround(s * 1e12))};
}

/// The knobs the fit moves, as a vector, clamped to their ranges.
constexpr size_t kKnobs = 5;
using Knobs = std::array<double, kKnobs>;
constexpr Knobs kLower = {0.3, 0.5, 0.3, 0.5, 0.5};
constexpr Knobs kUpper = {1.0, 1.0, 1.0, 2.0, 1.0};

CalibrationKnobs withKnobs(CalibrationKnobs c, const Knobs& k) {
  c.compute.gemm.ceiling = std::clamp(k[0], kLower[0], kUpper[0]);
  c.compute.gemm.small_tile = std::clamp(k[1], kLower[1], kUpper[1]);
  c.compute.memory_efficiency = std::clamp(k[2], kLower[2], kUpper[2]);
  c.tp_bandwidth_factor = std::clamp(k[3], kLower[3], kUpper[3]);
  c.compute.gemm.gradient = std::clamp(k[4], kLower[4], kUpper[4]);
  return c;
}
Knobs knobsOf(const CalibrationKnobs& c) {
  return {c.compute.gemm.ceiling, c.compute.gemm.small_tile, c.compute.memory_efficiency, c.tp_bandwidth_factor,
          c.compute.gemm.gradient};
}

/// The compute model's own iteration (no communication) of `x` with `p`.
double computeOnlySeconds(const TrainingExperiment& x, const ComputeModelParams& p) {
  const ComputeModel cm(computeSpecOf(clusterGpu(x.cluster)), p, x.operator_times);
  return cm.iterationTime(x.model, x.training, x.parallelism).total.toSeconds();
}

/// One simulated run: its iteration, and the TP time on its critical path (the exposed TP
/// time, and its share of the bubble, (p − 1)/m of it), seconds.
struct Simulated {
  double iteration = 0;
  double tp = 0;
};

/// Simulates run i with knobs[i]: each run's whole result.
std::vector<TrainingResult> simulateResults(const std::vector<CalibrationRun>& runs,
                                            const std::vector<CalibrationKnobs>& knobs, uint32_t threads) {
  std::vector<TrainingExperiment> xs;
  for (size_t i = 0; i < runs.size(); ++i) {
    xs.push_back(runs[i].experiment);
    xs.back().cluster.compute = knobs[i].compute;
    xs.back().cluster.tp_bandwidth_factor = knobs[i].tp_bandwidth_factor;
  }
  SimulationOptions o;
  o.threads = threads;
  std::vector<TrainingResult> results = simulateTraining(xs, o);
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].oom || !results[i].error.empty()) {
      throw std::runtime_error("calibration run " + runs[i].experiment.name + " did not simulate: " +
                               (results[i].oom ? std::string("out of memory") : results[i].error));
    }
  }
  return results;
}

/// Simulates run i with knobs[i]: its iteration and the TP time on its critical path.
std::vector<Simulated> simulate(const std::vector<CalibrationRun>& runs, const std::vector<CalibrationKnobs>& knobs,
                                uint32_t threads) {
  const std::vector<TrainingResult> results = simulateResults(runs, knobs, threads);
  std::vector<Simulated> out;
  for (size_t i = 0; i < results.size(); ++i) {
    const TrainingExperiment& x = runs[i].experiment;
    const double m = microBatchCount(x.training, x.parallelism);
    const double p = std::max<uint32_t>(x.parallelism.pp, 1);
    out.push_back({results[i].iteration.toSeconds(), results[i].exposed_tp.toSeconds() * (1 + (p - 1) / m)});
  }
  return out;
}

/// Largest |error| over the runs `use` of the surrogate (compute model with `k`, the TP
/// time `tp` scaled by the factor it was simulated with over `k`'s, and each run's remainder
/// `rest`) and over the per-layer passes of korthikantiLayerTable (simulated directly),
/// plus a small share of the root mean square to break ties. With the backward's TP
/// overlap the exposed TP time also depends on the GEMM knobs and is not exactly inverse in
/// the factor; the surrogate only steers the search, and every reported error comes from a
/// full simulation, which the next round's surrogate starts from.
double objective(const std::vector<CalibrationRun>& runs, const std::vector<size_t>& use,
                 const std::vector<double>& rest, const std::vector<double>& tp, const CalibrationKnobs& base,
                 const Knobs& k) {
  const CalibrationKnobs c = withKnobs(base, k);
  double worst = 0;
  double squares = 0;
  for (size_t i : use) {
    const double t = computeOnlySeconds(runs[i].experiment, c.compute) +
                     tp[i] * base.tp_bandwidth_factor / c.tp_bandwidth_factor + rest[i];
    const double e = t / runs[i].measured.toSeconds() - 1;
    worst = std::max(worst, std::abs(e));
    squares += e * e;
  }
  for (const LayerMeasurement& row : korthikantiLayerTable()) {
    const LayerPassTimes layer = simulatedLayer(row, c);
    for (const double e : {layer.forward().toSeconds() * 1e3 / row.forward_ms - 1,
                           layer.backward().toSeconds() * 1e3 / row.backward_ms - 1}) {
      worst = std::max(worst, std::abs(e));
      squares += e * e;
    }
  }
  return worst + 0.1 * std::sqrt(squares / static_cast<double>(use.size() + 2 * korthikantiLayerTable().size()));
}

/// Nelder–Mead from `x0` (steps `scale`), `iterations` iterations.
Knobs nelderMead(const std::function<double(const Knobs&)>& f, const Knobs& x0, const Knobs& scale, int iterations) {
  constexpr size_t n = kKnobs;
  std::array<Knobs, n + 1> pts;
  std::array<double, n + 1> val{};
  for (size_t i = 0; i <= n; ++i) {
    pts[i] = x0;
    if (i > 0) pts[i][i - 1] += scale[i - 1];
    val[i] = f(pts[i]);
  }
  for (int it = 0; it < iterations; ++it) {
    std::array<size_t, n + 1> order{};
    for (size_t i = 0; i <= n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return val[a] < val[b]; });
    const size_t best = order[0], worst = order[n], second = order[n - 1];
    Knobs centroid{};
    for (size_t i = 0; i < n; ++i) {
      for (size_t d = 0; d < n; ++d) centroid[d] += pts[order[i]][d] / n;
    }
    auto along = [&](double t) {
      Knobs r;
      for (size_t d = 0; d < n; ++d) r[d] = centroid[d] + t * (pts[worst][d] - centroid[d]);
      return r;
    };
    const Knobs reflected = along(-1);
    const double fr = f(reflected);
    if (fr < val[best]) {
      const Knobs expanded = along(-2);
      const double fe = f(expanded);
      pts[worst] = fe < fr ? expanded : reflected;
      val[worst] = std::min(fe, fr);
    } else if (fr < val[second]) {
      pts[worst] = reflected;
      val[worst] = fr;
    } else {
      const Knobs contracted = along(0.5);
      const double fc = f(contracted);
      if (fc < val[worst]) {
        pts[worst] = contracted;
        val[worst] = fc;
      } else {
        for (size_t i = 0; i <= n; ++i) {
          if (i == best) continue;
          for (size_t d = 0; d < n; ++d) pts[i][d] = pts[best][d] + 0.5 * (pts[i][d] - pts[best][d]);
          val[i] = f(pts[i]);
        }
      }
    }
  }
  size_t best = 0;
  for (size_t i = 1; i <= n; ++i) {
    if (val[i] < val[best]) best = i;
  }
  return pts[best];
}

/// The knobs minimising the surrogate objective over `use`: Nelder–Mead from a grid of
/// starts. `base` holds the knobs `tp` and `rest` were simulated with.
CalibrationKnobs searchKnobs(const std::vector<CalibrationRun>& runs, const std::vector<size_t>& use,
                             const std::vector<double>& rest, const std::vector<double>& tp,
                             const CalibrationKnobs& base) {
  const auto f = [&](const Knobs& k) { return objective(runs, use, rest, tp, base, k); };
  Knobs best = knobsOf(base);
  double best_value = f(best);
  for (double ceiling : {0.65, 0.8}) {
    for (double small : {0.8, 0.95}) {
      for (double memory : {0.6, 0.85}) {
        for (double tp_factor : {1.0, 1.4}) {
          const Knobs k = nelderMead(f, {ceiling, small, memory, tp_factor, 0.9}, {0.05, 0.05, 0.1, 0.1, 0.05}, 200);
          const double v = f(k);
          if (v < best_value) {
            best_value = v;
            best = k;
          }
        }
      }
    }
  }
  return withKnobs(base, nelderMead(f, best, {0.01, 0.01, 0.02, 0.02, 0.01}, 300));
}

/// Each run's simulated iteration over its measured one, less 1; `seconds(i)` is run i's
/// simulated iteration in seconds.
template <typename Seconds>
std::vector<double> relativeErrors(const std::vector<CalibrationRun>& runs, Seconds seconds) {
  std::vector<double> e;
  for (size_t i = 0; i < runs.size(); ++i) e.push_back(seconds(i) / runs[i].measured.toSeconds() - 1);
  return e;
}

std::vector<double> errorsOf(const std::vector<CalibrationRun>& runs, const std::vector<Simulated>& sims) {
  return relativeErrors(runs, [&](size_t i) { return sims[i].iteration; });
}

}  // namespace

std::vector<CalibrationRun> megatronCalibrationRuns() {
  std::vector<CalibrationRun> runs;
  for (const MegatronRow& row : megatronSc21Table()) {
    CalibrationRun r{"SC'21 Table 1",
                     seleneRun(row.model, row.tp, row.pp, row.vpp, row.gpus, row.global_batch, row.micro_batch),
                     {}};
    r.experiment.parallelism.recompute = Recompute::kFull;
    r.experiment.training.precision = TrainingPrecision::kFp16;  // gradients reduced in fp16
    r.experiment.parallelism.tp_comm_overlap = false;            // Megatron-LM of 2021
    r.experiment.parallelism.dp_comm_overlap = row.dp_overlap;
    const double flops = megatronFormulaFlops(row.model, row.global_batch, kSeq, true);
    r.measured = fromSeconds(flops / (row.gpus * row.tflops_per_gpu * 1e12));
    runs.push_back(r);
  }
  for (const MegatronMfuRow& row : megatronSelectiveTable()) {
    CalibrationRun r{"Megatron-LM README", megatron2022Run(row, 1), {}};
    const double flops = megatronFormulaFlops(row.model, row.global_batch, kSeq, false);
    r.measured = fromSeconds(flops / (row.gpus * row.mfu * kA100Peak));
    CalibrationRun full = r;
    full.source = "Korthikanti Table 5";
    full.experiment.name += "-full";
    full.experiment.parallelism.recompute = Recompute::kFull;
    full.experiment.parallelism.sequence_parallel = false;
    full.measured = fromSeconds(row.full_recompute_seconds);
    runs.push_back(r);
    runs.push_back(full);
  }
  // Korthikanti et al. 2022, Section 6.3: the 530B run with 8-way data parallelism (2,240
  // GPUs), 39.15 s.
  CalibrationRun dp{"Korthikanti Section 6.3", megatron2022Run(megatronSelectiveTable()[2], 8), fromSeconds(39.15)};
  dp.experiment.name += "-dp8";
  runs.push_back(dp);
  for (size_t i = 0; i < runs.size(); ++i) runs[i].experiment.id = i + 1;
  return runs;
}

std::vector<TrainingResult> simulatedResults(const std::vector<CalibrationRun>& runs, const CalibrationKnobs& knobs,
                                             uint32_t threads) {
  return simulateResults(runs, std::vector<CalibrationKnobs>(runs.size(), knobs), threads);
}

std::vector<double> iterationErrors(const std::vector<CalibrationRun>& runs,
                                    const std::vector<TrainingResult>& results) {
  return relativeErrors(runs, [&](size_t i) { return results[i].iteration.toSeconds(); });
}

std::vector<double> simulatedErrors(const std::vector<CalibrationRun>& runs, const CalibrationKnobs& knobs,
                                    uint32_t threads) {
  return iterationErrors(runs, simulatedResults(runs, knobs, threads));
}

CalibrationFit fitComputeModel(const std::vector<CalibrationRun>& runs, const CalibrationKnobs& start, uint32_t rounds,
                               bool leave_one_out, uint32_t threads) {
  CalibrationFit fit;
  fit.knobs = start;
  std::vector<size_t> all(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) all[i] = i;
  std::vector<double> rest(runs.size());
  std::vector<double> tp(runs.size());
  auto split = [&](const std::vector<Simulated>& sims) {
    for (size_t i = 0; i < runs.size(); ++i) {
      tp[i] = sims[i].tp;
      rest[i] = sims[i].iteration - sims[i].tp - computeOnlySeconds(runs[i].experiment, fit.knobs.compute);
    }
  };
  std::vector<Simulated> sims = simulate(runs, std::vector<CalibrationKnobs>(runs.size(), fit.knobs), threads);
  for (uint32_t round = 0; round < rounds; ++round) {
    split(sims);
    fit.knobs = searchKnobs(runs, all, rest, tp, fit.knobs);
    sims = simulate(runs, std::vector<CalibrationKnobs>(runs.size(), fit.knobs), threads);
  }
  fit.fit_error = errorsOf(runs, sims);
  if (!leave_one_out) return fit;
  split(sims);
  for (size_t out = 0; out < runs.size(); ++out) {
    std::vector<size_t> others;
    for (size_t i : all) {
      if (i != out) others.push_back(i);
    }
    fit.held_out_knobs.push_back(searchKnobs(runs, others, rest, tp, fit.knobs));
  }
  fit.held_out_error = errorsOf(runs, simulate(runs, fit.held_out_knobs, threads));
  return fit;
}

std::vector<LayerMeasurement> korthikantiLayerTable() {
  return {
      {"no recomputation", false, Recompute::kNone, 7.7, 11.9},
      {"sequence parallelism", true, Recompute::kNone, 7.2, 11.8},
      {"full recomputation", false, Recompute::kFull, 7.7, 19.5},
      {"selective recomputation", false, Recompute::kSelective, 7.7, 13.2},
      {"selective + sequence parallelism", true, Recompute::kSelective, 7.2, 13.1},
  };
}

LayerPassTimes simulatedLayer(const LayerMeasurement& row, const CalibrationKnobs& knobs) {
  const MegatronMfuRow& run = megatronSelectiveTable().front();  // the 22B model
  TrainingExperiment x = megatron2022Run(run, 1);
  x.parallelism.recompute = row.recompute;
  x.parallelism.sequence_parallel = row.sequence_parallel;
  x.cluster.tp_bandwidth_factor = knobs.tp_bandwidth_factor;
  const GpuSpec gpu = clusterGpu(x.cluster);
  const ComputeModel compute(computeSpecOf(gpu), knobs.compute, x.operator_times);
  return layerPassTimes(x.model, x.training, x.parallelism, compute, programOptionsOf(x, gpu));
}

}  // namespace mv
