/**
 * @file nic_system.hpp
 * The NIC system: one invocation advances one NIC and all its flows through the step's
 * window, event by event at exact picosecond times (pacing and arbitration couple them, so
 * they are never split across threads). Events, in time order (ties: arrival, timeout,
 * transmission):
 *   - a packet arrives from the switch: data (receiver: ACK/NACK into the control ring),
 *     ACK/NACK (sender: progress, congestion control, completion), PFC pause/resume;
 *   - a retransmission timeout fires (go-back-N from the first unacknowledged byte);
 *   - the link is free and something may be sent: control packets first, then the next
 *     eligible flow in round-robin order of flow keys (eligible: started, bytes left,
 *     window open, pacing time reached, priority not paused).
 * A NIC writes its own row, the sender side of its flows (FlowSend, FlowCc) and the
 * receiver side of flows towards it (FlowRecv): disjoint columns, one writer each.
 */
#pragma once

#include <cstdint>

#include "ecs/system.hpp"
#include "network/cc.hpp"
#include "network/components.hpp"
#include "network/link.hpp"

namespace mv::net {

/// Wire bytes of a data packet with `payload` bytes under `cc` in format `wire`.
MV_HD constexpr int32_t dataWireBytes(int32_t payload, CcKind cc, WireFormat wire = WireFormat::kNs3) {
  return payload + (wire == WireFormat::kRoce ? kRoceDataHeaderBytes : kDataHeaderBytes) +
         (cc == CcKind::kHpcc ? kIntHeaderBytes : 0);
}
/// Wire bytes of an ACK or NACK under `cc` in format `wire` (with HPCC it echoes INT).
MV_HD constexpr int32_t ackWireBytes(CcKind cc, WireFormat wire = WireFormat::kNs3) {
  return (wire == WireFormat::kRoce ? kRoceAckBytes : kAckBytes) + (cc == CcKind::kHpcc ? kAckIntBytes - kAckBytes : 0);
}
/// Wire bytes of a PFC frame in format `wire`.
MV_HD constexpr int32_t pfcWireBytes(WireFormat wire) { return wire == WireFormat::kRoce ? kRocePfcBytes : kPfcBytes; }

/// Pacing gap after `bytes` sent at `rate_bps`: exact picoseconds, or truncated to whole
/// nanoseconds with network.whole_ns (as the reference).
MV_HD inline int64_t paceTime(const NetworkConfig& cfg, int64_t bytes, int64_t rate_bps) {
  return cfg.whole_ns ? serializationTimeWholeNs(Bytes{bytes}, BitsPerSecond{rate_bps}).ps
                      : serializationTime(Bytes{bytes}, BitsPerSecond{rate_bps}).ps;
}

/// First sequence byte at or after `seq` that starts a packet of `payload` bytes: messages
/// on a connection start on packet boundaries, so every packet but a message's last is
/// full and a receiver's out-of-order bitmap (spraying) counts whole packets.
MV_HD constexpr int64_t alignToPacket(int64_t seq, int64_t payload) { return (seq + payload - 1) / payload * payload; }

template <class WV>
struct NicSystem {
  static constexpr const char* kName = "nic";
  static constexpr const char* kWhy =
      "advance each NIC with its flows: receive, acknowledge, react (CC), pace and transmit at exact times";
  using Ctx = RowContext<WV>;

  MV_HD static void run(const Ctx& ctx, const NicInfo& info, NicState& st, NetCounters& counters) {
    Unit u{ctx, info, st, counters, packetSlots<NicSlot, NicSlotInt>(*ctx.world, ctx.exp)};
    u.step();
  }

 private:
  struct Unit {
    const Ctx& ctx;
    const NicInfo& info;
    NicState& st;
    NetCounters& counters;  ///< this NIC's own counters (summed by the host)
    PacketSlots ctrl;       ///< the experiment's NIC control slots
    int64_t msg_lo = 0;     ///< rows of the messages this NIC sends: [msg_lo, msg_hi)
    int64_t msg_hi = 0;

