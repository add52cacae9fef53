/**
 * @file device_fault.hpp
 * DeviceFault: a failure of the device a backend runs on (a CUDA runtime error), as
 * opposed to a failure of the experiment. A worker that sees one stops using its device.
 */
#pragma once

#include <stdexcept>
#include <string>

namespace mv {

class DeviceFault : public std::runtime_error {
 public:
  explicit DeviceFault(const std::string& what) : std::runtime_error(what) {}
};

/// The device had not the memory asked for. The device stays usable: a worker that sees
/// one fails that batch and goes on with its next.
class DeviceOutOfMemory : public DeviceFault {
 public:
  explicit DeviceOutOfMemory(const std::string& what) : DeviceFault(what) {}
};

}  // namespace mv
