/**
 * @file flow_level.hpp
 * The `flow` fidelity (DESIGN.md §7): flows are fluids that share links max-min fairly.
 * Same inputs as the packet network (a NetworkLayout, flows as FlowSpec rows keyed
 * flowKey(src, id)) and the same outputs (FlowRecord rows with FlowResult), no packets.
 *
 * Per experiment, one static `FluidNet` row owns every fluid flow of the experiment: flows
 * sharing a link are coupled with zero delay, so one invocation of FluidSystem advances them
 * all, event by event at exact picoseconds (parallelism is across experiments); what is per
 * flow and not per event (finding the flows that arrive or finish in the window) is done one
 * flow row per thread before it (FluidPrepareSystem). Events are flow
 * arrivals (start_ps) and drain completions; at each event the rates are recomputed by
 * progressive filling over the directed links (NIC links included, so NIC rates cap them),
 * for the flows that share links, directly or through other flows, with a flow that
 * arrived or drained: max-min rates are set per connected component of flows and links,
 * so the other components' rates stand exactly as they were.
 *
 * Arithmetic is in integers: a flow's remaining work is kept in 10^-12 bit units (128 bits), so
 * draining `rate` b/s for `dt` ps removes exactly rate × dt of it; rates are whole b/s
 * (the fair share is rounded down, so no link is ever over-subscribed); a drain completion
 * is rounded up to the next picosecond (a flow never finishes early). See docs/flow_level.md.
 */
#pragma once

#include <cstdint>

#include "ecs/macros.hpp"
#include "ecs/system.hpp"
#include "ecs/table.hpp"
#include "ecs/type_list.hpp"
#include "ecs/units.hpp"
#include "network/components.hpp"
#include "network/switch_system.hpp"

