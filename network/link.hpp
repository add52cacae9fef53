/**
 * @file link.hpp
 * Hand-off of packets across a directed link through its ring (see LinkRing). One unit
 * (a NIC or a switch) produces into a link, another consumes from it; they never write the
 * same word in one step, so no lock is needed and the consumer sees exactly the packets
 * sent in earlier steps, which all arrive at least one lookahead after they were sent.
 */
#pragma once

#include <cstdint>

#include "ecs/atomic.hpp"
#include "ecs/macros.hpp"
#include "ecs/table.hpp"
#include "network/components.hpp"

namespace mv::net {

/// Hints that the cache line at `p` is needed soon (`write`: to be written); does nothing on
/// the device. Ring slots and queued packets are read in a predictable order, but with many
/// experiments they have left the cache since they were written: fetching them ahead lets
/// these misses overlap instead of stalling one after another. Never changes results.
MV_HD MV_INLINE void prefetch(const void* p, bool write = false) {
#if !MV_ON_DEVICE
  if (write) {
    __builtin_prefetch(p, 1);
  } else {
    __builtin_prefetch(p, 0);
  }
#else
  (void)p;
  (void)write;
#endif
}

/// Access to the link rings of one experiment for one step.
/// The experiment's columns are held as pointers to its link 0, so that an access is one
/// indexed load (the table's column pointers cannot be kept in registers across the stores
/// of an event: the compiler must assume they alias).
struct LinkRings {
  LinkInfo* infos;       ///< the experiment's LinkInfo column, from its link 0
  LinkRing* rings;       ///< its LinkRing column
  LinkBinState* bins;    ///< its LinkBinState column
  PacketSlots slots;     ///< the experiment's ring slots (LinkSlot, LinkSlotInt)
  int par;               ///< this step's parity
  int prev;              ///< the previous step's parity

  MV_HD LinkInfo& info(uint32_t link) const { return infos[link]; }
  MV_HD LinkRing& ring(uint32_t link) const { return rings[link]; }

  /// Slot number of ring position `pos` of `link`.
  MV_HD int64_t slotOf(uint32_t link, int64_t pos) const {
    const LinkInfo& li = info(link);
    return li.slot_base + (pos & (li.capacity - 1));
  }

  /// Producer, once per step before pushing: continue from last step's tail.
  MV_HD void beginProduce(uint32_t link) const {
    ring(link).tail[par] = ring(link).tail[prev];
    prefetch(&slots[slotOf(link, ring(link).tail[par])], true);
  }
  /// Consumer, once per step before popping: continue from last step's head.
  MV_HD void beginConsume(uint32_t link) const {
    ring(link).head[par] = ring(link).head[prev];
    if (ring(link).head[par] < ring(link).tail[prev]) prefetch(&slots[slotOf(link, ring(link).head[par])]);
  }

  /// Puts a packet on the wire. False when the ring is full (a sizing problem).
  MV_HD bool push(uint32_t link, const PacketHeader& p, const IntStack& ints) const {
    LinkRing& r = ring(link);
    if (r.tail[par] - r.head[prev] >= info(link).capacity) return false;
    slots.put(slotOf(link, r.tail[par]), p, ints);
    r.tail[par] += 1;
    prefetch(&slots[slotOf(link, r.tail[par])], true);
    return true;
  }
  /// The next packet that arrived before `end`, or nullptr; its INT records are headInts().
  MV_HD const PacketHeader* peek(uint32_t link, int64_t end) const {
    const LinkRing& r = ring(link);
    if (r.head[par] >= r.tail[prev]) return nullptr;
    const PacketHeader& p = slots[slotOf(link, r.head[par])];
    return p.time_ps < end ? &p : nullptr;
  }
  /// The INT records of the packet peek() returned.
  MV_HD const IntStack& headInts(uint32_t link) const { return slots.intsOf(slotOf(link, ring(link).head[par])); }
  /// Arrival time of the next visible packet (any time), or INT64_MAX.
  MV_HD int64_t nextArrival(uint32_t link) const {
    const LinkRing& r = ring(link);
    if (r.head[par] >= r.tail[prev]) return INT64_MAX;
    return slots[slotOf(link, r.head[par])].time_ps;
  }
  /// Slot of the head packet, which the caller knows is visible.
  MV_HD int64_t headSlot(uint32_t link) const { return slotOf(link, ring(link).head[par]); }
  /// Consumes the head packet (and fetches the one after the new head ahead of time);
  /// returns nextArrival(), reading the ring and the link once.
  MV_HD int64_t popNext(uint32_t link) const {
    LinkRing& r = ring(link);
    const LinkInfo& li = info(link);
    const int64_t head = r.head[par] + 1;
    const int64_t tail = r.tail[prev];
    const int64_t mask = li.capacity - 1;
    r.head[par] = head;
    if (head >= tail) return INT64_MAX;
    if (head + 1 < tail) prefetch(&slots[li.slot_base + ((head + 1) & mask)]);
    return slots[li.slot_base + (head & mask)].time_ps;
  }

