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

}  // namespace mv
