/**
 * @file gpu.hpp
 * The GPU catalogue: peak dense FLOP/s per precision, HBM size and bandwidth, NVLink
 * bandwidth per GPU. Figures from ../shared/reference/calibration.md (bf16, fp8, HBM,
 * NVLink) and the NVIDIA datasheets (fp32, tf32); see docs/analytical.md.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ecs/units.hpp"

namespace mv {

/// A user error in the analytical layer's inputs (unknown GPU name, invalid parameter).
class AnalyticalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// GPU architecture generation; selects defaults that differ by generation (overlap slow-down).
enum class GpuArchitecture : uint8_t { kAmpere, kHopper, kBlackwell };

/// Numeric precision of a kernel's math.
enum class Precision : uint8_t { kFp32, kTf32, kBf16, kFp16, kFp8 };

/// One catalogue entry. Plain data: an experiment copies it into its configuration.
struct GpuSpec {
  /// Lookup key as written in sweep.yaml (`cluster.gpu`), e.g. "h100".
  const char* name;
  /// Human-readable product name, e.g. "NVIDIA H100 SXM5 80GB".
  const char* description;
  GpuArchitecture architecture;
  /// NVLink generation (3 = A100, 4 = H100/H800/H200, 5 = B200); 4 and later have NVLink SHARP.
  uint8_t nvlink_generation;
  /// Peak FP32 without tensor cores, TFLOP/s.
  double fp32_tflops;
  /// Peak dense TF32 on tensor cores (no 2:4 sparsity), TFLOP/s.
  double tf32_tflops;
  /// Peak dense BF16 on tensor cores, TFLOP/s; FP16 is the same on every GPU listed.
  double bf16_tflops;
  /// Peak dense FP8 on tensor cores, TFLOP/s; 0 when the GPU has no FP8 tensor cores.
  double fp8_tflops;
  /// HBM capacity as the driver reports it (nvidia-smi's total, in MiB: 81,920 MiB = 80 GiB
  /// for the A100 80GB, 81,559 MiB for the H100 80GB); the memory model's budget.
  Bytes hbm_capacity;
  /// HBM bandwidth.
  BitsPerSecond hbm_bandwidth;
  /// NVLink bandwidth per GPU, both directions together, as NVIDIA quotes it
  /// (600 GB/s for A100 = 12 links × 25 GB/s each way).
  BitsPerSecond nvlink_bandwidth;
  /// Streaming multiprocessors (a GEMM's tiles run in waves of one per SM).
  uint32_t sms;
  /// Host link per direction (PCIe x16 payload rate): what activation offload copies over.
  BitsPerSecond host_link;
};

/// Changes to a catalogue entry (`cluster.gpu` written as a mapping on top of a `base`);
/// each unset field keeps the entry's value.
struct GpuOverrides {
  std::optional<double> bf16_tflops;
  std::optional<double> fp8_tflops;  ///< 0: no FP8 tensor cores
  std::optional<double> tf32_tflops;
  std::optional<Bytes> hbm_capacity;
  std::optional<BitsPerSecond> hbm_bandwidth;
  std::optional<BitsPerSecond> nvlink_bandwidth;
  std::optional<uint32_t> sms;
  std::optional<BitsPerSecond> host_link;
};

/// `base` with `overrides` applied.
GpuSpec withOverrides(GpuSpec base, const GpuOverrides& overrides);

/// Every GPU the catalogue knows, in a fixed order.
std::span<const GpuSpec> gpuCatalogue();

/// The entry called `name` (exact, lower case), or nullptr.
const GpuSpec* findGpu(std::string_view name);

/// The entry called `name`; throws AnalyticalError naming the valid names when there is none.
const GpuSpec& gpuByName(std::string_view name);

/// The valid names, comma separated ("a100-80gb, a100-40gb, h100, h800, h200, b200").
std::string gpuNameList();

/// Whether the GPU has tensor-core (or, for FP32, CUDA-core) support for `precision`.
bool supportsPrecision(const GpuSpec& gpu, Precision precision);

/// Peak dense FLOP/s at `precision`; throws AnalyticalError when the GPU lacks it (FP8 on A100).
double peakFlops(const GpuSpec& gpu, Precision precision);

/// "fp32", "tf32", "bf16", "fp16", "fp8".
const char* precisionName(Precision precision);

}  // namespace mv
