#include <catch2/catch.hpp>

#include <span>
#include <vector>

#include "systems/training_sim.hpp"
#include "topologies/generators.hpp"
#include "workloads/flops.hpp"

namespace mv {
namespace {

/// Row `row` of Megatron-LM SC'21 Table 1 as the experiment the paper ran (A100 80GB,
/// micro-batch 1, full recomputation, 8 × 200 Gb/s NICs per server), analytical fidelity.
TrainingExperiment megatronRun(const MegatronRow& row) {
  TrainingExperiment x;
  x.name = row.model.name;
  x.id = static_cast<uint64_t>(row.gpus);
  x.model = row.model;
  x.training.global_batch = row.global_batch;
  x.training.micro_batch = 1;
  x.training.seq = 2048;
  x.parallelism.tp = row.tp;
  x.parallelism.pp = row.pp;
  x.parallelism.dp = row.gpus / (row.tp * row.pp);
  x.parallelism.recompute = Recompute::kFull;
  x.cluster.gpus = row.gpus;
  RailParams rail;
  rail.servers = row.gpus / 8;
  rail.spines = 8;
  rail.nic_rate = gigabitsPerSecond(200);
  rail.fabric_rate = gigabitsPerSecond(200);
  rail.nic_delay = microseconds(1);
  rail.fabric_delay = microseconds(1);
  x.topology = makeRailOptimized(rail);
  x.fidelity = NetworkFidelity::kAnalytical;
  return x;
}

TEST_CASE("simulated iterations reproduce every row of Megatron-LM SC'21 Table 1 within 5 %") {
  std::vector<TrainingExperiment> runs;
  const std::span<const MegatronRow> rows = megatronSc21Table();
  for (const MegatronRow& row : rows) runs.push_back(megatronRun(row));
  REQUIRE(runs.size() == 10);
  SimulationOptions o;
  o.threads = 2;
  const std::vector<TrainingResult> results = simulateTraining(runs, o);
  for (size_t i = 0; i < rows.size(); ++i) {
    const double flops = megatronFormulaFlops(rows[i].model, rows[i].global_batch, 2048, true);
    const double tflops = flops / (rows[i].gpus * static_cast<double>(results[i].iteration.ps) * 1e-12) / 1e12;
    const double error = tflops / rows[i].tflops_per_gpu - 1;
    INFO(rows[i].model.name << ": " << tflops << " TFLOP/s vs " << rows[i].tflops_per_gpu << " (" << 100 * error
                            << " %)");
    CHECK(std::abs(error) < 0.05);
  }
}

}  // namespace
}  // namespace mv