namespace mv::net {

/// 10^-12 bits per bit: remaining work is counted in rate (b/s) × time (ps) units.
inline constexpr int64_t kSubBitsPerBit = 1000LL * 1000 * 1000 * 1000;

/// World status bit: more flows were active at once than `FluidNetInfo::path_blocks`
/// (raise `max_active_flows` of buildFluidNetwork).
inline constexpr uint32_t kStatusFluidPaths = 1u << 19;

// --- per experiment ----------------------------------------------------------------------

/// What the fluid model of one experiment is built from (written by the host).
struct FluidNetInfo {
  uint32_t path_stride = 0;   ///< FluidHop rows per path block: links of the longest route
  uint32_t path_blocks = 0;   ///< path blocks: flows that may be active at once
  int32_t payload_bytes = 0;  ///< data payload per packet
  int32_t header_bytes = 0;   ///< wire bytes a data packet adds to its payload
  int32_t ack_bytes = 0;      ///< wire bytes of the ACK that tells the sender it is done
  /// A check, not a model knob: 1 recomputes the rates of every active flow at every event,
  /// not only those of the components an event touched (results must be the same).
  uint32_t recompute_all = 0;
};
/// The experiment's fluid state and counters (written only by its FluidSystem invocation).
struct FluidNetState {
  uint32_t free_block = kNone32;  ///< first free path block (a list through FluidBlock rows)
  uint32_t active = 0;            ///< flows draining now
  uint32_t busy_links = 0;        ///< links some active flow crosses (FluidBusyLink entries)
  uint32_t reach_end = 0;         ///< component search scratch: heap entries listed so far
  int64_t events = 0;             ///< event times processed (each ends with one water-filling)
  int64_t fill_rounds = 0;        ///< water-filling rounds (bottleneck levels) over all events
  int64_t whole_refills = 0;      ///< events whose filling recomputed every active flow
  int64_t flows_done = 0;         ///< FlowRecord rows created
  int64_t overflow = 0;           ///< arrivals that found no free path block
  /// Flows that arrive in this step's window, listed by FluidPrepareSystem (FluidListSlot
  /// entries from the experiment's first flow row up), and drained flows whose records fall
  /// in it (from its last row down); taken and cleared by FluidSystem.
  uint32_t arrivals = 0;
  uint32_t finishes = 0;
};
struct FluidNet : Archetype<FluidNetInfo, FluidNetState> {
  static constexpr const char* kName = "FluidNet";
  static constexpr bool kStatic = true;
};

// --- links, routing and paths (static) ------------------------------------------------------

struct FluidLinkInfo {
  int64_t rate_bps = 0;
  int64_t delay_ps = 0;
};
/// The active flows of one directed link and its water-filling scratch.
struct FluidLinkFill {
  int64_t left_bps = 0;     ///< filling: capacity not yet given to frozen flows
  uint32_t flows = 0;       ///< active flows crossing the link
  uint32_t unfrozen = 0;    ///< filling: of which not yet frozen
  uint32_t head = kNone32;  ///< first path node of its flows (a list through FluidIncidence rows)
  uint32_t first = 0;       ///< first FluidIncidentFlow row of its flows (whole refills; every fill by a team)
  uint8_t changed = 0;      ///< a flow crossing it arrived or drained since the last filling
  uint8_t reached = 0;      ///< in a component the current filling recomputes
  uint8_t pad[2] = {};
  uint32_t busy_slot = 0;  ///< while it carries flows: its entry in the busy-link list
};
/// Water-filling scratch: entry i of the experiment's heap of links by fair share is kept in
/// the experiment's i-th link row (the heap never holds more entries than there are links).
struct FluidShareEntry {
  int64_t share_bps = 0;  ///< the link's fair share when it was pushed (a lower bound)
  uint32_t link = 0;
  uint32_t pad = 0;
};
/// The links that carry active flows, in no particular order: entry i is kept in the
/// experiment's i-th link row (entries [0, FluidNetState::busy_links)), so that a whole refill
/// visits only them, not every link of the fabric.
struct FluidBusyLink {
  uint32_t link = 0;
};
struct FluidLink : Archetype<FluidLinkInfo, FluidLinkFill, FluidShareEntry, FluidBusyLink> {
  static constexpr const char* kName = "FluidLink";
  static constexpr bool kStatic = true;
};

struct FluidSwitchInfo {
  uint32_t node = 0;        ///< topology node id (salts the ECMP hash, as in the packet switch)
  uint32_t port_base = 0;   ///< local FluidPort row of port 0
  uint32_t route_base = 0;  ///< local FluidRouteIndex row of (this switch, edge 0)
  uint32_t pad = 0;
};
struct FluidSwitch : Archetype<FluidSwitchInfo> {
  static constexpr const char* kName = "FluidSwitch";
  static constexpr bool kStatic = true;
};
struct FluidPortInfo {
  uint32_t out_link = 0;          ///< local directed link: this port -> peer
  uint32_t peer_switch = kNone32; ///< local switch row of the peer (kNone32: a NIC)
};
struct FluidPort : Archetype<FluidPortInfo> {
  static constexpr const char* kName = "FluidPort";
  static constexpr bool kStatic = true;
};
/// The packet network's routing rows (RouteIndex, RouteSet, RoutePort, NicRoute), in tables
/// of their own so one world may hold packet-level and flow-level experiments side by side.
struct FluidRouteIndex : Archetype<RouteIndex> {
  static constexpr const char* kName = "FluidRouteIndex";
  static constexpr bool kStatic = true;
};
struct FluidRouteSet : Archetype<RouteSet> {
  static constexpr const char* kName = "FluidRouteSet";
  static constexpr bool kStatic = true;
};
struct FluidRoutePort : Archetype<RoutePort> {
  static constexpr const char* kName = "FluidRoutePort";
  static constexpr bool kStatic = true;
};
struct FluidNicRoute : Archetype<NicRoute> {
  static constexpr const char* kName = "FluidNicRoute";
  static constexpr bool kStatic = true;
};

/// One directed link of an active flow's path. Path block b is rows [b·stride, (b+1)·stride);
/// row b·stride + i is the block's path node i.
struct FluidHopLink {
  uint32_t link = 0;
};
struct FluidHop : Archetype<FluidHopLink> {
  static constexpr const char* kName = "FluidHop";
  static constexpr bool kStatic = true;
};
/// Path node n (same numbering as FluidHop rows) in the list of its link's active flows.
struct FluidLinkNode {
  uint32_t next = kNone32;
  uint32_t prev = kNone32;
  uint32_t block = 0;  ///< its path block (node / stride)
};
/// Whole refills: the active flows grouped by link (counting sort; local flow rows).
struct FluidIncidentFlow {
  uint32_t flow = 0;
};
struct FluidIncidence : Archetype<FluidLinkNode, FluidIncidentFlow> {
  static constexpr const char* kName = "FluidIncidence";
  static constexpr bool kStatic = true;
};
/// One path block: the local row of the flow using it (brought up to date at the start of
/// every step by FluidPrepareSystem, as rows move only between steps), or the next free block.
struct FluidBlockUse {
  uint32_t flow = 0;
  uint32_t next_free = kNone32;
  uint16_t hops = 0;   ///< links on the flow's path
  uint8_t frozen = 0;  ///< water-filling: the flow's rate is fixed (or is not recomputed)
  uint8_t pad = 0;
  uint32_t slot = 0;  ///< while its flow is active: the drain queue's entry of its drain
};
/// The experiment's queue of drains (a binary heap by (time, flow key) that lives from step
/// to step, since blocks and keys do not move): entry i is kept in the experiment's i-th block
/// row; entries [0, FluidNetState::active) are the active flows.
struct FluidDrainSlot {
  int64_t time = 0;  ///< the flow's drain time (kept with the entry: the queue is compared often)
  uint64_t key = 0;  ///< the flow's creation key: ties go by key, which is row order
  uint32_t block = 0;
  uint32_t pad = 0;
};
struct FluidBlock : Archetype<FluidBlockUse, FluidDrainSlot> {
  static constexpr const char* kName = "FluidBlock";
  static constexpr bool kStatic = true;
};

// --- flows ---------------------------------------------------------------------------------

/// Life of a fluid flow: waiting for its start, draining over its path, drained (links
/// released, its record due at drain + path latency).
enum FluidPhase : uint8_t { kFluidWaiting = 0, kFluidActive = 1, kFluidDrained = 2 };

/// A fluid flow's state; a zeroed value is a flow that has not started.
struct FluidFlowState {
  uint64_t left_lo = 0;     ///< 10^-12 bits left at `since_ps`: a 128-bit count, low word ...
  int64_t left_hi = 0;      ///< ... and high word
  int64_t since_ps = 0;     ///< when `left_*` was last brought up to date
  int64_t rate_bps = 0;     ///< max-min rate since then
  int64_t drain_ps = 0;     ///< active: when its last bit drains at this rate; drained: when it did
  int64_t latency_ps = 0;   ///< last bit drained -> finish (pipeline, propagation, last ACK)
  uint32_t block = 0;       ///< its path block while active (which knows the path's links)
  uint8_t phase = kFluidWaiting;
  uint8_t pad[3] = {};
};
static_assert(sizeof(FluidFlowState) == 56);

/// Scratch of the step's lists, kept in the experiment's flow rows: FluidPrepareSystem lists
/// the flows that arrive in the window (entry i in the experiment's i-th flow row; `time`: the
/// arrival), which FluidSystem takes in time order (a binary heap by (time, row)), and the
/// drained flows whose records fall in it (entry i in its i-th flow row from the last;
/// `time`: the finish). `row` is the flow's local row.
struct FluidListSlot {
  uint32_t row = 0;
  uint32_t pad = 0;
  int64_t time = 0;
};

/// A persistent connection's message in flight (FlowSpec::connection): its FlowRecord's id.
/// The connection's FlowSpec holds the message's bytes and start; its id stays the
/// connection's, which its path hashes on. `pending_ps`: the earliest start of its unopened
/// messages, posted each step by FluidMessageSystem and taken by FluidPrepareSystem.
struct FluidMessageNow {
  uint64_t id = 0;
  int64_t pending_ps = INT64_MAX;
};

/// A flow of the flow-level model: same FlowSpec and key as a packet-level Flow. A
/// connection (FlowSpec::connection = 1, docs/flow_level.md "Connections") is a fluid flow
/// that lives for the experiment and drains its Message rows one after another: while a
/// message has started when the one before drains, it keeps its path and rate (no links
/// change, no filling); otherwise it leaves its links and arrives again at the next start.
struct FluidFlow : Archetype<FlowSpec, FluidFlowState, FluidListSlot, FluidMessageNow> {
  static constexpr const char* kName = "FluidFlow";
};

/// Every archetype the flow level adds (Message and FlowRecord, shared with the packet level, are not listed).
using FluidArchetypes = TypeList<FluidNet, FluidLink, FluidSwitch, FluidPort, FluidRouteIndex, FluidRouteSet,
                                 FluidRoutePort, FluidNicRoute, FluidHop, FluidIncidence, FluidBlock, FluidFlow>;

/**
 * Creates a fluid flow from a system (or the host through `addFluidFlow`). The creator must
 * report `wakeAt(spec.start_ps)`, as for a packet-level Flow. A flow first seen after its
 * start (created during an earlier window) starts at the beginning of the window it is seen in.
 */
MV_HD inline bool createFluidFlow(TableView<FluidFlow>& flows, ExpId e, const FlowSpec& spec) {
  return flows.create(e, flowKey(spec.src_nic, spec.id), spec, FluidFlowState{}, FluidListSlot{}, FluidMessageNow{});
}

// --- arithmetic --------------------------------------------------------------------------------

/// Wire bytes of a flow: its payload plus one header per packet.
MV_HD constexpr int64_t fluidWireBytes(int64_t bytes, int32_t payload, int32_t header) {
  return bytes + (bytes + payload - 1) / payload * header;
}
/// Remaining work of a flow in 10^-12 bits.
MV_HD constexpr Int128 fluidLeft(const FluidFlowState& f) {
  return static_cast<Int128>(static_cast<UInt128>(static_cast<uint64_t>(f.left_hi)) << 64 | f.left_lo);
}
MV_HD constexpr void setFluidLeft(FluidFlowState& f, Int128 left) {
  f.left_lo = static_cast<uint64_t>(left);
  f.left_hi = static_cast<int64_t>(left >> 64);
}
/// When `left` (10^-12 bits, >= 0) drains at `rate_bps` from `t`: rounded up to a whole
/// picosecond; INT64_MAX (never) at rate 0 or past int64 (16 TiB at a share of a few
/// hundred b/s). Work below 2^63 (flows up to about 1.1 MB) takes a 64-bit division.
MV_HD constexpr int64_t fluidDrainTime(int64_t t, Int128 left, int64_t rate_bps) {
  if (rate_bps <= 0) return INT64_MAX;
  if (left <= INT64_MAX - rate_bps) return t + (static_cast<int64_t>(left) + rate_bps - 1) / rate_bps;
  const Int128 span = (left + rate_bps - 1) / rate_bps;
  return span > INT64_MAX - t ? INT64_MAX : t + static_cast<int64_t>(span);
}

// --- one experiment's tables -----------------------------------------------------------------------

/// The fluid tables of one experiment, with their first rows (indices stored in rows are local).
struct FluidTables {
  TableView<FluidLink>* links;
  TableView<FluidSwitch>* switches;
  TableView<FluidPort>* ports;
  TableView<FluidRouteIndex>* route_index;
  TableView<FluidRouteSet>* route_sets;
  TableView<FluidRoutePort>* route_ports;
  TableView<FluidNicRoute>* nic_routes;
  TableView<FluidHop>* hops;
  TableView<FluidIncidence>* incidence;
  TableView<FluidBlock>* blocks;
  int64_t link0, switch0, port0, index0, set0, rport0, nic0, hop0, inc0, block0;

