/**
 * @file device_query.hpp
 * What GPUs this process can use. Safe to call on machines without a GPU or driver.
 */
#pragma once

#include <cstdint>
#include <string>

namespace mv {

/// Number of CUDA devices usable by this process (0 without a GPU or a driver).
int cudaDeviceCount();

/// Bytes of memory free on CUDA device `device` now, or -1 when it cannot be asked.
int64_t cudaDeviceFreeBytes(int device);

/// One line per device: index, name, SM count, memory; or why there is none.
std::string describeCudaDevices();

}  // namespace mv
