/**
 * @file components.hpp
 * Network components and archetypes. NICs, switches, switch ports and directed links are
 * static tables (built by the host from a topology); packets live in static pools (link
 * rings, switch pools, NIC control rings); flows and flow records are dynamic rows.
 * Indices named `*_base`, `*_link`, `*_row` are local to the experiment: the global row is
 * `table.expBegin(exp) + local`.
 */
#pragma once

#include <cstdint>

#include "ecs/free_stack.hpp"
#include "ecs/table.hpp"
#include "ecs/type_list.hpp"
#include "network/config.hpp"
#include "network/packet.hpp"

namespace mv::net {

inline constexpr uint32_t kNone32 = 0xFFFFFFFFu;
/// Flow creation keys are (source NIC << kFlowKeyShift) | id, so a NIC finds its flows by
/// binary search (rows are sorted by key within an experiment).
inline constexpr int kFlowKeyShift = kFlowIdBits;
MV_HD constexpr uint64_t flowKey(uint32_t src_nic, uint64_t id) { return (uint64_t{src_nic} << kFlowKeyShift) | id; }

/// Counters of one NIC or switch (its own component, written without atomics); the
/// experiment's totals are their sum (`experimentCounters`).
struct NetCounters {
  int64_t packets_sent = 0;   ///< data packets put on NIC links (with retransmissions)
  int64_t packet_hops = 0;    ///< packets transmitted by any port (NIC or switch)
  int64_t ecn_marks = 0;
  int64_t cnps = 0;           ///< ECN-echo ACKs received by senders
  int64_t pauses = 0;         ///< PFC pause frames sent
  int64_t paused_ps = 0;      ///< time NIC and switch egress classes spent paused (counted at resume)
  int64_t drops = 0;
  int64_t retransmits = 0;    ///< data packets sent again
  int64_t timeouts = 0;
  int64_t nacks = 0;
  int64_t flows_done = 0;
  int64_t overflow = 0;       ///< pooled storage exhausted (a sizing problem, reported)
};
// --- NIC --------------------------------------------------------------------------------
struct NicInfo {
  uint32_t nic = 0;          ///< index of this NIC in the experiment
  uint32_t tor = 0;          ///< local switch row it attaches to
  uint32_t tor_port = 0;     ///< port number on that switch
  uint32_t tx_link = 0;      ///< local link row: NIC -> switch
  uint32_t rx_link = 0;      ///< local link row: switch -> NIC
  uint32_t ctrl_base = 0;    ///< local NicSlot row of its control ring
  uint32_t ctrl_capacity = 0;
  uint32_t pad = 0;
  int64_t rate_bps = 0;
  int64_t delay_ps = 0;
};
/// Most free link-ring chunks a unit (NIC or switch) keeps for the rings it produces into
/// (its `link_chunks`: the chunks its incoming rings leave, so that a unit that forwards what
/// it receives rarely touches the experiment's shared LinkPool); more go back to the pool.
inline constexpr uint32_t kChunkCacheSize = 4;

struct NicState {
  int64_t busy_until_ps = 0;
  int64_t ctrl_head = 0;     ///< control ring (ACK/NACK waiting to be sent)
  int64_t ctrl_tail = 0;
  uint64_t rr_key = 0;       ///< key of the flow served last (round robin)
  uint32_t paused = 0;       ///< priorities paused by the switch (PFC)
  /// The sender minima the last step ended with (nic_system.hpp SenderEvents), valid while
  /// the Flow table's generation of this experiment is still `flow_generation`.
  uint32_t flow_generation = 0;
  /// The Flow table's layout count of this experiment (plus one, so a new NIC never
  /// matches) when [flow_lo, flow_hi), this NIC's flows as offsets from the experiment's
  /// first flow row, was found.
  uint32_t flow_layout = 0;
  /// The Message table's generation of this experiment when the NIC last found its
  /// connections' earliest unopened messages (FlowSend::pending_ps).
  uint32_t message_generation = 0;
  int64_t flow_lo = 0;
  int64_t flow_hi = 0;
  int64_t ready_ps = INT64_MAX;
  int64_t rto_ps = INT64_MAX;
  Entity ready_flow;
  Entity rto_flow;
  int64_t paused_since_ps[kPriorities] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t tx_bytes = 0;      ///< cumulative bytes sent on the uplink
  FreeCache link_chunks;     ///< free chunks for its uplink's ring
};

/// Bytes a directed link carried in its current time bin (when `network.link_bin` is set).
struct LinkBinState {
  int64_t bin = -1;          ///< index of the open bin, -1 before the first packet
  int64_t bytes = 0;
  int64_t end_ps = 0;        ///< when the open bin ends (a link's send times never go back)
};
struct Nic : Archetype<NicInfo, NicState, NetCounters> {
  static constexpr const char* kName = "Nic";
  static constexpr bool kStatic = true;
};

// --- switch --------------------------------------------------------------------------------
struct SwitchInfo {
  uint32_t node = 0;         ///< topology node id (salts the ECMP hash)
  uint32_t port_base = 0;    ///< local Port row of port 0
  uint32_t port_count = 0;
  uint32_t route_base = 0;   ///< local RouteIndex row of (this switch, edge 0)
  int64_t total_headroom = 0;///< Σ headroom over ports and priorities
  int64_t total_reserve = 0; ///< Σ reserve over ports and priorities
};
struct SwitchState {
  FreeCache slots;           ///< the switch's own free packet slots (up to kSwitchSlotCache)
  int64_t buffer_bytes = 0;  ///< bytes buffered in the switch
  int64_t shared_used = 0;   ///< bytes in the shared part (above reserves, below headroom)
  uint64_t draws = 0;        ///< random numbers drawn (ECN, spraying)
  uint32_t events_ready = 0; ///< its ports' PortNext and PortTree are valid (from its first step on)
  uint32_t pad = 0;
  FreeCache link_chunks;  ///< free chunks for its outgoing rings
};
struct Switch : Archetype<SwitchInfo, SwitchState, NetCounters> {
  static constexpr const char* kName = "Switch";
  static constexpr bool kStatic = true;
};

/// One port of a switch (egress queues towards the peer, ingress accounting from it).
struct PortInfo {
  uint32_t out_link = 0;     ///< local link row: this port -> peer
  uint32_t in_link = 0;      ///< local link row: peer -> this port
  uint32_t peer_nic = kNone32;  ///< NIC index when the peer is a NIC
  uint32_t pfc_shift = 3;    ///< dynamic threshold divisor 2^shift (3 at NIC rate)
  int64_t rate_bps = 0;
  int64_t delay_ps = 0;
  int64_t headroom_bytes = 0;///< per priority
  int64_t kmin_bytes = 0;    ///< ECN thresholds for this port's rate and the CC
  int64_t kmax_bytes = 0;
};
struct PortQueue {
  uint32_t head[kPriorities];
  uint32_t tail[kPriorities];
  int64_t bytes[kPriorities];
  int64_t queued_bytes;      ///< Σ bytes over priorities (kept with them)
  int64_t busy_until_ps;
  int64_t tx_bytes;          ///< cumulative bytes sent (INT)
  uint32_t paused;           ///< priorities the peer paused
  uint32_t send_pause;       ///< PFC pause frames to send upstream, per priority
  uint32_t send_resume;      ///< PFC resume frames to send upstream, per priority
  uint32_t xoff;             ///< priorities we paused upstream
  uint32_t rr;               ///< round-robin cursor over priorities 1..7
  uint32_t nonempty;         ///< bit c set while queue c holds packets
  int64_t paused_since_ps[kPriorities];  ///< when each paused priority was paused
  int64_t max_bytes;         ///< largest occupancy seen (all priorities)
  int64_t last_change_ps;    ///< time of the last occupancy change
  double byte_ps;            ///< ∫ occupancy dt, for the time average
};
struct PortIngress {
  int64_t bytes[kPriorities];     ///< bytes admitted from this ingress, per priority
  int64_t headroom[kPriorities];  ///< of which in headroom
};
/// The port's next events: the leaves of the switch's two tournament trees. Kept from step
/// to step: only the port's own events change them, and a packet newly visible on an empty
/// in-link.
struct PortNext {
  int64_t arrival_ps;  ///< arrival time of the head packet on the in-link; INT64_MAX: none visible
  int64_t send_ps;     ///< when the port sends next: free and holding work, else INT64_MAX
};
/// Internal node k (1 <= k < ports) of the switch's tournament trees over its ports' next
/// arrival and next send, stored in the row of port k: the port that wins node k's subtree
/// (earliest time, then lowest port). Node k's children are 2k and 2k+1; index ports + i is
/// port i's leaf. So the switch finds its next event at the root in O(1) and updates a
/// port's time in O(log ports).
struct PortTree {
  uint16_t arrival;
  uint16_t send;
};
struct Port : Archetype<PortInfo, PortQueue, PortIngress, PortNext, PortTree> {
  static constexpr const char* kName = "Port";
  static constexpr bool kStatic = true;
};

// --- links and packet pools ------------------------------------------------------------
/// A directed link. Its ring holds the packets on the wire, in arrival order.
struct LinkInfo {
  int64_t delay_ps = 0;
  int64_t rate_bps = 0;
  int64_t ps_per_byte = 0;   ///< exactPsPerByte(rate): serialisation is one multiplication; 0: not whole
  uint32_t whole_ns = 0;     ///< network.whole_ns: serialisation truncated to whole nanoseconds
  uint32_t pad = 0;
};
/// Ring positions, double-buffered by step parity: in step s the producer reads tail of
/// parity s-1 and writes tail of parity s, the consumer reads tail of parity s-1 and writes
/// head of parity s. So producer and consumer never touch the same word in one step, and the
/// consumer sees exactly the packets sent in earlier steps. Positions count packets modulo
/// 2^32 (head never passes tail, and far fewer than 2^31 are ever on one wire).
///
/// The ring's storage is a chain of chunks of kLinkChunkSlots slots from the experiment's
/// LinkPool: position p lies in slot p mod kLinkChunkSlots of its chunk. The producer owns
/// `tail_chunk` (the chunk of position tail, always held: the push that fills a chunk takes
/// the next one and links it from the filled chunk's last slot); the consumer owns
/// `head_chunk` (the chunk of position head) and returns a chunk when its head leaves it.
/// So a ring holds what is on the wire, rounded up to chunks, plus one chunk.
struct LinkRing {
  uint32_t head[2];
  uint32_t tail[2];
  uint32_t head_chunk;
  uint32_t tail_chunk;
  uint32_t pad[2];  ///< 32 bytes: a ring never straddles two cache lines
};
/// Slots of a link-ring chunk (a power of two).
inline constexpr int64_t kLinkChunkSlots = 16;
struct Link : Archetype<LinkInfo, LinkRing, LinkBinState> {
  static constexpr const char* kName = "Link";
  static constexpr bool kStatic = true;
};
/// Packet pools: headers in one table, INT records in a second table with the same slot
/// numbers. Only HPCC experiments have rows in the INT tables (no other packet carries INT).
struct LinkSlot : Archetype<PacketHeader> {
  static constexpr const char* kName = "LinkSlot";
  static constexpr bool kStatic = true;
  static constexpr bool kPool = true;
};
struct LinkSlotInt : Archetype<IntStack> {
  static constexpr const char* kName = "LinkSlotInt";
  static constexpr bool kStatic = true;
  static constexpr bool kPool = true;
};
struct SwitchSlot : Archetype<PacketHeader> {
  static constexpr const char* kName = "SwitchSlot";
  static constexpr bool kStatic = true;
  static constexpr bool kPool = true;
};
struct SwitchSlotInt : Archetype<IntStack> {
  static constexpr const char* kName = "SwitchSlotInt";
  static constexpr bool kStatic = true;
  static constexpr bool kPool = true;
};
struct NicSlot : Archetype<PacketHeader> {
  static constexpr const char* kName = "NicSlot";
  static constexpr bool kStatic = true;
};
struct NicSlotInt : Archetype<IntStack> {
  static constexpr const char* kName = "NicSlotInt";
  static constexpr bool kStatic = true;
};

/// One experiment's slots of a packet pool (header and INT tables), numbered from 0. A copy
/// moves the header and only the INT records it carries, so packets without INT never touch
/// the INT table.
struct PacketSlots {
  PacketHeader* headers = nullptr;
  IntStack* ints = nullptr;

