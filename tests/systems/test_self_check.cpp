#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <stdexcept>

#include "kernels/cpu/cpu_executor.hpp"
#include "kernels/cpu/step_session.hpp"
#include "systems/self_check.hpp"
#include "systems/training_world.hpp"

namespace mv {
namespace {

template <class WorldT>
using RunFn = std::function<RunReport(WorldT&, int64_t)>;

/// A stand-in device: each run calls `run` on the host world.
template <class WorldT>
class FakeSession final : public StepSession<WorldT> {
 public:
  FakeSession(WorldT& world, RunFn<WorldT> run) : StepSession<WorldT>(world), run_(std::move(run)) {}
  RunReport run(int64_t max_steps) override { return run_(this->world(), max_steps); }

 protected:
  void syncFields(std::size_t, std::size_t) override {}
  void pushFields(std::size_t, std::size_t) override {}

 private:
  RunFn<WorldT> run_;
};

net::NetworkStepRunner fakeDevice(RunFn<net::NetWorld> run) {
  return [run](net::NetWorld& world) -> std::unique_ptr<StepSession<net::NetWorld>> {
    return std::make_unique<FakeSession<net::NetWorld>>(world, run);
  };
}

TrainingStepRunner fakeTrainingDevice(RunFn<TrainWorld> run) {
  return [run](TrainWorld& world) -> std::unique_ptr<StepSession<TrainWorld>> {
    return std::make_unique<FakeSession<TrainWorld>>(world, run);
  };
}

RunReport runTrainingOnCpu(TrainWorld& world, int64_t steps) {
  return CpuExecutor(2).run<TrainGraph>(world.view(), steps);
}

RunReport runOnCpu(net::NetWorld& world, int64_t steps, int threads) {
  return CpuExecutor(threads).run<net::NetGraph>(world.view(), steps);
}

TEST_CASE("the backend self-check passes a backend that gives the CPU's results", "[self_check]") {
  // Another thread count and short calls: the same results, so the check passes.
  CHECK(compareBackendWithCpu(fakeDevice([](net::NetWorld& w, int64_t) { return runOnCpu(w, 97, 2); })).empty());
}

TEST_CASE("the backend self-check names what a wrong or failing backend did", "[self_check]") {
  const std::string off_by_one = compareBackendWithCpu(fakeDevice([](net::NetWorld& w, int64_t steps) {
    RunReport r = runOnCpu(w, steps, 1);
    auto& records = w.table<net::FlowRecord>();
    if (records.rows > 0) records.get<net::FlowResult>(records.rows - 1).finish_ps += 1;
    return r;
  }));
  CHECK(off_by_one.find("results differ from the CPU's") != std::string::npos);
  const std::string stuck = compareBackendWithCpu(fakeDevice([](net::NetWorld&, int64_t) { return RunReport{}; }));
  CHECK(stuck.find("results differ") != std::string::npos);
  const std::string broken = compareBackendWithCpu(
      fakeDevice([](net::NetWorld&, int64_t) -> RunReport { throw std::runtime_error("device lost"); }));
  CHECK(broken == "device lost");
}

TEST_CASE("the training self-check passes a backend that gives the CPU's results", "[self_check]") {
  // Two threads and short calls: the same results.
  CHECK(compareTrainingWithCpu(fakeTrainingDevice([](TrainWorld& w, int64_t steps) {
          return runTrainingOnCpu(w, std::min<int64_t>(steps, 97));
        })).empty());
}

TEST_CASE("the training self-check names what a wrong or failing backend did", "[self_check]") {
  // A backend that runs the network at half the NICs' rate: the collectives take longer.
  const std::string slow = compareTrainingWithCpu(fakeTrainingDevice([](TrainWorld& w, int64_t steps) {
    for (ExpId e = 0; e < w.numExperiments(); ++e) w.config(e).train.nic_rate_bps = 50'000'000'000;
    return runTrainingOnCpu(w, steps);
  }));
  CHECK(slow.find("results differ from the CPU's") != std::string::npos);
  const std::string broken = compareTrainingWithCpu(
      fakeTrainingDevice([](TrainWorld&, int64_t) -> RunReport { throw std::runtime_error("device lost"); }));
  CHECK(broken.find("device lost") != std::string::npos);
}

}  // namespace
}  // namespace mv
