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
#include <random>
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

/// An entry of the heap test: a time with ties, broken by a key unique over the whole test.
struct HeapItem {
  int64_t time;
  uint32_t key;
  bool operator==(const HeapItem&) const = default;
};

/// A queue over a segment of items; `where[key]` keeps each entry's place, as the drain
/// queue's blocks do.
struct HeapSegment {
  HeapItem* items;
  uint32_t* where;
  MV_HD HeapItem entry(uint32_t i) const { return items[i]; }
  MV_HD void place(uint32_t i, const HeapItem& e) const {
    items[i] = e;
    where[e.key] = i;
  }
  MV_HD static bool before(const HeapItem& a, const HeapItem& b) {
    return a.time != b.time ? a.time < b.time : a.key < b.key;
  }
};

/// Warp w builds the heap of items [first[w], first[w + 1]), its lanes together.
__global__ void heapifyByWarps(HeapItem* items, uint32_t* where, const uint32_t* first) {
  const CudaGridPolicy p;
  const WarpTeam team = p.team();
  const int64_t w = p.rank() / WarpTeam::kSize;
  const HeapSegment q{items + first[w], where};
  net::BinaryHeap<HeapSegment>::heapifyTogether(team, q, first[w + 1] - first[w]);
}

template <class T>
T* upload(const std::vector<T>& host) {
  T* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, host.size() * sizeof(T)) == cudaSuccess);
  REQUIRE(cudaMemcpy(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  return dev;
}

template <class T>
void download(std::vector<T>& host, T* dev) {
  REQUIRE(cudaMemcpy(host.data(), dev, host.size() * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaFree(dev) == cudaSuccess);
}

}  // namespace

TEST_CASE("a warp's lanes build a heap together with the layout one thread's heapify gives", "[gpu][network][flow]") {
  // Sizes around a warp's width and a tree's level boundaries; times with many ties.
  const std::vector<uint32_t> sizes = {0, 1, 2, 3, 4, 7, 31, 32, 33, 63, 64, 65, 100, 1000, 2049};
  std::vector<uint32_t> first = {0};
  for (const uint32_t n : sizes) first.push_back(first.back() + n);
  std::vector<HeapItem> items(first.back());
  std::mt19937_64 rng(99);
  for (uint32_t i = 0; i < items.size(); ++i) items[i] = HeapItem{static_cast<int64_t>(rng() % 50), i};
  std::vector<uint32_t> where(items.size(), 0);

  std::vector<HeapItem> expect = items;
  std::vector<uint32_t> expect_where = where;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const HeapSegment q{expect.data() + first[s], expect_where.data()};
    net::BinaryHeap<HeapSegment>::heapify(q, sizes[s]);
    for (uint32_t i = 1; i < sizes[s]; ++i) REQUIRE(!HeapSegment::before(q.entry(i), q.entry((i - 1) / 2)));
  }

  HeapItem* dev_items = upload(items);
  uint32_t* dev_where = upload(where);
  uint32_t* dev_first = upload(first);
  void* args[] = {&dev_items, &dev_where, &dev_first};
  const dim3 block(static_cast<unsigned>(sizes.size() * WarpTeam::kSize));
  REQUIRE(cudaLaunchKernel(heapifyByWarps, dim3(1), block, args, 0, nullptr) == cudaSuccess);
  download(items, dev_items);
  download(where, dev_where);
  REQUIRE(cudaFree(dev_first) == cudaSuccess);  // read only
  CHECK(items == expect);
  CHECK(where == expect_where);
}

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