  template <class WV>
  MV_HD static FluidTables of(WV& w, ExpId e) {
    FluidTables t{&w.template table<FluidLink>(),
                  &w.template table<FluidSwitch>(),
                  &w.template table<FluidPort>(),
                  &w.template table<FluidRouteIndex>(),
                  &w.template table<FluidRouteSet>(),
                  &w.template table<FluidRoutePort>(),
                  &w.template table<FluidNicRoute>(),
                  &w.template table<FluidHop>(),
                  &w.template table<FluidIncidence>(),
                  &w.template table<FluidBlock>(),
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0};
    t.link0 = t.links->expBegin(e);
    t.switch0 = t.switches->expBegin(e);
    t.port0 = t.ports->expBegin(e);
    t.index0 = t.route_index->expBegin(e);
    t.set0 = t.route_sets->expBegin(e);
    t.rport0 = t.route_ports->expBegin(e);
    t.nic0 = t.nic_routes->expBegin(e);
    t.hop0 = t.hops->expBegin(e);
    t.inc0 = t.incidence->expBegin(e);
    t.block0 = t.blocks->expBegin(e);
    return t;
  }

  MV_HD const FluidLinkInfo& link(uint32_t l) const { return links->get<FluidLinkInfo>(link0 + l); }
  MV_HD FluidLinkFill& fill(uint32_t l) const { return links->get<FluidLinkFill>(link0 + l); }
  MV_HD FluidShareEntry& heap(uint32_t i) const { return links->get<FluidShareEntry>(link0 + i); }
  MV_HD uint32_t& busy(uint32_t i) const { return links->get<FluidBusyLink>(link0 + i).link; }
  MV_HD uint32_t& hop(uint32_t block, uint32_t stride, uint32_t i) const {
    return hops->get<FluidHopLink>(hop0 + int64_t{block} * stride + i).link;
  }
  MV_HD FluidLinkNode& node(uint32_t n) const { return incidence->get<FluidLinkNode>(inc0 + n); }
  MV_HD uint32_t& incident(uint32_t i) const { return incidence->get<FluidIncidentFlow>(inc0 + i).flow; }
  MV_HD FluidBlockUse& block(uint32_t b) const { return blocks->get<FluidBlockUse>(block0 + b); }
  MV_HD FluidDrainSlot& drain(uint32_t i) const { return blocks->get<FluidDrainSlot>(block0 + i); }
  MV_HD const NicRoute& nic(uint32_t n) const { return nic_routes->get<NicRoute>(nic0 + n); }

  /// The link switch `sw` sends a packet of (src -> dst, flow id) on, as the packet switch
  /// routes it (ECMP hash salted with the switch's node id); `next` is the switch it leads
  /// to, kNone32 when it leads to a NIC.
  MV_HD uint32_t routeAt(uint32_t sw, uint32_t src, uint32_t dst, uint64_t id, uint32_t& next) const {
    const NicRoute& to = nic(dst);
    if (to.tor == sw) {
      next = kNone32;
      return 2 * dst + 1;
    }
    const FluidSwitchInfo& si = switches->get<FluidSwitchInfo>(switch0 + sw);
    const uint32_t set = route_index->get<RouteIndex>(index0 + si.route_base + to.edge).set;
    const RouteSet& rs = route_sets->get<RouteSet>(set0 + set);
    const uint64_t pick = rs.count > 1 ? ecmpHash(src, dst, id, si.node) % rs.count : 0;
    const uint32_t port = route_ports->get<RoutePort>(rport0 + rs.offset + pick).port;
    const FluidPortInfo& p = ports->get<FluidPortInfo>(port0 + si.port_base + port);
    next = p.peer_switch;
    return p.out_link;
  }
};

/// Walks the directed links a packet of (src -> dst, flow id) crosses, NIC uplink first.
struct FluidRouteWalk {
  const FluidTables& tables;
  uint32_t src;
  uint32_t dst;
  uint64_t id;
  uint32_t at = kNone32;  ///< switch the packet is at
  bool started = false;

  /// The next link of the route; false once the destination NIC is reached.
  MV_HD bool next(uint32_t& link) {
    if (!started) {
      started = true;
      at = tables.nic(src).tor;
      link = 2 * src;
      return true;
    }
    if (at == kNone32) return false;
    uint32_t after = kNone32;
    link = tables.routeAt(at, src, dst, id, after);
    at = after;
    return true;
  }
};

// --- the systems -----------------------------------------------------------------------------------

/**
 * Binary min-heap steps over entries kept in table rows. `Q` gives `entry(i)` (a copy of
 * entry i), `place(i, e)` (writes entry i, with any record of where entries are) and
 * `before(a, b)` (the heap's order, strict and total, so the order entries leave in does not
 * depend on the heap's layout).
 */
template <class Q>
struct BinaryHeap {
  MV_HD static void siftUp(const Q& q, uint32_t i) {
    const auto x = q.entry(i);
    while (i > 0) {
      const uint32_t parent = (i - 1) / 2;
      const auto p = q.entry(parent);
      if (!q.before(x, p)) break;
      q.place(i, p);
      i = parent;
    }
    q.place(i, x);
  }
  MV_HD static void siftDown(const Q& q, uint32_t i, uint32_t size) {
    const auto x = q.entry(i);
    for (;;) {
      const uint32_t left = 2 * i + 1;
      if (left >= size) break;
      uint32_t least = left;
      if (left + 1 < size && q.before(q.entry(left + 1), q.entry(left))) least = left + 1;
      const auto c = q.entry(least);
      if (!q.before(c, x)) break;
      q.place(i, c);
      i = least;
    }
    q.place(i, x);
  }
  MV_HD static void heapify(const Q& q, uint32_t size) {
    for (uint32_t i = size / 2; i-- > 0;) siftDown(q, i, size);
  }
  /// heapify by the lanes of `team` together (`size` the same on every lane), a level of the
  /// tree at a time from the deepest: the entries of one level head disjoint subtrees, so
  /// the lanes share them, and a team sync ends each level. heapify sifts each level's entries
  /// after every deeper one's too, so both leave the same layout; no lane walks every entry.
  template <class Team>
  MV_HD static void heapifyTogether(const Team& team, const Q& q, uint32_t size) {
    if constexpr (Team::kSize == 1) {
      heapify(q, size);
    } else {
      team.sync();                        // every lane's writes of the entries before any lane sifts them
      const uint32_t parents = size / 2;  // entries [0, parents) have a child
      if (parents == 0) return;
      uint32_t level = 0;  // first entry of the deepest level holding a parent
      while (2 * level + 1 < parents) level = 2 * level + 1;
      for (;;) {
        const uint32_t end = 2 * level + 1 < parents ? 2 * level + 1 : parents;
        for (uint32_t i = level + static_cast<uint32_t>(team.lane()); i < end; i += Team::kSize) siftDown(q, i, size);
        team.sync();
        if (level == 0) return;
        level = (level - 1) / 2;
      }
    }
  }
  /// Takes the least of `size` entries out: it goes to entry size - 1, just past the heap.
  MV_HD static void popTo(const Q& q, uint32_t size) {
    const auto top = q.entry(0);
    if (size > 1) {
      q.place(0, q.entry(size - 1));
      siftDown(q, 0, size - 1);
    }
    q.place(size - 1, top);
  }
};

/// Experiment e's fluid state and counters.
MV_EXEC_CHECK_DISABLE
template <class WV>
MV_HD FluidNetState& fluidNetState(WV& w, ExpId e) {
  TableView<FluidNet>& nets = w.template table<FluidNet>();
  return nets.template get<FluidNetState>(nets.expBegin(e));
}

/// Row of entry i of experiment e's list of finishes (FluidListSlot): its i-th flow row from
/// the last.
MV_HD inline int64_t fluidFinishRow(const TableView<FluidFlow>& flows, ExpId e, uint32_t i) {
  return flows.expEnd(e) - 1 - i;
}

/**
 * Posts every unopened message of a flow-level experiment to its connection: the earliest
 * start (an atomic minimum into FluidMessageNow::pending_ps, so the order threads take the
 * rows in does not matter), one message row per thread, so that fluid_prepare learns when an
 * idle connection arrives without searching its NIC's messages. Messages of packet-level
 * experiments (no FluidNet row) are the NICs'.
 */
template <class WV>
struct FluidMessageSystem {
  static constexpr const char* kName = "fluid_messages";
  static constexpr const char* kWhy = "tell each idle fluid connection when its first posted message starts";
  using Ctx = RowContext<WV>;

