/**
 * @file estimate.cpp
 * Memory of one experiment, measured by building it.
 */
#include "experiments/estimate.hpp"

#include <unistd.h>

#include <algorithm>

#include "experiments/experiment_yaml.hpp"
#include "systems/training_sim.hpp"
#include "workloads/model.hpp"

namespace mv {

MemoryEstimate MemoryMeter::measure(const ExpandedExperiment& expanded, const TrainingExperiment& x) {
  if (!fitsGpuMemory(x)) return MemoryEstimate{};
  const std::string key = sizingKey(expanded.config);
  if (const auto it = by_key_.find(key); it != by_key_.end()) return it->second;
  // A configuration whose build threw throws the same again, for every experiment of it,
  // without another build.
  if (const auto it = failed_.find(key); it != failed_.end()) std::rethrow_exception(it->second);
  SimulationOptions options;
  options.trace = recording_.trace;
  options.network_detail = recording_.network_detail;
  options.memory_budget = budget_;
  ++builds_;
  TrainingFootprint f;
  try {
    f = measureFootprint(x, options);
  } catch (...) {
    failed_.emplace(key, std::current_exception());
    throw;
  }
  return by_key_
      .emplace(key,
               MemoryEstimate{.training = static_cast<int64_t>(f.program_bytes + f.rank_bytes + f.collective_bytes),
                              .network = static_cast<int64_t>(f.network_bytes),
                              .run = static_cast<int64_t>(f.run_bytes),
                              .total = static_cast<int64_t>(f.total_bytes)})
      .first->second;
}

MemoryEstimate measureExperiment(const Sweep& sweep, size_t i, const TrainingExperiment& x, MemoryMeter& meter,
                                 int64_t budget, Diagnostics& diags) {
  MemoryEstimate m;
  try {
    // Into an object of its own: `m = measure()` let GCC 12 at -O3 build the result in `m`'s
    // place, and a throw left `m` holding garbage (a spurious "needs 7457 PiB" problem).
    const MemoryEstimate measured = meter.measure(sweep.experiments[i], x);
    m = measured;
  } catch (const TrainingError& e) {
    diags.add(Diagnostic{sweep.file.string(), 0, "", e.what()});
  } catch (const WorkloadError& e) {
    // What Chakra traces and SimAI files hold is checked when their programs are built.
    const std::string what = e.what();
    const bool groups = !x.chakra_groups.empty() && what.starts_with(x.chakra_groups + ":");
    const std::string key = !x.simai.empty()   ? "workload.simai"
                            : groups           ? "workload.chakra_groups"
                            : x.chakra.empty() ? ""
                                               : "workload.chakra";
    Diagnostic d{sweep.file.string(), key.empty() ? 0 : keyLine(sweep.experiments[i], key), key, e.what()};
    // Experiments that share the traces share their problem: said once.
    const auto& seen = diags.items();
    if (std::none_of(seen.begin(), seen.end(), [&](const Diagnostic& o) {
          return o.line == d.line && o.key == d.key && o.message == d.message;
        })) {
      diags.add(std::move(d));
    }
  }
  if (budget > 0 && m.total > budget) {
    diags.add(Diagnostic{sweep.file.string(), 0, "",
                         "experiment '" + x.name + "' needs " + formatBytes(m.total) +
                             " of simulation memory, more than the memory budget of " + formatBytes(budget) +
                             " (--max-memory; default half the RAM)"});
  }
  return m;
}

std::vector<MemoryEstimate> measureSweep(const Sweep& sweep, const std::vector<TrainingExperiment>& xs,
                                         MemoryMeter& meter, int64_t budget, Diagnostics& diags) {
  std::vector<MemoryEstimate> out(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) out[i] = measureExperiment(sweep, i, xs[i], meter, budget, diags);
  return out;
}

int64_t defaultMemoryBudget() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / 2 : int64_t{4} << 30;
}

}  // namespace mv
