/**
 * @file test_collective_model.cpp
 * The intra-server collective model: the public NCCL tables reproduced, monotone and sensible
 * outside them, ring scaling over 2..8 GPUs, the other operations, scaled GPUs and PCIe.
 */
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "analytical/collective_model.hpp"

using namespace mv;

namespace {

struct Row {
  int64_t bytes;
  double busbw;
};

constexpr int64_t kMiB = int64_t{1} << 20;

// Copied from ../shared/reference/calibration.md (nccl-tests sizes are powers of two:
// "33 MB" = 2^25 bytes, "1 GB" = 2^30 bytes).
const std::vector<Row> kH200Table = {
    {kMiB, 52.96},        {4 * kMiB, 138.44},    {8 * kMiB, 181.94},    {16 * kMiB, 240.41},
    {32 * kMiB, 300.91},  {64 * kMiB, 368.11},   {128 * kMiB, 412.45},  {256 * kMiB, 432.24},
    {512 * kMiB, 442.72}, {1024 * kMiB, 467.58}, {4096 * kMiB, 477.41}, {8192 * kMiB, 479.98},
};
const std::vector<Row> kA100Table = {
    {kMiB, 36.22},        {16 * kMiB, 109.22},   {128 * kMiB, 174.18},
    {256 * kMiB, 213.87}, {1024 * kMiB, 228.10}, {8192 * kMiB, 231.58},
};

constexpr CollectiveOp kOps[] = {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                                 CollectiveOp::kAllToAll, CollectiveOp::kBroadcast};

/// Bus bandwidth in GB/s by the nccl-tests definition, computed here independently.
double busbw(CollectiveOp op, int n, int64_t bytes, Picoseconds t) {
  const double algbw = static_cast<double>(bytes) / t.toSeconds() / 1e9;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return algbw * 2.0 * (n - 1) / n;
    case CollectiveOp::kBroadcast:
      return algbw;
    default:
      return algbw * (n - 1) / n;
  }
}

/// Worst relative error of the model's 8-GPU all-reduce bus bandwidth against a table.
double worstError(const CollectiveModel& model, const std::vector<Row>& table) {
  double worst = 0.0;
  for (const Row& row : table) {
    const Picoseconds t = collectiveTime(model, CollectiveOp::kAllReduce, 8, Bytes{row.bytes});
    const double err = std::abs(busbw(CollectiveOp::kAllReduce, 8, row.bytes, t) / row.busbw - 1.0);
    INFO("size " << row.bytes << " table " << row.busbw << " model "
                 << busbw(CollectiveOp::kAllReduce, 8, row.bytes, t));
    CHECK(err < 0.03);
    worst = std::max(worst, err);
  }
  return worst;
}

