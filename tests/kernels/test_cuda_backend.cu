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

}  // namespace

TEST_CASE("megakernel results equal the CPU backend's, bit for bit", "[gpu]") {
  CHECK(runOn(true, CudaMode::kMegakernel) == runOn(false, CudaMode::kMegakernel));
}

TEST_CASE("kernel-per-node results equal the megakernel's", "[gpu]") {
  CHECK(runOn(true, CudaMode::kKernelPerNode) == runOn(true, CudaMode::kMegakernel));
}

int main(int argc, char** argv) {
  if (cudaDeviceCount() == 0) {
    std::printf("skipped: %s", describeCudaDevices().c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
