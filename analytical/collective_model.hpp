/**
 * @file collective_model.hpp
 * Calibrated analytical time of a collective inside one server (NCCL over NVLink/NVSwitch,
 * or over PCIe): a piecewise α-β model fitted to public nccl-tests bus-bandwidth tables,
 * scaled to other GPUs, GPU counts and operations. Built once per experiment on the host
 * (`makeCollectiveModel`); evaluated anywhere (`collectiveTime` is host/device code in
 * exact integer arithmetic, so both backends give the same picosecond).
 * The model, its parameters and their sources: docs/analytical.md.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "analytical/gpu.hpp"
#include "ecs/macros.hpp"
#include "ecs/units.hpp"

namespace mv {

/// Collective operations of the intra-server model.
enum class CollectiveOp : uint8_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast };

inline constexpr int kCollectiveOpCount = 5;

/// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast" (the sweep.yaml keys).
const char* collectiveOpName(CollectiveOp op);

/// The operation called `name` (one of the names above), if any.
std::optional<CollectiveOp> parseCollectiveOp(std::string_view name);

/// How the GPUs of a server are connected.
enum class ServerFabric : uint8_t { kNvlink, kPcie };

/// Knobs of the intra-server model; the defaults are the calibrated setup.
struct CollectiveModelConfig {
  /// NVLink/NVSwitch (calibrated) or PCIe (assumed α-β, see below).
  ServerFabric fabric = ServerFabric::kNvlink;
  /// NVLink4+ fabrics: NCCL's NVLink SHARP (NVLS) all-reduce, as in the calibration table.
  /// false = ring all-reduce, which reaches the ring bus bandwidth (≈ 370 of 480 GB/s on H100).
  bool nvls_all_reduce = true;
  /// PCIe only: bus bandwidth each GPU sustains per direction (PCIe Gen4 x16 ≈ 24 GB/s of the
  /// 32 GB/s raw), assuming every GPU pair reaches it through PCIe switches with P2P.
  BitsPerSecond pcie_bus_bandwidth = gigabitsPerSecond(192);
  /// PCIe only: latency per ring step; an 8-GPU all-reduce (14 steps) then has α = 56 µs.
  Picoseconds pcie_step_latency = microseconds(4);
};

/// A ratio of two positive integers.
struct Fraction {
  int64_t num = 1;
  int64_t den = 1;
};

/// One measured point of a reference curve: a per-rank buffer size and its time.
struct CurvePoint {
  int64_t bytes = 0;
  int64_t ps = 0;
};

/// GPU count of the calibration tables (one HGX/DGX server).
inline constexpr int32_t kReferenceGpus = 8;
/// Largest GPU count the intra-server model accepts.
inline constexpr int32_t kMaxServerGpus = 8;
/// Largest per-rank buffer `collectiveTime` accepts (16 TiB; keeps the exact arithmetic in 128 bits).
inline constexpr int64_t kMaxCollectiveBytes = kMaxInputBytes;
/// Capacity of a reference curve.
inline constexpr int kMaxCurvePoints = 16;

/**
 * A built model, plain data (one per experiment). `curve` is the time of an all-reduce on
 * kReferenceGpus GPUs of the reference fabric at each calibrated size; between two points the
 * time is α + S/β of the line through them, outside the first/last segment's line is extended.
 * The other fields map an (op, GPU count, GPU) onto that curve (see collectiveTime).
 */
struct CollectiveModel {
  CurvePoint curve[kMaxCurvePoints] = {};
  int32_t num_points = 0;
  /// Fabric of the reference table this GPU's curve derives from (for reports).
  ServerFabric fabric = ServerFabric::kNvlink;
  /// This GPU's interconnect bandwidth relative to the reference GPU's.
  Fraction bandwidth_scale;
  /// Bus bandwidth of an all-reduce relative to the reference all-reduce.
  Fraction all_reduce_efficiency;
  /// Bus bandwidth of all-gather, reduce-scatter, all-to-all, broadcast relative to it.
  Fraction other_efficiency;
};
static_assert(std::is_trivially_copyable_v<CollectiveModel>);
static_assert(sizeof(CollectiveModel) == 16 * kMaxCurvePoints + 8 + 3 * 16);

/// Builds the model of `gpu`'s server; throws AnalyticalError for invalid PCIe parameters.
CollectiveModel makeCollectiveModel(const GpuSpec& gpu, const CollectiveModelConfig& config = {});

namespace detail {

/// Sequential latency steps of the ring algorithm: 2(n−1) for all-reduce, n−1 otherwise.
MV_HD constexpr int64_t latencySteps(CollectiveOp op, int32_t gpus) {
  return op == CollectiveOp::kAllReduce ? 2 * int64_t{gpus - 1} : int64_t{gpus - 1};
}

/// Numerator q of the nccl-tests bus-bandwidth factor q/n.
MV_HD constexpr int64_t busFactorNumerator(CollectiveOp op, int32_t gpus) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2 * int64_t{gpus - 1};
    case CollectiveOp::kBroadcast:
      return gpus;
    default:
      return gpus - 1;
  }
}

}  // namespace detail