    MV_HD void step() {
      const NetExperiment& ne = ctx.config().net;
      const LinkRings rings = linkRings(*ctx.world, ctx.exp, st.link_chunks);
      TableView<Flow>& flows = ctx.template table<Flow>();
      rings.beginProduce(info.tx_link);
      rings.beginConsume(info.rx_link);
      SenderEvents ev;
      flowRange(flows, ev);
      flowRangeOf(ctx.template table<Message>(), ctx.exp, info.nic, msg_lo, msg_hi);
      resumeEvents(flows, ev);
      const CcPath path{info.rate_bps, ne.base_rtt_ps, ne.bdp_bytes};
      int64_t first_push = INT64_MAX;
      const int64_t end = ctx.window_end.ps;
      // Nothing happens before the last event processed: a flow unblocked by an ACK, or a
      // queue resumed by PFC, sends at that moment at the earliest.
      int64_t clock = ctx.now.ps;
      for (;;) {
        const PacketHeader* arrival = rings.peek(info.rx_link, end);
        const int64_t t_arr = arrival != nullptr ? arrival->time_ps : INT64_MAX;
        const int64_t t_rto = ev.rto_ps;
        bool control = false;
        const int64_t t_tx = nextTransmit(ev, clock, control);
        const int64_t t = t_arr < t_rto ? (t_arr < t_tx ? t_arr : t_tx) : (t_rto < t_tx ? t_rto : t_tx);
        if (t >= end) break;
        clock = t;
        if (t == t_arr) {
          const uint32_t paused = st.paused;
          const int64_t row = receive(ne, path, flows, *arrival, rings.headInts(info.rx_link));
          rings.popNext(info.rx_link);
          if (st.paused != paused) rescanReady(flows, ev);
          if (row >= 0) touched(flows, ev, row);
        } else if (t == t_rto) {
          const int64_t row = ev.rto_row;
          if (row < 0) {
            rescanTimeouts(flows, ev);  // only a bound: find the real earliest timeout
            continue;
          }
          timeout(flows, row, t);
          touched(flows, ev, row);
        } else {
          const int64_t row = control ? -1 : pickFlow(flows, ev, t);
          if (!control && row < 0) {
            rescanReady(flows, ev);  // only a bound, and no flow is ready yet: find the real time
            continue;
          }
          transmit(ne, path, rings, flows, row, t, first_push);
          if (row >= 0) touched(flows, ev, row);
        }
      }
      if (ev.ready_row < 0 && ev.ready_ps != INT64_MAX) rescanReady(flows, ev);
      if (ev.rto_row < 0 && ev.rto_ps != INT64_MAX) rescanTimeouts(flows, ev);
      saveEvents(flows, ev);
      // Report every pending event: packets still on the incoming wire, timeouts, sends.
      int64_t wake = first_push;
      const int64_t next_arrival = rings.nextArrival(info.rx_link);
      wake = next_arrival < wake ? next_arrival : wake;
      wake = ev.rto_ps < wake ? ev.rto_ps : wake;
      bool control = false;
      const int64_t next_tx = nextTransmit(ev, end, control);
      wake = next_tx < wake ? next_tx : wake;
      if (wake != INT64_MAX) ctx.wakeAt(Picoseconds{wake});
    }

    /**
     * The NIC's flows [lo, hi) and, kept up to date event by event, the earliest time one
     * of them may send and the earliest armed retransmission timeout (ties: lowest row).
     * An event changes the sender state of at most one flow (a PFC frame: of all), so
     * each is maintained by comparing that flow's new times with the cached minimum. When
     * the flow holding a minimum moves later, the old minimum stays as a lower bound (its
     * row is set to -1) instead of rescanning all flows after every packet: the event loop
     * acts on a bound only after checking it (a flow ready then, the timeout still armed)
     * and rescans when the check fails, so events happen at the same times and in the same
     * order as with exact minima.
     */
    struct SenderEvents {
      int64_t lo = 0;
      int64_t hi = 0;
      int64_t ready_ps = INT64_MAX;  ///< min over flows of flowReady, or a lower bound of it
      int64_t ready_row = -1;        ///< a flow with that time; -1: ready_ps is only a bound
      int64_t rto_ps = INT64_MAX;    ///< earliest armed timeout, or a lower bound of it
      int64_t rto_row = -1;          ///< its flow (the lowest row among ties); -1: only a bound
    };

