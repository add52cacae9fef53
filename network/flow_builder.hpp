/**
 * @file flow_builder.hpp
 * Host-side construction of one experiment's flow-level (fluid) network: directed links
 * numbered as the packet network numbers them, the packet network's ECMP routing rows, path
 * blocks for the flows active at once, and the per-experiment FluidNet row. Static tables
 * must be filled experiment by experiment in increasing order.
 */
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecs/world.hpp"
#include "network/components.hpp"
#include "network/builder.hpp"
#include "network/config.hpp"
#include "network/flow_level.hpp"
#include "network/layout.hpp"
#include "network/nic_system.hpp"

namespace mv::net {

/// Default number of flows of one experiment that may drain at the same time.
inline constexpr uint32_t kDefaultFluidActiveFlows = 4096;

namespace detail {

/// Switch-to-switch links from each switch to each edge switch along its next-hop sets
/// (the longest over equal-cost choices), memoised; -1 = not yet known.
class RouteDepth {
 public:
  explicit RouteDepth(const NetworkLayout& layout)
      : layout_(layout), depth_(layout.switches.size() * layout.edge_count, -1),
        visiting_(layout.switches.size() * layout.edge_count, 0), edge_switch_(layout.edge_count, kNone32) {
    for (const LayoutNic& n : layout.nics) edge_switch_[n.edge] = n.tor;
  }

  /// Links of the longest route between two NICs (NIC uplink and downlink included).
  uint32_t longestRoute() {
    uint32_t longest = 0;
    for (const LayoutNic& from : layout_.nics) {
      for (uint32_t edge = 0; edge < layout_.edge_count; ++edge) {
        if (edge_switch_[edge] != kNone32) longest = std::max(longest, depth(from.tor, edge) + 2);
      }
    }
    return longest;
  }

 private:
  uint32_t depth(uint32_t sw, uint32_t edge) {
    if (edge_switch_[edge] == sw) return 0;
    const std::size_t k = std::size_t{sw} * layout_.edge_count + edge;
    if (depth_[k] >= 0) return static_cast<uint32_t>(depth_[k]);
    if (visiting_[k] != 0) throw std::invalid_argument("network layout: routing loop towards edge " + std::to_string(edge));
    const LayoutSwitch& ls = layout_.switches[sw];
    if (edge >= ls.set_of_edge.size() || ls.set_of_edge[edge] >= ls.sets.size() || ls.sets[ls.set_of_edge[edge]].empty()) {
      throw std::invalid_argument("network layout: switch " + std::to_string(sw) + " has no route to edge " +
                                  std::to_string(edge));
    }
    visiting_[k] = 1;
    uint32_t deepest = 0;
    for (uint32_t port : ls.sets[ls.set_of_edge[edge]]) {
      const LayoutPort& lp = ls.ports.at(port);
      if (lp.peer_is_nic) throw std::invalid_argument("network layout: a next hop towards an edge switch is a NIC");
      deepest = std::max(deepest, depth(lp.peer, edge) + 1);
    }
    visiting_[k] = 0;
    depth_[k] = deepest;
    return deepest;
  }

