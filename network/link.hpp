/**
 * @file link.hpp
 * Hand-off of packets across a directed link through its ring (see LinkRing). One unit (a
 * NIC or a switch) produces into a link, another consumes from it; they never write the
 * same word of a ring in one step, so no lock is needed and the consumer sees exactly the
 * packets sent in earlier steps, which all arrive at least one lookahead after they were
 * sent. A ring's storage is chunks taken from and returned to the experiment's LinkPool, a
 * lock-free stack, so memory follows the packets on the wire rather than each link's worst
 * case.
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
  LinkPool* pool;        ///< its free chunks
  FreeCache* cache;      ///< the calling unit's own free chunks
  int par;               ///< this step's parity
  int prev;              ///< the previous step's parity

  static constexpr int64_t kMask = kLinkChunkSlots - 1;

  MV_HD LinkInfo& info(uint32_t link) const { return infos[link]; }
  MV_HD LinkRing& ring(uint32_t link) const { return rings[link]; }

  /// Slot number of position `pos` in `chunk`.
  MV_HD static int64_t slotOf(uint32_t chunk, uint32_t pos) { return int64_t{chunk} * kLinkChunkSlots + (pos & kMask); }
  /// Where a free chunk keeps the next free chunk: its first slot's `next`.
  MV_HD uint32_t& freeLink(uint32_t chunk) const { return slots[int64_t{chunk} * kLinkChunkSlots].next; }
  /// A free chunk, from the unit's cache when it has one (no atomics), else from the shared
  /// pool; kFreeStackEnd when none is left.
  MV_HD uint32_t takeChunk() const {
    return cache->take(*pool, [this](uint32_t c) -> uint32_t& { return freeLink(c); });
  }
  /// Gives back a chunk nobody uses any more: to the unit's cache, or to the shared pool
  /// when the cache is full.
  MV_HD void returnChunk(uint32_t c) const {
    cache->give(c, kChunkCacheSize, *pool, [this](uint32_t k) -> uint32_t& { return freeLink(k); });
  }

  /// Producer, once per step before pushing: continue from last step's tail.
  MV_HD void beginProduce(uint32_t link) const {
    LinkRing& r = ring(link);
    r.tail[par] = r.tail[prev];
    prefetch(&slots[slotOf(r.tail_chunk, r.tail[par])], true);
  }
  /// Consumer, once per step before popping: continue from last step's head.
  MV_HD void beginConsume(uint32_t link) const {
    LinkRing& r = ring(link);
    r.head[par] = r.head[prev];
    if (r.head[par] != r.tail[prev]) prefetch(&slots[slotOf(r.head_chunk, r.head[par])]);
  }

  /// Puts a packet (header `p`, its `p.hops` INT records at `ints`, null when none) on the
  /// wire. The push that fills a chunk first takes the next one (takeChunk) and links it
  /// from the filled slot; false when none is left (a sizing problem: the packet is not
  /// stored).
  MV_HD bool push(uint32_t link, const PacketHeader& p, const IntHop* ints) const {
    LinkRing& r = ring(link);
    const uint32_t pos = r.tail[par];
    const int64_t s = slotOf(r.tail_chunk, pos);
    uint32_t next = kFreeStackEnd;
    if ((pos & kMask) == kMask) {
      next = takeChunk();
      if (next == kFreeStackEnd) return false;
    }
    slots.put(s, p, ints);
    r.tail[par] = pos + 1;
    if (next != kFreeStackEnd) {
      slots[s].next = next;
      r.tail_chunk = next;
    }
    prefetch(&slots[slotOf(r.tail_chunk, pos + 1)], true);
    // A few pushes before a chunk fills, fetch the link of the chunk it will take (the
    // unit's cached one, if any), which takeChunk reads.
    if (((pos + 4) & kMask) == kMask && cache->count > 0) prefetch(&freeLink(cache->head));
    return true;
  }
  /// The next packet that arrived before `end`, or nullptr; its INT records are headInts().
  MV_HD const PacketHeader* peek(uint32_t link, int64_t end) const {
    const LinkRing& r = ring(link);
    if (r.head[par] == r.tail[prev]) return nullptr;
    const PacketHeader& p = slots[slotOf(r.head_chunk, r.head[par])];
    return p.time_ps < end ? &p : nullptr;
  }
  /// The INT records of the packet peek() returned.
  MV_HD const IntStack& headInts(uint32_t link) const { return slots.intsOf(headSlot(link)); }
  /// Arrival time of the next visible packet (any time), or INT64_MAX.
  MV_HD int64_t nextArrival(uint32_t link) const {
    const LinkRing& r = ring(link);
    if (r.head[par] == r.tail[prev]) return INT64_MAX;
    return slots[slotOf(r.head_chunk, r.head[par])].time_ps;
  }
  /// Slot of the head packet, which the caller knows is visible.
  MV_HD int64_t headSlot(uint32_t link) const {
    const LinkRing& r = ring(link);
    return slotOf(r.head_chunk, r.head[par]);
  }
  /**
   * Consumes the head packet (and fetches the one after the new head ahead of time);
   * returns nextArrival(), reading the ring once. A head that leaves its chunk follows the
   * link in the chunk's last slot (written by the push that filled it, in an earlier step:
   * that packet was visible) and gives the chunk back (returnChunk); the producer holds a
   * later chunk by then.
   */
  MV_HD int64_t popNext(uint32_t link) const {
    LinkRing& r = ring(link);
    const uint32_t head = r.head[par] + 1;
    const uint32_t tail = r.tail[prev];
    r.head[par] = head;
    if ((head & kMask) == 0) {
      const uint32_t done = r.head_chunk;
      r.head_chunk = slots[slotOf(done, kMask)].next;
      returnChunk(done);
    }
    if (head == tail) return INT64_MAX;
    const int64_t s = slotOf(r.head_chunk, head);
    if (tail - head > 1) {
      // The packet after the new head: in this chunk, or first in the one the head's slot
      // links to (the chunk's last slot, pushed in an earlier step: its link is set).
      const bool last = ((head + 1) & kMask) == 0;
      prefetch(&slots[last ? int64_t{slots[s].next} * kLinkChunkSlots : s + 1]);
    }
    return slots[s].time_ps;
  }

  /**
   * Serialises `p` (its INT records at `ints`, null when it carries none) onto `link` from
   * `t` at the link's rate; it arrives after the link's delay. Counts the hop (in the
   * sending unit's `counters`) and the link's time bin (`samples`, when `bin_ps` > 0); an
   * empty chunk pool raises kStatusLinkRing in `status`.
   * Returns when the link is free again.
   */
  MV_HD int64_t transmit(uint32_t link, PacketHeader& p, const IntHop* ints, int64_t t, TableView<LinkSample>& samples,
                         ExpId e, int64_t bin_ps, NetCounters& counters, int64_t& first_push, uint32_t* status) const {
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

/// The rings of experiment `e` of a world for the current step, used by a unit whose free
/// chunks are `cache`.
template <class WV>
MV_HD LinkRings linkRings(WV& world, ExpId e, FreeCache& cache) {
  const TableView<Link>& links = world.template table<Link>();
  TableView<NetStats>& stats = world.template table<NetStats>();
  const int par = static_cast<int>(world.clocks[e].steps & 1);
  return LinkRings{links.template expColumn<LinkInfo>(e),
                   links.template expColumn<LinkRing>(e),
                   links.template expColumn<LinkBinState>(e),
                   packetSlots<LinkSlot, LinkSlotInt>(world, e),
                   &stats.template get<LinkPool>(stats.expBegin(e)),
                   &cache,
                   par,
                   par ^ 1};
}

}  // namespace mv::net