  MV_HD PacketHeader& operator[](int64_t s) const { return headers[s]; }
  MV_HD IntStack& intsOf(int64_t s) const { return ints[s]; }
  /// Stores a packet in slot `s`: its header and the `h.hops` INT records at `in` (which
  /// may be null when it carries none).
  MV_HD void put(int64_t s, const PacketHeader& h, const IntHop* in) const {
    headers[s] = h;
    for (int i = 0; i < h.hops; ++i) ints[s].hop[i] = in[i];
  }
};

/// The slots of experiment `e` in the pool made of archetypes H (headers) and I (INT).
template <class H, class I, class WV>
MV_HD PacketSlots packetSlots(WV& world, ExpId e) {
  TableView<H>& h = world.template table<H>();
  TableView<I>& i = world.template table<I>();
  return PacketSlots{h.template expColumn<PacketHeader>(e), i.template expColumn<IntStack>(e)};
}

// --- routing (read-only) ---------------------------------------------------------------
/// For (switch, destination edge switch): which next-hop set of that switch to use.
struct RouteIndex {
  uint32_t set = 0;          ///< local RouteSet row
};
struct RouteSet {
  uint32_t offset = 0;       ///< local RoutePort row of the first port
  uint32_t count = 0;
};
struct RoutePort {
  uint32_t port = 0;
};
struct RouteIndexTable : Archetype<RouteIndex> {
  static constexpr const char* kName = "RouteIndex";
  static constexpr bool kStatic = true;
};
struct RouteSetTable : Archetype<RouteSet> {
  static constexpr const char* kName = "RouteSet";
  static constexpr bool kStatic = true;
};
struct RoutePortTable : Archetype<RoutePort> {
  static constexpr const char* kName = "RoutePort";
  static constexpr bool kStatic = true;
};
/// Where a NIC attaches, for routing towards it.
struct NicRoute {
  uint32_t edge = 0;         ///< index of its edge switch among edge switches
  uint32_t tor = 0;          ///< local switch row
  uint32_t tor_port = 0;
};
struct NicRouteTable : Archetype<NicRoute> {
  static constexpr const char* kName = "NicRoute";
  static constexpr bool kStatic = true;
};

// --- flows -----------------------------------------------------------------------------
struct FlowSpec {
  uint32_t src_nic = 0;
  uint32_t dst_nic = 0;
  int64_t bytes = 0;
  int64_t start_ps = 0;
  uint64_t id = 0;           ///< flow id (the low bits of its key); hashed by ECMP
  uint32_t prio = 3;
  /// 1: a persistent connection (an RDMA QP, docs/network.md "Connections"): it lives for
  /// the experiment, `bytes` is the end of the messages opened on it so far, and it sends
  /// its Message rows one after another; 0: a one-shot flow of `bytes` from `start_ps`.
  uint32_t connection = 0;
};
/// Sender side, written only by the source NIC.
struct FlowSend {
  int64_t next_seq = 0;      ///< next byte to send
  int64_t una = 0;           ///< first unacknowledged byte
  int64_t max_sent = 0;      ///< highest byte ever sent (for retransmission counting)
  int64_t next_send_ps = 0;  ///< pacing
  int64_t rto_deadline_ps = 0;
  int64_t rate_bps = 0;      ///< current sending rate
  int64_t window_bytes = 0;  ///< 0 = no window
  int64_t retransmits = 0;
  int64_t cc_next_ps = INT64_MAX;  ///< DCQCN: its earliest pending timer tick (INT64_MAX: none)
  uint32_t timeouts = 0;
  uint32_t started = 0;
  // Connections only (FlowSpec::connection):
  int64_t pending_ps = INT64_MAX;  ///< earliest start of a message not yet opened (INT64_MAX: none)
  int64_t open_seq = 0;            ///< first byte of the message opened last
  int64_t first_end = INT64_MAX;   ///< end of the earliest opened message not yet acknowledged
};
/// Congestion-control state (one layout for the three algorithms).
struct FlowCc {
  int64_t target_bps = 0;    ///< DCQCN Rt
  int64_t committed_bps = 0; ///< HPCC Rc
  double alpha = 1.0;        ///< DCQCN/DCTCP α
  double u = 1.0;            ///< HPCC utilisation estimate
  int64_t alpha_next_ps = 0; ///< DCQCN timers (0 = not started)
  int64_t decrease_next_ps = 0;
  int64_t increase_next_ps = 0;
  int64_t update_seq = 0;    ///< HPCC: commit when an ACK passes this; DCTCP: window end
  int64_t cut_seq = 0;       ///< DCTCP: congestion-window reduction lasts until this is acked
  int64_t acked_in_window = 0;   ///< DCTCP: packets in the current observation window
  int64_t marked_in_window = 0;  ///< DCTCP: marked ACKs in it
  uint32_t stage = 0;
  uint32_t flags = 0;        ///< DCQCN: CNP seen for α / for decrease; first CNP seen
  uint32_t int_hops = 0;     ///< HPCC: hops of the previous INT sample
  uint32_t pad = 0;
  IntHop prev[kMaxIntHops];
};
/// Receiver side, written only by the destination NIC.
struct FlowRecv {
  int64_t expected = 0;      ///< next in-order byte
  int64_t last_nack_ps = -1;
  int64_t last_nack_seq = -1;
  uint32_t since_ack = 0;
  uint32_t pad = 0;
  uint64_t ooo[16] = {};     ///< spraying: packets received beyond `expected` (bitmap)
};
inline constexpr int kOooWords = 16;
inline constexpr int kOooPackets = 64 * kOooWords;
struct Flow : Archetype<FlowSpec, FlowSend, FlowCc, FlowRecv> {
  static constexpr const char* kName = "Flow";
};

/// A message posted to a connection (what NCCL posts to a QP): created by whoever posts it,
/// keyed flowKey(source NIC, id) so a NIC finds its messages as it finds its flows; written
/// from then on only by the source NIC, which opens it in the connection's sequence space
/// when the messages before it are sent and its start is reached (order: start, then id),
/// and destroys it with a FlowRecord when its last byte is acknowledged.
struct MessageSpec {
  Entity connection;           ///< its connection's Flow row
  uint64_t id = 0;             ///< the id its FlowRecord carries
  int64_t bytes = 0;
  int64_t start_ps = 0;        ///< not opened before
  int64_t offset = -1;         ///< first byte in the connection's sequence space; -1: not opened
  int64_t retransmits = 0;     ///< the connection's retransmissions when it was opened
};
struct Message : Archetype<MessageSpec> {
  static constexpr const char* kName = "Message";
};

/// Row range [lo, hi) of the rows of `table` (flows or messages, keyed flowKey) whose source
/// is `nic` in experiment `e`.
template <class A>
MV_HD void flowRangeOf(const TableView<A>& flows, ExpId e, uint32_t nic, int64_t& lo, int64_t& hi) {
  const uint64_t first = flowKey(nic, 0);
  const uint64_t last = flowKey(nic + 1, 0);
  int64_t a = flows.expBegin(e);
  int64_t b = flows.expEnd(e);
  while (a < b) {
    const int64_t m = (a + b) / 2;
    if (flows.key[m] < first) a = m + 1; else b = m;
  }
  lo = a;
  b = flows.expEnd(e);
  while (a < b) {
    const int64_t m = (a + b) / 2;
    if (flows.key[m] < last) a = m + 1; else b = m;
  }
  hi = a;
}

/// Row of the unopened message posted to connection `conn` (a row of a table keyed
/// flowKey(src_nic, id)) that opens first among those starting at or before `until`: the
/// earliest start, then the lowest id; -1 when none. `lo`, `hi`: the source NIC's message
/// rows (flowRangeOf).
MV_HD inline int64_t firstMessage(const TableView<Message>& msgs, int64_t lo, int64_t hi, Entity conn, int64_t until) {
  int64_t best = -1;
  for (int64_t m = lo; m < hi; ++m) {
    const MessageSpec& ms = msgs.template get<MessageSpec>(m);
    if (msgs.dead[m] != 0u || ms.connection != conn || ms.offset >= 0 || ms.start_ps > until) continue;
    if (best < 0) {
      best = m;
      continue;
    }
    const MessageSpec& b = msgs.template get<MessageSpec>(best);
    if (ms.start_ps < b.start_ps || (ms.start_ps == b.start_ps && ms.id < b.id)) best = m;
  }
  return best;
}

/// Key of one QP of a connection between two GPUs (ConnectionIndex): its sender and receiver
/// rank, its communicator, its channel (NCCL keeps a connection per communicator, channel and
/// peer) and the QP's index among the connection's.
struct ConnectionKey {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint32_t communicator = 0;
  uint32_t channel = 0;
  uint32_t qp = 0;

