/**
 * @file test_support.hpp
 * Helpers shared by the topology tests: capturing TopologyError messages, a temporary
 * directory for topology files, and a breadth-first-search oracle that checks routing
 * tables independently of how computeRouting builds them.
 */
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "tests/support/temp_dir.hpp"
#include "topologies/routing.hpp"
#include "topologies/topology.hpp"

namespace mv::test {

/// Runs `f` and returns the message of the TopologyError it throws, or a marker if none.
template <class F>
std::string topologyErrorOf(F&& f) {
  try {
    f();
  } catch (const TopologyError& e) {
    return e.what();
  }
  return "<no TopologyError thrown>";
}


/// Hop distances from node `from` to every node (kNoIndex when unreachable).
inline std::vector<uint32_t> hopDistances(const Topology& topo, uint32_t from) {
  std::vector<uint32_t> dist(topo.nodeCount(), kNoIndex);
  std::vector<uint32_t> queue{from};
  dist[from] = 0;
  for (size_t head = 0; head < queue.size(); ++head) {
    const uint32_t n = queue[head];
    for (const auto& port : topo.ports(n)) {
      if (dist[port.peer] == kNoIndex) {
        dist[port.peer] = dist[n] + 1;
        queue.push_back(port.peer);
      }
    }
  }
  return dist;
}

/// What the oracle found wrong: the number of mismatches and a description of the first.
struct RoutingCheck {
  uint64_t mismatches = 0;
  std::string first;
};

/**
 * For every NIC d, a BFS from d gives each node's distance; the next hops of switch s toward
 * d must be exactly the ports whose peer is one hop closer, and hopCount(src, d) must equal
 * the distance of src, with firstPath a connected walk of that many links from src to d.
 */
inline RoutingCheck checkRoutingWithBfs(const Topology& topo, const Routing& routing) {
  RoutingCheck check;
  const auto fail = [&](const std::string& what) {
    if (check.mismatches++ == 0) check.first = what;
  };
  for (uint32_t d = 0; d < topo.nicCount(); ++d) {
    const auto dist = hopDistances(topo, topo.nicNode(d));
    for (const auto s : topo.switches()) {
      std::vector<uint16_t> expected;
      const auto ports = topo.ports(s);
      for (uint32_t p = 0; p < ports.size(); ++p) {
        if (dist[ports[p].peer] + 1 == dist[s]) expected.push_back(static_cast<uint16_t>(p));
      }
      const auto hops = routing.nextHops(s, d);
      if (std::vector<uint16_t>(hops.begin(), hops.end()) != expected) {
        fail("next hops of switch node " + std::to_string(s) + " toward NIC " + std::to_string(d));
      }
    }
    for (uint32_t src = 0; src < topo.nicCount(); ++src) {
      const uint32_t want = dist[topo.nicNode(src)];
      if (routing.hopCount(src, d) != want) {
        fail("hop count from NIC " + std::to_string(src) + " to NIC " + std::to_string(d));
      }
      const auto path = routing.firstPath(src, d);
      uint32_t at = topo.nicNode(src);
      bool connected = path.size() == want;
      for (const auto l : path) {
        const auto& link = topo.link(l);
        if (link.a != at && link.b != at) connected = false;
        at = link.a == at ? link.b : link.a;
      }
      if (!connected || at != topo.nicNode(d)) {
        fail("first path from NIC " + std::to_string(src) + " to NIC " + std::to_string(d));
      }
    }
  }
  return check;
}

}  // namespace mv::test