  const NetworkLayout& layout_;
  std::vector<int64_t> depth_;
  std::vector<uint8_t> visiting_;
  std::vector<uint32_t> edge_switch_;
};

}  // namespace detail

/**
 * Fills the flow-level rows of experiment `e` (call for e = 0, 1, ... in order). `cfg`
 * gives the wire format the fluid model drains (payload, data header and ACK sizes of its
 * CC), so one flow alone finishes as it would at packet level; `max_active_flows` bounds the
 * flows draining at once (more raise kStatusFluidPaths and stop the run).
 */
template <class WorldT>
void buildFluidNetwork(WorldT& world, ExpId e, const NetworkLayout& layout, const NetworkConfig& cfg,
                       uint32_t max_active_flows = kDefaultFluidActiveFlows) {
  if (layout.nics.empty() || layout.switches.empty()) throw std::invalid_argument("network layout is empty");
  if (max_active_flows == 0) throw std::invalid_argument("a fluid network needs room for one active flow");
  const auto nic_count = static_cast<uint32_t>(layout.nics.size());
  const auto sw_count = static_cast<uint32_t>(layout.switches.size());
  std::vector<uint32_t> port_base(sw_count + 1, 0);
  for (uint32_t s = 0; s < sw_count; ++s) {
    port_base[s + 1] = port_base[s] + static_cast<uint32_t>(layout.switches[s].ports.size());
  }

  // Directed links as the packet network numbers them: 2i NIC -> switch, 2i+1 switch -> NIC,
  // then one per switch port towards another switch.
  const uint32_t link_count = 2 * nic_count + port_base[sw_count];
  auto& links = world.template table<FluidLink>();
  const int64_t link0 = world.template appendStatic<FluidLink>(e, link_count);
  for (uint32_t i = 0; i < nic_count; ++i) {
    const LayoutNic& n = layout.nics[i];
    links.template get<FluidLinkInfo>(link0 + 2 * i) = FluidLinkInfo{n.rate_bps, n.delay_ps};
    links.template get<FluidLinkInfo>(link0 + 2 * i + 1) = FluidLinkInfo{n.rate_bps, n.delay_ps};
  }

  // Switches, their ports and the ECMP rows.
  auto& switches = world.template table<FluidSwitch>();
  const int64_t sw0 = world.template appendStatic<FluidSwitch>(e, sw_count);
  auto& ports = world.template table<FluidPort>();
  const int64_t port0 = world.template appendStatic<FluidPort>(e, port_base[sw_count]);
  for (uint32_t s = 0; s < sw_count; ++s) {
    const LayoutSwitch& ls = layout.switches[s];
    const uint32_t route_base = s * layout.edge_count;
    switches.template get<FluidSwitchInfo>(sw0 + s) = FluidSwitchInfo{ls.node, port_base[s], route_base, 0};
    for (uint32_t p = 0; p < ls.ports.size(); ++p) {
      const LayoutPort& lp = ls.ports[p];
      FluidPortInfo& pi = ports.template get<FluidPortInfo>(port0 + port_base[s] + p);
      if (lp.peer_is_nic) {
        pi = FluidPortInfo{2 * lp.peer + 1, kNone32};
      } else {
        pi = FluidPortInfo{2 * nic_count + port_base[s] + p, lp.peer};
        links.template get<FluidLinkInfo>(link0 + pi.out_link) = FluidLinkInfo{lp.rate_bps, lp.delay_ps};
      }
    }
  }
  appendRouteRows<FluidRouteIndex, FluidRouteSet, FluidRoutePort>(world, e, layout);
  auto& nic_routes = world.template table<FluidNicRoute>();
  const int64_t nic0 = world.template appendStatic<FluidNicRoute>(e, nic_count);
  for (uint32_t i = 0; i < nic_count; ++i) {
    const LayoutNic& n = layout.nics[i];
    nic_routes.template get<NicRoute>(nic0 + i) = NicRoute{n.edge, n.tor, n.tor_port};
  }

  // Path blocks (all free, in order), their nodes and the nodes' places in their links' lists.
  const uint32_t stride = detail::RouteDepth(layout).longestRoute();
  world.template appendStatic<FluidHop>(e, int64_t{max_active_flows} * stride);
  world.template appendStatic<FluidIncidence>(e, int64_t{max_active_flows} * stride);
  auto& blocks = world.template table<FluidBlock>();
  const int64_t block0 = world.template appendStatic<FluidBlock>(e, max_active_flows);
  for (uint32_t b = 0; b < max_active_flows; ++b) {
    blocks.template get<FluidBlockUse>(block0 + b).next_free = b + 1 < max_active_flows ? b + 1 : kNone32;
  }

  auto& nets = world.template table<FluidNet>();
  const int64_t net0 = world.template appendStatic<FluidNet>(e, 1);
  const int32_t wire = dataWireBytes(cfg.payload_bytes, cfg.cc, cfg.wire);
  nets.template get<FluidNetInfo>(net0) =
      FluidNetInfo{stride, max_active_flows, cfg.payload_bytes, wire - cfg.payload_bytes, ackWireBytes(cfg.cc, cfg.wire)};
  FluidNetState& st = nets.template get<FluidNetState>(net0);
  st = FluidNetState{};
  st.free_block = 0;
}

/// Adds a fluid flow of experiment `e` from the host. `id` must be unique among the flows of
/// its source NIC (checkFlowArguments). `prio` is kept in the spec (the fluid model shares
/// links max-min fairly over all priorities).
template <class WorldT>
void addFluidFlow(WorldT& world, ExpId e, uint32_t src, uint32_t dst, int64_t bytes, int64_t start_ps, uint64_t id,
                  uint32_t prio = 3) {
  checkFlowArguments(bytes, id, prio);
  world.template createHost<FluidFlow>(e, flowKey(src, id), FlowSpec{src, dst, bytes, start_ps, id, prio, 0},
                                       FluidFlowState{}, FluidListSlot{}, FluidMessageNow{});
}

}  // namespace mv::net
