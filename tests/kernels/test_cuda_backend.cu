/**
 * @file test_cuda_backend.cu
 * The CUDA backend runs the same demo simulation as the CPU backend and must give
 * bit-identical results, in megakernel and in kernel-per-node mode. Exits with 77
 * (CTest: skipped) on a machine without a GPU; the build itself proves the backend
 * compiles.
 */
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "kernels/cpu/cpu_executor.hpp"
#include "kernels/cuda/cuda_executor.cuh"
#include "kernels/cuda/device_query.hpp"
#include "tests/support/demo_world.hpp"

using namespace mv;
using namespace mv::demo;

namespace {

void seedBatch(DemoWorld& world) {
  for (ExpId e = 0; e < world.numExperiments(); ++e) {
    world.config(e).horizon_ps = 40'000 + 3'000 * e;
    world.config(e).spawn_probability = 0.2;
    seedExperiment(world, e, 16, 500, 9);
  }
  world.commitAllHost();
  world.grow<Walker>(TableCapacity{1 << 15, 1 << 13});
}

std::vector<std::vector<WalkerState>> runOn(bool gpu, CudaMode mode) {
  DemoWorld world(8, TableCapacity{256, 256});
  seedBatch(world);
  RunReport r;
  if (gpu) {
    const CudaExecutor exec(0, mode);
    do {
      r = exec.run<DemoGraph>(world, 1000);
    } while (!r.finished && r.steps > 0);
  } else {
    r = CpuExecutor(2).runToEnd<DemoGraph>(world.view());
  }
  REQUIRE(r.finished);
  REQUIRE(r.status == 0u);
  std::vector<std::vector<WalkerState>> out;
  for (ExpId e = 0; e < world.numExperiments(); ++e) out.push_back(walkersOf(world, e));
  return out;
}

/// The demo batch run in chunks of 10 steps by one session that keeps it on the device;
/// `stats` gets what crossed the bus and `chunks` the number of runs.
std::vector<std::vector<WalkerState>> runInSession(TransferStats& stats, int64_t& chunks, std::size_t& world_bytes) {
  DemoWorld world(8, TableCapacity{256, 256});
  seedBatch(world);
  world_bytes = world.totalBytes();
  CudaStepSession<DemoGraph, DemoWorld> session(CudaExecutor(0), world);
  RunReport r;
  chunks = 0;
  do {
    r = session.run(10);
    ++chunks;
    for (ExpId e = 0; e < world.numExperiments(); ++e) REQUIRE(world.clock(e).steps >= 0);  // current, not poison
  } while (!r.finished && r.steps > 0);
  REQUIRE(r.finished);
  REQUIRE(r.status == 0u);
  for (ExpId e = 0; e < world.numExperiments(); ++e) CHECK(world.clock(e).done());
  const TransferStats before_sync = session.transfers();
  session.syncTable<Counter>();
  session.syncHost();
  stats = session.transfers();
  CHECK(before_sync.bytes_down < stats.bytes_down);  // the tables came back only when asked
  std::vector<std::vector<WalkerState>> out;
  for (ExpId e = 0; e < world.numExperiments(); ++e) out.push_back(walkersOf(world, e));
  return out;
}

}  // namespace

TEST_CASE("a session keeps the world on the device: uploaded once, results equal the CPU's", "[gpu]") {
  TransferStats stats;
  int64_t chunks = 0;
  std::size_t world_bytes = 0;
  CHECK(runInSession(stats, chunks, world_bytes) == runOn(false, CudaMode::kMegakernel));
  CHECK(chunks > 3);
  CHECK(stats.full_uploads == 1);
  // Once the world, then per chunk the view (a few hundred bytes) and nothing else.
  const auto view = static_cast<int64_t>(sizeof(DemoWorld::View));
  CHECK(stats.bytes_up <= static_cast<int64_t>(world_bytes) + (chunks + 1) * view);
  // Back: per chunk the view, clocks and configuration rows; at the end the world once.
  const int64_t per_chunk = view + 8 * static_cast<int64_t>(sizeof(ExperimentClock) + sizeof(Config));
  CHECK(stats.bytes_down <= static_cast<int64_t>(world_bytes) + chunks * per_chunk);
}

TEST_CASE("megakernel results equal the CPU backend's, bit for bit", "[gpu]") {
  CHECK(runOn(true, CudaMode::kMegakernel) == runOn(false, CudaMode::kMegakernel));
}

TEST_CASE("kernel-per-node results equal the megakernel's", "[gpu]") {
  // From the stack limit a GPU thread starts with, so that the phase kernels' own
  // reservation is what is tested (an earlier megakernel launch raises the limit).
  MV_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 1024));
  const auto per_node = runOn(true, CudaMode::kKernelPerNode);
  CHECK(per_node == runOn(true, CudaMode::kMegakernel));
}

int main(int argc, char** argv) {
  if (cudaDeviceCount() == 0) {
    std::printf("skipped: %s", describeCudaDevices().c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
