#include "analytical/nccl_tuner.hpp"

#include <algorithm>
#include <cmath>

namespace mv {

namespace {

constexpr int kProtocols = 3;

// NCCL 2.19's tables (tuning.cc), indexed [algorithm: tree, ring][protocol: LL, LL128, Simple].
constexpr double kBaseLatency[2][kProtocols] = {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}};
constexpr double kNvlinkLatency[2][kProtocols] = {{0.6, 1.25, 28}, {0.6, 1.9, 3.4}};
constexpr double kNetLatency[2][kProtocols] = {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}};
// Per architecture (Volta, Ampere, Hopper) and nodes (1, 2, more).
constexpr double kLlMaxBw[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}};
constexpr double kPerChMaxRingLl128[3][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}};
constexpr double kPerChMaxTreeLl128[3][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}};
constexpr double kPerChMaxTree[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
// The tree's correction by log2(bytes / 64), 64 B to 256 MiB (ncclTopoGetAlgoTime).
constexpr double kTreeCorrection[kProtocols][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

int log2Floor(int64_t v) {
  int l = 0;
  while (v > 1) {
    v >>= 1;
    ++l;
  }
  return l;
}

/// NCCL's compute-capability index: Ampere 1, Hopper and later 2 (Volta, 0, is not in the catalogue).
int archIndex(GpuArchitecture arch) { return arch == GpuArchitecture::kAmpere ? 1 : 2; }

}  // namespace

const char* ncclAlgorithmName(NcclAlgorithm a) { return a == NcclAlgorithm::kRing ? "ring" : "tree"; }

const char* ncclProtocolName(NcclProtocol p) {
  switch (p) {
    case NcclProtocol::kLl:
      return "LL";
    case NcclProtocol::kLl128:
      return "LL128";
    case NcclProtocol::kSimple:
      return "Simple";
  }
  return "?";
}

double ncclTunerTime(const NcclTunerShape& s, NcclAlgorithm a, NcclProtocol p, int64_t bytes) {
  const bool tree = a == NcclAlgorithm::kTree;
  if (tree && s.op != CollectiveOp::kAllReduce) return -1;
  const int pi = static_cast<int>(p);
  const int ai = tree ? 0 : 1;
  const int arch = archIndex(s.arch);
  const int nodes_index = s.nodes <= 2 ? static_cast<int>(s.nodes) - 1 : 2;
  const double n = s.ranks;
  const double nodes = s.nodes;
  const bool all_reduce = s.op == CollectiveOp::kAllReduce;
  const double steps = all_reduce ? 2 * (n - 1) : n - 1;
  const double inter_steps = all_reduce ? (s.nodes > 1 ? 2 * nodes : 0) : nodes - 1;
  const uint32_t channels = tree ? s.tree_channels : s.ring_channels;
  // Bandwidth: the graph's per-channel bandwidth times its channels, refined per protocol.
  const double per_channel = tree ? s.tree_bw_gbs : s.ring_bw_gbs;
  double bus = channels * per_channel;
  // Multi-node LL: NCCL looks at the CPU; Intel's row (index 0), AMD's (1) for 2+ nodes.
  const double ll_max = kLlMaxBw[s.nodes == 1 ? arch : (s.net_overhead_us > 1.5 ? 1 : 0)][nodes_index];
  const double ppn = n / nodes;
  if (!tree && p == NcclProtocol::kLl) bus = std::min(ll_max, bus / 4);
  if (!tree && p == NcclProtocol::kLl128) {
    bus = std::min(bus * (ppn < 2 ? 0.7 : 0.92), channels * kPerChMaxRingLl128[arch][nodes_index]);
  }
  if (tree) bus = std::min(bus * .92, channels * kPerChMaxTree[arch][nodes_index]);
  if (tree && p == NcclProtocol::kLl) bus = std::min(bus / 3.8, ll_max);
  if (tree && p == NcclProtocol::kLl128) {
    bus = std::min(bus * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channels * kPerChMaxTreeLl128[arch][nodes_index]);
  }
  double bw = bus * (tree ? 0.5 : n / steps);
  // Latency: the protocol's base plus its per-step latencies inside and between servers.
  double latency = kBaseLatency[ai][pi];
  const double intra = kNvlinkLatency[ai][pi];
  const double inter = kNetLatency[ai][pi];
  if (tree) {
    latency += 2 * ((ppn - 1) * intra + std::floor(std::log2(nodes)) * inter);
  } else {
    double overhead = s.nodes > 1 ? s.net_overhead_us * (p == NcclProtocol::kSimple ? 3 : 1) : 0;
    latency += (steps - inter_steps) * std::max(intra, overhead) + inter_steps * inter;
  }
  const int log_size = log2Floor(bytes >> 6);
  if (tree && log_size < 23) bw *= kTreeCorrection[pi][std::max(log_size, 0)];
  if (!tree && p == NcclProtocol::kSimple && s.nodes > 1 && all_reduce && bytes / (channels * n) >= 64) {
    latency *= 1.4;  // the ring's plateau
  }
  return latency + static_cast<double>(bytes) / (1000 * bw);
}

NcclChoice ncclTunerChoice(const NcclTunerShape& s, int64_t bytes) {
  NcclChoice best;
  best.time_us = -1;
  for (const NcclAlgorithm a : {NcclAlgorithm::kRing, NcclAlgorithm::kTree}) {
    for (const NcclProtocol p : {NcclProtocol::kLl, NcclProtocol::kLl128, NcclProtocol::kSimple}) {
      const double t = ncclTunerTime(s, a, p, bytes);
      if (t >= 0 && (best.time_us < 0 || t < best.time_us)) best = NcclChoice{a, p, t};
    }
  }
  return best;
}

}  // namespace mv
