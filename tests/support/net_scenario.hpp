/**
 * @file net_scenario.hpp
 * Runs flow-list experiments on the packet-level network for tests: builds a world from
 * topologies, configs and flows, runs it on the CPU backend and collects per-flow results,
 * counters and queue statistics.
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

/// One experiment of a scenario.
struct NetCase {
  const Topology* topo = nullptr;
  net::NetworkConfig cfg;
  std::vector<FlowDef> flows;
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
/// called after every step.
inline std::vector<NetResult> runNetBatch(const std::vector<NetCase>& cases, int threads = 2, int64_t block = 0,
                                          const StepObserver& observe = {}) {
  net::NetWorld world(static_cast<uint32_t>(cases.size()), TableCapacity{1 << 12, 1 << 12});
  for (ExpId e = 0; e < cases.size(); ++e) {
    const NetCase& c = cases[e];
    const Routing routing = computeRouting(*c.topo);
    const net::NetworkLayout layout = makeNetworkLayout(*c.topo, routing, c.cfg.payload_bytes);
    const int64_t lookahead = c.lookahead_ps > 0 ? c.lookahead_ps : layout.min_delay_ps;
    world.config(e).net = net::pathQuantities(layout, c.cfg);
    world.clock(e).lookahead_ps = lookahead;
    world.clock(e).seed = c.seed;
    world.clock(e).stable_id = c.stable_id;
    net::buildNetwork(world, e, layout, c.cfg, lookahead);
    for (uint32_t i = 0; i < c.flows.size(); ++i) {
      const FlowDef& f = c.flows[i];
      net::addFlow(world, e, f.src, f.dst, f.bytes, f.start_ps, i, f.prio);
    }
  }
  world.commitAllHost();
  int64_t total_flows = 0;
  for (const NetCase& c : cases) total_flows += static_cast<int64_t>(c.flows.size());
  world.grow<net::FlowRecord>(TableCapacity{total_flows + 16, total_flows + 16});
  const CpuExecutor exec(threads, block);
  RunReport r;
  if (observe) {
    do {
      r = exec.run<net::NetGraph>(world.view(), 1);
      observe(world);
    } while (!r.finished && r.status == 0u && r.steps > 0);
  } else {
    r = exec.runToEnd<net::NetGraph>(world.view());
  }
  if (r.status != 0u) throw std::runtime_error("network run failed with status " + std::to_string(r.status));
  std::vector<NetResult> out;
  auto& records = world.table<net::FlowRecord>();
  auto& ports = world.table<net::Port>();
  for (ExpId e = 0; e < cases.size(); ++e) {
    NetResult res;
    for (int64_t row = records.expBegin(e); row < records.expEnd(e); ++row) res.flows.push_back(records.get<net::FlowResult>(row));
    res.counters = net::experimentCounters(world, e);
    for (int64_t row = ports.expBegin(e); row < ports.expEnd(e); ++row) {
      const net::PortQueue& q = ports.get<net::PortQueue>(row);
      res.ports.push_back(PortStats{q.max_bytes, q.byte_ps, q.tx_bytes});
    }
    res.end_ps = world.clock(e).now_ps;
    res.steps = world.clock(e).steps;
    out.push_back(std::move(res));
  }
  return out;
}

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