  MV_HD static void run(const Ctx& ctx, const MessageSpec& m) {
    if (ctx.template table<FluidNet>().expRows(ctx.exp) == 0) return;
    TableView<FluidFlow>& flows = ctx.template table<FluidFlow>();
    const int64_t r = flows.rowOf(m.connection);
    MV_ASSERT(r >= 0, "a flow-level message is posted to a live fluid connection");
    atomicFetchMin<int64_t>(&flows.template get<FluidMessageNow>(r).pending_ps, m.start_ps);
  }
};

/**
 * Readies each fluid flow for the step, one row per thread, so that FluidSystem walks the
 * step's events and never every flow: an active flow tells its path block its row (rows move
 * only between steps); a waiting flow that arrives in the window (at its start or, seen late,
 * at the window's start) and a drained flow whose record falls in it (drain + latency) are
 * listed for FluidSystem (FluidListSlot, in no particular order); one whose arrival or finish
 * is later reports it. An idle connection arrives at the earliest start FluidMessageSystem
 * posted to it (none: it waits for a message); every connection's post is cleared for the
 * next step.
 */
template <class WV>
struct FluidPrepareSystem {
  static constexpr const char* kName = "fluid_prepare";
  static constexpr const char* kWhy =
      "list the fluid flows that arrive or finish in the window and tell active flows' path blocks where their rows "
      "are";
  using Ctx = RowContext<WV>;
  using After = TypeList<FluidMessageSystem<WV>>;

  MV_HD static void run(const Ctx& ctx, const FlowSpec& s, const FluidFlowState& f, FluidMessageNow& now) {
    TableView<FluidFlow>& flows = ctx.template table<FluidFlow>();
    const int64_t flow0 = flows.expBegin(ctx.exp);
    const auto local = static_cast<uint32_t>(ctx.row - flow0);
    const int64_t pending = now.pending_ps;
    now.pending_ps = INT64_MAX;  // posted again next step
    if (f.phase == kFluidActive) {
      TableView<FluidBlock>& blocks = ctx.template table<FluidBlock>();
      blocks.template get<FluidBlockUse>(blocks.expBegin(ctx.exp) + f.block).flow = local;
      return;
    }
    const bool waiting = f.phase == kFluidWaiting;
    // An idle connection arrives when its first message starts (none: whoever posts one
    // reports its start).
    if (s.connection != 0u && pending == INT64_MAX) return;
    const int64_t first = s.connection != 0u ? pending : s.start_ps;
    const int64_t start = first > ctx.now.ps ? first : ctx.now.ps;
    const int64_t at = waiting ? start : f.drain_ps + f.latency_ps;
    if (at >= ctx.window_end.ps) {
      ctx.wakeAt(Picoseconds{at});
      return;
    }
    FluidNetState& st = fluidNetState(*ctx.world, ctx.exp);
    const uint32_t i = atomicFetchAdd<uint32_t>(waiting ? &st.arrivals : &st.finishes, 1u);
    flows.template get<FluidListSlot>(waiting ? flow0 + i : fluidFinishRow(flows, ctx.exp, i)) =
        FluidListSlot{local, 0, at};
  }
};

/**
 * Advances one experiment's fluid network through the step's window. Events are the
 * flows' arrivals (listed by FluidPrepareSystem) and drains (a queue that lives from step to
 * step in the path blocks), in time order; all events of one picosecond are handled together
 * (flows in key order): drain completions (links released, the record falls due at drain +
 * latency), then arrivals (a flow takes a path block, its route and latency); then the
 * max-min rates of the flows whose components changed are recomputed by progressive filling.
 * A drained flow whose finish (drain + latency) falls in the window becomes a FlowRecord row
 * (key: the flow's key) and the flow is destroyed: those FluidPrepareSystem listed, and those
 * that drain in this window and finish in it too.
 */
template <class WV>
struct FluidSystem {
  static constexpr const char* kName = "fluid";
  static constexpr const char* kWhy =
      "advance each experiment's fluid flows: arrivals, completions and max-min fair rates at exact times";
  using Ctx = RowContext<WV>;
  using After = TypeList<FluidPrepareSystem<WV>>;
  /// A team system: on a GPU a warp runs each experiment's loop, its lanes sharing the
  /// water-filling (fillTogether); elsewhere one thread runs it alone.
  static constexpr bool kTeam = true;

  MV_HD static void run(const Ctx& ctx, const FluidNetInfo& info, FluidNetState& st) {
    runTeam(ctx, SoloTeam{}, info, st);
  }
  template <class Team>
  MV_HD static void runTeam(const Ctx& ctx, const Team& team, const FluidNetInfo& info, FluidNetState& st) {
    TableView<FluidFlow>& flows = ctx.template table<FluidFlow>();
    Unit<Team> u{ctx, team, info, st, FluidTables::of(*ctx.world, ctx.exp), flows, flows.expBegin(ctx.exp), 0, 0, 0, 0};
    u.step();
  }

 private:
  /// The drain queue: entry i in the experiment's i-th block row, each block knowing its entry.
  struct DrainQueue {
    const FluidTables& tables;
    MV_HD FluidDrainSlot entry(uint32_t i) const { return tables.drain(i); }
    MV_HD void place(uint32_t i, const FluidDrainSlot& e) const {
      tables.drain(i) = e;
      tables.block(e.block).slot = i;
    }
    MV_HD static bool before(const FluidDrainSlot& a, const FluidDrainSlot& b) {
      return a.time != b.time ? a.time < b.time : a.key < b.key;
    }
  };
  /// The step's arrivals: entry i in the experiment's i-th flow row.
  struct ArrivalQueue {
    TableView<FluidFlow>& flows;
    int64_t flow0;
    MV_HD FluidListSlot entry(uint32_t i) const { return flows.template get<FluidListSlot>(flow0 + i); }
    MV_HD void place(uint32_t i, const FluidListSlot& e) const { flows.template get<FluidListSlot>(flow0 + i) = e; }
    MV_HD static bool before(const FluidListSlot& a, const FluidListSlot& b) {
      return a.time != b.time ? a.time < b.time : a.row < b.row;
    }
  };

  /**
   * One experiment's loop, run by the lanes of `team` together. The events are the
   * leader's (lane 0): it pops and pushes the queues and moves single drains, and the
   * counters below are current on it only, but for `refilled`. The lanes build the queues
   * together (heapifyTogether). The team searches the components to refill together
   * (reachComponents). A team of more than one shares each water-filling (fillTogether);
   * alone, the loop fills with a heap of links (fillAlone). Both give the same rates: every
   * round freezes the link with the least (fair share, link index).
   */
  template <class Team>
  struct Unit {
    const Ctx& ctx;
    const Team& team;
    const FluidNetInfo& info;
    FluidNetState& st;
    FluidTables tables;
    TableView<FluidFlow>& flows;
    int64_t flow0;  ///< first row of the experiment's flows
    /// Links changed since the last filling, listed in heap entries [0, changed) (the heap is
    /// empty between fillings).
    uint32_t changed;
    /// Active flows in the drain queue (entries [0, queued)).
    uint32_t queued;
    /// Arrivals of this step not yet taken (entries [0, arriving)).
    uint32_t arriving;
    /// Flows the current filling recomputes (unfrozen by reachComponents); current on every lane.
    uint32_t refilled;

