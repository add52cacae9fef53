/**
 * @file bits.hpp
 * Bit scans that compile to one instruction on the host and on the device.
 */
#pragma once

#include <cstdint>

#include "ecs/macros.hpp"

namespace mv {

/// Index of the lowest set bit of `x`, which must not be 0.
MV_HD MV_INLINE int lowestBit(uint32_t x) {
#if MV_ON_DEVICE
  return __ffs(static_cast<int>(x)) - 1;
#else
  return __builtin_ctz(x);
#endif
}

}  // namespace mv
