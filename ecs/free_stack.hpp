/**
 * @file free_stack.hpp
 * A lock-free stack of free records (a Treiber stack), the same code on host and device.
 * The records are numbered from 0 and each has a 32-bit link field that the stack uses
 * while the record is free; the caller says where that field is. The head packs the first
 * free record with a tag bumped on every pop, so a pop racing with a pop and a push of the
 * same record cannot mistake the changed stack for an unchanged one (ABA).
 *
 * Records that were never handed out are not on the stack: they are taken in order from
 * a counter once the stack is empty, so a pool touches only as many records as it ever
 * has in use at once (the pages of the others are never written, allocateHostBuffer) and
 * setting one up costs nothing per record.
 */
#pragma once

#include <cstdint>

#include "ecs/atomic.hpp"
#include "ecs/macros.hpp"

namespace mv {

/// End of a free list.
inline constexpr uint32_t kFreeStackEnd = 0xFFFFFFFFu;

/// The shared state of one stack. It keeps no count of its records: that would be one
/// more contended atomic per operation; the host counts what is free by walking the list
/// (freeCount).
struct FreeStack {
  uint64_t free_head = kFreeStackEnd;  ///< (tag << 32) | first free record (kFreeStackEnd: empty)
  int64_t capacity = 0;                ///< records in all
  /// Records [unused, capacity) were never handed out; taken in order when the stack is
  /// empty. May pass `capacity` (by at most one per racing taker): none is left then.
  uint64_t unused = 0;

  /// A free record, or kFreeStackEnd when none is left. `link(r)` is record r's link field.
  template <class LinkOf>
  MV_HD uint32_t pop(LinkOf link) {
    uint64_t head = atomicLoadAcquire<uint64_t>(&free_head);
    for (;;) {
      const auto index = static_cast<uint32_t>(head);
      if (index == kFreeStackEnd) return takeUnused();
      const uint32_t next = atomicLoad<uint32_t>(&link(index));
      const uint64_t desired = ((head >> 32) + 1) << 32 | next;
      if (atomicCompareExchange<uint64_t>(&free_head, head, desired)) break;
    }
    return static_cast<uint32_t>(head);
  }

  /// The next record never handed out, or kFreeStackEnd when none is left.
  MV_HD uint32_t takeUnused() {
    const auto cap = static_cast<uint64_t>(capacity);
    if (atomicLoad<uint64_t>(&unused) >= cap) return kFreeStackEnd;  // keeps the counter from running on
    const uint64_t r = atomicFetchAdd<uint64_t>(&unused, 1);
    return r < cap ? static_cast<uint32_t>(r) : kFreeStackEnd;
  }

  /// Returns record `r`, which nobody uses any more.
  template <class LinkOf>
  MV_HD void push(uint32_t r, LinkOf link) {
    uint64_t head = atomicLoad<uint64_t>(&free_head);
    for (;;) {
      atomicStore<uint32_t>(&link(r), static_cast<uint32_t>(head));
      const uint64_t desired = (head & 0xFFFFFFFF00000000ull) | r;
      if (atomicCompareExchange<uint64_t>(&free_head, head, desired)) break;
    }
  }

  /// Host, between steps: the records free, on the stack or never handed out.
  template <class LinkOf>
  int64_t freeCount(LinkOf link) const {
    int64_t n = 0;
    for (auto r = static_cast<uint32_t>(free_head); r != kFreeStackEnd && n <= capacity; r = link(r)) n += 1;
    const auto left = capacity - static_cast<int64_t>(unused);
    return n + (left > 0 ? left : 0);
  }
  /// Host, between steps: records ever handed out (the most in use at once, give or take
  /// what units keep in their FreeCache).
  int64_t everUsed() const {
    return unused < static_cast<uint64_t>(capacity) ? static_cast<int64_t>(unused) : capacity;
  }

  /// Host, before a run: `capacity` records, of which the first `taken` are out (in use)
  /// and the others free.
  static FreeStack withTaken(uint32_t taken, int64_t capacity) {
    FreeStack s;
    s.capacity = capacity;
    s.unused = taken;
    return s;
  }
};

/// Free records one unit keeps for itself in front of a shared FreeStack: a list through
/// the same link field, touched by that unit's thread only, so taking and giving back need
/// no atomics while it holds some.
struct FreeCache {
  uint32_t head = kFreeStackEnd;
  uint32_t count = 0;

  /// A free record: the cached one on top, else one popped from `shared`; kFreeStackEnd
  /// when both are empty.
  template <class LinkOf>
  MV_HD uint32_t take(FreeStack& shared, LinkOf link) {
    if (count == 0) return shared.pop(link);
    const uint32_t r = head;
    head = link(r);
    count -= 1;
    return r;
  }
  /// Gives back record `r`: kept while fewer than `limit` are cached, else pushed to `shared`.
  template <class LinkOf>
  MV_HD void give(uint32_t r, uint32_t limit, FreeStack& shared, LinkOf link) {
    if (count >= limit) {
      shared.push(r, link);
      return;
    }
    link(r) = head;
    head = r;
    count += 1;
  }
};

}  // namespace mv
