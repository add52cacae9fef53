/**
 * @file collective_model.cpp
 * Calibration data of the intra-server collective model and the host-side builder.
 */
#include "analytical/collective_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>

namespace mv {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// nccl-tests all_reduce_perf, in-place busbw. Sizes are the powers of two nccl-tests steps
// through (-f 2), printed rounded in decimal units in the source ("33 MB" = 2^25 bytes).

/// 8×H200 SXM (NVLink4 + NVSwitch, NVLS), NCCL 2.20.5. Source: Azure AI-benchmarking-guide,
/// ND_H200_v5 results, as transcribed in ../shared/reference/calibration.md.
constexpr std::array<BusBandwidthSample, 12> kH200AllReduce = {{
    {kMiB << 0, 52.96},
    {kMiB << 2, 138.44},
    {kMiB << 3, 181.94},
    {kMiB << 4, 240.41},
    {kMiB << 5, 300.91},
    {kMiB << 6, 368.11},
    {kMiB << 7, 412.45},
    {kMiB << 8, 432.24},
    {kMiB << 9, 442.72},
    {kMiB << 10, 467.58},
    {kMiB << 12, 477.41},
    {kMiB << 13, 479.98},
}};

/// 8×A100 SXM4 80GB (NVLink3 + NVSwitch), NCCL 2.18.5. Source: Azure AI-benchmarking-guide,
/// ND_A100_v4 results, as transcribed in ../shared/reference/calibration.md.
constexpr std::array<BusBandwidthSample, 6> kA100AllReduce = {{
    {kMiB << 0, 36.22},
    {kMiB << 4, 109.22},
    {kMiB << 7, 174.18},
    {kMiB << 8, 213.87},
    {kMiB << 10, 228.10},
    {kMiB << 13, 231.58},
}};

constexpr BitsPerSecond kA100Nvlink = gigabitsPerSecond(600 * 8);
constexpr BitsPerSecond kH200Nvlink = gigabitsPerSecond(900 * 8);

/// Ring and non-all-reduce collectives on NVLink4/NVSwitch reach ≈ 370 GB/s bus bandwidth
/// where the NVLS all-reduce of the H200 table reaches ≈ 480 (NCCL maintainers, nccl-tests #212).
constexpr Fraction kRingVsNvls{370, 480};

Fraction reduced(int64_t num, int64_t den) {
  const int64_t g = std::gcd(num, den);
  return Fraction{num / g, den / g};
}

/// num / den exactly when both reduce to at most kMaxScaleTerm, else the nearest fraction
/// whose terms are (the segments' exact 128-bit arithmetic needs small terms). `num / den`
/// must lie within [1 / kMaxScaleTerm, kMaxScaleTerm].
constexpr int64_t kMaxScaleTerm = 1000;
Fraction smallFraction(int64_t num, int64_t den) {
  const Fraction exact = reduced(num, den);
  if (exact.num <= kMaxScaleTerm && exact.den <= kMaxScaleTerm) return exact;
  const double x = static_cast<double>(num) / static_cast<double>(den);
  Fraction best{1, kMaxScaleTerm};
  double best_error = std::abs(1.0 / kMaxScaleTerm - x);
  for (int64_t d = 1; d <= kMaxScaleTerm; ++d) {
    const int64_t n = std::clamp<int64_t>(std::llround(x * static_cast<double>(d)), 1, kMaxScaleTerm);
    const double error = std::abs(static_cast<double>(n) / static_cast<double>(d) - x);
    if (error < best_error) {
      best = Fraction{n, d};
      best_error = error;
    }
  }
  return reduced(best.num, best.den);
}

/// The reference curve of an R-GPU all-reduce from a bus-bandwidth table:
/// T = S · (2(R−1)/R) / busbw, to the nearest picosecond.
void fillCurve(CollectiveModel& model, std::span<const BusBandwidthSample> samples) {
  MV_ASSERT(samples.size() >= 2 && samples.size() <= kMaxCurvePoints, "calibration table size");
  const int64_t q = 2 * int64_t{kReferenceGpus - 1};
  for (size_t i = 0; i < samples.size(); ++i) {
    // busbw in units of 10 MB/s, so the conversion below is exact integer arithmetic.
    const int64_t centi_gbps = std::llround(samples[i].busbw_gbps * 100.0);
    // ps = S·q/R / (centi·1e7 B/s) · 1e12 = S·q·1e5 / (R·centi)
    const Int128 num = Int128{samples[i].bytes} * q * 100000;
    const Int128 den = Int128{kReferenceGpus} * centi_gbps;
    model.curve[i] = CurvePoint{samples[i].bytes, static_cast<int64_t>((2 * num + den) / (2 * den))};
  }
  model.num_points = static_cast<int32_t>(samples.size());
}

/// The PCIe reference curve: a ring all-reduce over R GPUs, T = 2(R−1)·step + S·(2(R−1)/R)/B,
/// one straight line given by two points.
void fillPcieCurve(CollectiveModel& model, const CollectiveModelConfig& config) {
  const int64_t q = 2 * int64_t{kReferenceGpus - 1};
  constexpr int64_t kPsBitsPerByteSecond = 8LL * 1000 * 1000 * 1000 * 1000;
  const std::array<int64_t, 2> sizes = {kMiB, kMiB << 10};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Int128 num = Int128{sizes[i]} * q * kPsBitsPerByteSecond;
    const Int128 den = Int128{kReferenceGpus} * config.pcie_bus_bandwidth.bps;
    const int64_t transfer = static_cast<int64_t>((2 * num + den) / (2 * den));
    model.curve[i] = CurvePoint{sizes[i], q * config.pcie_step_latency.ps + transfer};
  }
  model.num_points = 2;
}

