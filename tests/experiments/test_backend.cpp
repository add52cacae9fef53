#include <catch2/catch.hpp>
#include <tuple>

#include "experiments/backend.hpp"
#include "experiments/batching.hpp"

namespace mv {
namespace {

TEST_CASE("auto picks CUDA with every usable device, else the CPU", "[backend]") {
  const BackendPlan gpus = planBackend("auto", 0, 3, true);
  CHECK(gpus.error.empty());
  CHECK(gpus.cuda);
  CHECK(gpus.devices == std::vector<int>{0, 1, 2});
  CHECK(gpus.workers() == 3);
  CHECK(gpus.describe() == "cuda (devices 0, 1, 2)");
  for (const BackendPlan& p : {planBackend("auto", 0, 0, true), planBackend("auto", 0, 2, false)}) {
    CHECK(p.error.empty());
    CHECK_FALSE(p.cuda);
    CHECK(p.workers() == 1);
    CHECK(p.describe() == "cpu");
  }
}

TEST_CASE("the device count limits the CUDA devices and must not exceed them", "[backend]") {
  const BackendPlan two = planBackend("cuda", 2, 4, true);
  CHECK(two.error.empty());
  CHECK(two.devices == std::vector<int>{0, 1});
  CHECK(two.describe() == "cuda (devices 0, 1)");
  CHECK(planBackend("cuda", 1, 4, true).describe() == "cuda (device 0)");
  CHECK(planBackend("cuda", 5, 4, true).error == "--devices 5 but only 4 CUDA device(s) are usable");
  CHECK(planBackend("cpu", 2, 4, true).error == "--devices applies to the cuda backend only");
  CHECK_FALSE(planBackend("cpu", 0, 4, true).cuda);
}

TEST_CASE("MPI ranks on one node take distinct CUDA devices", "[backend]") {
  const auto devicesOf = [](int available, int rank, int ranks) {
    BackendPlan p = planBackend("cuda", 0, available, true);
    shareDevicesOnNode(p, rank, ranks);
    return p.devices;
  };
  CHECK(devicesOf(8, 0, 4) == std::vector<int>{0, 1});
  CHECK(devicesOf(8, 3, 4) == std::vector<int>{6, 7});
  CHECK(devicesOf(3, 0, 2) == std::vector<int>{0});
  CHECK(devicesOf(3, 1, 2) == std::vector<int>{1, 2});
  CHECK(devicesOf(2, 0, 3) == std::vector<int>{0});
  CHECK(devicesOf(2, 2, 3) == std::vector<int>{0});
  CHECK(devicesOf(2, 1, 3) == std::vector<int>{1});
  CHECK(devicesOf(4, 0, 1) == std::vector<int>{0, 1, 2, 3});
  BackendPlan cpu = planBackend("cpu", 0, 4, true);
  shareDevicesOnNode(cpu, 1, 2);
  CHECK(cpu.devices.empty());
}

TEST_CASE("the cuda backend without a GPU or without the CUDA build is refused", "[backend]") {
  CHECK(planBackend("cuda", 0, 0, true).error.find("no usable CUDA device") != std::string::npos);
  CHECK(planBackend("cuda", 0, 2, false).error.find("built without the CUDA backend") != std::string::npos);
  CHECK(planBackend("auto", -1, 0, true).error.find("--devices") != std::string::npos);
}

TEST_CASE("auto batch size caps CPU batches and leaves CUDA batches to the memory budget", "[backend]") {
  const BackendPlan cpu = planBackend("cpu", 0, 0, false);
  const BackendPlan cuda = planBackend("cuda", 0, 1, true);
  CHECK(cpu.batchSize(-1, 0) == kCpuAutoBatchSize);
  CHECK(cuda.batchSize(-1, 0) == 0);
  for (const BackendPlan& p : {cpu, cuda}) {
    CHECK(p.batchSize(0, 0) == 0);
    CHECK(p.batchSize(3, 0) == 3);
  }
}

TEST_CASE("CPU workers share the threads evenly, one per thread by default, never more than the experiments",
          "[backend]") {
  auto workers = [](int requested, int threads, int64_t experiments) {
    BackendPlan p = planBackend("cpu", 0, 0, false);
    planCpuWorkers(p, requested, threads, experiments);
    return p;
  };
  const BackendPlan two = workers(-1, 2, 16);
  CHECK(two.workers() == 2);
  CHECK(two.cpu_threads == std::vector<int>{1, 1});
  CHECK(two.threadsOf(1, 2) == 1);
  CHECK(two.describe() == "cpu (2 workers of 1 thread)");
  // Fewer experiments than threads: one worker each, the threads split between them.
  const BackendPlan few = workers(-1, 8, 3);
  CHECK(few.cpu_threads == std::vector<int>{3, 3, 2});
  CHECK(few.describe() == "cpu (3 workers of 2-3 threads)");
  CHECK(workers(-1, 8, 1).cpu_threads == std::vector<int>{8});
  CHECK(workers(-1, 8, 1).describe() == "cpu");
  CHECK(workers(-1, 4, 0).cpu_threads == std::vector<int>{4});
  CHECK(workers(2, 4, 100).describe() == "cpu (2 workers of 2 threads)");
  CHECK(workers(1, 4, 100).cpu_threads == std::vector<int>{4});
  CHECK(workers(5, 4, 100).error == "--cpu-workers 5 needs at least as many CPU threads, but there are 4 (--threads)");
  // CUDA keeps one worker per device and refuses an explicit CPU worker count.
  BackendPlan cuda = planBackend("cuda", 0, 2, true);
  planCpuWorkers(cuda, -1, 2, 16);
  CHECK(cuda.workers() == 2);
  CHECK(cuda.threadsOf(0, 6) == 6);
  planCpuWorkers(cuda, 2, 2, 16);
  CHECK(cuda.error == "--cpu-workers applies to CPU workers, but this run puts everything on the GPU");
}

TEST_CASE("auto puts flow-level experiments on CPU workers beside the GPUs, and all-flow sweeps on the CPU",
          "[backend]") {
  // A mixed sweep on 2 GPUs and 8 threads: the devices keep their workers (0 and 1), and the
  // flow-level experiments get CPU workers (2 onwards) on the 6 threads the devices leave.
  BackendPlan mixed = planBackend("auto", 0, 2, true);
  const std::string note = placeFlowLevelOnCpu(mixed, "auto", 3, 10);
  CHECK(note.rfind("3 of 10 experiments to run are flow-level; they run on the CPU beside the GPU", 0) == 0);
  CHECK(mixed.cuda);
  CHECK(mixed.flow_on_cpu);
  CHECK(mixed.onCpu(NetworkFidelity::kFlow));
  CHECK_FALSE(mixed.onCpu(NetworkFidelity::kPacket));
  CHECK_FALSE(mixed.onCpu(NetworkFidelity::kAnalytical));
  planCpuWorkers(mixed, -1, 8, 3);
  CHECK(mixed.error.empty());
  CHECK(mixed.cpu_threads == std::vector<int>{2, 2, 2});
  CHECK(mixed.workers() == 5);
  CHECK(mixed.onDevice(1));
  CHECK_FALSE(mixed.onDevice(2));
  CHECK(mixed.threadsOf(0, 8) == 8);
  CHECK(mixed.threadsOf(4, 8) == 2);
  CHECK(mixed.batchSize(-1, 1) == 0);
  CHECK(mixed.batchSize(-1, 2) == kCpuAutoBatchSize);
  CHECK(mixed.batchSize(5, 2) == 5);
  CHECK(mixed.describe() == "cuda (devices 0, 1), flow level on cpu (3 workers of 2 threads)");
  CHECK(mixed.workerName(1) == "GPU 1");
  CHECK(mixed.workerName(2) == "worker 2");
  CHECK_FALSE(stepRunner(mixed, 2));
  CHECK(deviceMemoryBudget(mixed, 3) == 0);
  // One thread per GPU is left to the devices' workers, but the CPU keeps at least one.
  planCpuWorkers(mixed, -1, 2, 3);
  CHECK(mixed.describe() == "cuda (devices 0, 1), flow level on cpu (1 worker of 1 thread)");
  planCpuWorkers(mixed, 7, 8, 3);
  CHECK(mixed.error ==
        "--cpu-workers 7 needs at least as many CPU threads, but there are 6 (--threads, less one per GPU)");

  BackendPlan flow_only = planBackend("auto", 0, 2, true);
  CHECK(placeFlowLevelOnCpu(flow_only, "auto", 4, 4)
            .rfind("all 4 experiments to run are flow-level, so they run on the CPU", 0) == 0);
  CHECK_FALSE(flow_only.cuda);
  CHECK(flow_only.describe() == "cpu");
  // Nothing moves without flow-level experiments, on the CPU, or when cuda was asked for.
  for (const auto& [backend, flow, cpu] :
       {std::tuple{"auto", 0, false}, std::tuple{"cuda", 3, false}, std::tuple{"auto", 3, true}}) {
    BackendPlan p = cpu ? planBackend("auto", 0, 0, true) : planBackend(backend, 0, 1, true);
    CHECK(placeFlowLevelOnCpu(p, backend, flow, 10).empty());
    CHECK_FALSE(p.flow_on_cpu);
    CHECK(p.cuda == !cpu);
    CHECK(p.workers() == 1);
  }
}

TEST_CASE("devices and the CPU workers beside them share the memory budget by the memory they run", "[backend]") {
  // 600 of 800 bytes to run on devices: three quarters of a budget of 1,000.
  CHECK(deviceMemoryPart(1000, 600, 100, 200, 100) == 750);
  // Each side keeps at least its largest experiment where the budget allows...
  CHECK(deviceMemoryPart(1000, 900, 100, 100, 400) == 600);
  CHECK(deviceMemoryPart(1000, 100, 300, 900, 100) == 300);
  // ... the devices first when both cannot.
  CHECK(deviceMemoryPart(1000, 800, 800, 800, 800) == 800);
  CHECK(deviceMemoryPart(1000, 5000, 5000, 100, 100) == 1000);
  // One side alone takes it all.
  CHECK(deviceMemoryPart(1000, 600, 100, 0, 0) == 1000);
  CHECK(deviceMemoryPart(1000, 0, 0, 600, 100) == 0);
}

TEST_CASE("batches respect both the memory budget and the batch size", "[backend]") {
  const std::vector<int64_t> ten(10, 100);
  CHECK(batchLengths(ten, 10'000, 0) == std::vector<size_t>{10});
  CHECK(batchLengths(ten, 10'000, 4) == std::vector<size_t>{4, 4, 2});
  CHECK(batchLengths(ten, 350, 0) == std::vector<size_t>{3, 3, 3, 1});
  CHECK(batchLengths(ten, 350, 2) == std::vector<size_t>{2, 2, 2, 2, 2});
  // An experiment larger than the budget runs alone; the budget holds for the rest.
  CHECK(batchLengths({100, 500, 100, 100}, 300, 8) == std::vector<size_t>{1, 1, 2});
  CHECK(batchLengths({}, 300, 8).empty());
}

TEST_CASE("longest first spreads the cost evenly and keeps each group longest first", "[backend]") {
  // Costs 5, 1, 4, 3, 2, 3 taken longest first, each to the lighter group: 5 -> A, 4 -> B,
  // 3 (item 3) -> B (4 < 5), 3 (item 5) -> A (5 < 7), 2 -> B (7 < 8), 1 -> A (8 < 9).
  const std::vector<std::vector<size_t>> two = splitLongestFirst({5, 1, 4, 3, 2, 3}, 2);
  CHECK(two == std::vector<std::vector<size_t>>{{0, 5, 1}, {2, 3, 4}});
  CHECK(splitLongestFirst({1, 2}, 0) == std::vector<std::vector<size_t>>{{1, 0}});
  CHECK(splitLongestFirst({2, 1}, 3) == std::vector<std::vector<size_t>>{{0}, {1}, {}});
}

}  // namespace
}  // namespace mv
