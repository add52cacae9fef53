/**
 * @file cuda_policy.cuh
 * Execution policies of the CUDA backend: the only CUDA-specific code the single-source
 * engine needs. In the megakernel every thread of the cooperative grid is one worker and
 * the barrier is a grid-wide sync; in kernel-per-node mode kernel boundaries are the
 * barriers.
 */
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include "ecs/macros.hpp"
#include "kernels/cuda/phase_profile.cuh"

/// Whether this compilation pass has warps: device code, or the emulated device's.
#if defined(__CUDA_ARCH__) || defined(MV_EMULATED_DEVICE)
#define MV_WARP_CODE 1
#else
#define MV_WARP_CODE 0
#endif

namespace mv {

/// A team system's lanes on a GPU (SoloTeam, ecs/policy.hpp, has the same interface): the 32
/// threads of a warp; sync() is __syncwarp(), the collectives are shuffles. Its functions
/// are host-device so that host-device code may name them (as the step loop's templates
/// do); a team exists only in device code, and on the host they do nothing.
struct WarpTeam {
  static constexpr int kSize = 32;
  static constexpr unsigned kAll = 0xffffffffu;
  int lane_ = 0;
  MV_HD int lane() const { return lane_; }
  MV_HD bool leader() const { return lane_ == 0; }
  MV_HD void sync() const {
#if MV_WARP_CODE
    __syncwarp();
#endif
  }
  template <class T>
  MV_HD T broadcast(T v) const {
#if MV_WARP_CODE
    v = __shfl_sync(kAll, v, 0);
#endif
    return v;
  }
  template <class T>
  MV_HD T minimum(T v) const {
#if MV_WARP_CODE
    for (int d = kSize / 2; d > 0; d /= 2) {
      const T other = __shfl_xor_sync(kAll, v, d);
      v = other < v ? other : v;
    }
#endif
    return v;
  }
  MV_HD uint32_t exclusiveSum(uint32_t v, uint32_t& total) const {
    uint32_t sum = v;  // inclusive scan (Hillis-Steele) over the lanes
#if MV_WARP_CODE
    for (int d = 1; d < kSize; d *= 2) {
      const uint32_t below = __shfl_sync(kAll, sum, lane_ >= d ? lane_ - d : lane_);
      if (lane_ >= d) sum += below;
    }
    total = __shfl_sync(kAll, sum, kSize - 1);
#else
    total = sum;
#endif
    return sum - v;
  }
};

/// One persistent cooperative grid; barrier = grid.sync().
struct CudaGridPolicy {
  static constexpr bool kGridStride = true;
  /// Whether a system's rows are spread over the warps (parallelForUnits); off, they take
  /// the grid-stride loop (MV_CUDA_SPREAD_ROWS=0, to compare the two on one build).
  bool spread_rows = true;
  /// Whether a team system's rows each take a warp (parallelForTeams); off, one thread
  /// (MV_CUDA_TEAM_ROWS=0, to compare the two on one build).
  bool team_rows = true;
  __device__ int64_t rank() const { return int64_t{blockIdx.x} * blockDim.x + threadIdx.x; }
  __device__ int64_t count() const { return int64_t{gridDim.x} * blockDim.x; }
  __device__ bool spreadRows() const { return spread_rows; }
  __device__ bool teamRows() const { return team_rows; }
  __device__ WarpTeam team() const { return WarpTeam{static_cast<int>(threadIdx.x % WarpTeam::kSize)}; }
  __device__ void barrier() const { cooperative_groups::this_grid().sync(); }
  /// The barrier after phase `phase` of graph node `node`: a grid sync whose round the
  /// profile (MV_EMU_PROFILE on the emulated device, MV_CUDA_PROFILE on a GPU) files under
  /// that name.
  __device__ void barrier(const char* node, int phase) const {
#ifdef MV_EMULATED_DEVICE
    emu::nameRound(node, phase);
    barrier();
#else
    barrier();
    if (rank() == 0) cuda_profile::endRound(node, phase);
#endif
  }
};

/// One kernel per graph phase; the barrier between phases is the next launch.
struct CudaKernelPolicy {
  static constexpr bool kGridStride = true;
  __device__ int64_t rank() const { return int64_t{blockIdx.x} * blockDim.x + threadIdx.x; }
  __device__ int64_t count() const { return int64_t{gridDim.x} * blockDim.x; }
  __device__ bool teamRows() const { return true; }
  __device__ WarpTeam team() const { return WarpTeam{static_cast<int>(threadIdx.x % WarpTeam::kSize)}; }
  __device__ void barrier() const {}
};

}  // namespace mv
