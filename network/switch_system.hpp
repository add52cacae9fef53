/**
 * @file switch_system.hpp
 * The switch system: one invocation advances one switch through the step's window, event
 * by event at exact picosecond times. All its ports are advanced together because they
 * share state with zero delay (the shared buffer, the PFC thresholds): this is exact for
 * any lookahead. Events (ties: arrivals before transmissions, then by port number):
 *   - a packet arrives on port i: PFC frames pause or resume our egress on i; other
 *     packets are routed (ECMP hash or spraying over the equal-cost next hops), admitted
 *     into the shared buffer (ingress accounting per port and priority, dynamic threshold,
 *     headroom, drops only when both are exceeded) and queued at their egress; an ingress
 *     queue over its threshold sends a PFC pause upstream;
 *   - port j is free and has something to send: a pending PFC frame, else queue 0 (strict
 *     priority), else round robin over the unpaused data classes. At dequeue: ECN marking
 *     (RED on the bytes left in that queue), INT record (HPCC), buffer release and, when an
 *     ingress drains, a PFC resume.
 * A switch writes only its own row, its ports and its packet pool; links connect it to
 * other units.
 */
#pragma once

#include <cstdint>

#include "ecs/bits.hpp"
#include "ecs/rng.hpp"
#include "ecs/system.hpp"
#include "network/components.hpp"
#include "network/link.hpp"

namespace mv::net {

/// ECMP hash of a packet's (src, dst, flow) tuple salted with the switch id.
MV_HD constexpr uint64_t ecmpHash(uint32_t src, uint32_t dst, uint64_t flow, uint32_t salt) {
  return mix64((uint64_t{src} << 32 | dst) ^ mix64(flow ^ (uint64_t{salt} << 40)));
}

/// What a switch reads to route: the experiment's routing columns (the switch's own
/// RouteIndex rows from its edge 0), held as pointers so a lookup is one indexed load.
struct SwitchRoutes {
  const NicRoute* nics;     ///< per destination NIC: its edge switch and ToR port
  const RouteIndex* index;  ///< per destination edge switch: this switch's next-hop set
  const RouteSet* sets;
  const RoutePort* ports;
  uint32_t self;            ///< this switch's local row (a NIC's `tor` when it hangs off it)
};

template <class WV>
struct SwitchSystem {
  static constexpr const char* kName = "switch";
  static constexpr const char* kWhy =
      "advance each switch: route, admit (shared buffer, PFC), queue, mark ECN, stamp INT and transmit at exact times";
  using Ctx = RowContext<WV>;

  MV_HD static void run(const Ctx& ctx, const SwitchInfo& info, SwitchState& st, NetCounters& counters) {
    const TableView<Port>& ports = ctx.template table<Port>();
    const ExpId e = ctx.exp;
    const SwitchRoutes routes{
        ctx.template table<NicRouteTable>().template expColumn<NicRoute>(e),
        ctx.template table<RouteIndexTable>().template expColumn<RouteIndex>(e) + info.route_base,
        ctx.template table<RouteSetTable>().template expColumn<RouteSet>(e),
        ctx.template table<RoutePortTable>().template expColumn<RoutePort>(e),
        static_cast<uint32_t>(ctx.row - ctx.template table<Switch>().expBegin(e))};
    Unit u{ctx,
           info,
           st,
           counters,
           linkRings(*ctx.world, e, st.link_chunks),
           packetSlots<SwitchSlot, SwitchSlotInt>(*ctx.world, e),
           ports.template expColumn<PortInfo>(e) + info.port_base,
           ports.template expColumn<PortQueue>(e) + info.port_base,
           ports.template expColumn<PortIngress>(e) + info.port_base,
           ports.template expColumn<PortNext>(e) + info.port_base,
           ports.template expColumn<PortTree>(e) + info.port_base,
           routes};
    u.step();
  }