  MV_HD constexpr bool operator==(const ConnectionKey& o) const {
    return src == o.src && dst == o.dst && communicator == o.communicator && channel == o.channel && qp == o.qp;
  }
  /// Lexicographic order (src, dst, communicator, channel, qp).
  MV_HD constexpr bool operator<(const ConnectionKey& o) const {
    if (src != o.src) return src < o.src;
    if (dst != o.dst) return dst < o.dst;
    if (communicator != o.communicator) return communicator < o.communicator;
    if (channel != o.channel) return channel < o.channel;
    return qp < o.qp;
  }
};
/// One connection of an experiment: rows sorted by `key`, filled by the host, read-only.
struct ConnectionRef {
  ConnectionKey key;
  Entity flow;               ///< its Flow row
};
struct ConnectionIndex : Archetype<ConnectionRef> {
  static constexpr const char* kName = "ConnectionIndex";
  static constexpr bool kStatic = true;
};

/// One completed flow (created when its last byte is acknowledged).
struct FlowResult {
  uint64_t id = 0;
  uint32_t src_nic = 0;
  uint32_t dst_nic = 0;
  int64_t bytes = 0;
  int64_t start_ps = 0;
  int64_t finish_ps = 0;
  int64_t retransmits = 0;
};
/// One closed time bin of one directed link: the bytes whose transmission started in it.
struct LinkBin {
  uint32_t link = 0;
  uint32_t pad = 0;
  int64_t bin = 0;
  int64_t bytes = 0;
};
struct LinkSample : Archetype<LinkBin> {
  static constexpr const char* kName = "LinkSample";
};

struct FlowRecord : Archetype<FlowResult> {
  static constexpr const char* kName = "FlowRecord";
};

/// The experiment's shared pool of switch packet records: a lock-free stack of free slots,
/// linked through their headers' `next`. Which slot a packet gets never affects results;
/// only the pool's size limits them.
struct SwitchPool : FreeStack {};
/// The experiment's shared pool of link-ring chunks (kLinkChunkSlots consecutive LinkSlot
/// rows each): a lock-free stack of free chunks, linked through the `next` of their first
/// slot. Which chunk a ring gets never affects results.
struct LinkPool : FreeStack {};
/// Free slots a switch keeps for itself before returning them to the shared stack.
inline constexpr uint32_t kSwitchSlotCache = 64;

/// One row per experiment: its shared switch packet pool and link-chunk pool.
struct NetStats : Archetype<SwitchPool, LinkPool> {
  static constexpr const char* kName = "NetStats";
  static constexpr bool kStatic = true;
};

/// Path quantities of an experiment that CC needs (computed by the host from the topology).
struct NetExperiment {
  NetworkConfig network;
  int64_t base_rtt_ps = 0;   ///< T: maximum idle RTT over NIC pairs (HPCC default)
  int64_t bdp_bytes = 0;     ///< T × NIC rate: the initial window
  int64_t rto_ps = 0;        ///< retransmission timeout in effect (configured or derived)
};

/// World status bits raised when pooled packet storage is exhausted (a sizing problem).
inline constexpr uint32_t kStatusSwitchPool = 1u << 16;  ///< raise network.switch_pool_slots
inline constexpr uint32_t kStatusLinkRing = 1u << 17;    ///< raise network.link_ring_factor (link chunks ran out)
inline constexpr uint32_t kStatusNicControl = 1u << 18;  ///< raise network.nic_control_slots
inline constexpr uint32_t kStatusPacketPool = kStatusSwitchPool | kStatusLinkRing | kStatusNicControl;

/// Every network archetype, for composing a world.
using NetworkArchetypes =
    TypeList<Nic, Switch, Port, Link, LinkSlot, LinkSlotInt, SwitchSlot, SwitchSlotInt, NicSlot, NicSlotInt,
             RouteIndexTable, RouteSetTable, RoutePortTable, NicRouteTable, Flow, Message, ConnectionIndex, FlowRecord,
             LinkSample, NetStats>;

}  // namespace mv::net
