/**
 * @file device_query.cu
 * Device enumeration for the CUDA backend.
 */
#include <cuda_runtime.h>

#include <sstream>

#include "kernels/cuda/device_query.hpp"

namespace mv {

int cudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device / no driver" error
    return 0;
  }
  return n;
}

int64_t cudaDeviceFreeBytes(int device) {
  std::size_t free = 0;
  std::size_t total = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(free);
}

std::string describeCudaDevices() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(err) + "\n";
  }
  std::ostringstream out;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    out << "cuda:" << d << "  " << p.name << "  " << p.multiProcessorCount << " SMs  "
        << (p.totalGlobalMem >> 20) << " MiB  cooperative launch: " << (p.cooperativeLaunch ? "yes" : "no") << '\n';
  }
  return out.str();
}

}  // namespace mv