 private:
  struct Unit {
    const Ctx& ctx;
    const SwitchInfo& info;
    SwitchState& st;
    NetCounters& counters;  ///< this switch's own counters (summed by the host)
    LinkRings rings;
    PacketSlots pool_slots;  ///< the experiment's switch packet pool
    // This switch's rows of the Port columns, from its port 0 (one indexed load per access).
    PortInfo* port_info;
    PortQueue* port_queue;
    PortIngress* port_ingress;
    PortNext* port_next;
    PortTree* port_tree;
    SwitchRoutes routes;
    /// Below kTreeMinPorts: the ports with the earliest next arrival and the earliest next
    /// send (ties: the lower port), each valid unless marked stale. An event changes one
    /// port's arrival and few ports' send times, so most events rescan one of the two.
    uint32_t arr_port = 0;
    uint32_t tx_port = 0;
    bool arr_stale = true;
    bool tx_stale = true;
    /// Below kTreeMinPorts: bit i is set while port i's next arrival (send) is known, so a
    /// scan visits those ports only: many events leave their port with nothing more to do
    /// in the step, and few ports are busy at once.
    uint32_t arr_known = 0;
    uint32_t tx_known = 0;

    MV_HD PortInfo& pinfo(uint32_t i) const { return port_info[i]; }
    MV_HD PortQueue& pq(uint32_t i) const { return port_queue[i]; }
    MV_HD PortIngress& ping(uint32_t i) const { return port_ingress[i]; }
    MV_HD PortNext& pnext(uint32_t i) const { return port_next[i]; }
    MV_HD PortTree& node(uint32_t k) const { return port_tree[k]; }
    MV_HD PacketHeader& slot(uint32_t s) const { return pool_slots[s]; }
    MV_HD SwitchPool& pool() const {
      TableView<NetStats>& stats = ctx.template table<NetStats>();
      return stats.template get<SwitchPool>(stats.expBegin(ctx.exp));
    }
    /// A free packet slot, or kNone32: from the switch's own cache when it has one (no
    /// atomics), else popped from the experiment's shared stack (lock-free). Which slot is
    /// returned never matters; near exhaustion, whether a pop fails can depend on thread
    /// timing (the run then stops with an error naming `switch_pool_slots`).
    MV_HD uint32_t allocate() {
      return st.slots.take(pool(), [this](uint32_t k) -> uint32_t& { return slot(k).next; });
    }
    /// Returns a slot: to the switch's cache, or to the shared stack when the cache is full.
    MV_HD void releaseSlot(uint32_t s) {
      st.slots.give(s, kSwitchSlotCache, pool(), [this](uint32_t k) -> uint32_t& { return slot(k).next; });
    }

    MV_HD void step() {
      const NetworkConfig& cfg = ctx.config().net.network;
      // Two passes, so that the reads of the rings' head packets (prefetched by
      // beginConsume) overlap.
      for (uint32_t i = 0; i < info.port_count; ++i) {
        rings.beginConsume(pinfo(i).in_link);
        rings.beginProduce(pinfo(i).out_link);
      }
      if (st.events_ready == 0u) startEvents();
      // A ring seen empty at the end of the last step may hold packets sent since; a
      // known head packet is still the head.
      for (uint32_t i = 0; i < info.port_count; ++i) {
        if (pnext(i).arrival_ps == INT64_MAX) {
          pnext(i).arrival_ps = rings.nextArrival(pinfo(i).in_link);
          if (pnext(i).arrival_ps != INT64_MAX) replay<true>(i);
        }
        arr_known |= static_cast<uint32_t>(pnext(i).arrival_ps != INT64_MAX) << (i & 31u);
        tx_known |= static_cast<uint32_t>(pnext(i).send_ps != INT64_MAX) << (i & 31u);
      }
      int64_t first_push = INT64_MAX;
      const int64_t end = ctx.window_end.ps;
      int64_t t_arr = INT64_MAX;
      int64_t t_tx = INT64_MAX;
      for (;;) {
        // The earliest arrival and the earliest transmission; ties go to the lower port.
        earliest();
        t_arr = pnext(arr_port).arrival_ps;
        t_tx = pnext(tx_port).send_ps;
        if (t_arr >= end && t_tx >= end) break;
        if (t_arr <= t_tx) {
          const uint32_t port = arr_port;
          const uint32_t link = pinfo(port).in_link;
          const int64_t head = rings.headSlot(link);  // visible: it arrives before t_tx and before end
          arrive(cfg, port, rings.slots[head], rings.slots.intsOf(head));
          pnext(port).arrival_ps = rings.popNext(link);
          if (pnext(port).arrival_ps == INT64_MAX) arr_known &= ~(1u << (port & 31u));
          arr_stale = true;  // the earliest arrival moved later
          replay<true>(port);
        } else {
          const uint32_t port = tx_port;
          transmit(cfg, port, t_tx, first_push);
          refresh(port);
        }
      }
      // The loop ended on the switch's earliest pending arrival and transmission.
      int64_t wake = first_push;
      wake = t_arr < wake ? t_arr : wake;
      wake = t_tx < wake ? t_tx : wake;
      if (wake != INT64_MAX) ctx.wakeAt(Picoseconds{wake});
    }