    /// This NIC's flows [lo, hi): the offsets found last time while the experiment's flow
    /// rows kept their layout, else a binary search over the flow keys.
    MV_HD void flowRange(const TableView<Flow>& flows, SenderEvents& ev) {
      const int64_t base = flows.expBegin(ctx.exp);
      const uint32_t layout = flows.exp_layout[ctx.exp] + 1u;
      if (st.flow_layout == layout) {
        ev.lo = base + st.flow_lo;
        ev.hi = base + st.flow_hi;
        return;
      }
      flowRangeOf(flows, ctx.exp, info.nic, ev.lo, ev.hi);
      st.flow_layout = layout;
      st.flow_lo = ev.lo - base;
      st.flow_hi = ev.hi - base;
    }

    /**
     * The minima as the last step left them (exact: it ended with a rescan of any bound)
     * when no flow of the experiment was created since: only this NIC changes its flows'
     * sender state, so they still hold. Rows may have moved, so the flows are found by
     * handle; a flow destroyed since leaves its time as a bound. Else a rescan.
     */
    MV_HD void resumeEvents(TableView<Flow>& flows, SenderEvents& ev) {
      const uint32_t messages = ctx.template table<Message>().exp_generation[ctx.exp];
      if (st.message_generation != messages) {
        st.message_generation = messages;
        for (int64_t r = ev.lo; r < ev.hi; ++r) {
          if (flows.template get<FlowSpec>(r).connection != 0u) refreshPending(flows, r);
        }
        rescanReady(flows, ev);
        rescanTimeouts(flows, ev);
        return;
      }
      if (st.flow_generation != flows.exp_generation[ctx.exp]) {
        rescanReady(flows, ev);
        rescanTimeouts(flows, ev);
        return;
      }
      ev.ready_ps = st.ready_ps;
      ev.ready_row = flows.rowOf(st.ready_flow);
      ev.rto_ps = st.rto_ps;
      ev.rto_row = flows.rowOf(st.rto_flow);
    }
    MV_HD void saveEvents(const TableView<Flow>& flows, const SenderEvents& ev) {
      st.flow_generation = flows.exp_generation[ctx.exp];
      st.ready_ps = ev.ready_ps;
      st.ready_flow = ev.ready_row >= 0 ? flows.entity[ev.ready_row] : Entity::none();
      st.rto_ps = ev.rto_ps;
      st.rto_flow = ev.rto_row >= 0 ? flows.entity[ev.rto_row] : Entity::none();
    }

    MV_HD void rescanReady(const TableView<Flow>& flows, SenderEvents& ev) const {
      ev.ready_ps = INT64_MAX;
      ev.ready_row = -1;
      for (int64_t r = ev.lo; r < ev.hi; ++r) {
        const int64_t t = flowReady(flows, r);
        if (t < ev.ready_ps) {
          ev.ready_ps = t;
          ev.ready_row = r;
        }
      }
    }
    MV_HD static void rescanTimeouts(const TableView<Flow>& flows, SenderEvents& ev) {
      ev.rto_ps = INT64_MAX;
      ev.rto_row = -1;
      for (int64_t r = ev.lo; r < ev.hi; ++r) {
        const int64_t t = timeoutOf(flows, r);
        if (t < ev.rto_ps) {
          ev.rto_ps = t;
          ev.rto_row = r;
        }
      }
    }
    /// Updates the cached minima after an event changed the sender state of flow `row`.
    MV_HD void touched(const TableView<Flow>& flows, SenderEvents& ev, int64_t row) const {
      if (row < ev.lo || row >= ev.hi) return;  // not one of this NIC's flows
      const int64_t ready = flowReady(flows, row);
      if (ready <= ev.ready_ps) {
        ev.ready_ps = ready;
        ev.ready_row = row;
      } else if (row == ev.ready_row) {
        ev.ready_row = -1;
      }
      const int64_t rto = timeoutOf(flows, row);
      if (rto < ev.rto_ps || (rto == ev.rto_ps && row < ev.rto_row)) {
        ev.rto_ps = rto;
        ev.rto_row = rto == INT64_MAX ? -1 : row;
      } else if (row == ev.rto_row && rto != ev.rto_ps) {
        ev.rto_row = -1;
      }
    }

