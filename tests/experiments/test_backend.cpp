#include <catch2/catch.hpp>

#include "experiments/backend.hpp"

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

TEST_CASE("the cuda backend without a GPU or without the CUDA build is refused", "[backend]") {
  CHECK(planBackend("cuda", 0, 0, true).error.find("no usable CUDA device") != std::string::npos);
  CHECK(planBackend("cuda", 0, 2, false).error.find("built without the CUDA backend") != std::string::npos);
  CHECK(planBackend("auto", -1, 0, true).error.find("--devices") != std::string::npos);
}

}  // namespace
}  // namespace mv