    MV_HD const FlowSpec& spec(int64_t r) const { return flows.template get<FlowSpec>(r); }
    MV_HD FluidFlowState& state(int64_t r) const { return flows.template get<FluidFlowState>(r); }
    MV_HD DrainQueue drains() const { return DrainQueue{tables}; }
    MV_HD ArrivalQueue arrivals() const { return ArrivalQueue{flows, flow0}; }

    MV_HD void step() {
      const int64_t end = ctx.window_end.ps;
      if (team.leader()) begin();
      BinaryHeap<ArrivalQueue>::heapifyTogether(team, arrivals(), team.broadcast(arriving));
      for (;;) {
        int64_t t = 0;
        int32_t taken = 1;
        if (team.leader()) {
          t = nextEvent();
          if (t < end) taken = takeEvents(t) ? 1 : 0;
        }
        t = team.broadcast(t);
        if (t >= end) break;
        if (team.broadcast(taken) == 0) return;
        fillRates(t);
        if (team.leader()) st.events += 1;
      }
      if (!team.leader()) return;
      const int64_t next = nextEvent();  // a drain: every arrival of the window was taken
      if (next != INT64_MAX) ctx.wakeAt(Picoseconds{next});
    }

    /// The leader takes the step's lists: records due, arrivals (their queue is built next).
    MV_HD void begin() {
      queued = st.active;
      arriving = st.arrivals;
      for (uint32_t i = 0; i < st.finishes; ++i) {
        const FluidListSlot& e = flows.template get<FluidListSlot>(fluidFinishRow(flows, ctx.exp, i));
        emitRecord(flow0 + e.row, e.time);
      }
      st.arrivals = 0;
      st.finishes = 0;
    }

    /// The leader handles the drains and arrivals at `t`; false when an arrival found no
    /// free path block (the run stops).
    MV_HD bool takeEvents(int64_t t) {
      // The events at t leave their queues in order and wait in the entries the queues free:
      // drains in [queued, drains_end), arrivals in [arriving, arrivals_end), the first last.
      // A connection whose next message has started goes on draining (and back into the
      // queue, once every drain at t is handled); one whose next message starts later in the
      // window joins the arrivals (after t, so not among those taken now).
      const uint32_t drains_end = queued;
      while (queued > 0 && tables.drain(0).time == t) BinaryHeap<DrainQueue>::popTo(drains(), queued--);
      const uint32_t drained = queued;
      for (uint32_t i = drains_end; i-- > drained;) complete(tables.drain(i).block, t);
      for (uint32_t i = drained; i < drains_end; ++i) {
        const int64_t r = flow0 + tables.block(tables.drain(i).block).flow;
        if (state(r).phase == kFluidActive) pushDrain(r);
      }
      const uint32_t arrivals_end = arriving;
      while (arriving > 0 && arrivals().entry(0).time == t) BinaryHeap<ArrivalQueue>::popTo(arrivals(), arriving--);
      for (uint32_t i = arrivals_end; i-- > arriving;) {
        if (!arrive(flow0 + arrivals().entry(i).row, t)) return false;
      }
      for (uint32_t i = arriving; i < arrivals_end; ++i) pushDrain(flow0 + arrivals().entry(i).row);
      return true;
    }

    /// The earliest drain or arrival left, or INT64_MAX.
    MV_HD int64_t nextEvent() const {
      const int64_t drain = queued > 0 ? tables.drain(0).time : INT64_MAX;
      const int64_t arrival = arriving > 0 ? arrivals().entry(0).time : INT64_MAX;
      return drain < arrival ? drain : arrival;
    }
    /// Active flow r joins the drain queue.
    MV_HD void pushDrain(int64_t r) {
      const FluidFlowState& f = state(r);
      drains().place(queued, FluidDrainSlot{f.drain_ps, flows.key[r], f.block, 0});
      BinaryHeap<DrainQueue>::siftUp(drains(), queued++);
    }
    /// Active flow r's drain time changed: restores the queue's order.
    MV_HD void requeue(int64_t r) {
      const FluidFlowState& f = state(r);
      const uint32_t i = tables.block(f.block).slot;
      tables.drain(i).time = f.drain_ps;
      BinaryHeap<DrainQueue>::siftUp(drains(), i);
      BinaryHeap<DrainQueue>::siftDown(drains(), tables.block(f.block).slot, queued);
    }
    /// Brings the drain times of the `count` queued flows up to date and restores the
    /// queue's order at once, the team's lanes sharing both.
    MV_HD void requeueAll(uint32_t count) {
      for (uint32_t i = team.lane(); i < count; i += Team::kSize) {
        FluidDrainSlot& e = tables.drain(i);
        e.time = state(flow0 + tables.block(e.block).flow).drain_ps;
      }
      BinaryHeap<DrainQueue>::heapifyTogether(team, drains(), count);
    }
    /// Unfreezes the `count` queued flows, the team's lanes sharing them (a whole refill).
    MV_HD void unfreezeQueued(uint32_t count) {
      for (uint32_t q = team.lane(); q < count; q += Team::kSize) tables.block(tables.drain(q).block).frozen = 0;
    }

    // --- events -------------------------------------------------------------------------
    /// The flow of path block b, whose last bit drains at `t`, releases its links and block;
    /// a connection's message is done, and its next one goes on or waits for its start.
    MV_HD void complete(uint32_t b, int64_t t) {
      const int64_t r = flow0 + tables.block(b).flow;
      FluidFlowState& f = state(r);
      MV_ASSERT(f.phase == kFluidActive && f.drain_ps == t, "a queued drain is an active flow's");
      int64_t next_start = INT64_MAX;
      if (spec(r).connection != 0u) {
        emitMessageRecord(r, t + f.latency_ps);
        const int64_t m = nextMessage(r);
        if (m >= 0) next_start = ctx.template table<Message>().template get<MessageSpec>(m).start_ps;
        if (next_start <= t) {
          openMessage(r, m);
          f.latency_ps = latency(spec(r), b);
          const Int128 left = messageWork(spec(r).bytes);
          setFluidLeft(f, left);
          f.since_ps = t;
          f.drain_ps = fluidDrainTime(t, left, f.rate_bps);
          return;
        }
      }
      for (uint32_t i = 0; i < tables.block(b).hops; ++i) unlinkNode(b * info.path_stride + i);
      f.phase = spec(r).connection != 0u ? kFluidWaiting : kFluidDrained;
      f.left_lo = 0;
      f.left_hi = 0;
      f.rate_bps = 0;
      tables.block(b).next_free = st.free_block;
      st.free_block = b;
      st.active -= 1;
      if (spec(r).connection != 0u) {
        if (next_start < ctx.window_end.ps) {
          arrivals().place(arriving, FluidListSlot{static_cast<uint32_t>(r - flow0), 0, next_start});
          BinaryHeap<ArrivalQueue>::siftUp(arrivals(), arriving++);
        } else if (next_start != INT64_MAX) {
          ctx.wakeAt(Picoseconds{next_start});
        }
        return;
      }
      const int64_t finish = t + f.latency_ps;
      if (finish < ctx.window_end.ps) {
        emitRecord(r, finish);
      } else {
        ctx.wakeAt(Picoseconds{finish});  // FluidPrepareSystem lists it in the step its finish falls in
      }
    }