    // --- sending ----------------------------------------------------------------------
    MV_HD bool ctrlPending() const { return st.ctrl_head < st.ctrl_tail; }
    /// Control slot number of ring position `pos` (the capacity is a power of two).
    MV_HD int64_t ctrlSlotOf(int64_t pos) const { return info.ctrl_base + (pos & (info.ctrl_capacity - 1)); }
    MV_HD PacketHeader& ctrlSlot(int64_t pos) const { return ctrl[ctrlSlotOf(pos)]; }

    /// Earliest time this flow may send its next packet, or INT64_MAX. A connection whose
    /// opened messages are all sent may send when its next message starts.
    MV_HD int64_t flowReady(const TableView<Flow>& flows, int64_t row) const {
      const FlowSpec& spec = flows.template get<FlowSpec>(row);
      const FlowSend& s = flows.template get<FlowSend>(row);
      if (flows.dead[row] != 0u) return INT64_MAX;
      int64_t floor = spec.start_ps;
      if (s.next_seq >= spec.bytes) {
        if (spec.connection == 0u || s.pending_ps == INT64_MAX) return INT64_MAX;
        floor = s.pending_ps;
      }
      if (s.started != 0u && s.window_bytes > 0 && s.next_seq - s.una >= s.window_bytes) return INT64_MAX;
      if ((st.paused >> spec.prio) & 1u) return INT64_MAX;
      const int64_t t = s.started != 0u ? s.next_send_ps : floor;
      return t > floor ? t : floor;
    }

    // --- messages on connections ------------------------------------------------------
    /// Whether message row `m` is live and posted to connection `conn`.
    MV_HD static bool onConnection(const TableView<Message>& msgs, int64_t m, Entity conn) {
      return msgs.dead[m] == 0u && msgs.template get<MessageSpec>(m).connection == conn;
    }
    /// Recomputes connection `row`'s earliest unopened message start (FlowSend::pending_ps).
    MV_HD void refreshPending(TableView<Flow>& flows, int64_t row) const {
      const TableView<Message>& msgs = ctx.template table<Message>();
      const int64_t m = firstMessage(msgs, msg_lo, msg_hi, flows.entity[row], INT64_MAX);
      flows.template get<FlowSend>(row).pending_ps = m < 0 ? INT64_MAX : msgs.template get<MessageSpec>(m).start_ps;
    }
    /// Opens connection `row`'s next message at `t` (its opened messages are all sent): the
    /// unopened one that starts first (then lowest id) goes on at the next packet boundary.
    MV_HD void openMessage(TableView<Flow>& flows, int64_t row, int64_t t, int64_t payload_bytes) const {
      TableView<Message>& msgs = ctx.template table<Message>();
      const int64_t best = firstMessage(msgs, msg_lo, msg_hi, flows.entity[row], t);
      MV_ASSERT(best >= 0, "a connection ready to send has a message that started");
      FlowSpec& spec = flows.template get<FlowSpec>(row);
      FlowSend& s = flows.template get<FlowSend>(row);
      MessageSpec& ms = msgs.template get<MessageSpec>(best);
      ms.offset = alignToPacket(spec.bytes, payload_bytes);
      ms.retransmits = s.retransmits;
      s.open_seq = ms.offset;
      s.next_seq = ms.offset;
      spec.bytes = ms.offset + ms.bytes;
      if (s.first_end == INT64_MAX) s.first_end = spec.bytes;
      refreshPending(flows, row);
    }
    /// End of the message of connection `row` that holds byte `seq` (a retransmission may go
    /// back into messages opened before the last).
    MV_HD int64_t messageEnd(const TableView<Flow>& flows, int64_t row, int64_t seq) const {
      const FlowSpec& spec = flows.template get<FlowSpec>(row);
      if (spec.connection == 0u || seq >= flows.template get<FlowSend>(row).open_seq) return spec.bytes;
      const TableView<Message>& msgs = ctx.template table<Message>();
      const Entity conn = flows.entity[row];
      for (int64_t m = msg_lo; m < msg_hi; ++m) {
        const MessageSpec& ms = msgs.template get<MessageSpec>(m);
        if (onConnection(msgs, m, conn) && ms.offset >= 0 && seq >= ms.offset && seq < ms.offset + ms.bytes) {
          return ms.offset + ms.bytes;
        }
      }
      return spec.bytes;
    }
    /// Completes connection `row`'s messages acknowledged at `t`: a FlowRecord each.
    MV_HD void completeMessages(TableView<Flow>& flows, int64_t row, int64_t t) {
      TableView<Message>& msgs = ctx.template table<Message>();
      const Entity conn = flows.entity[row];
      const FlowSpec& spec = flows.template get<FlowSpec>(row);
      FlowSend& s = flows.template get<FlowSend>(row);
      int64_t first_end = INT64_MAX;
      for (int64_t m = msg_lo; m < msg_hi; ++m) {
        const MessageSpec& ms = msgs.template get<MessageSpec>(m);
        if (!onConnection(msgs, m, conn) || ms.offset < 0) continue;
        const int64_t end = ms.offset + ms.bytes;
        if (end > s.una) {
          first_end = end < first_end ? end : first_end;
          continue;
        }
        const FlowResult res{ms.id, spec.src_nic, spec.dst_nic, ms.bytes, ms.start_ps, t, s.retransmits - ms.retransmits};
        ctx.template table<FlowRecord>().create(ctx.exp, msgs.key[m], res);
        msgs.destroyRow(m);
        counters.flows_done += 1;
      }
      s.first_end = first_end;
      ctx.wakeAt(Picoseconds{t});  // the records' consumer runs next step, even if the network is idle
    }