  /**
   * Serialises `p` (INT records `ints`) onto `link` from `t` at the link's rate; it arrives
   * after the link's delay. Counts the hop (in the sending unit's `counters`) and the link's
   * time bin (`samples`, when `bin_ps` > 0); a full ring raises kStatusLinkRing in `status`.
   * Returns when the link is free again.
   */
  MV_HD int64_t transmit(uint32_t link, PacketHeader& p, const IntStack& ints, int64_t t,
                         TableView<LinkSample>& samples, ExpId e, int64_t bin_ps, NetCounters& counters,
                         int64_t& first_push, uint32_t* status) const {
    const LinkInfo& li = info(link);
    const int64_t wire_ps = li.whole_ns != 0u ? serializationTimeWholeNs(Bytes{p.wire_bytes}, BitsPerSecond{li.rate_bps}).ps
                            : li.ps_per_byte > 0
                                ? p.wire_bytes * li.ps_per_byte
                                : serializationTime(Bytes{p.wire_bytes}, BitsPerSecond{li.rate_bps}).ps;
    const int64_t done = t + wire_ps;
    account(samples, e, link, t, bin_ps, p.wire_bytes);
    p.time_ps = done + li.delay_ps;
    counters.packet_hops += 1;
    if (push(link, p, ints)) {
      first_push = p.time_ps < first_push ? p.time_ps : first_push;
    } else {
      counters.overflow += 1;
      atomicFetchOr<uint32_t>(status, kStatusLinkRing);
    }
    return done;
  }

  /// Counts `bytes` starting transmission at `t` on `link` into its time bin; a bin that
  /// closes becomes a LinkSample row (key: link and bin, unique in the experiment).
  MV_HD void account(TableView<LinkSample>& samples, ExpId e, uint32_t link, int64_t t, int64_t bin_ps,
                     int64_t bytes) const {
    if (bin_ps <= 0) return;
    LinkBinState& b = bins[link];
    if (t >= b.end_ps) {
      if (b.bytes > 0) samples.create(e, binKey(link, b.bin), LinkBin{link, 0, b.bin, b.bytes});
      b.bin = t / bin_ps;
      b.end_ps = (b.bin + 1) * bin_ps;
      b.bytes = 0;
    }
    b.bytes += bytes;
  }
  MV_HD static constexpr uint64_t binKey(uint32_t link, int64_t bin) {
    return (uint64_t{link} << 40) | (static_cast<uint64_t>(bin) & ((uint64_t{1} << 40) - 1));
  }
};

/// The rings of experiment `e` of a world for the current step.
template <class WV>
MV_HD LinkRings linkRings(WV& world, ExpId e) {
  const TableView<Link>& links = world.template table<Link>();
  const int par = static_cast<int>(world.clocks[e].steps & 1);
  return LinkRings{links.template expColumn<LinkInfo>(e),
                   links.template expColumn<LinkRing>(e),
                   links.template expColumn<LinkBinState>(e),
                   packetSlots<LinkSlot, LinkSlotInt>(world, e),
                   par,
                   par ^ 1};
}

}  // namespace mv::net