    // --- next events: a scan of PortNext, or with many ports the trees of PortTree ---------
    /// Below this many ports a scan of the 16-byte PortNext rows beats the trees' upkeep.
    static constexpr uint32_t kTreeMinPorts = 16;
    MV_HD bool tree() const { return info.port_count >= kTreeMinPorts; }
    /// Sets arr_port and tx_port to the ports with the earliest next arrival and the
    /// earliest next send; ties go to the lower port.
    MV_HD void earliest() {
      if (tree()) {
        arr_port = winner<true>(1);
        tx_port = winner<false>(1);
        return;
      }
      if (arr_stale) arr_port = scan<true>();
      if (tx_stale) tx_port = scan<false>();
      arr_stale = false;
      tx_stale = false;
    }
    /// The port with the earliest next arrival (or send); ties go to the lower port. With
    /// none known every port's time is INT64_MAX, and port 0 stands for them.
    template <bool kArrival>
    MV_HD uint32_t scan() const {
      uint32_t known = kArrival ? arr_known : tx_known;
      if (known == 0u) return 0;
      auto port = static_cast<uint32_t>(lowestBit(known));
      int64_t best = timeOf<kArrival>(port);
      for (known &= known - 1u; known != 0u; known &= known - 1u) {
        const auto i = static_cast<uint32_t>(lowestBit(known));
        const int64_t t = timeOf<kArrival>(i);
        port = t < best ? i : port;
        best = t < best ? t : best;
      }
      return port;
    }
    MV_HD int64_t sendTime(uint32_t i) const { return hasWork(i) ? pq(i).busy_until_ps : INT64_MAX; }
    /// First step of the switch: nothing visible yet, nothing to send; build the trees.
    MV_HD void startEvents() {
      for (uint32_t i = 0; i < info.port_count; ++i) pnext(i) = PortNext{INT64_MAX, sendTime(i)};
      for (uint32_t k = info.port_count - 1; tree() && k >= 1; --k) {
        play<true>(k);
        play<false>(k);
      }
      st.events_ready = 1u;
    }
    template <bool kArrival>
    MV_HD int64_t timeOf(uint32_t port) const {
      return kArrival ? pnext(port).arrival_ps : pnext(port).send_ps;
    }
    /// The port winning tree index c (a leaf when c >= port_count).
    template <bool kArrival>
    MV_HD uint32_t winner(uint32_t c) const {
      if (c >= info.port_count) return c - info.port_count;
      return kArrival ? node(c).arrival : node(c).send;
    }
    /// Decides internal node k from its two children.
    template <bool kArrival>
    MV_HD void play(uint32_t k) const {
      const uint32_t a = winner<kArrival>(2 * k);
      const uint32_t b = winner<kArrival>(2 * k + 1);
      const int64_t ta = timeOf<kArrival>(a);
      const int64_t tb = timeOf<kArrival>(b);
      const auto w = static_cast<uint16_t>(tb < ta || (tb == ta && b < a) ? b : a);
      (kArrival ? node(k).arrival : node(k).send) = w;
    }
    /// Re-decides the nodes above port i's leaf after its time changed.
    template <bool kArrival>
    MV_HD void replay(uint32_t i) const {
      if (!tree()) return;
      for (uint32_t k = (info.port_count + i) / 2; k >= 1; k /= 2) play<kArrival>(k);
    }
    /// Recomputes when port i sends next (after anything that changed its queue or timing).
    MV_HD void refresh(uint32_t i) {
      const int64_t t = sendTime(i);
      if (t == pnext(i).send_ps) return;
      pnext(i).send_ps = t;
      tx_known = t == INT64_MAX ? tx_known & ~(1u << (i & 31u)) : tx_known | 1u << (i & 31u);
      replay<false>(i);
      // The earliest send stays known unless its own port changed (a lower port may tie).
      if (tx_stale) return;
      if (i == tx_port) {
        tx_stale = true;
      } else if (const int64_t best = pnext(tx_port).send_ps; t < best || (t == best && i < tx_port)) {
        tx_port = i;
      }
    }