    /// When the link can next send something (not before `floor`); `control` tells
    /// whether it is a control packet (else a flow, chosen by pickFlow at that time).
    MV_HD int64_t nextTransmit(const SenderEvents& ev, int64_t floor, bool& control) const {
      const int64_t free_at = st.busy_until_ps > floor ? st.busy_until_ps : floor;
      control = ctrlPending() && ((st.paused >> ctrlSlot(st.ctrl_head).prio) & 1u) == 0u;
      if (control) {
        const int64_t ready = ctrlSlot(st.ctrl_head).time_ps;
        return ready > free_at ? ready : free_at;
      }
      if (ev.ready_ps == INT64_MAX) return INT64_MAX;
      return ev.ready_ps > free_at ? ev.ready_ps : free_at;
    }

    /// Round robin: the first flow after the last served key that may send at `when`,
    /// wrapping around to the NIC's first flow (rows are sorted by key); -1 when none may.
    MV_HD int64_t pickFlow(const TableView<Flow>& flows, const SenderEvents& ev, int64_t when) const {
      int64_t a = ev.lo;
      int64_t b = ev.hi;
      while (a < b) {
        const int64_t m = (a + b) / 2;
        if (flows.key[m] <= st.rr_key) a = m + 1; else b = m;
      }
      for (int64_t r = a; r < ev.hi; ++r) {
        if (flowReady(flows, r) <= when) return r;
      }
      for (int64_t r = ev.lo; r < a; ++r) {
        if (flowReady(flows, r) <= when) return r;
      }
      return -1;
    }

