/**
 * @file nccl_tuner.hpp
 * NCCL's choice of algorithm and protocol for a collective between servers: the cost model
 * of NCCL 2.19's tuner (`src/graph/tuning.cc` ncclTopoTuneModel and ncclTopoGetAlgoTime,
 * read through the search tool), time = latency + bytes / bandwidth per (algorithm,
 * protocol), the smallest time chosen, for the ring and the tree with the LL, LL128 and
 * Simple protocols (NVLS, CollNet and PAT are not modelled). NCCL takes its per-channel
 * bandwidths from its topology search; here they come from the simulated cluster
 * (NcclTunerShape). Host-side only.
 */
#pragma once

#include <cstdint>

#include "analytical/collective_model.hpp"
#include "analytical/gpu.hpp"

namespace mv {

enum class NcclAlgorithm : uint8_t { kRing, kTree };
enum class NcclProtocol : uint8_t { kLl, kLl128, kSimple };

/// "ring", "tree"; "LL", "LL128", "Simple" (NCCL's names).
const char* ncclAlgorithmName(NcclAlgorithm a);
const char* ncclProtocolName(NcclProtocol p);

/// What NCCL's tuner knows of a communicator.
struct NcclTunerShape {
  CollectiveOp op = CollectiveOp::kAllReduce;
  uint32_t ranks = 2;
  uint32_t nodes = 2;  ///< servers the ranks are on (nNodes)
  uint32_t ring_channels = 1;
  uint32_t tree_channels = 2;
  /// Per-channel bandwidth of the ring graph and of the tree graph, GB/s: the one NCCL's
  /// tuner uses, the graph's bwIntra on up to 2 nodes and its bwInter beyond.
  double ring_bw_gbs = 12;
  double tree_bw_gbs = 12;
  GpuArchitecture arch = GpuArchitecture::kAmpere;
  /// The host's network post overhead (NCCL_NET_OVERHEAD: 1 µs on Intel CPUs, 2 on AMD).
  double net_overhead_us = 1.0;
};

struct NcclChoice {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double time_us = 0;  ///< the tuner's estimate
};

/// The tuner's time for `bytes` (the nccl-tests buffer) with `a` and `p`, µs; negative where
/// NCCL would not run it (the tree for anything but all-reduce).
double ncclTunerTime(const NcclTunerShape& shape, NcclAlgorithm a, NcclProtocol p, int64_t bytes);

/// The algorithm and protocol of the smallest ncclTunerTime (ties: ring before tree, LL
/// before LL128 before Simple, NCCL's loop order).
NcclChoice ncclTunerChoice(const NcclTunerShape& shape, int64_t bytes);

}  // namespace mv
