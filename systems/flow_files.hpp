/**
 * @file flow_files.hpp
 * flows.csv and fct.txt of an experiment's finished flows, as netsim writes them and
 * training sweeps with --network-detail (docs/netsim.md, table of output files).
 */
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "network/components.hpp"
#include "network/config.hpp"
#include "topologies/routing.hpp"
#include "topologies/topology.hpp"

namespace mv {

/// The two files, and what netsim's summary takes from them.
struct FlowFiles {
  std::string csv;                ///< header, then a row per flow in the order given
  std::string fct_txt;            ///< a line per flow in finish order (then id)
  std::vector<double> slowdowns;  ///< FCT / ideal FCT per flow, in the order given
  int64_t last = 0;               ///< the last finish, ps
};

/// The (source, destination) ports fct.txt gives flow number i of the list.
using FlowPorts = std::function<std::pair<uint32_t, uint32_t>(size_t)>;

/**
 * The files of `flows` (finished flows of one experiment of `topo`, routed by `routing`,
 * under `cfg`): flows.csv `flow,src,dst,bytes,start_ps,finish_ps,fct_ps,ideal_fct_ps`
 * (idealFct: the flow alone in the idle network) and the ns-3 RDMA reference's fct.txt
 * lines: source and destination address (hex, 11.x.y.1 from the NIC's node id), ports,
 * size (B), start (ns), FCT (ns) and the standalone FCT (ns: the pair's idle RTT with a full
 * payload per hop, plus the bytes with their headers but no INT at the bottleneck rate).
 */
FlowFiles flowFiles(const Topology& topo, const Routing& routing, const net::NetworkConfig& cfg,
                    std::span<const net::FlowResult> flows, const FlowPorts& ports);

}  // namespace mv