    MV_HD void transmit(const NetExperiment& ne, const CcPath& path, const LinkRings& rings, TableView<Flow>& flows,
                        int64_t row, int64_t t, int64_t& first_push) {
      const NetworkConfig& cfg = ne.network;
      PacketHeader p;
      const IntHop* ints = nullptr;  // a data packet leaves without INT records
      if (row < 0) {
        const int64_t slot = ctrlSlotOf(st.ctrl_head);
        p = ctrl[slot];
        ints = ctrl.intsOf(slot).hop;
        st.ctrl_head += 1;
      } else {
        const FlowSpec& spec = flows.template get<FlowSpec>(row);
        FlowSend& s = flows.template get<FlowSend>(row);
        FlowCc& cc = flows.template get<FlowCc>(row);
        if (s.started == 0u) {
          ccStart(cfg, path, cc, s);
          s.started = 1;
        }
        if (cfg.cc == CcKind::kDcqcn) dcqcnAdvance(cfg.dcqcn, path, cc, s, t);
        if (spec.connection != 0u && s.next_seq >= spec.bytes) openMessage(flows, row, t, cfg.payload_bytes);
        const int64_t end = messageEnd(flows, row, s.next_seq);
        const int64_t left = end - s.next_seq;
        const int32_t payload = static_cast<int32_t>(left < cfg.payload_bytes ? left : cfg.payload_bytes);
        p.kind = PacketKind::kData;
        p.seq = s.next_seq;
        p.flow_id = spec.id;
        p.flow = flows.entity[row];
        p.src_nic = spec.src_nic;
        p.dst_nic = spec.dst_nic;
        p.payload = static_cast<uint16_t>(payload);
        p.prio = static_cast<uint8_t>(spec.prio);
        p.wire_bytes = static_cast<uint16_t>(dataWireBytes(payload, cfg.cc, cfg.wire));
        if (spec.connection != 0u && s.next_seq + payload == end) p.flags |= kFlagLast;
        if (s.next_seq < s.max_sent) {
          p.flags |= kFlagRetransmit;
          s.retransmits += 1;
          counters.retransmits += 1;
        }
        if (s.una == s.next_seq) s.rto_deadline_ps = t + ne.rto_ps;
        s.next_seq += payload;
        s.max_sent = s.next_seq > s.max_sent ? s.next_seq : s.max_sent;
        // A retransmission that ends a message opened before the last one goes on at the
        // next message's packet boundary, as the first transmission did.
        if ((p.flags & kFlagLast) != 0u && s.next_seq < spec.bytes) s.next_seq = alignToPacket(s.next_seq, cfg.payload_bytes);
        s.next_send_ps = t + paceTime(cfg, p.wire_bytes, s.rate_bps);
        st.rr_key = flows.key[row];
        counters.packets_sent += 1;
      }
      st.tx_bytes += p.wire_bytes;
      st.busy_until_ps = rings.transmit(info.tx_link, p, ints, t, ctx.template table<LinkSample>(), ctx.exp,
                                        cfg.link_bin_ps, counters, first_push, &ctx.world->status);
    }

    // --- timeouts -----------------------------------------------------------------------
    /// The flow's armed retransmission deadline, or INT64_MAX.
    MV_HD static int64_t timeoutOf(const TableView<Flow>& flows, int64_t row) {
      const FlowSend& s = flows.template get<FlowSend>(row);
      if (flows.dead[row] != 0u || s.una >= s.next_seq || s.rto_deadline_ps == 0) return INT64_MAX;
      return s.rto_deadline_ps;
    }

    MV_HD void timeout(TableView<Flow>& flows, int64_t row, int64_t t) {
      FlowSend& s = flows.template get<FlowSend>(row);
      s.next_seq = s.una;
      s.next_send_ps = t;
      s.rto_deadline_ps = 0;
      s.timeouts += 1;
      counters.timeouts += 1;
    }

    // --- receiving ----------------------------------------------------------------------
    /// Queues control packet `p` with its `p.hops` INT records at `ints` (an ACK echoes
    /// those of the data packet it answers).
    MV_HD void sendControl(const PacketHeader& p, const IntHop* ints) {
      if (st.ctrl_tail - st.ctrl_head >= info.ctrl_capacity) {
        counters.overflow += 1;
        atomicFetchOr<uint32_t>(&ctx.world->status, kStatusNicControl);
        return;
      }
      ctrl.put(ctrlSlotOf(st.ctrl_tail), p, ints);
      st.ctrl_tail += 1;
    }