/// Sizes from 1 byte to 1 TiB, about 12 per octave, plus every calibrated size and its neighbours.
std::vector<int64_t> sweepSizes() {
  std::vector<int64_t> sizes = {1, 2, 3};
  for (double s = 4; s < 1.1e12; s *= 1.06) sizes.push_back(static_cast<int64_t>(s));
  for (const Row& row : kH200Table) {
    for (int64_t d = -1; d <= 1; ++d) sizes.push_back(row.bytes + d);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

}  // namespace

TEST_CASE("the library's calibration data are the tables of calibration.md", "[analytical][collective]") {
  const auto check = [](std::span<const BusBandwidthSample> lib, const std::vector<Row>& table) {
    REQUIRE(lib.size() == table.size());
    for (size_t i = 0; i < table.size(); ++i) {
      CHECK(lib[i].bytes == table[i].bytes);
      CHECK(lib[i].busbw_gbps == table[i].busbw);
    }
  };
  check(calibrationSamples(CalibrationTable::kH200AllReduce), kH200Table);
  check(calibrationSamples(CalibrationTable::kA100AllReduce), kA100Table);
}

TEST_CASE("8-GPU all-reduce reproduces the public NCCL tables within 3 %", "[analytical][collective]") {
  SECTION("8xH200 (NVLS)") {
    const double worst = worstError(makeCollectiveModel(gpuByName("h200")), kH200Table);
    INFO("worst relative error " << worst);
    CHECK(worst < 0.03);
  }
  SECTION("8xH100: same NVLink4/NVSwitch fabric as H200") {
    CHECK(worstError(makeCollectiveModel(gpuByName("h100")), kH200Table) < 0.03);
  }
  SECTION("8xA100") {
    const double worst = worstError(makeCollectiveModel(gpuByName("a100-80gb")), kA100Table);
    INFO("worst relative error " << worst);
    CHECK(worst < 0.03);
  }
}

TEST_CASE("between calibrated sizes the bus bandwidth stays between its neighbours", "[analytical][collective]") {
  const CollectiveModel model = makeCollectiveModel(gpuByName("h200"));
  for (size_t i = 0; i + 1 < kH200Table.size(); ++i) {
    const auto mid = static_cast<int64_t>(
        std::sqrt(static_cast<double>(kH200Table[i].bytes) * static_cast<double>(kH200Table[i + 1].bytes)));
    const double bw =
        busbw(CollectiveOp::kAllReduce, 8, mid, collectiveTime(model, CollectiveOp::kAllReduce, 8, Bytes{mid}));
    INFO("size " << mid);
    CHECK(bw >= kH200Table[i].busbw * 0.999);
    CHECK(bw <= kH200Table[i + 1].busbw * 1.001);
  }
}

TEST_CASE("time and bus bandwidth are monotone in size for every GPU, op, GPU count and fabric",
          "[analytical][collective]") {
  const std::vector<int64_t> sizes = sweepSizes();
  for (const GpuSpec& gpu : gpuCatalogue()) {
    for (const ServerFabric fabric : {ServerFabric::kNvlink, ServerFabric::kPcie}) {
      CollectiveModelConfig config;
      config.fabric = fabric;
      const CollectiveModel model = makeCollectiveModel(gpu, config);
      for (const CollectiveOp op : kOps) {
        for (int n = 2; n <= kMaxServerGpus; ++n) {
          Picoseconds prev_t{0};
          double prev_bw = 0.0;
          bool ok = true;
          for (const int64_t s : sizes) {
            const Picoseconds t = collectiveTime(model, op, n, Bytes{s});
            const double bw = busbw(op, n, s, t);
            // Time nondecreasing; bus bandwidth nondecreasing up to the 1 ps rounding of tiny sizes.
            if (t < prev_t || t.ps <= 0 || bw < prev_bw * (1.0 - 1e-6)) {
              ok = false;
              FAIL_CHECK(gpu.name << " " << collectiveOpName(op) << " n=" << n << " size " << s);
              break;
            }
            prev_t = t;
            prev_bw = bw;
          }
          CHECK(ok);
        }
      }
    }
  }
}

TEST_CASE("outside the measured sizes: latency-bound below, bandwidth-saturated above", "[analytical][collective]") {
  for (const char* name : {"a100-80gb", "h200", "h800", "b200"}) {
    INFO(name);
    const CollectiveModel model = makeCollectiveModel(gpuByName(name));
    const auto t = [&](int64_t s) { return collectiveTime(model, CollectiveOp::kAllReduce, 8, Bytes{s}); };
    // Below 1 MiB the time barely moves: a fixed latency of tens of microseconds.
    CHECK(t(1).toMicroseconds() > 10.0);
    CHECK(t(1).toMicroseconds() < 60.0);
    CHECK(static_cast<double>(t(4096).ps) < 1.01 * static_cast<double>(t(1).ps));
    // Above the largest calibrated size (8 GiB, or where it maps to on a faster or slower fabric)
    // the bus bandwidth creeps towards the last piece's asymptote and never passes it.
    const GpuSpec& gpu = gpuByName(name);
    const bool nvls = gpu.nvlink_generation >= 4;
    const double k = static_cast<double>(gpu.nvlink_bandwidth.bps) / (nvls ? 900e9 * 8 : 600e9 * 8);
    const double last_measured = (nvls ? kH200Table : kA100Table).back().busbw * k;
    const double asymptote =
        static_cast<double>(collectiveSegments(model, CollectiveOp::kAllReduce, 8).back().beta.bps) / 8e9 *
        (14.0 / 8.0);
    CHECK(asymptote >= last_measured);
    CHECK(asymptote <= last_measured * 1.01);
    const double at_64g = busbw(CollectiveOp::kAllReduce, 8, 65536 * kMiB, t(65536 * kMiB));
    const double at_1t = busbw(CollectiveOp::kAllReduce, 8, kMiB << 20, t(kMiB << 20));
    CHECK(at_64g >= last_measured * 0.995);
    CHECK(at_64g <= at_1t);
    CHECK(at_1t <= asymptote * (1.0 + 1e-9));
    CHECK(at_1t >= asymptote * 0.999);
  }
  const CollectiveModel model = makeCollectiveModel(gpuByName("h200"));
  CHECK(collectiveTime(model, CollectiveOp::kAllReduce, 8, Bytes{0}) == Picoseconds{0});
  CHECK(collectiveTime(model, CollectiveOp::kAllReduce, 1, Bytes{kMiB}) == Picoseconds{0});
  CHECK(collectiveTime(model, CollectiveOp::kAllReduce, 8, Bytes{kMaxCollectiveBytes}).ps > 0);
}

TEST_CASE("all-reduce over 2, 4, 8 GPUs follows ring scaling", "[analytical][collective]") {
  for (const GpuSpec& gpu : gpuCatalogue()) {
    INFO(gpu.name);
    const CollectiveModel model = makeCollectiveModel(gpu);
    const auto t = [&](int n, int64_t s) { return collectiveTime(model, CollectiveOp::kAllReduce, n, Bytes{s}); };
    for (const int64_t s : sweepSizes()) {
      if (t(2, s) >= t(4, s) || t(4, s) >= t(8, s)) {
        FAIL_CHECK("not growing with n at size " << s);
        break;
      }
    }
    for (const int n : {2, 4}) {
      INFO("n = " << n);
      // Latency-bound: 2(n-1) ring steps against 14.
      CHECK(static_cast<double>(t(n, 1).ps) / static_cast<double>(t(8, 1).ps) == Approx((n - 1) / 7.0).epsilon(0.01));
      // Bandwidth-bound: the same bus bandwidth, so time follows 2(n-1)/n.
      const int64_t big = kMiB << 20;
      CHECK(static_cast<double>(t(n, big).ps) / static_cast<double>(t(8, big).ps) ==
            Approx((2.0 * (n - 1) / n) / (14.0 / 8.0)).epsilon(0.01));
      // Per piece: α scales with the step count, β with the bus factor.
      const auto s8 = collectiveSegments(model, CollectiveOp::kAllReduce, 8);
      const auto sn = collectiveSegments(model, CollectiveOp::kAllReduce, n);
      REQUIRE(s8.size() == sn.size());
      for (size_t i = 0; i < s8.size(); ++i) {
        CHECK(static_cast<double>(sn[i].alpha.ps) == Approx(static_cast<double>(s8[i].alpha.ps) * (n - 1) / 7.0));
        CHECK(static_cast<double>(sn[i].beta.bps) ==
              Approx(static_cast<double>(s8[i].beta.bps) * (14.0 / 8.0) / (2.0 * (n - 1) / n)));
      }
    }
  }
}

TEST_CASE("the α-β pieces reproduce collectiveTime", "[analytical][collective]") {
  for (const GpuSpec& gpu : gpuCatalogue()) {
    const CollectiveModel model = makeCollectiveModel(gpu);
    for (const CollectiveOp op : kOps) {
      for (const int n : {2, 5, 8}) {
        for (const CollectiveSegment& seg : collectiveSegments(model, op, n)) {
          const int64_t s =
              seg.to.count > kMaxCollectiveBytes ? seg.from.count * 2 : (seg.from.count + seg.to.count) / 2;
          const double model_ps = static_cast<double>(collectiveTime(model, op, n, Bytes{s}).ps);
          const double ab_ps =
              static_cast<double>(seg.alpha.ps) + static_cast<double>(s) * 8e12 / static_cast<double>(seg.beta.bps);
          INFO(gpu.name << " " << collectiveOpName(op) << " n=" << n << " size " << s);
          CHECK(ab_ps == Approx(model_ps).epsilon(1e-6));
          CHECK(seg.alpha.ps >= 0);
        }
      }
    }
  }
}

TEST_CASE("other operations: ring bus bandwidth on NVLS fabrics, half the ring latency", "[analytical][collective]") {
  const CollectiveModel h100 = makeCollectiveModel(gpuByName("h100"));
  const int64_t big = 65536 * kMiB;
  for (const CollectiveOp op :
       {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter, CollectiveOp::kAllToAll, CollectiveOp::kBroadcast}) {
    INFO(collectiveOpName(op));
    // nccl-tests #212: ring and non-all-reduce collectives reach about 370 GB/s on H100.
    CHECK(busbw(op, 8, big, collectiveTime(h100, op, 8, Bytes{big})) == Approx(370.0).epsilon(0.02));
  }
  // All-gather and reduce-scatter: n-1 ring steps against 2(n-1), so half the all-reduce latency.
  CHECK(
      static_cast<double>(collectiveTime(h100, CollectiveOp::kAllGather, 8, Bytes{1}).ps) ==
      Approx(0.5 * static_cast<double>(collectiveTime(h100, CollectiveOp::kAllReduce, 8, Bytes{1}).ps)).epsilon(0.01));
  CHECK(collectiveTime(h100, CollectiveOp::kAllGather, 8, Bytes{kMiB}) ==
        collectiveTime(h100, CollectiveOp::kReduceScatter, 8, Bytes{kMiB}));
  // Without NVLS the all-reduce falls back to the ring bus bandwidth.
  CollectiveModelConfig ring;
  ring.nvls_all_reduce = false;
  const CollectiveModel h100_ring = makeCollectiveModel(gpuByName("h100"), ring);
  CHECK(busbw(CollectiveOp::kAllReduce, 8, big, collectiveTime(h100_ring, CollectiveOp::kAllReduce, 8, Bytes{big})) ==
        Approx(370.0).epsilon(0.02));
  // A100 has no NVLS: its table is the ring/tree all-reduce, and other ops share its bus bandwidth.
  const CollectiveModel a100 = makeCollectiveModel(gpuByName("a100-80gb"));
  CHECK(busbw(CollectiveOp::kAllGather, 8, big, collectiveTime(a100, CollectiveOp::kAllGather, 8, Bytes{big})) ==
        Approx(busbw(CollectiveOp::kAllReduce, 8, big, collectiveTime(a100, CollectiveOp::kAllReduce, 8, Bytes{big}))));
  for (const CollectiveOp op : kOps) CHECK(parseCollectiveOp(collectiveOpName(op)) == op);
  CHECK_FALSE(parseCollectiveOp("allreduce").has_value());
}

TEST_CASE("H800 and B200 scale the H200 fabric by NVLink bandwidth at equal latency", "[analytical][collective]") {
  const CollectiveModel h200 = makeCollectiveModel(gpuByName("h200"));
  const CollectiveModel h800 = makeCollectiveModel(gpuByName("h800"));
  const CollectiveModel b200 = makeCollectiveModel(gpuByName("b200"));
  const auto bw = [](const CollectiveModel& m, int64_t s) {
    return busbw(CollectiveOp::kAllReduce, 8, s, collectiveTime(m, CollectiveOp::kAllReduce, 8, Bytes{s}));
  };
  const int64_t big = 65536 * kMiB;
  CHECK(bw(h800, big) == Approx(bw(h200, big) * 400.0 / 900.0).epsilon(0.001));
  CHECK(bw(b200, big) == Approx(bw(h200, big) * 2.0).epsilon(0.001));
  for (const int64_t s : {int64_t{1}, kMiB, 64 * kMiB, 8192 * kMiB}) {
    INFO("size " << s);
    // Same latency, so equal at tiny sizes; ordered by NVLink bandwidth everywhere.
    CHECK(collectiveTime(h800, CollectiveOp::kAllReduce, 8, Bytes{s}) >
          collectiveTime(h200, CollectiveOp::kAllReduce, 8, Bytes{s}));
    CHECK(collectiveTime(b200, CollectiveOp::kAllReduce, 8, Bytes{s}) <
          collectiveTime(h200, CollectiveOp::kAllReduce, 8, Bytes{s}));
  }
  CHECK(static_cast<double>(collectiveTime(h800, CollectiveOp::kAllReduce, 8, Bytes{1}).ps) ==
        Approx(static_cast<double>(collectiveTime(h200, CollectiveOp::kAllReduce, 8, Bytes{1}).ps)).epsilon(0.001));
  // H800 at the H200's size S·9/4 takes the same time: bandwidth scaling is a size mapping.
  CHECK(
      static_cast<double>(collectiveTime(h800, CollectiveOp::kAllReduce, 8, Bytes{4 * kMiB}).ps) ==
      Approx(static_cast<double>(collectiveTime(h200, CollectiveOp::kAllReduce, 8, Bytes{9 * kMiB}).ps)).epsilon(1e-9));
}

TEST_CASE("any NVLink bandwidth within 1/1000..1000 of the reference scales the curves", "[analytical][collective]") {
  // 123.4 GB/s is 617/3000 of the A100's 600 GB/s: terms beyond the segments' exact
  // arithmetic, so the scale is the nearest fraction of terms up to 1,000.
  GpuSpec odd = gpuByName("a100-80gb");
  odd.nvlink_bandwidth = BitsPerSecond{1234LL * 800'000'000};
  const CollectiveModel a100 = makeCollectiveModel(gpuByName("a100-80gb"));
  const CollectiveModel scaled = makeCollectiveModel(odd);
  CHECK(scaled.bandwidth_scale.num <= 1000);
  CHECK(scaled.bandwidth_scale.den <= 1000);
  const auto bw = [](const CollectiveModel& m, int64_t s) {
    return busbw(CollectiveOp::kAllReduce, 8, s, collectiveTime(m, CollectiveOp::kAllReduce, 8, Bytes{s}));
  };
  const int64_t big = 65536 * kMiB;
  CHECK(bw(scaled, big) == Approx(bw(a100, big) * 123.4 / 600.0).epsilon(0.001));
  odd.nvlink_bandwidth = BitsPerSecond{int64_t{500'000'000}};  // 0.0625 GB/s: below 1/1000
  CHECK_THROWS_AS(makeCollectiveModel(odd), AnalyticalError);
}

TEST_CASE("PCIe servers: ring α-β with the stated defaults, slower than NVLink", "[analytical][collective]") {
  CollectiveModelConfig pcie;
  pcie.fabric = ServerFabric::kPcie;
  const CollectiveModel model = makeCollectiveModel(gpuByName("a100-80gb"), pcie);
  for (const CollectiveOp op : kOps) {
    for (int n = 2; n <= 8; ++n) {
      for (const int64_t s : {int64_t{1000}, kMiB, 100 * kMiB, 8192 * kMiB}) {
        const double steps = op == CollectiveOp::kAllReduce ? 2.0 * (n - 1) : n - 1.0;
        const double factor = op == CollectiveOp::kAllReduce   ? 2.0 * (n - 1) / n
                              : op == CollectiveOp::kBroadcast ? 1.0
                                                               : (n - 1.0) / n;
        const double expect_ps = steps * 4e6 + factor * static_cast<double>(s) / 24e9 * 1e12;
        INFO(collectiveOpName(op) << " n=" << n << " size " << s);
        // Exact up to the picosecond rounding of the curve points and of the result.
        CHECK(static_cast<double>(collectiveTime(model, op, n, Bytes{s}).ps) ==
              Approx(expect_ps).margin(2.0).epsilon(1e-12));
      }
    }
  }
  const std::vector<int64_t> sizes = sweepSizes();
  for (const GpuSpec& gpu : gpuCatalogue()) {
    const CollectiveModel nvlink = makeCollectiveModel(gpu);
    const CollectiveModel slow = makeCollectiveModel(gpu, pcie);
    for (const CollectiveOp op : kOps) {
      for (const int n : {2, 4, 8}) {
        bool slower = true;
        for (const int64_t s : sizes)
          slower = slower && collectiveTime(slow, op, n, Bytes{s}) > collectiveTime(nvlink, op, n, Bytes{s});
        INFO(gpu.name << " " << collectiveOpName(op) << " n=" << n);
        CHECK(slower);
      }
    }
  }
}

TEST_CASE("invalid PCIe parameters are errors", "[analytical][collective]") {
  CollectiveModelConfig pcie;
  pcie.fabric = ServerFabric::kPcie;
  pcie.pcie_bus_bandwidth = BitsPerSecond{0};
  CHECK_THROWS_WITH(makeCollectiveModel(gpuByName("h100"), pcie), Catch::Contains("PCIe bus bandwidth"));
  pcie.pcie_bus_bandwidth = gigabitsPerSecond(256);
  pcie.pcie_step_latency = Picoseconds{-1};
  CHECK_THROWS_WITH(makeCollectiveModel(gpuByName("h100"), pcie), Catch::Contains("PCIe step latency"));
}