/// The curve is increasing, and every segment's α (its line at S = 0) is ≥ 0, i.e. the bus
/// bandwidth never falls with size — which makes the whole model monotone and sub-additive.
void checkCurve(const CollectiveModel& model) {
  for (int j = 0; j + 1 < model.num_points; ++j) {
    const CurvePoint p0 = model.curve[j];
    const CurvePoint p1 = model.curve[j + 1];
    MV_ASSERT(p0.bytes > 0 && p1.bytes > p0.bytes && p1.ps > p0.ps, "reference curve not increasing");
    MV_ASSERT(Int128{p0.ps} * (p1.bytes - p0.bytes) >= Int128{p0.bytes} * (p1.ps - p0.ps),
              "reference curve segment with negative latency");
  }
}

}  // namespace

const char* collectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllToAll:
      return "all_to_all";
    case CollectiveOp::kBroadcast:
      return "broadcast";
  }
  return "?";
}

std::optional<CollectiveOp> parseCollectiveOp(std::string_view name) {
  for (int i = 0; i < kCollectiveOpCount; ++i) {
    const auto op = static_cast<CollectiveOp>(i);
    if (name == collectiveOpName(op)) return op;
  }
  return std::nullopt;
}

std::span<const BusBandwidthSample> calibrationSamples(CalibrationTable table) {
  switch (table) {
    case CalibrationTable::kA100AllReduce:
      return kA100AllReduce;
    case CalibrationTable::kH200AllReduce:
      return kH200AllReduce;
  }
  return {};
}

