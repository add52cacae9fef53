/**
 * @file test_calibration.cpp
 * The shipped compute knobs against the published Megatron-LM runs they were fitted to
 * (systems/calibration.hpp): every run's simulated iteration within the fit's largest
 * error. The leave-one-out errors come from bench/fit_compute.cpp (docs/workloads.md).
 */
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "systems/calibration.hpp"

namespace mv {
namespace {

TEST_CASE("simulated iterations reproduce the 14 published Megatron-LM runs within 5.5 %") {
  const std::vector<CalibrationRun> runs = megatronCalibrationRuns();
  REQUIRE(runs.size() == 14);
  const std::vector<double> errors = simulatedErrors(runs, CalibrationKnobs{}, 2);
  for (size_t i = 0; i < runs.size(); ++i) {
    INFO(runs[i].experiment.name << " (" << runs[i].source << "): " << 100 * errors[i] << " %");
    CHECK(std::abs(errors[i]) < 0.055);
  }
}

}  // namespace
}  // namespace mv
