/**
 * @file test_gpu.cpp
 * The GPU catalogue: figures as in calibration.md, lookup by name, errors that list the
 * valid names.
 */
#include <catch2/catch.hpp>

#include "analytical/gpu.hpp"

using namespace mv;

TEST_CASE("catalogue figures follow calibration.md", "[analytical][gpu]") {
  const GpuSpec& a100 = gpuByName("a100-80gb");
  CHECK(peakFlops(a100, Precision::kBf16) == Approx(312e12));
  CHECK(peakFlops(a100, Precision::kFp16) == Approx(312e12));
  CHECK(a100.hbm_capacity == Bytes{80LL << 30});  // 80 GiB: nvidia-smi's 81,920 MiB
  CHECK(a100.hbm_bandwidth.bps == 2'000'000'000'000LL * 8);
  CHECK(a100.nvlink_bandwidth.bps == 600'000'000'000LL * 8);

  const GpuSpec& h100 = gpuByName("h100");
  CHECK(peakFlops(h100, Precision::kBf16) == Approx(989e12));
  CHECK(peakFlops(h100, Precision::kFp8) == Approx(1979e12));
  CHECK(h100.hbm_bandwidth.bps == 3'350'000'000'000LL * 8);
  CHECK(h100.nvlink_bandwidth.bps == 900'000'000'000LL * 8);
  // Capacities are nvidia-smi's totals in MiB, not marketed decimal gigabytes: a job
  // needing 79.6 GiB fits an H100 (80e9 bytes, 74.5 GiB, refused it).
  CHECK(h100.hbm_capacity == Bytes{81559LL << 20});
  CHECK(h100.hbm_capacity.count > static_cast<int64_t>(79.6 * (1LL << 30)));

  const GpuSpec& a100_40 = gpuByName("a100-40gb");
  CHECK(a100_40.hbm_capacity == Bytes{40LL << 30});
  CHECK(a100_40.hbm_bandwidth.bps == 1'555'000'000'000LL * 8);
  CHECK(peakFlops(a100_40, Precision::kBf16) == peakFlops(a100, Precision::kBf16));

  const GpuSpec& h800 = gpuByName("h800");
  CHECK(peakFlops(h800, Precision::kBf16) == peakFlops(h100, Precision::kBf16));
  CHECK(h800.hbm_capacity == h100.hbm_capacity);
  CHECK(h800.nvlink_bandwidth.bps == 400'000'000'000LL * 8);

  const GpuSpec& h200 = gpuByName("h200");
  CHECK(peakFlops(h200, Precision::kBf16) == Approx(989e12));
  CHECK(peakFlops(h200, Precision::kFp8) == Approx(1979e12));
  CHECK(h200.hbm_capacity == Bytes{143771LL << 20});
  CHECK(h200.hbm_bandwidth.bps == 4'800'000'000'000LL * 8);

  const GpuSpec& b200 = gpuByName("b200");
  CHECK(peakFlops(b200, Precision::kBf16) == Approx(2250e12));
  CHECK(peakFlops(b200, Precision::kFp8) == Approx(4500e12));
  CHECK(b200.hbm_capacity == Bytes{183359LL << 20});
  CHECK(b200.hbm_bandwidth.bps == 8'000'000'000'000LL * 8);
  CHECK(b200.nvlink_bandwidth.bps == 1'800'000'000'000LL * 8);
}

TEST_CASE("every GPU has sane, ordered peak rates", "[analytical][gpu]") {
  REQUIRE(gpuCatalogue().size() == 6);
  for (const GpuSpec& gpu : gpuCatalogue()) {
    INFO(gpu.name);
    CHECK(findGpu(gpu.name) == &gpu);
    CHECK(peakFlops(gpu, Precision::kFp32) > 0.0);
    CHECK(peakFlops(gpu, Precision::kFp32) < peakFlops(gpu, Precision::kTf32));
    CHECK(peakFlops(gpu, Precision::kTf32) < peakFlops(gpu, Precision::kBf16));
    if (supportsPrecision(gpu, Precision::kFp8)) {
      CHECK(peakFlops(gpu, Precision::kFp8) == Approx(2.0 * peakFlops(gpu, Precision::kBf16)).epsilon(0.01));
    }
    CHECK(gpu.nvlink_generation >= 3);
    CHECK(gpu.sms >= 108);
  }
}

TEST_CASE("fp8 on a GPU without fp8 tensor cores is an error", "[analytical][gpu]") {
  const GpuSpec& a100 = gpuByName("a100-80gb");
  CHECK_FALSE(supportsPrecision(a100, Precision::kFp8));
  CHECK_THROWS_AS(peakFlops(a100, Precision::kFp8), AnalyticalError);
  CHECK_THROWS_WITH(peakFlops(a100, Precision::kFp8), Catch::Contains("a100-80gb") && Catch::Contains("bf16"));
}

TEST_CASE("unknown GPU names are errors that list the valid names", "[analytical][gpu]") {
  CHECK(findGpu("a100") == nullptr);
  CHECK(findGpu("H100") == nullptr);
  CHECK(gpuNameList() == "a100-80gb, a100-40gb, h100, h800, h200, b200");
  CHECK_THROWS_AS(gpuByName("v100"), AnalyticalError);
  CHECK_THROWS_WITH(gpuByName("v100"),
                    Catch::Contains("unknown GPU 'v100'") &&
                        Catch::Contains("valid names: a100-80gb, a100-40gb, h100, h800, h200, b200"));
  CHECK_THROWS_WITH(gpuByName(""), Catch::Contains("unknown GPU ''"));
}
