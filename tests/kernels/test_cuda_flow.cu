/**
 * @file test_cuda_flow.cu
 * The flow level (fluid network) compiled for the GPU, where a warp runs each experiment's
 * event loop and its 32 lanes share every water-filling: a batch of fluid experiments, whose
 * events refill small components, whole fabrics and one shared bottleneck, must give the CPU
 * backend's records and counters bit for bit. Exits with 77 (CTest: skipped) without a GPU.
 */
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <vector>

#include "kernels/cpu/cpu_executor.hpp"
#include "kernels/cuda/cuda_executor.cuh"
#include "kernels/cuda/device_query.hpp"
#include "network/flow_builder.hpp"
#include "network/flow_sim.hpp"
#include "systems/network_layout.hpp"
#include "tests/support/random_flows.hpp"
#include "topologies/generators.hpp"
#include "topologies/routing.hpp"

using namespace mv;

namespace {

struct Flow {
  uint32_t src, dst;
  int64_t bytes, start_ps;
};

/// One experiment: a topology, its flows and whether every event refills every flow.
struct Case {
  const Topology* topo;
  std::vector<Flow> flows;
  bool recompute_all = false;
};

/// The counters a run keeps of each experiment, in this order (BatchResult::counters).
enum CaseCounter { kEvents, kFillRounds, kWholeRefills, kFlowsDone, kOverflow, kActive, kBusyLinks, kCaseCounters };

/// What a run leaves: every record's finish and the experiments' counters.
struct BatchResult {
  std::vector<int64_t> finishes;
  std::vector<int64_t> counters;  ///< kCaseCounters per experiment
  uint32_t status = 0;
  int64_t counter(std::size_t exp, CaseCounter c) const { return counters[exp * kCaseCounters + c]; }
  bool operator==(const BatchResult&) const = default;
};

BatchResult runBatch(const std::vector<Case>& cases, bool gpu) {
  net::FluidWorld world(static_cast<uint32_t>(cases.size()), TableCapacity{1 << 12, 1 << 12});
  int64_t total = 0;
  for (ExpId e = 0; e < cases.size(); ++e) {
    const Case& c = cases[e];
    const net::NetworkConfig cfg;
    const net::NetworkLayout layout = makeNetworkLayout(*c.topo, computeRouting(*c.topo), cfg.payload_bytes);
    world.clock(e).lookahead_ps = layout.min_delay_ps;
    net::buildFluidNetwork(world, e, layout, cfg);
    auto& nets = world.table<net::FluidNet>();
    nets.get<net::FluidNetInfo>(nets.expBegin(e)).recompute_all = c.recompute_all ? 1u : 0u;
    for (uint32_t i = 0; i < c.flows.size(); ++i) {
      net::addFluidFlow(world, e, c.flows[i].src, c.flows[i].dst, c.flows[i].bytes, c.flows[i].start_ps, i);
    }
    total += static_cast<int64_t>(c.flows.size());
  }
  world.commitAllHost();
  world.grow<net::FlowRecord>(TableCapacity{total + 16, total + 16});
  RunReport r;
  if (gpu) {
    const CudaExecutor exec;
    do {
      r = exec.run<net::FluidGraph>(world, 100'000);
    } while (!r.finished && r.steps > 0);
  } else {
    r = CpuExecutor(2).runToEnd<net::FluidGraph>(world.view());
  }
  BatchResult out;
  out.status = r.status;
  auto& records = world.table<net::FlowRecord>();
  for (int64_t row = 0; row < records.rows; ++row) out.finishes.push_back(records.get<net::FlowResult>(row).finish_ps);
  for (ExpId e = 0; e < cases.size(); ++e) {
    const net::FluidNetState& st = net::fluidNetState(world, e);
    const int64_t counters[kCaseCounters] = {st.events,   st.fill_rounds, st.whole_refills, st.flows_done,
                                             st.overflow, st.active,      st.busy_links};
    out.counters.insert(out.counters.end(), counters, counters + kCaseCounters);
  }
  return out;
}

}  // namespace

TEST_CASE("the flow level on the GPU, a warp per experiment, equals the CPU backend", "[gpu][network][flow]") {
  const Topology k8 = makeFatTree(FatTreeParams{8});
  const Topology k4 = makeFatTree(FatTreeParams{4});
  const Topology star = makeStar(33, gigabitsPerSecond(100), microseconds(1));
  std::vector<Case> cases;
  // Arrivals spread out: most events refill a small component, its drains re-sorted one by one.
  cases.push_back(Case{&k8, test::randomFlows<Flow>(128, 96, 300'000, 40'000'000, 12345)});
  // The same flows, every event refilling every flow (the queue rebuilt each time).
  cases.push_back(Case{&k8, test::randomFlows<Flow>(128, 96, 300'000, 40'000'000, 12345), true});
  // Everything at once on a smaller fabric: whole refills of many links.
  cases.push_back(Case{&k4, test::randomFlows<Flow>(16, 80, 300'000, 0, 777)});
  // Hundreds of flows on a small fabric: the lanes' search gives up on the events whose
  // components hold most of them, as the CPU's does (whole_refills is compared too).
  cases.push_back(Case{&k4, test::randomFlows<Flow>(16, 400, 300'000, 20'000'000, 2024)});
  // 32 flows into one NIC: one bottleneck link shared by more flows than a warp has lanes.
  std::vector<Flow> incast;
  for (uint32_t i = 1; i <= 32; ++i) incast.push_back(Flow{i, 0, 20'000 * i, 500'000 * (i % 5)});
  cases.push_back(Case{&star, incast});
  const BatchResult cpu = runBatch(cases, false);
  const BatchResult gpu = runBatch(cases, true);
  CHECK(cpu.status == 0u);
  CHECK(cpu.finishes.size() == 96u + 96u + 80u + 400u + 32u);
  CHECK(cpu.counter(3, kWholeRefills) > 0);  // the fourth case: the search gave up
  CHECK(gpu == cpu);
}

int main(int argc, char** argv) {
  if (cudaDeviceCount() == 0) {
    std::printf("skipped: %s", describeCudaDevices().c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
