/**
 * @file estimate.cpp
 * Memory of one experiment, measured by building it.
 */
#include "experiments/estimate.hpp"

#include <cstdio>
#include <iterator>

#include "systems/training_sim.hpp"

namespace mv {

MemoryEstimate MemoryMeter::measure(const ExpandedExperiment& expanded, const TrainingExperiment& x) {
  if (!fitsGpuMemory(x)) return MemoryEstimate{};
  const auto [it, fresh] = by_key_.try_emplace(sizingKey(expanded.config));
  if (fresh) {
    SimulationOptions options;
    options.trace = trace_;
    const TrainingFootprint f = measureFootprint(x, options);
    it->second = MemoryEstimate{
        .training = static_cast<int64_t>(f.program_bytes + f.rank_bytes + f.collective_bytes),
        .network = static_cast<int64_t>(f.network_bytes),
        .run = static_cast<int64_t>(f.run_bytes),
        .total = static_cast<int64_t>(f.total_bytes)};
    ++builds_;
  }
  return it->second;
}

std::vector<MemoryEstimate> measureSweep(const Sweep& sweep, const std::vector<TrainingExperiment>& xs,
                                         MemoryMeter& meter, Diagnostics& diags) {
  std::vector<MemoryEstimate> out(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    try {
      out[i] = meter.measure(sweep.experiments[i], xs[i]);
    } catch (const TrainingError& e) {
      diags.add(Diagnostic{sweep.file.string(), 0, "", e.what()});
    }
  }
  return out;
}

std::string formatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return text;
}

}  // namespace mv