    /// Drained flow r, finished at `finish` (in the window), becomes a FlowRecord row and is
    /// destroyed.
    MV_HD void emitRecord(int64_t r, int64_t finish) {
      const FlowSpec& s = spec(r);
      ctx.template table<FlowRecord>().create(ctx.exp, flows.key[r],
                                              FlowResult{s.id, s.src_nic, s.dst_nic, s.bytes, s.start_ps, finish, 0});
      ctx.wakeAt(Picoseconds{finish});  // the record's consumer runs next step, even if the network is idle
      flows.destroyRow(r);
      st.flows_done += 1;
    }
    /// Connection r's message drained: its FlowRecord, due at `finish` (maybe past the
    /// window: its consumer waits for it), keyed as the packet level keys a message's.
    MV_HD void emitMessageRecord(int64_t r, int64_t finish) {
      const FlowSpec& s = spec(r);
      const uint64_t id = flows.template get<FluidMessageNow>(r).id;
      ctx.template table<FlowRecord>().create(ctx.exp, flowKey(s.src_nic, id),
                                              FlowResult{id, s.src_nic, s.dst_nic, s.bytes, s.start_ps, finish, 0});
      ctx.wakeAt(Picoseconds{finish});
      st.flows_done += 1;
    }
    /// Connection r's unopened message that opens first (earliest start, then id), or -1.
    MV_HD int64_t nextMessage(int64_t r) const {
      const TableView<Message>& msgs = ctx.template table<Message>();
      int64_t lo = 0;
      int64_t hi = 0;
      flowRangeOf(msgs, ctx.exp, spec(r).src_nic, lo, hi);
      return firstMessage(msgs, lo, hi, flows.entity[r], INT64_MAX);
    }
    /// Connection r takes message row m as the one it drains: its bytes, start and id; the
    /// row is done with.
    MV_HD void openMessage(int64_t r, int64_t m) const {
      TableView<Message>& msgs = ctx.template table<Message>();
      const MessageSpec& ms = msgs.template get<MessageSpec>(m);
      FlowSpec& s = flows.template get<FlowSpec>(r);
      s.bytes = ms.bytes;
      s.start_ps = ms.start_ps;
      flows.template get<FluidMessageNow>(r).id = ms.id;
      msgs.destroyRow(m);
    }
    /// Work of a message of `bytes` in 10^-12 bits: its wire bytes.
    MV_HD Int128 messageWork(int64_t bytes) const {
      return static_cast<Int128>(fluidWireBytes(bytes, info.payload_bytes, info.header_bytes)) * 8 * kSubBitsPerBit;
    }

    /// Flow r arrives at `t` (a connection with its first message started by then): it takes
    /// a path block, its route and its latency. False (and a status bit that stops the run)
    /// when no block is free.
    MV_HD bool arrive(int64_t r, int64_t t) {
      FluidFlowState& f = state(r);
      if (st.free_block == kNone32) {
        st.overflow += 1;
        atomicFetchOr<uint32_t>(&ctx.world->status, kStatusFluidPaths);
        return false;
      }
      if (spec(r).connection != 0u) {
        const int64_t m = nextMessage(r);
        MV_ASSERT(m >= 0 && ctx.template table<Message>().template get<MessageSpec>(m).start_ps <= t,
                  "an arriving connection has a message that started");
        openMessage(r, m);
      }
      f.block = st.free_block;
      st.free_block = tables.block(f.block).next_free;
      const FlowSpec& s = spec(r);
      FluidBlockUse& use = tables.block(f.block);
      use.flow = static_cast<uint32_t>(r - flow0);
      use.hops = static_cast<uint16_t>(storePath(s, f.block));
      use.frozen = 1;  // between fillings every active flow is frozen at its rate
      for (uint32_t i = 0; i < use.hops; ++i) linkNode(f.block * info.path_stride + i);
      f.latency_ps = latency(s, f.block);
      setFluidLeft(f, messageWork(s.bytes));
      f.since_ps = t;
      f.rate_bps = 0;
      f.drain_ps = INT64_MAX;
      f.phase = kFluidActive;
      st.active += 1;
      return true;
    }
    /// Path node n's link.
    MV_HD uint32_t linkOf(uint32_t n) const { return tables.hops->template get<FluidHopLink>(tables.hop0 + n).link; }
    /// Notes that link l's flows changed: its share must be filled again.
    MV_HD void markChanged(uint32_t l) {
      FluidLinkFill& k = tables.fill(l);
      if (k.changed != 0u) return;
      k.changed = 1;
      tables.heap(changed++).link = l;
    }
    /// Adds path node n to its link's flows (at the front); a link that carried none joins
    /// the busy links.
    MV_HD void linkNode(uint32_t n) {
      const uint32_t l = linkOf(n);
      FluidLinkFill& k = tables.fill(l);
      tables.node(n) = FluidLinkNode{k.head, kNone32, n / info.path_stride};
      if (k.head != kNone32) tables.node(k.head).prev = n;
      k.head = n;
      if (k.flows++ == 0) {
        k.busy_slot = st.busy_links;
        tables.busy(st.busy_links++) = l;
      }
      markChanged(l);
    }
    /// Takes path node n out of its link's flows.
    MV_HD void unlinkNode(uint32_t n) {
      const uint32_t l = linkOf(n);
      FluidLinkFill& k = tables.fill(l);
      const FluidLinkNode& x = tables.node(n);
      if (x.prev != kNone32) {
        tables.node(x.prev).next = x.next;
      } else {
        k.head = x.next;
      }
      if (x.next != kNone32) tables.node(x.next).prev = x.prev;
      if (--k.flows == 0) {  // it leaves the busy links: the last entry takes its place
        const uint32_t last = tables.busy(--st.busy_links);
        tables.busy(k.busy_slot) = last;
        tables.fill(last).busy_slot = k.busy_slot;
      }
      markChanged(l);
    }

    /// Writes the flow's route into its path block; returns the number of links.
    MV_HD uint32_t storePath(const FlowSpec& s, uint32_t block) const {
      FluidRouteWalk walk{tables, s.src_nic, s.dst_nic, s.id};
      uint32_t n = 0;
      uint32_t link = 0;
      while (walk.next(link)) {
        MV_ASSERT(n < info.path_stride, "a route is longer than the longest route the builder found");
        tables.hop(block, info.path_stride, n++) = link;
      }
      return n;
    }

    /**
     * Last bit drained -> finish, the idle-path terms of the packet model: one serialisation
     * of the flow's largest packet on every link but the slowest (store and forward), the
     * propagation delays, and the last ACK back to the sender (serialisation and delay on
     * every link of its own ECMP route).
     */
    MV_HD int64_t latency(const FlowSpec& s, uint32_t block) const {
      const int32_t first_payload = s.bytes < info.payload_bytes ? static_cast<int32_t>(s.bytes) : info.payload_bytes;
      const Bytes packet{first_payload + info.header_bytes};
      int64_t sum = 0;
      int64_t slowest = 0;
      for (uint32_t i = 0; i < tables.block(block).hops; ++i) {
        const FluidLinkInfo& li = tables.link(tables.hop(block, info.path_stride, i));
        const int64_t ser = serializationTime(packet, BitsPerSecond{li.rate_bps}).ps;
        sum += ser + li.delay_ps;
        slowest = ser > slowest ? ser : slowest;
      }
      FluidRouteWalk back{tables, s.dst_nic, s.src_nic, s.id};
      uint32_t link = 0;
      while (back.next(link)) {
        const FluidLinkInfo& li = tables.link(link);
        sum += serializationTime(Bytes{info.ack_bytes}, BitsPerSecond{li.rate_bps}).ps + li.delay_ps;
      }
      return sum - slowest;
    }

    // --- max-min rates -------------------------------------------------------------------
    /**
     * Progressive filling: every unfrozen flow's rate rises together; the link whose fair
     * share (capacity left / unfrozen flows, whole b/s) is the lowest saturates first and
     * freezes its flows at that share; ties go to the lower link index. The result depends
     * only on the set of active flows, and a flow's rate only on those of its connected
     * component (flows joined by shared links): only the components holding a changed link
     * are filled again (reachComponents), the others' flows are left as they are.
     */
    MV_HD void fillRates(int64_t t) {
      if constexpr (Team::kSize == 1) {
        fillAlone(t);
      } else {
        fillTogether(t);
      }
    }

