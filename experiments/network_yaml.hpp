/**
 * @file network_yaml.hpp
 * The YAML front end of network experiments: network parameters, topologies and flow
 * lists. Every key is documented in docs/netsim.md.
 */
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "experiments/config_reader.hpp"
#include "network/config.hpp"
#include "topologies/topology.hpp"

namespace mv {

/// Reads a `network:` mapping; absent keys keep the values of `base`.
net::NetworkConfig readNetworkConfig(const ConfigReader& r, const net::NetworkConfig& base);

/// Builds the topology a `topology:` mapping describes (generated or loaded from a file
/// relative to `dir`). Problems go to the reader's diagnostics; returns an empty topology then.
Topology readTopology(const ConfigReader& r, const std::filesystem::path& dir);

/// One flow of a flow list.
struct FlowLine {
  uint32_t src = 0;
  uint32_t dst = 0;
  int64_t bytes = 0;
  int64_t start_ps = 0;
  uint32_t prio = 3;
  uint32_t dport = 100;  ///< destination port (flow.txt; written back in fct.txt)
};

/**
 * Reads a flow list: CSV with header `src,dst,bytes,start_us[,priority]` naming NIC indices,
 * or the HPCC `flow.txt` format (first line the count, then `src dst priority dport bytes
 * start_s`) naming node ids of `topo`, as ns-3 does; they are turned into NIC indices here.
 * Problems (an id out of range, a switch as an endpoint) are reported with the file and line.
 */
std::vector<FlowLine> readFlowFile(const std::filesystem::path& path, const Topology& topo, Diagnostics& diags);

}  // namespace mv
