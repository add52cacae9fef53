/**
 * @file flow_level_throughput.cpp
 * Benchmark of the flow-level (fluid) network on the CPU backend (`mv_bench_flow_level`):
 * a k=8 fat-tree (128 NICs, 100 Gb/s and 1 us on every link) under a permutation of long
 * flows and an all-to-all of short flows, with 1, 8 and 64 experiments in one batch (same
 * flows in every experiment). Prints flows/s, events/s (event times processed, each followed
 * by one max-min water-filling) and water-filling rounds/s; then runs the same workloads once
 * on the packet level (DCQCN and DCTCP, 1 experiment) for the speed-up and the mean-FCT gap.
 * Every run is checked (status 0, every flow recorded) so a figure is never the time of work
 * that did not happen.
 */
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_workloads.hpp"
#include "kernels/cpu/cpu_executor.hpp"
#include "network/builder.hpp"
#include "network/flow_builder.hpp"
#include "network/flow_sim.hpp"
#include "network/network_sim.hpp"
#include "systems/network_layout.hpp"
#include "topologies/generators.hpp"
#include "topologies/routing.hpp"

namespace mv::bench {

/// Sizes of the benchmark runs.
struct Settings {
  uint32_t fat_tree_k = 8;
  int64_t permutation_bytes = 2 * 1000 * 1000;
  int64_t all_to_all_bytes = 16 * 1000;
  std::vector<uint32_t> batch_sizes = {1, 8, 64};
  int threads = 2;
};

Settings quickSettings() {
  return Settings{.fat_tree_k = 4, .permutation_bytes = 100 * 1000, .all_to_all_bytes = 10 * 1000, .batch_sizes = {1, 4}};
}

/// NIC i sends to NIC i + n/2 (mod n): every flow leaves its pod and crosses the core.
std::vector<FlowDef> halfShift(uint32_t nics, int64_t bytes) {
  std::vector<FlowDef> flows;
  for (uint32_t i = 0; i < nics; ++i) flows.push_back(FlowDef{i, (i + nics / 2) % nics, bytes});
  return flows;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

/// Mean FCT (ps) of the records of experiment `e`, after checking that every flow completed.
template <class WorldT>
double meanFct(WorldT& world, ExpId e, std::size_t flows, const std::string& what) {
  auto& records = world.template table<net::FlowRecord>();
  if (records.expRows(e) != static_cast<int64_t>(flows)) {
    throw std::runtime_error(what + ": experiment " + std::to_string(e) + " recorded " +
                             std::to_string(records.expRows(e)) + " of " + std::to_string(flows) + " flows");
  }
  double sum = 0;
  for (int64_t row = records.expBegin(e); row < records.expEnd(e); ++row) {
    const net::FlowResult& f = records.template get<net::FlowResult>(row);
    sum += static_cast<double>(f.finish_ps - f.start_ps);
  }
  return sum / static_cast<double>(flows);
}

struct FluidBatch {
  uint32_t exps = 0;
  double setup_seconds = 0;
  double wall_seconds = 0;
  int64_t steps = 0;
  int64_t flows = 0;   ///< over all experiments
  int64_t events = 0;
  int64_t rounds = 0;
  double mean_fct_ps = 0;  ///< of experiment 0
  double load = 0;
};

/// Builds and runs one fluid batch; every experiment gets the same flows.
FluidBatch runFluid(const net::NetworkLayout& layout, const Workload& w, uint32_t exps, int threads) {
  FluidBatch r;
  r.exps = exps;
  const auto start = std::chrono::steady_clock::now();
  const int64_t total = static_cast<int64_t>(w.flows.size()) * exps;
  auto world = std::make_unique<net::FluidWorld>(exps, TableCapacity{1, 1});
  world->grow<net::FluidFlow>(TableCapacity{total, std::min<int64_t>(total, int64_t{1} << 16)});
  world->grow<net::FlowRecord>(TableCapacity{total, total});
  const net::NetworkConfig cfg;
  for (ExpId e = 0; e < exps; ++e) {
    world->clock(e).lookahead_ps = layout.min_delay_ps;
    world->clock(e).stable_id = e;
    net::buildFluidNetwork(*world, e, layout, cfg, static_cast<uint32_t>(w.flows.size()));
    for (uint32_t i = 0; i < w.flows.size(); ++i) {
      net::addFluidFlow(*world, e, w.flows[i].src, w.flows[i].dst, w.flows[i].bytes, 0, i);
    }
  }
  world->commitAllHost();
  r.setup_seconds = seconds(start);
  const RunReport rep = CpuExecutor(threads).runToEnd<net::FluidGraph>(world->view());
  if (rep.status != 0u || !rep.finished) {
    throw std::runtime_error(w.name + ": fluid run stopped with status " + std::to_string(rep.status));
  }
  r.wall_seconds = rep.wall_seconds;
  r.steps = rep.steps;
  r.load = loadAverage();
  for (ExpId e = 0; e < exps; ++e) {
    const double fct = meanFct(*world, e, w.flows.size(), w.name);
    if (e == 0) r.mean_fct_ps = fct;
    const net::FluidNetState c = net::fluidNetState(*world, e);
    r.flows += c.flows_done;
    r.events += c.events;
    r.rounds += c.fill_rounds;
  }
  return r;
}

struct PacketRun {
  double wall_seconds = 0;
  double mean_fct_ps = 0;
  int64_t packet_hops = 0;
};

/// The same workload once on the packet level (one experiment, default configuration but `cc`).
PacketRun runPacket(const net::NetworkLayout& layout, const Workload& w, net::CcKind cc, int threads) {
  net::NetworkConfig cfg;
  cfg.cc = cc;
  net::NetWorld world(1, TableCapacity{1, 1});
  const auto flows = static_cast<int64_t>(w.flows.size());
  world.grow<net::Flow>(TableCapacity{flows, std::min<int64_t>(flows, int64_t{1} << 16)});
  world.grow<net::FlowRecord>(TableCapacity{flows, flows});
  world.config(0).net = net::pathQuantities(layout, cfg);
  world.clock(0).lookahead_ps = layout.min_delay_ps;
  net::buildNetwork(world, 0, layout, cfg, layout.min_delay_ps);
  for (uint32_t i = 0; i < w.flows.size(); ++i) {
    net::addFlow(world, 0, w.flows[i].src, w.flows[i].dst, w.flows[i].bytes, 0, i);
  }
  world.commitAllHost();
  const RunReport rep = CpuExecutor(threads).runToEnd<net::NetGraph>(world.view());
  if (rep.status != 0u || !rep.finished) {
    throw std::runtime_error(w.name + ": packet run stopped with status " + std::to_string(rep.status));
  }
  return PacketRun{rep.wall_seconds, meanFct(world, 0, w.flows.size(), w.name),
                   net::experimentCounters(world, 0).packet_hops};
}

void printHeader() {
  std::printf("%5s %8s %8s %6s %10s %10s %12s %11s %12s %6s\n", "exps", "setup s", "wall s", "steps", "flows/s",
              "events/s", "rounds/s", "events/exp", "wall ms/exp", "load");
}

void printRow(const FluidBatch& r) {
  std::printf("%5u %8.2f %8.3f %6lld %10.3g %10.3g %12.3g %11.0f %12.2f %6.1f\n", r.exps, r.setup_seconds,
              r.wall_seconds, static_cast<long long>(r.steps), static_cast<double>(r.flows) / r.wall_seconds,
              static_cast<double>(r.events) / r.wall_seconds, static_cast<double>(r.rounds) / r.wall_seconds,
              static_cast<double>(r.events) / r.exps, 1e3 * r.wall_seconds / r.exps, r.load);
}

void runWorkload(const net::NetworkLayout& layout, const Workload& w, const Settings& s) {
  std::printf("%s\n", w.name.c_str());
  printHeader();
  double fluid_fct = 0;
  double fluid_ms_per_exp = 0;
  for (uint32_t exps : s.batch_sizes) {
    const FluidBatch r = runFluid(layout, w, exps, s.threads);
    printRow(r);
    std::fflush(stdout);
    if (exps == s.batch_sizes.front()) {
      fluid_fct = r.mean_fct_ps;
      fluid_ms_per_exp = 1e3 * r.wall_seconds / exps;
    }
  }
  // DCQCN and DCTCP use the wire format the fluid runs drain (48-byte headers, 60-byte ACKs).
  for (net::CcKind cc : {net::CcKind::kDcqcn, net::CcKind::kDctcp}) {
    const PacketRun p = runPacket(layout, w, cc, s.threads);
    std::printf("packet level, %s, 1 experiment: wall %.3f s (%.2f Mhops/s), %.0fx the fluid wall time per "
                "experiment at %u; mean FCT fluid %.2f us vs packet %.2f us (gap %+.1f %%)\n",
                cc == net::CcKind::kDcqcn ? "DCQCN" : "DCTCP", p.wall_seconds,
                static_cast<double>(p.packet_hops) / p.wall_seconds * 1e-6, 1e3 * p.wall_seconds / fluid_ms_per_exp,
                s.batch_sizes.front(), fluid_fct * 1e-6, p.mean_fct_ps * 1e-6, (fluid_fct / p.mean_fct_ps - 1) * 100);
  }
  std::printf("\n");
}

}  // namespace mv::bench

int main(int argc, char** argv) {
  CLI::App app{"Multiverse flow-level network benchmark: flows/s and events/s of a fat-tree with 1-64 experiments per "
               "batch, and the speed-up over the packet level.",
               "mv_bench_flow_level"};
  bool quick = false;
  app.add_flag("--quick", quick, "small fabric and flows, to check that the benchmark runs (figures meaningless)");
  int threads = 2;
  app.add_option("--threads", threads, "CpuExecutor threads")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  mv::bench::Settings s = quick ? mv::bench::quickSettings() : mv::bench::Settings{};
  s.threads = threads;
  try {
    mv::FatTreeParams ft;
    ft.k = s.fat_tree_k;
    const mv::Topology topo = mv::makeFatTree(ft);
    const mv::net::NetworkLayout layout =
        mv::makeNetworkLayout(topo, mv::computeRouting(topo), mv::net::NetworkConfig{}.payload_bytes);
    const uint32_t nics = topo.nicCount();
    std::printf("mv_bench_flow_level%s: k=%u fat-tree (%u NICs, 100 Gb/s, 1 us links), CpuExecutor with %d threads\n",
                quick ? " --quick" : "", s.fat_tree_k, nics, s.threads);
    std::printf("   wall s = runToEnd only; flows/s, events/s, rounds/s = sums over experiments / wall s;\n");
    std::printf("   an event = one event time of one experiment (arrivals and completions at that ps, then one\n");
    std::printf("   max-min water-filling); rounds = bottleneck levels of the water-fillings;\n");
    std::printf("   load = 1-minute load average after the run (above %d, other processes share the cores)\n\n",
                s.threads);
    mv::bench::runWorkload(layout,
                           {"a. permutation: " + std::to_string(nics) + " flows of " +
                                std::to_string(s.permutation_bytes) + " B, NIC i to NIC i + " + std::to_string(nics / 2),
                            mv::bench::halfShift(nics, s.permutation_bytes)},
                           s);
    mv::bench::runWorkload(layout,
                           {"b. all-to-all: " + std::to_string(nics * (nics - 1)) + " flows of " +
                                std::to_string(s.all_to_all_bytes) + " B",
                            mv::bench::allToAll(nics, s.all_to_all_bytes)},
                           s);
  } catch (const std::exception& e) {
    std::cerr << "mv_bench_flow_level: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
