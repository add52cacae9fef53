/**
 * @file overlap.hpp
 * Slow-down of compute kernels that run while NCCL kernels run on the same GPU (they share
 * SMs, L2 and HBM bandwidth). Defaults from the Echo/Moye measurements in
 * ../shared/reference/calibration.md; every factor is configurable. Factors are exact integer
 * fractions (parts per million) so stretched times are the same picosecond on every backend.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "analytical/gpu.hpp"
#include "ecs/macros.hpp"
#include "ecs/units.hpp"

namespace mv {

/// Parts per million of a slow-down factor (×1 = 1,000,000).
inline constexpr uint32_t kSlowdownOne = 1000000;

/// A slow-down factor ≥ 1 as parts per million: 1'150'000 means "takes 1.15× as long".
struct Slowdown {
  uint32_t ppm = kSlowdownOne;

  MV_HD constexpr double toDouble() const { return static_cast<double>(ppm) / kSlowdownOne; }
};

/// The factor `factor` (e.g. 1.15) rounded to parts per million; 0 for negative input.
MV_HD constexpr Slowdown slowdownFactor(double factor) {
  return Slowdown{factor <= 0.0 ? 0u : static_cast<uint32_t>(factor * kSlowdownOne + 0.5)};
}

/// What a compute kernel is bound by, which decides how much it suffers from overlap.
enum class KernelClass : uint8_t {
  kGemm,         ///< tensor-core GEMMs (QKV, projections, MLP, attention matmuls)
  kMemoryBound,  ///< LayerNorm, softmax, dropout, element-wise and other HBM-bound kernels
};

/// Slow-down factors while computation and communication overlap (per experiment).
struct OverlapSlowdown {
  /// GEMM kernels overlapped with NCCL. Echo/Moye: ×1.13–1.39 across GPUs and CUDA versions.
  Slowdown gemm;
  /// Memory-bound kernels overlapped with NCCL. Echo/Moye: ×1.09–1.94.
  Slowdown memory_bound;
  /// NCCL kernels overlapped with compute. No public figure: ×1 unless configured.
  Slowdown communication;

  /// The factor for a compute kernel of class `kind`.
  MV_HD constexpr Slowdown forKernel(KernelClass kind) const {
    return kind == KernelClass::kGemm ? gemm : memory_bound;
  }
};
static_assert(std::is_trivially_copyable_v<OverlapSlowdown>);
static_assert(sizeof(OverlapSlowdown) == 12);

/**
 * Defaults by GPU generation (assumptions, see docs/analytical.md):
 * - Ampere: the A800 measurements, GEMM ×1.134–1.178 and LayerNorm ×1.091–1.207, taken near
 *   the middle: GEMM ×1.15, memory-bound ×1.15.
 * - Hopper and Blackwell (no per-GPU split published; Blackwell has no data at all): GEMM ×1.26,
 *   the middle of the ×1.13–1.39 range; memory-bound ×1.38, the +37.7 % average slow-down of
 *   kernels overlapped with a 25 MB all-reduce (inside the ×1.09–1.94 range).
 * Communication is never slowed by default.
 */
inline OverlapSlowdown defaultOverlapSlowdown(GpuArchitecture arch) {
  if (arch == GpuArchitecture::kAmpere) {
    return OverlapSlowdown{slowdownFactor(1.15), slowdownFactor(1.15), Slowdown{}};
  }
  return OverlapSlowdown{slowdownFactor(1.26), slowdownFactor(1.38), Slowdown{}};
}

/// Why `s` is invalid (a factor below 1 or above 4), or nullopt when it is valid.
inline std::optional<std::string> overlapSlowdownError(const OverlapSlowdown& s) {
  const struct {
    const char* key;
    Slowdown value;
  } factors[] = {{"gemm", s.gemm}, {"memory_bound", s.memory_bound}, {"communication", s.communication}};
  for (const auto& f : factors) {
    if (f.value.ppm < kSlowdownOne || f.value.ppm > 4 * kSlowdownOne) {
      return std::string("overlap slow-down '") + f.key + "' is " + std::to_string(f.value.toDouble()) +
             "; it must be in 1 .. 4 (1 = no slow-down; measured GEMM 1.13-1.39, LayerNorm 1.09-1.94)";
    }
  }
  return std::nullopt;
}

/// `isolated` stretched by `factor`, rounded up to the picosecond.
MV_HD constexpr Picoseconds slowedDown(Picoseconds isolated, Slowdown factor) {
  MV_ASSERT(factor.ppm >= kSlowdownOne, "slow-down factor below 1 (validate with overlapSlowdownError)");
  const Int128 num = Int128{isolated.ps} * factor.ppm;
  return Picoseconds{static_cast<int64_t>((num + kSlowdownOne - 1) / kSlowdownOne)};
}

/**
 * Duration of a kernel of `isolated` duration whose first `overlap` of wall time runs next to
 * communication: it progresses at 1/factor of its speed during the overlap and at full speed
 * after. Equals slowedDown(isolated, factor) when the overlap covers the whole kernel, and
 * `isolated` when there is none; nondecreasing in `overlap`.
 */
MV_HD constexpr Picoseconds overlappedDuration(Picoseconds isolated, Slowdown factor, Picoseconds overlap) {
  MV_ASSERT(isolated.ps >= 0, "negative kernel duration");
  const Picoseconds full = slowedDown(isolated, factor);
  if (overlap.ps >= full.ps) return full;
  if (overlap.ps <= 0) return isolated;
  const int64_t done = static_cast<int64_t>(Int128{overlap.ps} * kSlowdownOne / factor.ppm);  // < isolated
  return Picoseconds{overlap.ps + (isolated.ps - done)};
}

}  // namespace mv