/**
 * nccl-tests bus-bandwidth factor busbw / algbw: 2(n−1)/n for all-reduce; (n−1)/n for
 * all-gather, reduce-scatter and all-to-all; 1 for broadcast (nccl-tests doc/PERFORMANCE.md).
 */
MV_HD constexpr Fraction busBandwidthFactor(CollectiveOp op, int32_t gpus) {
  return Fraction{detail::busFactorNumerator(op, gpus), gpus};
}

/**
 * Time of `op` over `gpus` GPUs of one server for a per-rank buffer of `size` bytes, as
 * nccl-tests counts it (all-reduce and broadcast: the buffer; all-gather: the gathered output;
 * reduce-scatter: the input before scattering; all-to-all: each rank's send buffer). 0 for one
 * GPU or an empty buffer. Rounded up to the picosecond; monotone in `size`.
 *
 * With R = kReferenceGpus and T the reference curve (R-GPU all-reduce), the time is
 *   t(S) = a · T(S · b / a),   a = steps(op, n) / (2(R−1)),   b = (f(op, n) / f(AR, R)) / (k · e),
 * f the bus-bandwidth factor, k the bandwidth scale, e the op's efficiency. On every segment
 * where T = α + S/β this is t = a·α + S·b/β: ring scaling multiplies the latency by the step
 * count ratio and the transfer time by the bus-factor ratio, a faster fabric divides the
 * transfer time — and t stays continuous and monotone across segments.
 */
MV_HD inline Picoseconds collectiveTime(const CollectiveModel& model, CollectiveOp op, int32_t gpus, Bytes size) {
  MV_ASSERT(gpus >= 1 && gpus <= kMaxServerGpus, "intra-server collective over an unsupported GPU count");
  MV_ASSERT(size.count >= 0 && size.count <= kMaxCollectiveBytes, "collective size out of range");
  MV_ASSERT(model.num_points >= 2, "collective model used before makeCollectiveModel");
  if (gpus == 1 || size.count == 0) return Picoseconds{0};
  const int64_t steps = detail::latencySteps(op, gpus);
  const int64_t ref_steps = 2 * int64_t{kReferenceGpus - 1};
  const Fraction k = model.bandwidth_scale;
  const Fraction e = op == CollectiveOp::kAllReduce ? model.all_reduce_efficiency : model.other_efficiency;
  // b = (q/n) / (2(R−1)/R) / (k·e), with q/n this op's bus factor.
  const Int128 b_num = Int128{detail::busFactorNumerator(op, gpus)} * kReferenceGpus * k.den * e.den;
  const Int128 b_den = Int128{gpus} * ref_steps * k.num * e.num;
  // Reference size x = S·b/a = x_num / x_den.
  const Int128 x_num = Int128{size.count} * b_num * ref_steps;
  const Int128 x_den = b_den * steps;
  int j = 0;
  while (j + 2 < model.num_points && Int128{model.curve[j + 1].bytes} * x_den <= x_num) ++j;
  const CurvePoint p0 = model.curve[j];
  const CurvePoint p1 = model.curve[j + 1];
  const Int128 ds = Int128{p1.bytes} - p0.bytes;
  const Int128 dt = Int128{p1.ps} - p0.ps;
  // t = a · (T0 + (x − S0)·dt/ds), one exact fraction, rounded up.
  const Int128 num = (Int128{p0.ps} * ds * x_den + (x_num - Int128{p0.bytes} * x_den) * dt) * steps;
  const Int128 den = ds * x_den * ref_steps;
  return Picoseconds{static_cast<int64_t>((num + den - 1) / den)};
}

/// One α-β piece of the model for a given (op, GPU count): t = alpha + S / beta for S in [from, to).
struct CollectiveSegment {
  Bytes from;
  /// Exclusive end; Bytes{kMaxCollectiveBytes + 1} for the last piece.
  Bytes to;
  Picoseconds alpha;
  /// Bytes per second of S (algorithm bandwidth of the marginal bytes), as a bit rate.
  BitsPerSecond beta;
};

/// The model's α-β pieces for `op` over `gpus` GPUs (2 ≤ gpus ≤ kMaxServerGpus), for reports
/// and docs; α and β are rounded, collectiveTime is the exact form.
std::vector<CollectiveSegment> collectiveSegments(const CollectiveModel& model, CollectiveOp op, int32_t gpus);

/// Bus bandwidth in GB/s (10⁹ bytes/s) that a time `t` for `size` bytes corresponds to.
double busBandwidthGBps(CollectiveOp op, int32_t gpus, Bytes size, Picoseconds t);

/// One row of a public nccl-tests table: per-rank buffer and measured bus bandwidth.
struct BusBandwidthSample {
  int64_t bytes;
  double busbw_gbps;
};

/// The public calibration tables the model is fitted to.
enum class CalibrationTable : uint8_t {
  kA100AllReduce,  ///< 8×A100 SXM4 80GB, NCCL 2.18.5 (Azure ND_A100_v4).
  kH200AllReduce,  ///< 8×H200 SXM, NVLS, NCCL 2.20.5 (Azure ND_H200_v5).
};

/// The rows of a calibration table (all-reduce over kReferenceGpus GPUs).
std::span<const BusBandwidthSample> calibrationSamples(CalibrationTable table);

}  // namespace mv
