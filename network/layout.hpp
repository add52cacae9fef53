/**
 * @file layout.hpp
 * What the network model needs to know about a topology, as plain host data: NICs,
 * switches with their ports, and compact equal-cost routing towards edge switches.
 * `topologies/` describes graphs; an adapter in `systems/` turns one into a layout, so
 * this layer depends on nothing but the ECS.
 */
#pragma once

#include <cstdint>
#include <vector>

namespace mv::net {

/// One end of a full-duplex link: the peer and the link's rate and propagation delay.
struct LayoutPort {
  bool peer_is_nic = false;
  uint32_t peer = 0;       ///< NIC index or switch index
  uint32_t peer_port = 0;  ///< port number at the peer (0 for a NIC)
  int64_t rate_bps = 0;
  int64_t delay_ps = 0;
};

struct LayoutSwitch {
  uint32_t node = 0;                ///< topology node id (salts ECMP)
  std::vector<LayoutPort> ports;
  /// Distinct next-hop port sets of this switch (each sorted).
  std::vector<std::vector<uint32_t>> sets;
  /// For each edge switch (by edge index), which of `sets` leads towards it; unused for
  /// the switch's own edge index.
  std::vector<uint32_t> set_of_edge;
};

struct LayoutNic {
  uint32_t tor = 0;        ///< switch index it attaches to
  uint32_t tor_port = 0;   ///< port number on that switch
  uint32_t edge = 0;       ///< edge index of that switch
  int64_t rate_bps = 0;
  int64_t delay_ps = 0;
};

struct NetworkLayout {
  std::vector<LayoutNic> nics;
  std::vector<LayoutSwitch> switches;
  uint32_t edge_count = 0;
  int64_t max_rtt_ps = 0;       ///< idle RTT of the longest path (payload serialisation per hop)
  /// Idle RTT of the longest path between NICs of one rail (the same index among their
  /// server's NICs, modulo 64), as a ring's hops between servers take; at most max_rtt_ps.
  int64_t rail_rtt_ps = 0;
  int64_t min_delay_ps = 0;     ///< shortest link propagation delay (the largest valid lookahead)
  uint32_t max_switch_hops = 0;  ///< switches on the longest route between two NICs (INT records HPCC needs)
};

}  // namespace mv::net
