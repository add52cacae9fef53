/**
 * @file scale.cpp
 * Scale benchmark (issue #22): GPT-3 175B (TP 8, SP, full recompute, distributed
 * optimizer) on a k-ary fat tree of 400 Gb/s links sized to the GPUs, at one fidelity:
 * what `validate` does for the experiment (measureFootprint, counting the task states and
 * packet pools): its time, the simulation memory by part and the process's peak resident
 * memory; with `--build`, building every table as a run does (time, peak resident
 * memory); with `--iterate`, one simulated iteration (or its first `--sim-ms`
 * milliseconds) of the experiment, or of a campaign of `--copies` copies with other seeds
 * in one batch: wall time, simulated time per wall time, events per second. One
 * configuration per process, so each peak resident memory is its own; bench/scale.sh runs
 * the table.
 */
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "systems/training_sim.hpp"
#include "topologies/generators.hpp"

namespace mv {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// Peak resident memory of this process so far.
double peakRssGiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0 / kGiB;
}

/// The smallest even fat-tree radix whose k³/4 hosts hold `nics` NICs.
uint32_t fatTreeRadix(uint32_t nics) {
  uint32_t k = 2;
  while (uint64_t{k} * k * k / 4 < nics) k += 2;
  return k;
}

TrainingExperiment gpt3(uint32_t gpus, uint32_t pp, NetworkFidelity fidelity) {
  TrainingExperiment x;
  x.model = modelByName("gpt3-175b");
  x.name = "gpt3-175b";
  x.parallelism.tp = 8;
  x.parallelism.pp = pp;
  x.parallelism.dp = gpus / (8 * pp);
  x.parallelism.sequence_parallel = true;
  x.parallelism.zero = mv::Zero::kOptimizer;
  x.parallelism.recompute = Recompute::kFull;
  x.training.micro_batch = 1;
  x.training.global_batch = 2 * x.parallelism.dp;
  x.cluster.gpu = "h100";
  x.cluster.gpus = gpus;
  x.cluster.gpus_per_server = 8;
  x.cluster.nics_per_server = 8;
  FatTreeParams ft;
  ft.k = fatTreeRadix(gpus);
  ft.nic_rate = gigabitsPerSecond(400);
  ft.fabric_rate = gigabitsPerSecond(400);
  x.topology = makeFatTree(ft);
  x.network.cc = net::CcKind::kDcqcn;
  x.fidelity = fidelity;
  return x;
}

}  // namespace
}  // namespace mv

