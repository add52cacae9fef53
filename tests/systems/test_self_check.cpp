#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <stdexcept>

#include "kernels/cpu/cpu_executor.hpp"
#include "kernels/cpu/step_session.hpp"
#include "systems/self_check.hpp"

namespace mv {
namespace {

using RunFn = std::function<RunReport(net::NetWorld&, int64_t)>;

/// A stand-in device: each run calls `run` on the host world.
class FakeSession final : public StepSession<net::NetWorld> {
 public:
  FakeSession(net::NetWorld& world, RunFn run) : StepSession(world), run_(std::move(run)) {}
  RunReport run(int64_t max_steps) override { return run_(world(), max_steps); }

 protected:
  void syncFields(std::size_t, std::size_t) override {}
  void pushFields(std::size_t, std::size_t) override {}

 private:
  RunFn run_;
};

net::NetworkStepRunner fakeDevice(RunFn run) {
  return [run](net::NetWorld& world) -> std::unique_ptr<StepSession<net::NetWorld>> {
    return std::make_unique<FakeSession>(world, run);
  };
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

}  // namespace
}  // namespace mv
