/**
 * @file test_cuda_training.cu
 * The training simulation compiled for the GPU: a small batch of experiments at packet,
 * flow and analytical fidelity runs in the megakernel and must give the CPU backend's
 * results exactly. Exits with 77 (CTest: skipped) without a GPU; building it proves the
 * training graph compiles as device code.
 */
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <vector>

#include "kernels/cuda/device_query.hpp"
#include "systems/cuda/training_device.hpp"
#include "systems/training_sim.hpp"
#include "tests/systems/training_fixture.hpp"

using namespace mv;

TEST_CASE("a training batch on the GPU equals the CPU backend", "[gpu][training]") {
  std::vector<TrainingExperiment> xs;
  for (NetworkFidelity f : {NetworkFidelity::kPacket, NetworkFidelity::kFlow, NetworkFidelity::kAnalytical}) {
    TrainingExperiment x = test::tinyExperiment(2, 2, 2, 4, 2);
    x.fidelity = f;
    x.id = xs.size() + 1;
    xs.push_back(x);
  }
  SimulationOptions cpu;
  cpu.threads = 2;
  SimulationOptions gpu;
  gpu.device_runner = cudaTrainingRunner(0);
  const std::vector<TrainingResult> a = simulateTraining(xs, cpu);
  const std::vector<TrainingResult> b = simulateTraining(xs, gpu);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].iteration.ps == b[i].iteration.ps);
    CHECK(a[i].exposed_dp.ps == b[i].exposed_dp.ps);
    CHECK(a[i].exposed_pp.ps == b[i].exposed_pp.ps);
    CHECK(a[i].events == b[i].events);
  }
}

int main(int argc, char** argv) {
  if (cudaDeviceCount() == 0) {
    std::printf("skipped: %s", describeCudaDevices().c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