    /**
     * Filling by one thread. Links wait in a min-heap by (share, link index). A share never
     * falls when flows freeze elsewhere (they take at most the current level), so the heap
     * keeps stale shares as lower bounds: a popped link whose share has grown goes back with
     * its new share, otherwise it is the least (share, link) of all.
     */
    MV_HD void fillAlone(int64_t t) {
      const uint32_t reached = reachComponents();
      const bool whole = reached == kNone32;
      if (whole) groupByLink();
      // Refilling a large share of the queued flows moves most of their drains: restore the
      // queue's order once afterwards rather than sifting each moved flow (freeze).
      const bool requeue_all = uint64_t{refilled} * 8 > queued;
      uint32_t size = 0;
      const uint32_t candidates = whole ? st.busy_links : reached;
      for (uint32_t i = 0; i < candidates; ++i) {  // the links to refill become the heap
        const uint32_t l = whole ? tables.busy(i) : tables.heap(i).link;
        FluidLinkFill& k = tables.fill(l);
        k.reached = 0;
        k.left_bps = tables.link(l).rate_bps;
        k.unfrozen = k.flows;
        if (k.unfrozen > 0) tables.heap(size++) = FluidShareEntry{k.left_bps / k.unfrozen, l, 0};
      }
      for (uint32_t i = size / 2; i-- > 0;) siftShareDown(i, size);
      while (size > 0) {
        FluidShareEntry& top = tables.heap(0);
        const FluidLinkFill& k = tables.fill(top.link);
        if (k.unfrozen == 0) {
          tables.heap(0) = tables.heap(--size);
          siftShareDown(0, size);
          continue;
        }
        const int64_t share = k.left_bps / k.unfrozen;
        if (share > top.share_bps) {
          top.share_bps = share;
          siftShareDown(0, size);
          continue;
        }
        if (whole) {  // the grouped flows lie together; the lists would be chased node by node
          for (uint32_t i = k.first; i < k.first + k.flows; ++i) {
            const int64_t r = flow0 + tables.incident(i);
            if (tables.block(state(r).block).frozen == 0u) freeze(r, share, t, !requeue_all);
          }
        } else {
          for (uint32_t n = k.head; n != kNone32; n = tables.node(n).next) {
            const FluidBlockUse& u = tables.block(tables.node(n).block);
            if (u.frozen == 0u) freeze(flow0 + u.flow, share, t, !requeue_all);
          }
        }
        st.fill_rounds += 1;
      }
      if (requeue_all) requeueAll(queued);
    }

    /**
     * Filling by a team of lanes. The lanes find the components to refill; then each lane
     * takes a contiguous share of their links (the heap entries become the list of them):
     * it resets their filling and lists their flows, grouped by link, in the incident rows
     * (each link's place from a prefix sum over the lanes). Each round every lane finds the
     * least (share, link) of its links, dropping those with no unfrozen flow, the team takes
     * the least of those, and the lanes freeze that link's unfrozen flows between them
     * (taking their rates from the links they cross with atomics). The drains that moved are
     * re-sorted by the leader, or all brought up to date by the lanes and the queue rebuilt
     * when most moved.
     */
    MV_HD void fillTogether(int64_t t) {
      const uint32_t reached = reachComponents();
      const uint32_t queued_now = team.broadcast(queued);
      if (reached == kNone32) refilled = queued_now;
      const bool whole = reached == kNone32;
      const uint32_t candidates = whole ? st.busy_links : reached;
      if (whole) unfreezeQueued(queued_now);
      const auto lane = static_cast<int64_t>(team.lane());
      const auto first = static_cast<uint32_t>(partBegin(candidates, Team::kSize, lane));
      auto last = static_cast<uint32_t>(partBegin(candidates, Team::kSize, lane + 1));
      uint32_t mine = 0;
      for (uint32_t i = first; i < last; ++i) {
        const uint32_t l = whole ? tables.busy(i) : tables.heap(i).link;
        tables.heap(i).link = l;
        FluidLinkFill& k = tables.fill(l);
        k.reached = 0;
        k.left_bps = tables.link(l).rate_bps;
        k.unfrozen = k.flows;
        mine += k.flows;
      }
      uint32_t listed = 0;
      uint32_t at = team.exclusiveSum(mine, listed);
      for (uint32_t i = first; i < last; ++i) {
        FluidLinkFill& k = tables.fill(tables.heap(i).link);
        k.first = at;
        for (uint32_t n = k.head; n != kNone32; n = tables.node(n).next) {
          tables.incident(at++) = tables.block(tables.node(n).block).flow;
        }
      }
      team.sync();
      for (;;) {
        int64_t share = INT64_MAX;
        uint32_t link = kNone32;
        uint32_t kept = first;
        for (uint32_t i = first; i < last; ++i) {
          const uint32_t l = tables.heap(i).link;
          const FluidLinkFill& k = tables.fill(l);
          if (k.unfrozen == 0) continue;
          tables.heap(kept++).link = l;
          const int64_t s = k.left_bps / k.unfrozen;
          if (s < share || (s == share && l < link)) {
            share = s;
            link = l;
          }
        }
        last = kept;
        const int64_t least = team.minimum(share);
        link = team.minimum(share == least ? link : kNone32);
        if (link == kNone32) break;
        const FluidLinkFill& k = tables.fill(link);
        const uint32_t end = k.first + k.flows;
        for (uint32_t i = k.first + team.lane(); i < end; i += Team::kSize) {
          const int64_t r = flow0 + tables.incident(i);
          if (tables.block(state(r).block).frozen == 0u) freezeShared(r, least, t);
        }
        team.sync();
        if (team.leader()) st.fill_rounds += 1;
      }
      team.sync();  // every lane's last writes (the lists it kept) before the leader's next ones
      const int32_t requeue_all = team.broadcast(team.leader() && uint64_t{refilled} * 8 > queued ? 1 : 0);
      if (requeue_all != 0) {
        requeueAll(queued_now);
      } else {
        requeueMoved(listed);
      }
    }
    /**
     * Re-sorts the drains a partial refill moved. The lanes share the `listed` flows (each
     * listed once per link it crosses, so each counts under its first link only) and list
     * the moved ones, in listing order, in the step's finish slots (FluidListSlot from the
     * experiment's last flow row; begin() has taken that list, and the loop makes none);
     * the leader sifts each. The moved flows are active, and the rows hold every active
     * flow and every arrival left, so the two lists never meet.
     */
    MV_HD void requeueMoved(uint32_t listed) {
      const auto lane = static_cast<int64_t>(team.lane());
      const auto lo = static_cast<uint32_t>(partBegin(listed, Team::kSize, lane));
      const auto hi = static_cast<uint32_t>(partBegin(listed, Team::kSize, lane + 1));
      uint32_t mine = 0;
      for (uint32_t i = lo; i < hi; ++i) mine += movedAt(i) ? 1u : 0u;
      uint32_t moved = 0;
      uint32_t at = team.exclusiveSum(mine, moved);
      for (uint32_t i = lo; i < hi; ++i) {
        if (movedAt(i))
          flows.template get<FluidListSlot>(fluidFinishRow(flows, ctx.exp, at++)).row = tables.incident(i);
      }
      team.sync();  // every lane's list entries before the leader reads them
      if (!team.leader()) return;
      MV_ASSERT(moved <= queued && flow0 + queued + arriving <= flows.expEnd(ctx.exp),
                "the moved drains' list and the arrivals' share the experiment's flow rows");
      for (uint32_t j = 0; j < moved; ++j) {
        requeue(flow0 + flows.template get<FluidListSlot>(fluidFinishRow(flows, ctx.exp, j)).row);
      }
    }
    /// Whether incident entry i lists its flow under the flow's first link and the flow's
    /// drain has moved.
    MV_HD bool movedAt(uint32_t i) const {
      const FluidFlowState& f = state(flow0 + tables.incident(i));
      const FluidLinkFill& k = tables.fill(tables.hop(f.block, info.path_stride, 0));
      if (i < k.first || i >= k.first + k.flows) return false;
      return tables.drain(tables.block(f.block).slot).time != f.drain_ps;
    }

