/**
 * @file net_scenario.hpp
 * Runs flow-list experiments on the packet-level network for tests: builds a world from
 * topologies, configs and flows, runs it on the CPU backend and collects per-flow results,
 * counters and queue statistics. The runs are defined in net_scenario.cpp.
 */
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/network_yaml.hpp"
#include "kernels/cpu/cpu_executor.hpp"
#include "network/builder.hpp"
#include "network/network_sim.hpp"
#include "systems/network_layout.hpp"
#include "topologies/generators.hpp"
#include "topologies/routing.hpp"
#include "topologies/topology.hpp"

namespace mv::test {

using FlowDef = FlowLine;

/// A persistent connection (docs/network.md "Connections") from NIC `src` to NIC `dst` and
/// the messages posted to it (their src and dst unused; message k has id 1,000,000 · (j + 1)
/// + k on connection j, its QP flow id 2^30 + j).
struct ConnectionDef {
  uint32_t src = 0;
  uint32_t dst = 0;
  std::vector<FlowDef> messages;
};

/// One experiment of a scenario.
struct NetCase {
  const Topology* topo = nullptr;
  net::NetworkConfig cfg;
  std::vector<FlowDef> flows;
  std::vector<ConnectionDef> connections;
  int64_t lookahead_ps = 0;  ///< 0 = the smallest link delay
  uint64_t seed = 1;
  uint32_t stable_id = 0;
};

struct PortStats {
  int64_t max_bytes = 0;
  double byte_ps = 0;
  int64_t tx_bytes = 0;
};

struct NetResult {
  std::vector<net::FlowResult> flows;  ///< sorted by (src, id)
  net::NetCounters counters;
  std::vector<PortStats> ports;        ///< all switch ports, in row order
  int64_t end_ps = 0;  ///< end of the last window (depends on the lookahead)
  int64_t steps = 0;
  /// Same flows, finish times and counters (not the window-dependent end and steps).
  bool operator==(const NetResult& o) const;
};

inline bool sameFlows(const std::vector<net::FlowResult>& a, const std::vector<net::FlowResult>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].src_nic != b[i].src_nic || a[i].finish_ps != b[i].finish_ps ||
        a[i].retransmits != b[i].retransmits)
      return false;
  }
  return true;
}
inline bool NetResult::operator==(const NetResult& o) const {
  return sameFlows(flows, o.flows) && counters.packet_hops == o.counters.packet_hops &&
         counters.ecn_marks == o.counters.ecn_marks && counters.pauses == o.counters.pauses &&
         counters.drops == o.counters.drops;
}

/// Looks at a batch's world after every step (time series of queues, rates).
using StepObserver = std::function<void(net::NetWorld&)>;

/// Runs every case in one batch (one experiment each; CpuExecutor blocks of `block`
/// experiments, 0 = all together) and returns their results; `observe`, when given, is
/// called after every step. (Compiled once, in net_scenario.cpp: the network graph's
/// instantiation is most of a test file's compile time.)
std::vector<NetResult> runNetBatch(const std::vector<NetCase>& cases, int threads = 2, int64_t block = 0,
                                   const StepObserver& observe = {});

/// Runs a built, committed network world to the end on `threads` threads, unblocked.
RunReport runNetToEnd(net::NetWorld& world, int threads);

inline NetResult runNet(const NetCase& c, int threads = 2) { return runNetBatch({c}, threads).front(); }

}  // namespace mv::test

namespace Catch {
/// Prints a network result in assertion messages.
template <>
struct StringMaker<mv::test::NetResult> {
  static std::string convert(const mv::test::NetResult& r) {
    std::ostringstream out;
    out << "{end " << r.end_ps << " hops " << r.counters.packet_hops << " marks " << r.counters.ecn_marks << " pauses "
        << r.counters.pauses << " drops " << r.counters.drops << " flows:";
    for (const auto& f : r.flows) out << ' ' << f.id << '@' << f.finish_ps;
    out << '}';
    return out.str();
  }
};
}  // namespace Catch