    /// Handles an arriving packet; returns the row of the NIC's own flow whose sender
    /// state it changed (an ACK or NACK), or -1.
    MV_HD int64_t receive(const NetExperiment& ne, const CcPath& path, TableView<Flow>& flows, const PacketHeader& p,
                          const IntStack& ints) {
      const NetworkConfig& cfg = ne.network;
      if (p.kind == PacketKind::kPause) {
        if (((st.paused >> p.prio) & 1u) == 0u) st.paused_since_ps[p.prio] = p.time_ps;
        st.paused |= 1u << p.prio;
        return -1;
      }
      if (p.kind == PacketKind::kResume) {
        if (((st.paused >> p.prio) & 1u) != 0u) counters.paused_ps += p.time_ps - st.paused_since_ps[p.prio];
        st.paused &= ~(1u << p.prio);
        return -1;
      }
      const int64_t row = flows.rowOf(p.flow);  // -1: a late duplicate of a finished flow
      if (p.kind == PacketKind::kData) {
        if (row >= 0) receiveData(cfg, flows, row, p, ints);
        return -1;
      }
      if (row < 0 || flows.dead[row] != 0u) return -1;
      receiveFeedback(ne, path, flows, row, p, ints);
      return row;
    }

    MV_HD void receiveData(const NetworkConfig& cfg, TableView<Flow>& flows, int64_t row, const PacketHeader& p,
                           const IntStack& ints) {
      const FlowSpec& spec = flows.template get<FlowSpec>(row);
      FlowRecv& r = flows.template get<FlowRecv>(row);
      const bool tolerant = cfg.load_balance == LoadBalance::kSpray;
      // A connection's `bytes` grows as its sender opens messages: its receiver reads only
      // the packets (a message's last packet ends it at the next packet boundary).
      const bool connection = spec.connection != 0u;
      const int64_t bound = connection ? INT64_MAX : spec.bytes;
      bool ack = false;
      if (p.seq == r.expected) {
        const bool last = (p.flags & kFlagLast) != 0u;
        r.expected = last ? alignToPacket(r.expected + p.payload, cfg.payload_bytes) : r.expected + p.payload;
        const int64_t before = r.expected;
        if (tolerant) absorbOutOfOrder(cfg, bound, r);
        r.since_ack += 1;
        const bool ends = connection ? last || r.expected != before : r.expected >= spec.bytes;
        ack = r.since_ack >= static_cast<uint32_t>(cfg.ack_interval) || ends;
      } else if (p.seq > r.expected) {
        if (tolerant) {
          markOutOfOrder(cfg, r, p.seq);
          ack = true;
        } else if (r.last_nack_seq != r.expected || p.time_ps - r.last_nack_ps >= cfg.nack_interval_ps) {
          r.last_nack_seq = r.expected;
          r.last_nack_ps = p.time_ps;
          counters.nacks += 1;
          sendControl(feedback(cfg, p, PacketKind::kNack, r.expected), ints.hop);
        }
      } else {
        ack = true;  // a duplicate: tell the sender again where we are
      }
      if (ack) {
        r.since_ack = 0;
        sendControl(feedback(cfg, p, PacketKind::kAck, r.expected), ints.hop);
      }
    }

    /// The header of an ACK or NACK for data packet `p`, echoing its CE mark and carrying
    /// as many INT records as `p` (sendControl copies them from `p`'s).
    MV_HD static PacketHeader feedback(const NetworkConfig& cfg, const PacketHeader& p, PacketKind kind,
                                       int64_t expected) {
      PacketHeader a;
      a.kind = kind;
      a.time_ps = p.time_ps;
      a.seq = expected;
      a.flow_id = p.flow_id;
      a.flow = p.flow;
      a.src_nic = p.dst_nic;
      a.dst_nic = p.src_nic;
      a.prio = static_cast<uint8_t>(ackHighPriority(cfg) ? kControlPriority : p.prio);
      a.flags = static_cast<uint8_t>((p.flags & kFlagCe) != 0u ? uint32_t{kFlagEcnEcho} : 0u);
      a.hops = p.hops;
      a.wire_bytes = static_cast<uint16_t>(ackWireBytes(cfg.cc, cfg.wire));
      return a;
    }