CollectiveModel makeCollectiveModel(const GpuSpec& gpu, const CollectiveModelConfig& config) {
  CollectiveModel model;
  model.fabric = config.fabric;
  if (config.fabric == ServerFabric::kPcie) {
    if (config.pcie_bus_bandwidth < gigabitsPerSecond(1) || config.pcie_bus_bandwidth > gigabitsPerSecond(8000)) {
      throw AnalyticalError("PCIe bus bandwidth " + std::to_string(config.pcie_bus_bandwidth.toGbps()) +
                            " Gb/s is outside 1 Gb/s .. 8 Tb/s (PCIe Gen4 x16 sustains about 192 Gb/s = 24 GB/s)");
    }
    if (config.pcie_step_latency < Picoseconds{0} || config.pcie_step_latency > milliseconds(10)) {
      throw AnalyticalError("PCIe step latency " + std::to_string(config.pcie_step_latency.toMicroseconds()) +
                            " us is outside 0 .. 10 ms (a few us is typical)");
    }
    fillPcieCurve(model, config);
    checkCurve(model);
    return model;  // every op at the curve's bandwidth: bandwidth_scale and efficiencies stay 1/1
  }
  const bool nvls_fabric = gpu.nvlink_generation >= 4;
  fillCurve(model, nvls_fabric ? std::span<const BusBandwidthSample>(kH200AllReduce)
                               : std::span<const BusBandwidthSample>(kA100AllReduce));
  checkCurve(model);
  const BitsPerSecond reference = nvls_fabric ? kH200Nvlink : kA100Nvlink;
  if (gpu.nvlink_bandwidth.bps * kMaxScaleTerm < reference.bps ||
      gpu.nvlink_bandwidth.bps > reference.bps * kMaxScaleTerm) {
    throw AnalyticalError("NVLink bandwidth " + std::to_string(gpu.nvlink_bandwidth.toGbps() / 8) +
                          " GB/s is outside 1/1000 .. 1000 times the " + std::to_string(reference.toGbps() / 8) +
                          " GB/s the collective curves were measured at");
  }
  model.bandwidth_scale = smallFraction(gpu.nvlink_bandwidth.bps, reference.bps);
  if (nvls_fabric) {
    model.other_efficiency = reduced(kRingVsNvls.num, kRingVsNvls.den);
    if (!config.nvls_all_reduce) model.all_reduce_efficiency = model.other_efficiency;
  }
  return model;
}

std::vector<CollectiveSegment> collectiveSegments(const CollectiveModel& model, CollectiveOp op, int32_t gpus) {
  MV_ASSERT(gpus >= 2 && gpus <= kMaxServerGpus, "segments need 2..8 GPUs");
  const double ref_steps = 2.0 * (kReferenceGpus - 1);
  const double a = static_cast<double>(detail::latencySteps(op, gpus)) / ref_steps;
  const Fraction k = model.bandwidth_scale;
  const Fraction e = op == CollectiveOp::kAllReduce ? model.all_reduce_efficiency : model.other_efficiency;
  const double b = static_cast<double>(detail::busFactorNumerator(op, gpus)) * kReferenceGpus *
                   static_cast<double>(k.den) * static_cast<double>(e.den) /
                   (static_cast<double>(gpus) * ref_steps * static_cast<double>(k.num) * static_cast<double>(e.num));
  std::vector<CollectiveSegment> segments;
  for (int j = 0; j + 1 < model.num_points; ++j) {
    const CurvePoint p0 = model.curve[j];
    const CurvePoint p1 = model.curve[j + 1];
    const double slope = static_cast<double>(p1.ps - p0.ps) / static_cast<double>(p1.bytes - p0.bytes);
    CollectiveSegment s;
    s.from = Bytes{j == 0 ? 0 : std::llround(static_cast<double>(p0.bytes) * a / b)};
    s.to = Bytes{j + 2 == model.num_points ? kMaxCollectiveBytes + 1
                                           : std::llround(static_cast<double>(p1.bytes) * a / b)};
    s.alpha = Picoseconds{std::llround(a * (static_cast<double>(p0.ps) - static_cast<double>(p0.bytes) * slope))};
    s.beta = BitsPerSecond{std::llround(8e12 / (b * slope))};
    segments.push_back(s);
  }
  return segments;
}

double busBandwidthGBps(CollectiveOp op, int32_t gpus, Bytes size, Picoseconds t) {
  const Fraction f = busBandwidthFactor(op, gpus);
  // (S / t) · q/n in 1e9 B/s with t in ps: S·q·1e3 / (n·t)
  return static_cast<double>(size.count) * static_cast<double>(f.num) * 1e3 /
         (static_cast<double>(f.den) * static_cast<double>(t.ps));
}

}  // namespace mv
