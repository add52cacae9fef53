/**
 * @file gpu.cpp
 * The GPU catalogue data and its lookup.
 */
#include "analytical/gpu.hpp"

#include <array>

namespace mv {
namespace {

constexpr BitsPerSecond gigabytesPerSecond(int64_t gb) {
  return BitsPerSecond{gb * 8 * 1000 * 1000 * 1000};
}
constexpr BitsPerSecond megabytesPerSecond(int64_t mb) {
  return BitsPerSecond{mb * 8 * 1000 * 1000};
}

// bf16, fp8, HBM bandwidth and NVLink: ../shared/reference/calibration.md ("GPUs" and the
// Selene notes). fp32 (non-tensor) and dense tf32: NVIDIA datasheets — A100 19.5 / 156; H100
// SXM, H800 SXM and H200 SXM 67 / 494.7 (the datasheets print 989 "with sparsity"); HGX B200
// 80 / 1100 per GPU (1,000 W configuration). H800: calibration.md says "as H100 with NVLink
// 400 GB/s". A100 40GB: the 80GB's compute and NVLink with 1,555 GB/s. HBM capacity: the
// total nvidia-smi reports (MiB), which is what a job can allocate against: 81,920 (A100
// 80GB), 40,960 (A100 40GB), 81,559 (H100, H800), 143,771 (H200), 183,359 (B200). SMs: 108
// (A100), 132 (H100, H800, H200), 148 (B200). Host link per direction: PCIe 4.0 x16 (A100),
// 5.0 x16 (Hopper, HGX B200), 16 or 32 GT/s × 16 lanes × 128/130 = 31.5 or 63 GB/s.
constexpr std::array<GpuSpec, 6> kCatalogue = {{
    {"a100-80gb", "NVIDIA A100 SXM4 80GB", GpuArchitecture::kAmpere, 3, 19.5, 156.0, 312.0, 0.0, mebibytes(81920),
     gigabytesPerSecond(2000), gigabytesPerSecond(600), 108, megabytesPerSecond(31508)},
    {"a100-40gb", "NVIDIA A100 SXM4 40GB", GpuArchitecture::kAmpere, 3, 19.5, 156.0, 312.0, 0.0, mebibytes(40960),
     gigabytesPerSecond(1555), gigabytesPerSecond(600), 108, megabytesPerSecond(31508)},
    {"h100", "NVIDIA H100 SXM5 80GB", GpuArchitecture::kHopper, 4, 67.0, 494.7, 989.0, 1979.0, mebibytes(81559),
     gigabytesPerSecond(3350), gigabytesPerSecond(900), 132, megabytesPerSecond(63015)},
    {"h800", "NVIDIA H800 SXM5 80GB", GpuArchitecture::kHopper, 4, 67.0, 494.7, 989.0, 1979.0, mebibytes(81559),
     gigabytesPerSecond(3350), gigabytesPerSecond(400), 132, megabytesPerSecond(63015)},
    {"h200", "NVIDIA H200 SXM 141GB", GpuArchitecture::kHopper, 4, 67.0, 494.7, 989.0, 1979.0, mebibytes(143771),
     gigabytesPerSecond(4800), gigabytesPerSecond(900), 132, megabytesPerSecond(63015)},
    {"b200", "NVIDIA B200 (HGX, 1000 W) 180GB", GpuArchitecture::kBlackwell, 5, 80.0, 1100.0, 2250.0, 4500.0,
     mebibytes(183359), gigabytesPerSecond(8000), gigabytesPerSecond(1800), 148, megabytesPerSecond(63015)},
}};

}  // namespace

GpuSpec withOverrides(GpuSpec base, const GpuOverrides& o) {
  base.bf16_tflops = o.bf16_tflops.value_or(base.bf16_tflops);
  base.fp8_tflops = o.fp8_tflops.value_or(base.fp8_tflops);
  base.tf32_tflops = o.tf32_tflops.value_or(base.tf32_tflops);
  base.hbm_capacity = o.hbm_capacity.value_or(base.hbm_capacity);
  base.hbm_bandwidth = o.hbm_bandwidth.value_or(base.hbm_bandwidth);
  base.nvlink_bandwidth = o.nvlink_bandwidth.value_or(base.nvlink_bandwidth);
  base.sms = o.sms.value_or(base.sms);
  base.host_link = o.host_link.value_or(base.host_link);
  return base;
}

std::span<const GpuSpec> gpuCatalogue() {
  return kCatalogue;
}

const GpuSpec* findGpu(std::string_view name) {
  for (const GpuSpec& gpu : kCatalogue) {
    if (name == gpu.name) return &gpu;
  }
  return nullptr;
}

std::string gpuNameList() {
  std::string list;
  for (const GpuSpec& gpu : kCatalogue) {
    if (!list.empty()) list += ", ";
    list += gpu.name;
  }
  return list;
}

const GpuSpec& gpuByName(std::string_view name) {
  if (const GpuSpec* gpu = findGpu(name)) return *gpu;
  throw AnalyticalError("unknown GPU '" + std::string(name) + "'; valid names: " + gpuNameList());
}

bool supportsPrecision(const GpuSpec& gpu, Precision precision) {
  return precision != Precision::kFp8 || gpu.fp8_tflops > 0.0;
}

double peakFlops(const GpuSpec& gpu, Precision precision) {
  constexpr double kTera = 1e12;
  switch (precision) {
    case Precision::kFp32:
      return gpu.fp32_tflops * kTera;
    case Precision::kTf32:
      return gpu.tf32_tflops * kTera;
    case Precision::kBf16:
    case Precision::kFp16:
      return gpu.bf16_tflops * kTera;
    case Precision::kFp8:
      if (!supportsPrecision(gpu, precision)) {
        throw AnalyticalError(std::string("GPU '") + gpu.name + "' has no fp8 tensor cores; use bf16 or fp16");
      }
      return gpu.fp8_tflops * kTera;
  }
  throw AnalyticalError("unknown precision");
}

const char* precisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp8:
      return "fp8";
  }
  return "?";
}

}  // namespace mv
