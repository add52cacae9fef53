/**
 * @file connections.hpp
 * The persistent connections of a packet- or flow-level training experiment (NCCL's QPs: one per
 * communicator, channel and peer, docs/training.md "Connections"): the host finds every
 * pair of ranks on different servers that a collective's transfers or a pipeline message
 * join, and gives each a Flow row (a FluidFlow row at flow level) that lives for the
 * experiment, found at run time through the ConnectionIndex table.
 */
#pragma once

#include <cstdint>
#include <vector>

#include "ecs/table.hpp"
#include "network/components.hpp"
#include "systems/training_world.hpp"

namespace mv::train {

/// One connection's ends: its key and its source and destination NIC.
struct ConnectionEnds {
  net::ConnectionKey key;
  uint32_t src_nic = 0;
  uint32_t dst_nic = 0;

  bool operator<(const ConnectionEnds& o) const { return key < o.key; }
  bool operator==(const ConnectionEnds& o) const { return key == o.key; }
};

/// Creates experiment e's connections, `ends` in any order and with repeats (their qp 0),
/// at priority `prio` with `qps` QPs each: a Flow row per QP (id: its index in key order, so
/// its packets hash as one QP), or with `fluid` a FluidFlow row (same id, so it takes the
/// packets' path), and the ConnectionIndex rows that map keys to them. Returns how many QPs
/// there are.
int64_t addConnections(TrainWorld& world, ExpId e, std::vector<ConnectionEnds> ends, uint32_t prio, uint32_t qps,
                       bool fluid);

}  // namespace mv::train
