/**
 * @file entity.hpp
 * Entity handles and experiment ids. A handle is (slot index, generation): it stays valid
 * while rows move during compaction and becomes stale when its entity is destroyed.
 */
#pragma once

#include <cstdint>

#include "ecs/macros.hpp"

namespace mv {

/// Index of an experiment in a batch; the implicit column every table carries.
using ExpId = uint32_t;

/// A stable handle to one row of one table.
struct Entity {
  uint32_t index = 0xFFFFFFFFu;
  uint32_t generation = 0;

  MV_HD static constexpr Entity none() { return Entity{}; }
  MV_HD constexpr bool isNone() const { return index == 0xFFFFFFFFu; }
  MV_HD constexpr bool operator==(const Entity& o) const {
    return index == o.index && generation == o.generation;
  }
};

}  // namespace mv
