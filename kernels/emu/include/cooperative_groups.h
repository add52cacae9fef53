/**
 * @file cooperative_groups.h
 * The emulated device's grid group: sync() is a barrier over every virtual thread of the
 * cooperative launch (kernels/emu/emu_runtime.cpp).
 */
#pragma once

#include "cuda_runtime.h"

namespace cooperative_groups {

struct grid_group {
  void sync() const { ::mv::emu::gridSync(); }
};

inline grid_group this_grid() {
  return grid_group{};
}

}  // namespace cooperative_groups
