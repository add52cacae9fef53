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

#include "kernels/cuda/phase_profile.cuh"

namespace mv {

/// One persistent cooperative grid; barrier = grid.sync().
struct CudaGridPolicy {
  static constexpr bool kGridStride = true;
  /// Whether a system's rows are spread over the warps (parallelForUnits); off, they take
  /// the grid-stride loop (MV_CUDA_SPREAD_ROWS=0, to compare the two on one build).
  bool spread_rows = true;
  __device__ int64_t rank() const { return int64_t{blockIdx.x} * blockDim.x + threadIdx.x; }
  __device__ int64_t count() const { return int64_t{gridDim.x} * blockDim.x; }
  __device__ bool spreadRows() const { return spread_rows; }
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
  __device__ void barrier() const {}
};

}  // namespace mv
