#include <catch2/catch.hpp>

#include <stdexcept>

#include "kernels/cpu/cpu_executor.hpp"
#include "systems/self_check.hpp"

namespace mv {
namespace {

RunReport runOnCpu(net::NetWorld& world, int64_t steps, int threads) {
  return CpuExecutor(threads).run<net::NetGraph>(world.view(), steps);
}

TEST_CASE("the backend self-check passes a backend that gives the CPU's results", "[self_check]") {
  // Another thread count and short calls: the same results, so the check passes.
  CHECK(compareBackendWithCpu([](net::NetWorld& w, int64_t) { return runOnCpu(w, 97, 2); }).empty());
}

TEST_CASE("the backend self-check names what a wrong or failing backend did", "[self_check]") {
  const std::string off_by_one = compareBackendWithCpu([](net::NetWorld& w, int64_t steps) {
    RunReport r = runOnCpu(w, steps, 1);
    auto& records = w.table<net::FlowRecord>();
    if (records.rows > 0) records.get<net::FlowResult>(records.rows - 1).finish_ps += 1;
    return r;
  });
  CHECK(off_by_one.find("results differ from the CPU's") != std::string::npos);
  const std::string stuck = compareBackendWithCpu([](net::NetWorld&, int64_t) { return RunReport{}; });
  CHECK(stuck.find("results differ") != std::string::npos);
  const std::string broken =
      compareBackendWithCpu([](net::NetWorld&, int64_t) -> RunReport { throw std::runtime_error("device lost"); });
  CHECK(broken == "device lost");
}

}  // namespace
}  // namespace mv