    MV_HD static void markOutOfOrder(const NetworkConfig& cfg, FlowRecv& r, int64_t seq) {
      const int64_t k = (seq - r.expected) / cfg.payload_bytes - 1;
      if (k >= 0 && k < kOooPackets) r.ooo[k / 64] |= uint64_t{1} << (k % 64);
    }
    /// After an in-order packet moved `expected` by one packet: re-base the bitmap (bit j
    /// = the packet j + 1 after `expected`) and consume the packets now in order, up to
    /// `bound` (a one-shot flow's size; a connection's packets all start on packet
    /// boundaries, so each consumed one moves `expected` by a whole packet).
    MV_HD static void absorbOutOfOrder(const NetworkConfig& cfg, int64_t bound, FlowRecv& r) {
      bool next_received = (r.ooo[0] & 1u) != 0u;
      shiftBitmap(r, 1);
      while (next_received && r.expected < bound) {
        const int64_t left = bound - r.expected;
        r.expected += left < cfg.payload_bytes ? left : cfg.payload_bytes;
        next_received = (r.ooo[0] & 1u) != 0u;
        shiftBitmap(r, 1);
      }
    }
    MV_HD static void shiftBitmap(FlowRecv& r, int n) {
      for (int s = 0; s < n; ++s) {
        for (int w = 0; w < kOooWords; ++w) {
          r.ooo[w] = (r.ooo[w] >> 1) | (w + 1 < kOooWords ? (r.ooo[w + 1] & 1u) << 63 : 0u);
        }
      }
    }

    MV_HD void receiveFeedback(const NetExperiment& ne, const CcPath& path, TableView<Flow>& flows, int64_t row,
                               const PacketHeader& p, const IntStack& ints) {
      const NetworkConfig& cfg = ne.network;
      const FlowSpec& spec = flows.template get<FlowSpec>(row);
      FlowSend& s = flows.template get<FlowSend>(row);
      FlowCc& cc = flows.template get<FlowCc>(row);
      const int64_t t = p.time_ps;
      const bool marked = (p.flags & kFlagEcnEcho) != 0u;
      const int64_t newly = p.seq > s.una ? p.seq - s.una : 0;
      if (newly > 0) {
        s.una = p.seq;
        if (s.next_seq < s.una) s.next_seq = s.una;  // acknowledged while going back: skip ahead
        s.rto_deadline_ps = s.una < s.next_seq ? t + ne.rto_ps : 0;
      }
      if (p.kind == PacketKind::kNack && p.seq < s.next_seq) {
        s.next_seq = p.seq;  // go back N
        s.next_send_ps = t;
      }
      if (marked) counters.cnps += 1;
      const int64_t old_rate = s.rate_bps;
      switch (cfg.cc) {
        case CcKind::kDcqcn:
          if (marked) {
            dcqcnOnCnp(cfg.dcqcn, path, cc, s, t);
          } else {
            dcqcnAdvance(cfg.dcqcn, path, cc, s, t);
          }
          break;
        case CcKind::kHpcc:
          hpccOnAck(cfg.hpcc, path, cc, s, ints.hop, p.hops, p.seq);
          break;
        case CcKind::kDctcp:
          dctcpOnAck(cfg.dctcp, path, cfg.payload_bytes, cc, s, marked, p.seq);
          break;
        case CcKind::kNone:
          break;
      }
      if (s.rate_bps != old_rate) {
        // As the reference: the next send moves by the change of one full packet's sending
        // time (headers and INT included, as the pacing gap itself).
        const int64_t wire = dataWireBytes(cfg.payload_bytes, cfg.cc, cfg.wire);
        s.next_send_ps += paceTime(cfg, wire, s.rate_bps) - paceTime(cfg, wire, old_rate);
      }
      if (spec.connection != 0u) {
        if (s.una >= s.first_end) completeMessages(flows, row, t);
      } else if (s.una >= spec.bytes) {
        finish(flows, row, t);
      }
    }

    MV_HD void finish(TableView<Flow>& flows, int64_t row, int64_t t) {
      const FlowSpec& spec = flows.template get<FlowSpec>(row);
      const FlowSend& s = flows.template get<FlowSend>(row);
      FlowResult res{spec.id, spec.src_nic, spec.dst_nic, spec.bytes, spec.start_ps, t, s.retransmits};
      ctx.template table<FlowRecord>().create(ctx.exp, flows.key[row], res);
      ctx.wakeAt(Picoseconds{t});  // the record's consumer runs next step, even if the network is idle
      flows.destroyRow(row);
      counters.flows_done += 1;
    }
  };
};

}  // namespace mv::net