    /// Whether port i has a frame it may send now or when it is free.
    MV_HD bool hasWork(uint32_t i) const {
      const PortQueue& q = pq(i);
      const uint32_t sendable = q.nonempty & (~q.paused | (1u << kControlPriority));
      return (q.send_pause | q.send_resume | sendable) != 0u;
    }

    // --- buffer accounting (per ingress port and priority) ------------------------------
    MV_HD int64_t threshold(const PfcParams& pfc, uint32_t port) const {
      if (!pfc.dynamic_threshold) return pfc.static_xoff_bytes;
      const int64_t free_shared = pfc.buffer_bytes - info.total_headroom - info.total_reserve - st.shared_used;
      return (free_shared > 0 ? free_shared : 0) >> pinfo(port).pfc_shift;
    }
    MV_HD bool admit(const PfcParams& pfc, uint32_t port, int c, int64_t size) {
      PortIngress& g = ping(port);
      if (!pfc.enabled) {
        if (st.buffer_bytes + size > pfc.buffer_bytes) return false;
        g.bytes[c] += size;
        return true;
      }
      const int64_t thr = threshold(pfc, port);
      if (g.bytes[c] + size > pfc.reserve_bytes + thr && g.headroom[c] + size > pinfo(port).headroom_bytes) {
        return false;
      }
      const int64_t new_bytes = g.bytes[c] + size;
      if (new_bytes <= pfc.reserve_bytes) {
        g.bytes[c] = new_bytes;
      } else if (new_bytes - pfc.reserve_bytes > thr) {
        g.headroom[c] += size;
      } else {
        const int64_t above = new_bytes - pfc.reserve_bytes;
        st.shared_used += size < above ? size : above;
        g.bytes[c] = new_bytes;
      }
      return true;
    }
    MV_HD void release(const PfcParams& pfc, uint32_t port, int c, int64_t size) {
      PortIngress& g = ping(port);
      if (!pfc.enabled) {
        g.bytes[c] -= size;
        return;
      }
      const int64_t from_headroom = g.headroom[c] < size ? g.headroom[c] : size;
      const int64_t above = g.bytes[c] - pfc.reserve_bytes;
      const int64_t rest = size - from_headroom;
      const int64_t from_shared = above > 0 ? (rest < above ? rest : above) : 0;
      g.headroom[c] -= from_headroom;
      g.bytes[c] -= rest;
      st.shared_used -= from_shared;
    }
    MV_HD bool shouldPause(const PfcParams& pfc, uint32_t port, int c) const {
      const PortIngress& g = ping(port);
      return g.headroom[c] > 0 || g.bytes[c] >= pfc.reserve_bytes + threshold(pfc, port);
    }
    MV_HD bool shouldResume(const PfcParams& pfc, uint32_t port, int c) const {
      const PortIngress& g = ping(port);
      const int64_t shared = g.bytes[c] > pfc.reserve_bytes ? g.bytes[c] - pfc.reserve_bytes : 0;
      return g.headroom[c] == 0 && (shared == 0 || shared + pfc.resume_offset_bytes <= threshold(pfc, port));
    }
    /// Occupancy statistics of port `port`: called just before its queued bytes change.
    MV_HD void accountOccupancy(PortQueue& q, int64_t t) const {
      q.byte_ps += static_cast<double>(q.queued_bytes) * static_cast<double>(t - q.last_change_ps);
      q.last_change_ps = t;
    }

