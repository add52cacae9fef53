/**
 * @file cuda_check.hpp
 * MV_CUDA_CHECK: every CUDA runtime call goes through it; a failure becomes a DeviceFault
 * naming the call, the file and the line (library code never exits), and an allocation
 * failure a DeviceOutOfMemory.
 */
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "ecs/device_fault.hpp"

namespace mv::detail {
inline void cudaCheck(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return;
  const std::string what = std::string("CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                           ") in " + call + " at " + file + ":" + std::to_string(line);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it, the context stays usable
    throw DeviceOutOfMemory(what);
  }
  throw DeviceFault(what);
}
}  // namespace mv::detail

#define MV_CUDA_CHECK(call) ::mv::detail::cudaCheck((call), #call, __FILE__, __LINE__)