    MV_HD static bool shareLess(const FluidShareEntry& a, const FluidShareEntry& b) {
      return a.share_bps != b.share_bps ? a.share_bps < b.share_bps : a.link < b.link;
    }
    /// Restores the share heap's order below entry `i` of a heap of `size` entries. (Swapping
    /// entries by reference: BinaryHeap's copies made the water-filling 12 % slower, callgrind.)
    MV_HD void siftShareDown(uint32_t i, uint32_t size) const {
      for (;;) {
        const uint32_t left = 2 * i + 1;
        if (left >= size) return;
        uint32_t least = left;
        if (left + 1 < size && shareLess(tables.heap(left + 1), tables.heap(left))) least = left + 1;
        if (!shareLess(tables.heap(least), tables.heap(i))) return;
        const FluidShareEntry swap = tables.heap(i);
        tables.heap(i) = tables.heap(least);
        tables.heap(least) = swap;
        i = least;
      }
    }

    /**
     * Lists in heap entries [0, n) the links of every component (flows joined by shared
     * links) that holds a changed link, and returns n; unfreezes the active flows of those
     * components (every other active flow stays frozen at its rate) and clears the changes.
     * The team searches together, breadth first, one level (links one flow further from the
     * changed ones) at a time: the lanes share the level's links, claiming each flow and each
     * newly reached link with an exchange, and append the links they reach to the entries.
     * Gives up and returns kNone32 (refill every flow) when, after a level that leaves links
     * to search, the components hold more than half the active flows (chasing the links'
     * lists then costs more than grouping every flow by link, groupByLink, which walks only
     * the busy links), and at once with FluidNetInfo::recompute_all. A level's links and
     * flows do not depend on the order they are found in, so neither does the result: the
     * same entries, in some order, whatever the team.
     */
    MV_HD uint32_t reachComponents() {
      const uint32_t n0 = team.broadcast(changed);
      changed = 0;
      if (team.leader()) st.reach_end = n0;
      team.sync();  // the leader's events and changes before every lane's reads
      const uint32_t limit = st.active / 2 + 64;
      for (uint32_t i = team.lane(); i < n0; i += Team::kSize) {
        FluidLinkFill& k = tables.fill(tables.heap(i).link);
        k.changed = 0;
        k.reached = 1;
      }
      refilled = 0;
      uint32_t level = 0;  // the level's entries are [level, n)
      uint32_t n = n0;
      while (level < n) {
        if (info.recompute_all != 0u || refilled > limit) {
          for (uint32_t i = team.lane(); i < n; i += Team::kSize) tables.fill(tables.heap(i).link).reached = 0;
          if (team.leader()) st.whole_refills += 1;
          team.sync();
          return kNone32;
        }
        team.sync();  // the level's entries and marks before any lane claims from them
        uint32_t mine = 0;
        for (uint32_t i = level + team.lane(); i < n; i += Team::kSize) {
          const FluidLinkFill& k = tables.fill(tables.heap(i).link);
          for (uint32_t node = k.head; node != kNone32; node = tables.node(node).next) {
            const uint32_t b = tables.node(node).block;
            FluidBlockUse& u = tables.block(b);
            if (!claim(u.frozen, 0)) continue;
            mine += 1;
            for (uint32_t h = 0; h < u.hops; ++h) {
              const uint32_t m = tables.hop(b, info.path_stride, h);
              if (claim(tables.fill(m).reached, 1)) tables.heap(listEntry()).link = m;
            }
          }
        }
        uint32_t level_flows = 0;
        team.exclusiveSum(mine, level_flows);
        refilled += level_flows;
        team.sync();  // every lane's appends before the count is read
        level = n;
        n = team.broadcast(st.reach_end);
      }
      return n;
    }
    /// Sets `flag` to `v` and says whether it held another value: whether this lane is the
    /// one that changed it (an exchange when the team has other lanes).
    MV_HD bool claim(uint8_t& flag, uint8_t v) const {
      if constexpr (Team::kSize == 1) {
        if (flag == v) return false;
        flag = v;
        return true;
      } else {
        return atomicLoad(&flag) != v && atomicExchange<uint8_t>(&flag, v) != v;
      }
    }
    /// The next free heap entry of the component search (an atomic count when the team has
    /// other lanes).
    MV_HD uint32_t listEntry() const {
      if constexpr (Team::kSize == 1) {
        return st.reach_end++;
      } else {
        return atomicFetchAdd<uint32_t>(&st.reach_end, 1u);
      }
    }

    /// Whole refills: unfreezes every active flow and groups the flows by link (counting sort
    /// into FluidIncidentFlow rows, each link's in drain-queue order; the links in busy-list
    /// order).
    MV_HD void groupByLink() {
      uint32_t first = 0;
      for (uint32_t i = 0; i < st.busy_links; ++i) {
        FluidLinkFill& k = tables.fill(tables.busy(i));
        k.first = first;
        k.unfrozen = 0;  // placed so far
        first += k.flows;
      }
      refilled = queued;
      unfreezeQueued(queued);
      for (uint32_t q = 0; q < queued; ++q) {
        const uint32_t b = tables.drain(q).block;
        const FluidBlockUse& use = tables.block(b);
        for (uint32_t i = 0; i < use.hops; ++i) {
          FluidLinkFill& k = tables.fill(tables.hop(b, info.path_stride, i));
          tables.incident(k.first + k.unfrozen++) = use.flow;
        }
      }
    }

    /// Fixes a flow's rate at `rate` and takes it from the capacity of every link it crosses;
    /// a changed drain is re-sorted into the event queue now or (requeue_now false) by the caller.
    MV_HD void freeze(int64_t r, int64_t rate, int64_t t, bool requeue_now) {
      FluidFlowState& f = state(r);
      FluidBlockUse& use = tables.block(f.block);
      use.frozen = 1;
      for (uint32_t i = 0; i < use.hops; ++i) {
        FluidLinkFill& k = tables.fill(tables.hop(f.block, info.path_stride, i));
        k.left_bps -= rate;
        k.unfrozen -= 1;
      }
      if (setRate(f, rate, t) && requeue_now) requeue(r);
    }
    /// freeze() by one lane of a team while others freeze other flows: the links' capacity
    /// is taken with atomics; the drain is re-sorted by the leader afterwards.
    MV_HD void freezeShared(int64_t r, int64_t rate, int64_t t) {
      FluidFlowState& f = state(r);
      FluidBlockUse& use = tables.block(f.block);
      use.frozen = 1;
      for (uint32_t i = 0; i < use.hops; ++i) {
        FluidLinkFill& k = tables.fill(tables.hop(f.block, info.path_stride, i));
        atomicFetchAdd<int64_t>(&k.left_bps, -rate);
        atomicFetchAdd<uint32_t>(&k.unfrozen, ~0u);
      }
      setRate(f, rate, t);
    }
    /// Flow f drains at `rate` from `t`; false when that was already its rate (its drain
    /// time stands).
    MV_HD static bool setRate(FluidFlowState& f, int64_t rate, int64_t t) {
      if (rate == f.rate_bps) return false;
      const Int128 left = fluidLeft(f) - static_cast<Int128>(f.rate_bps) * (t - f.since_ps);
      setFluidLeft(f, left);
      f.since_ps = t;
      f.rate_bps = rate;
      f.drain_ps = fluidDrainTime(t, left, rate);
      return true;
    }
  };
};

}  // namespace mv::net