int main(int argc, char** argv) {
  CLI::App app{"Scale benchmark: build time, memory and iteration time of GPT-3 175B on thousands of GPUs"};
  uint32_t gpus = 1024;
  uint32_t pp = 8;
  std::string fidelity = "analytical";
  bool build = false;
  bool iterate = false;
  int32_t switch_pool = 0;
  uint32_t copies = 1;
  double sim_ms = 0;
  int threads = 2;
  app.add_option("--gpus", gpus, "GPUs (a multiple of 8 · pp)")->check(CLI::Range(64u, 1u << 19));
  app.add_option("--pp", pp, "pipeline stages")->check(CLI::Range(1u, 128u));
  app.add_option("--fidelity", fidelity, "analytical, flow or packet")
      ->check(CLI::IsMember({"analytical", "flow", "packet"}));
  app.add_flag("--build", build, "also build every table as a run does");
  app.add_flag("--iterate", iterate, "also simulate one iteration");
  app.add_option("--switch-pool", switch_pool, "network.switch_pool_slots (0: the default)")
      ->check(CLI::Range(0, 1 << 26));
  app.add_option("--copies", copies, "with --iterate: a campaign of this many copies (other seeds) in one batch")
      ->check(CLI::Range(1u, 4096u));
  app.add_option("--sim-ms", sim_ms, "with --iterate: stop at this simulated time, ms (0: the whole iteration)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--threads", threads, "OpenMP threads")->check(CLI::Range(1, 256));
  CLI11_PARSE(app, argc, argv);
  if (gpus % (8 * pp) != 0) {
    std::fprintf(stderr, "--gpus must be a multiple of 8 · pp\n");
    return 2;
  }
  const mv::NetworkFidelity f = fidelity == "packet" ? mv::NetworkFidelity::kPacket
                                : fidelity == "flow" ? mv::NetworkFidelity::kFlow
                                                     : mv::NetworkFidelity::kAnalytical;
  mv::TrainingExperiment x = mv::gpt3(gpus, pp, f);
  if (switch_pool > 0) x.network.switch_pool_slots = switch_pool;
  const mv::TrainingFootprint fp = mv::measureFootprint(x);
  std::printf(
      "%6u GPUs  %-10s  dp %5u  validate %6.2f s  memory %7.3f GiB (programs %6.3f, ranks %6.3f, collectives %6.3f,"
      " network %6.3f, run %6.3f)  rank tasks %10lld  collectives %6lld  transfer counters %8lld  live flows %8lld"
      "  structure %7.1f MiB  peak RSS %6.2f GiB\n",
      gpus, fidelity.c_str(), x.parallelism.dp, fp.build_seconds, fp.total_bytes / mv::kGiB,
      fp.program_bytes / mv::kGiB, fp.rank_bytes / mv::kGiB, fp.collective_bytes / mv::kGiB,
      fp.network_bytes / mv::kGiB, fp.run_bytes / mv::kGiB, static_cast<long long>(fp.rank_tasks),
      static_cast<long long>(fp.collectives), static_cast<long long>(fp.transfer_states),
      static_cast<long long>(fp.flows_per_step), fp.structure_bytes / (1024.0 * 1024.0), mv::peakRssGiB());
  std::fflush(stdout);
  if (build) {
    const mv::TrainingFootprint built = mv::measureFootprint(x, {}, mv::FootprintMethod::kBuild);
    std::printf("%6u GPUs  %-10s  build %6.2f s  memory %7.3f GiB  peak RSS %6.2f GiB\n", gpus, fidelity.c_str(),
                built.build_seconds, built.total_bytes / mv::kGiB, mv::peakRssGiB());
    std::fflush(stdout);
  }
  if (!iterate) return 0;
  mv::SimulationOptions o;
  o.threads = threads;
  o.time_limit = mv::Picoseconds{static_cast<int64_t>(sim_ms * 1e9)};
  std::vector<mv::TrainingExperiment> batch(copies, x);
  for (uint32_t i = 0; i < copies; ++i) {
    batch[i].id = i;
    batch[i].seed = i + 1;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<mv::TrainingResult> results = mv::simulateTraining(batch, o);
  const mv::TrainingResult& r = results.front();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t events = 0;
  for (const mv::TrainingResult& c : results) events += c.events;
  // A run stopped by --sim-ms reached the limit; a whole iteration its own length.
  const double simulated_s = r.error.empty() ? static_cast<double>(r.iteration.ps) * 1e-12 : sim_ms * 1e-3;
  std::printf(
      "%6u GPUs  %-10s  %s %9.2f ms  x %u  wall %8.2f s (run %8.2f, %.2f s per experiment)  sim/wall %.5f"
      "  events %11lld (%.2f M/s)  storage retries %u  peak RSS %6.2f GiB (%.0f MiB)\n",
      gpus, fidelity.c_str(), r.error.empty() ? "iteration" : "simulated", simulated_s * 1e3, copies, wall,
      r.wall_seconds, wall / copies, simulated_s / wall, static_cast<long long>(events),
      static_cast<double>(events) / std::max(r.wall_seconds, 1e-9) / 1e6, r.storage_retries, mv::peakRssGiB(),
      mv::peakRssGiB() * 1024.0);
  if (!r.error.empty() && sim_ms == 0) std::printf("  error: %s\n", r.error.c_str());
  return 0;
}
