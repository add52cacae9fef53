/**
 * @file emu_faults.cpp
 * Programs that a GPU would hang on or crash with, one per argument; the emulated device
 * must stop each with its own message (tests/emu/expect_fault.sh checks the message):
 *   divergence  half the threads return while the others wait at a grid sync
 *   plain-sync  a grid sync in a launch that is not cooperative
 *   spin        a thread waits for a flag no thread will set (the watchdog)
 *   warp        half the lanes of a warp return while the others wait at a warp sync
 *   host-read   the host dereferences device memory outside a copy (SIGSEGV)
 */
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "kernels/cuda/cuda_policy.cuh"

namespace {

__global__ void divergent() {
  const mv::CudaGridPolicy p;
  if (p.rank() % 2 == 0) return;
  p.barrier();
}

__global__ void syncs() {
  mv::CudaGridPolicy{}.barrier();
}

__global__ void warpDivergent() {
  if (threadIdx.x % 32 < 16) return;
  __syncwarp();
}

__global__ void spins(volatile int* flag) {
  while (*flag == 0) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: emu_faults divergence|plain-sync|spin|warp|host-read\n");
    return 2;
  }
  const char* what = argv[1];
  if (std::strcmp(what, "divergence") == 0) {
    cudaLaunchCooperativeKernel(divergent, dim3(2), dim3(64), nullptr, 0, nullptr);
  } else if (std::strcmp(what, "plain-sync") == 0) {
    cudaLaunchKernel(syncs, dim3(2), dim3(64), nullptr, 0, nullptr);
  } else if (std::strcmp(what, "spin") == 0) {
    int* flag = nullptr;
    cudaMalloc(&flag, sizeof(int));
    const int zero = 0;
    cudaMemcpy(flag, &zero, sizeof(int), cudaMemcpyHostToDevice);
    volatile int* v = flag;
    void* args[] = {&v};
    cudaLaunchKernel(spins, dim3(1), dim3(32), args, 0, nullptr);
  } else if (std::strcmp(what, "warp") == 0) {
    cudaLaunchKernel(warpDivergent, dim3(1), dim3(64), nullptr, 0, nullptr);
  } else if (std::strcmp(what, "host-read") == 0) {
    int* dev = nullptr;
    cudaMalloc(&dev, sizeof(int));
    std::printf("read %d\n", *static_cast<volatile int*>(dev));
  } else {
    std::fprintf(stderr, "emu_faults: unknown fault '%s'\n", what);
    return 2;
  }
  std::printf("emu_faults: %s was not caught\n", what);
  return 0;
}