    MV_HD void wakePort(uint32_t port, int64_t t) {
      if (pq(port).busy_until_ps < t) pq(port).busy_until_ps = t;
      refresh(port);
    }

    // --- arrival ------------------------------------------------------------------------
    MV_HD uint32_t route(const NetworkConfig& cfg, const PacketHeader& p) {
      const NicRoute& nr = routes.nics[p.dst_nic];
      if (nr.tor == routes.self) return nr.tor_port;
      const RouteSet& rs = routes.sets[routes.index[nr.edge].set];
      uint64_t pick = 0;
      if (rs.count > 1) {
        if (cfg.load_balance == LoadBalance::kSpray && p.kind == PacketKind::kData) {
          pick = ctx.random().below(st.draws++, rs.count);
        } else {
          pick = ecmpHash(p.src_nic, p.dst_nic, p.flow_id, info.node) % rs.count;
        }
      }
      return routes.ports[rs.offset + pick].port;
    }

    MV_HD void arrive(const NetworkConfig& cfg, uint32_t port, const PacketHeader& in, const IntStack& in_ints) {
      const int64_t t = in.time_ps;
      PortQueue& q = pq(port);
      if (in.kind == PacketKind::kPause || in.kind == PacketKind::kResume) {
        const uint32_t bit = 1u << in.prio;
        if (in.kind == PacketKind::kPause) {
          if ((q.paused & bit) == 0u) q.paused_since_ps[in.prio] = t;
          q.paused |= bit;
          refresh(port);
        } else if ((q.paused & bit) != 0u) {
          q.paused &= ~bit;
          counters.paused_ps += t - q.paused_since_ps[in.prio];
          wakePort(port, t);
        }
        return;
      }
      const uint32_t out = route(cfg, in);
      const int c = in.prio;
      const int64_t size = in.wire_bytes;
      const bool control = c == kControlPriority;
      if (!control && !admit(cfg.pfc, port, c, size)) {
        counters.drops += 1;
        return;
      }
      const uint32_t s = allocate();
      if (s == kNone32) {
        if (!control) release(cfg.pfc, port, c, size);
        counters.overflow += 1;
        atomicFetchOr<uint32_t>(&ctx.world->status, kStatusSwitchPool);
        return;
      }
      pool_slots.put(s, in, in_ints.hop);
      PacketHeader& p = slot(s);
      p.in_port = static_cast<uint16_t>(port);
      p.next = kNone32;
      st.buffer_bytes += size;
      PortQueue& oq = pq(out);
      accountOccupancy(oq, t);
      if (oq.tail[c] == kNone32) {
        oq.head[c] = s;
      } else {
        slot(oq.tail[c]).next = s;
      }
      oq.tail[c] = s;
      oq.nonempty |= 1u << c;
      oq.bytes[c] += size;
      oq.queued_bytes += size;
      if (oq.queued_bytes > oq.max_bytes) oq.max_bytes = oq.queued_bytes;
      wakePort(out, t);
      if (!control && cfg.pfc.enabled && ((q.xoff >> c) & 1u) == 0u && shouldPause(cfg.pfc, port, c)) {
        q.xoff |= 1u << c;
        q.send_pause |= 1u << c;
        q.send_resume &= ~(1u << c);
        wakePort(port, t);
      }
    }

