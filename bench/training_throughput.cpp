/**
 * @file training_throughput.cpp
 * Benchmark of the training side (issue #4 item 10):
 *   1. workload generation: GPT-3 175B (TP 8, PP 16) on 1,024 and 8,192 GPUs: time to
 *      generate the stage programs and fill the tables, rows, bytes per task and per GPU;
 *   2. iteration simulation: GPT-3 13B on 128 GPUs (TP 4, PP 4, DP 8, 16 servers of 8 GPUs
 *      on a rail-optimised fabric of 100 Gb/s NICs) at analytical, flow and packet fidelity:
 *      simulated iteration, wall time, events per second.
 * `--quick` shrinks part 2 to 8 layers; `--fidelity` picks the fidelities to run;
 * `--channels` sets the DP ring's channels (collectives.channels; 0: auto).
 */
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_executor.hpp"
#include "systems/training_sim.hpp"
#include "topologies/generators.hpp"

namespace mv {
namespace {

constexpr double kMega = 1e6;

TrainingExperiment gptJob(const char* model, uint32_t tp, uint32_t pp, uint32_t dp, uint32_t global_batch) {
  TrainingExperiment x;
  x.model = modelByName(model);
  x.name = model;
  x.parallelism.tp = tp;
  x.parallelism.pp = pp;
  x.parallelism.dp = dp;
  x.parallelism.sequence_parallel = true;
  x.parallelism.zero = mv::Zero::kOptimizer;
  x.parallelism.recompute = Recompute::kSelective;
  x.training.global_batch = global_batch;
  x.training.micro_batch = 1;
  x.cluster.gpus = tp * pp * dp;
  x.cluster.gpus_per_server = 8;
  x.cluster.nics_per_server = 8;
  RailParams rail;
  rail.servers = x.cluster.gpus / 8;
  rail.nic_rate = gigabitsPerSecond(100);
  rail.fabric_rate = gigabitsPerSecond(100);
  rail.spines = 8;
  x.topology = makeRailOptimized(rail);
  x.network.cc = net::CcKind::kDcqcn;
  return x;
}

void generation(uint32_t gpus) {
  TrainingExperiment x = gptJob("gpt3-175b", 8, 16, gpus / 128, 1536);
  x.fidelity = NetworkFidelity::kAnalytical;
  const TrainingFootprint f = measureFootprint(x);
  std::printf("%6u GPUs  build %7.3f s  templates %7lld tasks (%5.1f MB)  rank state %9lld tasks (%7.1f MB, %4.1f B/task)"
              "  collectives %6lld (%5.1f MB)  total %7.1f MB = %5.1f KB/GPU\n",
              gpus, f.build_seconds, static_cast<long long>(f.template_tasks), f.program_bytes / kMega,
              static_cast<long long>(f.rank_tasks), f.rank_bytes / kMega,
              static_cast<double>(f.rank_bytes) / static_cast<double>(f.rank_tasks),
              static_cast<long long>(f.collectives), f.collective_bytes / kMega, f.total_bytes / kMega,
              static_cast<double>(f.total_bytes) / gpus / 1e3);
}

void iteration(NetworkFidelity fidelity, bool quick, int threads, uint32_t channels) {
  TrainingExperiment x = gptJob("gpt3-13b", 4, 4, 8, 256);
  if (quick) x.model.layers = 8;
  x.collectives.channels = channels;
  x.fidelity = fidelity;
  const TrainingFootprint f = measureFootprint(x);
  SimulationOptions o;
  o.threads = threads;
  const std::vector<TrainingExperiment> one{x};
  const auto start = std::chrono::steady_clock::now();
  const TrainingResult r = simulateTraining(one, o).front();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double sim = static_cast<double>(r.iteration.ps) * 1e-12;
  std::printf("%-10s iteration %8.2f ms (compute %7.2f, tp %6.2f, pp %6.2f, dp %6.2f, bubble %6.2f)  MFU %4.1f %%"
              "  wall %8.2f s (run %7.2f)  sim/wall %.4f  events %11lld (%.2f M/s)  memory %.1f MB\n",
              fidelity == NetworkFidelity::kPacket ? "packet" : fidelity == NetworkFidelity::kFlow ? "flow" : "analytical",
              sim * 1e3, r.compute.ps * 1e-9,
              r.exposed_tp.ps * 1e-9, r.exposed_pp.ps * 1e-9, r.exposed_dp.ps * 1e-9, r.bubble.ps * 1e-9,
              100 * r.mfu, wall, r.wall_seconds, sim / wall, static_cast<long long>(r.events),
              static_cast<double>(r.events) / r.wall_seconds / 1e6, f.total_bytes / kMega);
}

}  // namespace
}  // namespace mv

int main(int argc, char** argv) {
  CLI::App app{"Training-side benchmark: workload generation and iteration simulation"};
  bool quick = false;
  int threads = 2;
  uint32_t channels = 0;
  app.add_flag("--quick", quick, "GPT-3 13B with 8 layers in part 2 (seconds instead of minutes)");
  app.add_option("--threads", threads, "OpenMP threads")->check(CLI::Range(1, 256));
  app.add_option("--channels", channels, "Ring channels of part 2's collectives (0: auto, the group's GPUs per server)")
      ->check(CLI::Range(0u, mv::kMaxRingChannels));
  std::vector<std::string> fidelities{"analytical", "flow", "packet"};
  app.add_option("--fidelity", fidelities, "Fidelities of part 2 (analytical, flow, packet)")
      ->check(CLI::IsMember({"analytical", "flow", "packet"}));
  CLI11_PARSE(app, argc, argv);
  std::printf("1. workload generation: GPT-3 175B, TP 8, PP 16, global batch 1536, micro-batch 1\n");
  mv::generation(1024);
  mv::generation(8192);
  std::printf(
      "\n2. one iteration of GPT-3 13B%s on 128 GPUs (TP 4, PP 4, DP 8, SP, ZeRO-1, selective recompute, "
      "batch 256), rail-optimised 100 Gb/s, DCQCN, ring channels %s, %d threads\n",
      quick ? " (8 layers)" : "", channels == 0 ? "auto" : std::to_string(channels).c_str(), threads);
  for (const std::string& f : fidelities) {
    mv::iteration(f == "packet" ? mv::NetworkFidelity::kPacket
                  : f == "flow" ? mv::NetworkFidelity::kFlow
                                : mv::NetworkFidelity::kAnalytical,
                  quick, threads, channels);
  }
  return 0;
}
