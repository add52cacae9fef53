/**
 * @file ring_schedule.hpp
 * Ring collectives generated step by step (ring and hierarchical algorithms, issue #22): a
 * collective is a few phases of disjoint rings, and transfer k — its sender, receiver, size
 * and the one transfer its arrival releases — is computed from k, so an instance over n
 * members holds O(1) rows instead of the 2(n−1)·n transfer rows and counters of an explicit
 * DAG. The numbering and the dependencies are those of `makeShape` (collective_shapes.hpp),
 * which the tests check transfer by transfer. Host and device code.
 */
#pragma once

#include <cstdint>

#include "ecs/table.hpp"

namespace mv::train {

/// One phase of a generated ring collective: `rings` disjoint rings of `size` positions;
/// position i of ring q is group member q·ring_stride + i·pos_stride (either ring_stride =
/// size and pos_stride = 1: consecutive members, or ring_stride = 1 and pos_stride =
/// rings: one member per block). In each of `steps` steps every position sends
/// 1/(parts·chunks) of the buffer to the next, after receiving the previous step; a
/// member's first send waits for the last transfer it received in the previous phase.
///
/// A phase of channels (the ring algorithm's NCCL channels) is instead `rings` rings over
/// the same n members, ring_stride = 0: with `rotate` = g > 1 members per server, ring q
/// runs through even servers from local index q mod g up and through odd ones from
/// q − 1 mod g down, so every hop between servers leaves and enters on one rail (but the
/// wrap from the last server when their count is odd) and each member's NIC carries 1/g of
/// the channels. Such a phase is always its collective's only one (a member is in every
/// ring: firstSendOf does not apply).
struct RingPhaseDef {
  uint32_t rings = 1;
  uint32_t size = 0;
  uint32_t ring_stride = 0;
  uint32_t pos_stride = 1;
  uint32_t steps = 0;
  uint32_t parts = 1;
  uint32_t first = 0;  ///< index of the phase's first transfer within a chunk
  uint32_t count = 0;  ///< its transfers per chunk: rings · steps · size
  uint32_t rotate = 1;  ///< channels: members per server the rings rotate by (1: none)
};
struct RingShape : Archetype<RingPhaseDef> {
  static constexpr const char* kName = "RingShape";
  static constexpr bool kStatic = true;
};

inline constexpr uint32_t kNoTransfer = 0xffffffffu;

/// What transfer k of a generated ring collective does.
struct RingTransfer {
  uint32_t src = 0;             ///< group member that sends
  uint32_t dst = 0;             ///< group member that receives
  uint32_t den = 1;             ///< it moves ⌈buffer / den⌉ bytes
  uint32_t next = kNoTransfer;  ///< the transfer its arrival releases
  uint32_t channel = 0;         ///< its ring within its phase (a channel of the ring algorithm)
  uint32_t step = 0;            ///< its step within its phase
};

/// Hops a member of phase p sends over NVLink side by side: a channel phase's rings run at
/// once, and its busiest member leaves its server (on its NIC) in ⌊rings/rotate⌋ of them
/// and sends every other channel's hop to a GPU of its own server. 1 for other phases.
MV_HD inline uint32_t nvlinkSharing(const RingPhaseDef& p) {
  if (p.ring_stride != 0) return 1;
  return p.rotate > 1 ? p.rings - p.rings / p.rotate : p.rings;
}

/// Which of its member's `nics` NICs channel q of phase p leaves by: channel phases spread
/// the channels a member exits by over its NICs in turn (channels q and q + rotate exit by
/// the same member), as NCCL gives each NIC of a GPU its channels; 0 in other phases.
MV_HD inline uint32_t railOf(const RingPhaseDef& p, uint32_t q, uint32_t nics) {
  return p.ring_stride == 0 && nics > 1 ? q / p.rotate % nics : 0;
}

/// Group member at position i of ring q of a phase.
MV_HD inline uint32_t ringMember(const RingPhaseDef& p, uint32_t q, uint32_t i) {
  if (p.rotate > 1) {
    const uint32_t g = p.rotate;
    const uint32_t local = i % g;
    const uint32_t up = (i / g) % 2 == 0;
    return i - local + (up ? (q + local) % g : (q % g + 2 * g - 1 - local) % g);
  }
  return q * p.ring_stride + i * p.pos_stride;
}

/// Index within a chunk of the transfer position i of ring q sends in step j of phase p.
MV_HD inline uint32_t ringStepTransfer(const RingPhaseDef& p, uint32_t q, uint32_t j, uint32_t i) {
  return p.first + (q * p.steps + j) * p.size + i;
}

/// Index within a chunk of member m's first send in phase p.
MV_HD inline uint32_t firstSendOf(const RingPhaseDef& p, uint32_t m) {
  const uint32_t q = p.pos_stride == 1 ? m / p.size : m % p.rings;
  const uint32_t i = p.pos_stride == 1 ? m % p.size : m / p.rings;
  return ringStepTransfer(p, q, 0, i);
}

/// Chunks of `chunks` a ring member has in flight at once with `window` (0: all of them).
MV_HD inline uint32_t ringChunksAtOnce(uint32_t chunks, uint32_t window) {
  return window > 0 && window < chunks ? window : chunks;
}

/// Transfer k of a collective of `phase_count` phases split into `chunks` chunks of
/// `chunk_transfers` transfers each (the sum of the phases' counts). With `window` w > 0
/// (one phase only: NCCL's ring loops, CollInfo::window) a member's first send of chunk
/// u + w is released by its last receive of chunk u; with 0 every chunk starts at once.
MV_HD inline RingTransfer ringTransfer(const RingPhaseDef* phases, uint32_t phase_count, uint32_t chunks,
                                       uint32_t window, uint32_t chunk_transfers, uint32_t k) {
  const uint32_t chunk_first = k - k % chunk_transfers;
  const uint32_t local = k % chunk_transfers;
  uint32_t p = 0;
  while (local >= phases[p].first + phases[p].count) ++p;
  const RingPhaseDef& ph = phases[p];
  const uint32_t within = local - ph.first;
  const uint32_t q = within / (ph.steps * ph.size);
  const uint32_t j = within / ph.size % ph.steps;
  const uint32_t i = within % ph.size;
  const uint32_t i_next = i + 1 == ph.size ? 0 : i + 1;
  RingTransfer t;
  t.src = ringMember(ph, q, i);
  t.dst = ringMember(ph, q, i_next);
  t.den = ph.parts * chunks;
  t.channel = q;
  t.step = j;
  if (j + 1 < ph.steps) {
    t.next = chunk_first + ringStepTransfer(ph, q, j + 1, i_next);
  } else if (p + 1 < phase_count) {
    t.next = chunk_first + firstSendOf(phases[p + 1], t.dst);
  } else if (window > 0 && k / chunk_transfers + window < chunks) {
    t.next = chunk_first + window * chunk_transfers + ringStepTransfer(ph, q, 0, i_next);
  }
  return t;
}

}  // namespace mv::train