    // --- transmission -------------------------------------------------------------------
    MV_HD void transmit(const NetworkConfig& cfg, uint32_t port, int64_t t, int64_t& first_push) {
      PortQueue& q = pq(port);
      const PortInfo& pi = pinfo(port);
      if ((q.send_pause | q.send_resume) != 0u) {
        const bool pause = q.send_pause != 0u;
        const uint32_t bits = pause ? q.send_pause : q.send_resume;
        int c = 0;
        while (((bits >> c) & 1u) == 0u) ++c;
        (pause ? q.send_pause : q.send_resume) &= ~(1u << c);
        PacketHeader frame;  // no INT records
        frame.kind = pause ? PacketKind::kPause : PacketKind::kResume;
        frame.prio = static_cast<uint8_t>(c);
        frame.wire_bytes = static_cast<uint16_t>(pfcWireBytes(ctx.config().net.network.wire));
        if (pause) counters.pauses += 1;
        send(pi, q, frame, nullptr, t, first_push);
        return;
      }
      const int c = pickQueue(q);
      accountOccupancy(q, t);
      const uint32_t s = q.head[c];
      PacketHeader& p = slot(s);
      IntStack& ints = pool_slots.intsOf(s);
      q.head[c] = p.next;
      if (q.head[c] == kNone32) {
        q.tail[c] = kNone32;
        q.nonempty &= ~(1u << c);
      } else {
        prefetch(&slot(q.head[c]));
      }
      q.bytes[c] -= p.wire_bytes;
      q.queued_bytes -= p.wire_bytes;
      st.buffer_bytes -= p.wire_bytes;
      if (p.kind == PacketKind::kData) markAndStamp(cfg, port, c, p, ints, t);
      if (c != kControlPriority) {
        release(cfg.pfc, p.in_port, c, p.wire_bytes);
        PortQueue& iq = pq(p.in_port);
        if (((iq.xoff >> c) & 1u) != 0u && shouldResume(cfg.pfc, p.in_port, c)) {
          iq.xoff &= ~(1u << c);
          iq.send_resume |= 1u << c;
          iq.send_pause &= ~(1u << c);
          wakePort(p.in_port, t);
        }
      }
      send(pi, q, p, ints.hop, t, first_push);
      releaseSlot(s);
    }

    /// Serialises `p` onto the port's link starting at `t`.
    MV_HD void send(const PortInfo& pi, PortQueue& q, PacketHeader& p, const IntHop* ints, int64_t t,
                    int64_t& first_push) {
      q.tx_bytes += p.wire_bytes;
      q.busy_until_ps = rings.transmit(pi.out_link, p, ints, t, ctx.template table<LinkSample>(), ctx.exp,
                                       ctx.config().net.network.link_bin_ps, counters, first_push, &ctx.world->status);
    }

    /// Queue 0 first; else round robin over unpaused non-empty classes 1..7: the first
    /// after the class served last (`rr` + 1), wrapping around to class 1.
    MV_HD int pickQueue(PortQueue& q) const {
      if ((q.nonempty & 1u) != 0u) return kControlPriority;
      const uint32_t ready = q.nonempty & ~q.paused & ~1u;
      MV_ASSERT(ready != 0u, "pickQueue called on a port without work");
      const uint32_t after = ready & ~((2u << (q.rr + 1)) - 1u);
      const int c = lowestBit(after != 0u ? after : ready);
      q.rr = static_cast<uint32_t>(c - 1);
      return c;
    }

    MV_HD void markAndStamp(const NetworkConfig& cfg, uint32_t port, int c, PacketHeader& p, IntStack& ints,
                            int64_t t) {
      const PortInfo& pi = pinfo(port);
      const PortQueue& q = pq(port);
      if (cfg.ecn.enabled) {
        const int64_t left = q.bytes[c];
        double prob = 0;
        if (left > pi.kmax_bytes) {
          prob = 1;
        } else if (left > pi.kmin_bytes) {
          const double pmax = cfg.cc == CcKind::kDctcp ? 1.0 : cfg.ecn.pmax;
          prob = pmax * static_cast<double>(left - pi.kmin_bytes) / static_cast<double>(pi.kmax_bytes - pi.kmin_bytes);
        }
        if (prob > 0 && (prob >= 1 || ctx.random().uniform(st.draws++) < prob)) {
          p.flags |= kFlagCe;
          counters.ecn_marks += 1;
        }
      }
      if (cfg.cc == CcKind::kHpcc && p.hops < kMaxIntHops) {
        ints.hop[p.hops] = intRecord(cfg.hpcc.int_multi, t, q.tx_bytes, q.queued_bytes, pi.rate_bps);
        p.hops += 1;
      }
    }
  };
};

}  // namespace mv::net
