/**
 * @file cuda_runtime.h
 * The emulated device: the part of the CUDA runtime API Multiverse uses, implemented on the
 * host (kernels/emu/emu_runtime.cpp), so the CUDA backend's own sources (kernels/cuda,
 * systems/cuda, the gpu tests) compile with g++ and run on a machine without a GPU.
 *
 * A launch runs every thread of the grid as a fiber, spread over a few host threads; a
 * grid-wide sync parks the fiber until every virtual thread of the grid has reached it.
 * It checks control flow, partitioning, barrier placement and the host/device mirror, not
 * speed. Only this file, cooperative_groups.h and emu_runtime.cpp differ from a CUDA build.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

// The runtime API's types, enums and C declarations are the toolkit's own (libcu++ includes
// them anyway); emu_runtime.cpp defines the functions. Its host-only attribute macros make
// no sense to g++: the kernel annotations become empty.
#include <cuda_runtime_api.h>

#undef __global__
#undef __device__
#undef __host__
#define __global__
#define __device__
#define __host__
#define __trap() ::mv::emu::trap()

template <class T>
cudaError_t cudaMalloc(T** ptr, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}

namespace mv::emu {

/// This virtual thread's CUDA built-in variables.
struct ThreadCoords {
  uint3 block_idx;
  uint3 thread_idx;
  dim3 block_dim;
  dim3 grid_dim;
};

/// The coordinates of the virtual thread running on this host thread.
const ThreadCoords& coords();

/// A kernel call bound to its arguments, run once per virtual thread.
using ThreadBody = void (*)(const void* call);

/// Runs `body(call)` on every thread of a `grid` x `block` launch; `cooperative`: grid-wide
/// syncs allowed. Returns when every virtual thread has returned.
cudaError_t launch(const char* kind, dim3 grid, dim3 block, bool cooperative, ThreadBody body, const void* call);

/// Names the grid sync the calling virtual thread reaches next (graph node and phase), for
/// the profile.
void nameRound(const char* node, int phase);

/// cooperative_groups::this_grid().sync() of the calling virtual thread.
void gridSync();

/// __syncwarp() of the calling virtual thread: it waits until every lane of its warp has
/// reached a warp sync; a warp sync some lane never reaches stops the launch with a message.
void warpSync();

/// The calling virtual thread's lane in its warp.
int laneId();

/// A warp shuffle: every lane offers `value` and gets lane `src`'s (two warp syncs).
uint64_t warpShuffle(uint64_t value, int src);

/// __trap(): ends the program with a message naming the virtual thread.
[[noreturn]] void trap();

/// Fills a host buffer the device now owns with poison (DeviceWorld, emulated builds only):
/// a kernel that reads it through an unpatched host pointer computes garbage.
void poisonHost(void* host, std::size_t bytes);

/// Occupancy of a kernel: the emulated device's blocks per SM for `block` threads.
int blocksPerSm(int block);

/// The stack every kernel needs per thread (MV_EMU_KERNEL_STACK, emu_runtime.cpp).
std::size_t kernelStackBytes();

/// A kernel function and its arguments, copied out of the `void** args` array as the CUDA
/// runtime copies them at launch.
template <class... P>
struct KernelCall {
  void (*fn)(P...);
  std::tuple<P...> args;

  static void run(const void* self) {
    const auto* c = static_cast<const KernelCall*>(self);
    std::apply(c->fn, c->args);
  }
};

template <class... P, std::size_t... I>
KernelCall<P...> bindArgs(void (*fn)(P...), void** args, std::index_sequence<I...>) {
  return KernelCall<P...>{fn, std::tuple<P...>(*static_cast<P*>(args[I])...)};
}

template <class... P>
cudaError_t launchKernel(const char* kind, void (*fn)(P...), dim3 grid, dim3 block, void** args, bool cooperative) {
  const KernelCall<P...> call = ::mv::emu::bindArgs(fn, args, std::index_sequence_for<P...>{});
  return launch(kind, grid, block, cooperative, &KernelCall<P...>::run, &call);
}

}  // namespace mv::emu

/// Warp-level intrinsics over the whole warp (mask 0xffffffff, width 32: the only forms
/// Multiverse uses), for values of up to 8 bytes.
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  if (mask != 0xffffffffu) ::mv::emu::trap();
  ::mv::emu::warpSync();
}
template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable_v<T>, "a shuffle moves up to 8 bytes");
  if (mask != 0xffffffffu || width != 32) ::mv::emu::trap();
  uint64_t bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  bits = ::mv::emu::warpShuffle(bits, src_lane);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  return __shfl_sync(mask, var, ::mv::emu::laneId() ^ lane_mask, width);
}

#define blockIdx (::mv::emu::coords().block_idx)
#define threadIdx (::mv::emu::coords().thread_idx)
#define blockDim (::mv::emu::coords().block_dim)
#define gridDim (::mv::emu::coords().grid_dim)

template <class... P>
cudaError_t cudaLaunchCooperativeKernel(void (*fn)(P...), dim3 grid, dim3 block, void** args, std::size_t = 0,
                                        cudaStream_t = nullptr) {
  return ::mv::emu::launchKernel("cooperative", fn, grid, block, args, true);
}

template <class... P>
cudaError_t cudaLaunchKernel(void (*fn)(P...), dim3 grid, dim3 block, void** args, std::size_t = 0,
                             cudaStream_t = nullptr) {
  return ::mv::emu::launchKernel("plain", fn, grid, block, args, false);
}

template <class... P>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, void (*)(P...)) {
  *attr = cudaFuncAttributes{};
  attr->localSizeBytes = ::mv::emu::kernelStackBytes();
  attr->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}

template <class... P>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, void (*)(P...), int block, std::size_t) {
  *blocks = ::mv::emu::blocksPerSm(block);
  return cudaSuccess;
}
