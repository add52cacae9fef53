/**
 * @file estimate.cpp
 * Memory estimate of one experiment from its configuration.
 */
#include "experiments/estimate.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "network/builder.hpp"

namespace mv {

namespace {

/// Packet slots of every directed link's ring, as network/builder.hpp sizes them.
int64_t linkRingSlots(const Topology& topo, const net::NetworkConfig& cfg) {
  int64_t lookahead = std::numeric_limits<int64_t>::max();
  for (const TopoLink& l : topo.links()) lookahead = std::min(lookahead, l.delay.ps);
  const int32_t wire = net::dataWireBytes(cfg.payload_bytes, cfg.cc);
  int64_t slots = 0;
  for (const TopoLink& l : topo.links()) {
    slots += 2 * int64_t{net::ringCapacity(l.rate.bps, l.delay.ps, lookahead, wire, cfg.link_ring_factor)};
  }
  return slots;
}

}  // namespace

MemoryEstimate estimateMemory(const TrainingExperiment& x) {
  MemoryEstimate m;
  m.ranks = int64_t{x.cluster.gpus} * kEstimateRankBytes;
  const Topology& topo = x.topology;
  const int64_t nics = topo.nicCount();
  const int64_t directed_links = 2 * int64_t{topo.linkCount()};
  switch (x.fidelity) {
    case NetworkFidelity::kPacket: {
      int64_t ports = 0;
      for (const uint32_t s : topo.switches()) ports += static_cast<int64_t>(topo.ports(s).size());
      const int64_t rows = nics + static_cast<int64_t>(topo.switches().size()) + ports + directed_links;
      m.network_rows = rows * kEstimatePacketRowBytes;
      const int64_t slot =
          kEstimatePacketHeaderBytes + (x.network.cc == net::CcKind::kHpcc ? kEstimatePacketIntBytes : 0);
      m.link_slots = linkRingSlots(topo, x.network) * slot;
      m.switch_pool = int64_t{x.network.switch_pool_slots} * slot;
      m.nic_control = nics * int64_t{net::controlCapacity(x.network)} * slot;
      break;
    }
    case NetworkFidelity::kFlow:
      m.network_rows = (nics + directed_links) * kEstimateFlowRowBytes;
      break;
    case NetworkFidelity::kAnalytical:
      break;
  }
  return m;
}

std::string formatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return text;
}

}  // namespace mv
