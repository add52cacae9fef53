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
constexpr Bytes gigabytes(int64_t gb) {
  return Bytes{gb * 1000 * 1000 * 1000};
}

// bf16, fp8, HBM and NVLink: ../shared/reference/calibration.md ("GPUs" and the Selene notes).
// fp32 (non-tensor) and dense tf32: NVIDIA datasheets — A100 19.5 / 156; H100 SXM, H800 SXM
// and H200 SXM 67 / 494.7 (the datasheets print 989 "with sparsity"); HGX B200 80 / 1100
// per GPU (1,000 W configuration). H800: calibration.md says "as H100 with NVLink 400 GB/s".
// B200: 180 GB, the capacity an HGX/DGX B200 exposes per GPU (1,440 GB per 8-GPU board);
// the package carries 192 GB.
constexpr std::array<GpuSpec, 5> kCatalogue = {{
    {"a100-80gb", "NVIDIA A100 SXM4 80GB", GpuArchitecture::kAmpere, 3, 19.5, 156.0, 312.0, 0.0, gigabytes(80),
     gigabytesPerSecond(2000), gigabytesPerSecond(600)},
    {"h100", "NVIDIA H100 SXM5 80GB", GpuArchitecture::kHopper, 4, 67.0, 494.7, 989.0, 1979.0, gigabytes(80),
     gigabytesPerSecond(3350), gigabytesPerSecond(900)},
    {"h800", "NVIDIA H800 SXM5 80GB", GpuArchitecture::kHopper, 4, 67.0, 494.7, 989.0, 1979.0, gigabytes(80),
     gigabytesPerSecond(3350), gigabytesPerSecond(400)},
    {"h200", "NVIDIA H200 SXM 141GB", GpuArchitecture::kHopper, 4, 67.0, 494.7, 989.0, 1979.0, gigabytes(141),
     gigabytesPerSecond(4800), gigabytesPerSecond(900)},
    {"b200", "NVIDIA B200 (HGX, 1000 W) 180GB", GpuArchitecture::kBlackwell, 5, 80.0, 1100.0, 2250.0, 4500.0,
     gigabytes(180), gigabytesPerSecond(8000), gigabytesPerSecond(1800)},
}};

}  // namespace

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
