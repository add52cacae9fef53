/**
 * @file table.hpp
 * One archetype's column-store table, spanning every experiment of a batch.
 *
 * Rows are grouped by experiment (experiment e owns rows [expBegin[e], expBegin[e+1])).
 * Each component is its own column; the entity handle and the experiment id are implicit
 * columns. `TableView` holds only pointers and counters, so the same struct works in host
 * memory and in device memory; `World` (world.hpp) owns the buffers.
 *
 * Creation and destruction may happen inside systems running in parallel, without locks:
 * `reserve`/`create` take a slot in a pre-sized pending area with one atomic add, and
 * `destroy` sets a flag with one atomic exchange. The `commit` engine node then, in a fixed
 * number of phases separated by barriers:
 *   - sorts pending rows by (experiment, creation key) with a parallel merge sort, so the
 *     result does not depend on which thread reserved first;
 *   - compacts surviving rows and merges the new ones in, so that rows stay grouped by
 *     experiment and, within one experiment, sorted by creation key (row order therefore
 *     depends only on which rows exist, not on when they were created);
 *   - recycles destroyed slots (FIFO, generation bumped) and hands them to new rows in
 *     sorted order, so entity handles are deterministic too.
 * Creation keys must be unique within an experiment (e.g. creator id and a counter);
 * a duplicate is detected and reported as `kStatusDuplicateKey`.
 */
#pragma once

#include <cstdint>
#include <type_traits>

#include "ecs/atomic.hpp"
#include "ecs/entity.hpp"
#include "ecs/macros.hpp"
#include "ecs/policy.hpp"
#include "ecs/type_list.hpp"

namespace mv {

/// Declares an archetype: the fixed set of components its rows carry.
/// Use as `struct Flow : Archetype<FlowSize, FlowState> { static constexpr const char* kName = "Flow"; };`
template <class... Cs>
struct Archetype {
  using Components = TypeList<Cs...>;
  static_assert(AllDistinct<Components>::value, "an archetype lists each component once");
  static_assert((std::is_trivially_copyable_v<Cs> && ...), "components must be trivially copyable");
};

/// True for archetypes declared with `static constexpr bool kStatic = true`: pooled
/// storage filled by the host (`World::appendStatic`), never created or destroyed in a run.
template <class A>
concept StaticArchetype = requires { requires A::kStatic; };

/// Status bits a table (or world) raises during a run; the host turns them into errors.
enum TableStatus : uint32_t {
  kStatusOk = 0,
  kStatusPendingOverflow = 1u << 0,  ///< more creations in one step than the pending area holds
  kStatusCapacityOverflow = 1u << 1, ///< live rows would exceed the table capacity
  kStatusDuplicateKey = 1u << 2,     ///< two creations of one experiment used the same key
  kStatusStaticTable = 1u << 3,      ///< a row of a static (host-filled) table was destroyed
};

/// Rows per block of the compaction's prefix sums.
inline constexpr int64_t kCommitBlockRows = 1024;

namespace detail {

/// Current, alternate (compaction target) and pending arrays of one component column.
template <class C>
struct ColumnSlot {
  C* cur = nullptr;
  C* alt = nullptr;
  C* pending = nullptr;
};

template <class List>
struct ColumnSet;
template <class... Cs>
struct ColumnSet<TypeList<Cs...>> : ColumnSlot<Cs>... {};

MV_HD constexpr int ceilLog2(int64_t n) {
  int r = 0;
  while ((int64_t{1} << r) < n) ++r;
  return r;
}

template <class T>
MV_HD MV_INLINE void swapPointers(T*& a, T*& b) {
  T* t = a;
  a = b;
  b = t;
}

}  // namespace detail

/**
 * Device-compatible view of one archetype's table. All members are pointers into buffers
 * owned by `World`, plus counters. One instance is shared by all threads of a run.
 */
template <class Arch>
struct TableView {
  using Components = typename Arch::Components;

  // --- storage ---------------------------------------------------------------------
  detail::ColumnSet<Components> columns;
  Entity* entity = nullptr;      ///< implicit column: handle of each row
  Entity* entity_alt = nullptr;
  ExpId* exp = nullptr;          ///< implicit column: experiment of each row
  ExpId* exp_alt = nullptr;
  uint64_t* key = nullptr;       ///< implicit column: creation key, stable within its experiment
  uint64_t* key_alt = nullptr;
  uint32_t* dead = nullptr;      ///< per row: destroyed during this step

  ExpId* pending_exp = nullptr;  ///< per pending slot
  uint64_t* pending_key = nullptr;
  int64_t* pending_dest = nullptr;
  uint32_t* sort_a = nullptr;    ///< merge-sort permutations of pending slots
  uint32_t* sort_b = nullptr;

  uint32_t* slot_row = nullptr;  ///< per entity index: its current row
  uint32_t* slot_gen = nullptr;  ///< per entity index: its generation
  uint32_t* free_ring = nullptr; ///< FIFO of free entity indices (capacity entries)

  int64_t* exp_begin = nullptr;     ///< numExps + 1 row offsets
  int64_t* exp_begin_alt = nullptr;
  int64_t* exp_pending = nullptr;   ///< per experiment: creations this step
  int64_t* exp_destroyed = nullptr; ///< per experiment: destructions this step
  /// Per experiment: commits that created rows of it. A system that caches something about
  /// an experiment's rows between steps compares it to know whether rows were added.
  uint32_t* exp_generation = nullptr;
  /// Per experiment: commits that created or destroyed rows of it. While it is unchanged,
  /// the experiment's rows keep their offsets from expBegin (a system may cache those).
  uint32_t* exp_layout = nullptr;
  int64_t* exp_pending_before = nullptr;    ///< scratch: creations of experiments < e
  int64_t* block_alive = nullptr;  ///< scratch: survivors per block, then their prefix
  int64_t* alive_before = nullptr; ///< scratch: per row (and one past the end), survivors before it

  // --- sizes and counters ----------------------------------------------------------
  int64_t capacity = 0;
  int64_t pending_capacity = 0;
  int64_t rows = 0;
  int64_t pending = 0;    ///< reservations this step (may overshoot pending_capacity)
  int64_t destroyed = 0;  ///< destructions this step
  int64_t free_head = 0;  ///< monotonic position of the next free index in free_ring
  uint32_t num_exps = 0;
  uint32_t status = kStatusOk;

  // --- row access ----------------------------------------------------------------
  template <class C>
  MV_HD C* column() const {
    static_assert(kContains<C, Components>, "component not in this archetype");
    return static_cast<const detail::ColumnSlot<C>&>(columns).cur;
  }
  template <class C>
  MV_HD C& get(int64_t row) const {
    return column<C>()[row];
  }
  /// Experiment e's rows of column C, from its first row (local row r is element r).
  template <class C>
  MV_HD C* expColumn(ExpId e) const {
    return column<C>() + exp_begin[e];
  }
  MV_HD int64_t expBegin(ExpId e) const { return exp_begin[e]; }
  MV_HD int64_t expEnd(ExpId e) const { return exp_begin[e + 1]; }
  MV_HD int64_t expRows(ExpId e) const { return exp_begin[e + 1] - exp_begin[e]; }

  /// True when `h` still names a live row.
  MV_HD bool isAlive(Entity h) const {
    return !h.isNone() && h.index < static_cast<uint64_t>(capacity) && slot_gen[h.index] == h.generation &&
           slot_row[h.index] < static_cast<uint64_t>(rows) && entity[slot_row[h.index]] == h;
  }
  /// Row of a live entity, or -1.
  MV_HD int64_t rowOf(Entity h) const { return isAlive(h) ? int64_t{slot_row[h.index]} : -1; }

  // --- creation and destruction (safe from parallel systems) ----------------------
  /**
   * Takes a pending slot for a new row of experiment `e`; fill its components with
   * `pendingColumn<C>()[slot]`. Returns -1 (and raises kStatusPendingOverflow) when the
   * pending area is full. `key` orders the new rows of one experiment and must be unique.
   */
  MV_HD int64_t reserve(ExpId e, uint64_t creation_key) {
    if (pending_capacity == 0) {
      atomicFetchOr<uint32_t>(&status, kStatusStaticTable);
      return -1;
    }
    const int64_t slot = atomicFetchAdd<int64_t>(&pending, 1);
    if (slot >= pending_capacity) {
      atomicFetchOr<uint32_t>(&status, kStatusPendingOverflow);
      return -1;
    }
    atomicFetchAdd<int64_t>(&exp_pending[e], 1);
    pending_exp[slot] = e;
    pending_key[slot] = creation_key;
    return slot;
  }

  template <class C>
  MV_HD C* pendingColumn() const {
    static_assert(kContains<C, Components>, "component not in this archetype");
    return static_cast<const detail::ColumnSlot<C>&>(columns).pending;
  }

  /// Creates a row with every component given (any order). Returns false on overflow.
  template <class... Cs>
  MV_HD bool create(ExpId e, uint64_t creation_key, const Cs&... values) {
    static_assert(sizeof...(Cs) == Components::size && kContainsAll<TypeList<Cs...>, Components>,
                  "create() takes every component of the archetype exactly once");
    const int64_t slot = reserve(e, creation_key);
    if (slot < 0) return false;
    ((pendingColumn<Cs>()[slot] = values), ...);
    return true;
  }

  /// Marks a row for destruction at the next commit. Destroying twice is harmless.
  MV_HD void destroyRow(int64_t row) {
    if (pending_capacity == 0) {
      atomicFetchOr<uint32_t>(&status, kStatusStaticTable);
      return;
    }
    if (atomicExchange<uint32_t>(&dead[row], 1u) == 0u) {
      atomicFetchAdd<int64_t>(&exp_destroyed[exp[row]], 1);
      atomicFetchAdd<int64_t>(&destroyed, 1);
    }
  }
  /// Marks a live entity for destruction; returns false when the handle is stale.
  MV_HD bool destroy(Entity h) {
    const int64_t row = rowOf(h);
    if (row < 0) return false;
    destroyRow(row);
    return true;
  }

  // --- commit (an engine node) -----------------------------------------------------
  /// Number of barrier-separated phases of `commitPhase`; fixed by the capacities.
  MV_HD int commitPhaseCount() const { return detail::ceilLog2(pending_capacity) + 6; }

  /// True when this step created or destroyed nothing (every phase is then a no-op).
  MV_HD bool commitIsNoop() const { return pending == 0 && destroyed == 0; }

  /**
   * Runs phase `phase` of the commit on the calling thread. Every thread of the policy
   * must call every phase in order with a barrier in between.
   */
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitPhase(const Policy& policy, int phase) {
    const int rounds = detail::ceilLog2(pending_capacity);
    // The last phase resets the counters commitIsNoop() reads: only its one writer runs it.
    if (phase == rounds + 5 && policy.rank() != 0) return;
    if (commitIsNoop()) return;
    if (phase == 0) {
      commitPrepare(policy);
    } else if (phase <= rounds) {
      commitMergeRound(policy, phase - 1);
    } else if (phase == rounds + 1) {
      if (policy.rank() == 0) commitScan();
    } else if (phase == rounds + 2) {
      commitRankRows(policy);
    } else if (phase == rounds + 3) {
      commitScatter(policy);
    } else if (phase == rounds + 4) {
      commitAssignEntities(policy);
    } else {
      commitFinish();
    }
  }

 private:
  MV_HD int64_t pendingCount() const { return pending < pending_capacity ? pending : pending_capacity; }
  MV_HD int64_t blockCount() const { return (rows + kCommitBlockRows - 1) / kCommitBlockRows; }
  MV_HD int64_t blockEnd(int64_t b) const {
    return (b + 1) * kCommitBlockRows < rows ? (b + 1) * kCommitBlockRows : rows;
  }
  /// The permutation holding the sorted pending slots once all merge rounds ran.
  MV_HD uint32_t* sortedPending() const {
    return detail::ceilLog2(pendingCount()) % 2 == 0 ? sort_a : sort_b;
  }
  MV_HD bool pendingLess(uint32_t a, uint32_t b) const {
    return pending_exp[a] != pending_exp[b] ? pending_exp[a] < pending_exp[b]
                                            : pending_key[a] < pending_key[b];
  }

  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitPrepare(const Policy& policy) {
    parallelFor(policy, pendingCount(), [&](int64_t i) { sort_a[i] = static_cast<uint32_t>(i); });
    parallelFor(policy, blockCount(), [&](int64_t b) {
      int64_t n_dead = 0;
      for (int64_t r = b * kCommitBlockRows; r < blockEnd(b); ++r) n_dead += dead[r];
      block_alive[b] = (blockEnd(b) - b * kCommitBlockRows) - n_dead;
    });
  }

  /// Merges runs of width 2^round; each element finds its place by binary search in its
  /// partner run (left runs win ties, though keys are unique).
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitMergeRound(const Policy& policy, int round) {
    const int64_t n = pendingCount();
    const int64_t width = int64_t{1} << round;
    if (width >= n) return;
    const uint32_t* src = round % 2 == 0 ? sort_a : sort_b;
    uint32_t* dst = round % 2 == 0 ? sort_b : sort_a;
    parallelFor(policy, n, [&](int64_t i) {
      const int64_t run = i / width;
      const int64_t run_start = run * width;
      const int64_t pair_start = (run & ~int64_t{1}) * width;
      const int64_t partner_start = (run ^ 1) * width;
      if (partner_start >= n) {
        dst[i] = src[i];
        return;
      }
      const int64_t partner_end = partner_start + width < n ? partner_start + width : n;
      const uint32_t me = src[i];
      const bool left = (run & 1) == 0;
      int64_t lo = partner_start;
      int64_t hi = partner_end;
      while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        const bool before = left ? pendingLess(src[mid], me) : !pendingLess(me, src[mid]);
        if (before) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      dst[pair_start + (i - run_start) + (lo - partner_start)] = me;
    });
  }

  /// Serial prefix sums over experiments and blocks (one thread; sizes are small).
  MV_HD void commitScan() {
    int64_t created = 0;
    int64_t begin = 0;
    for (uint32_t e = 0; e < num_exps; ++e) {
      const int64_t alive = (exp_begin[e + 1] - exp_begin[e]) - exp_destroyed[e];
      exp_pending_before[e] = created;
      exp_begin_alt[e] = begin;
      created += exp_pending[e];
      begin += alive + exp_pending[e];
    }
    exp_pending_before[num_exps] = created;
    exp_begin_alt[num_exps] = begin;
    if (begin > capacity) status |= kStatusCapacityOverflow;
    int64_t alive_prefix = 0;
    for (int64_t b = 0; b < blockCount(); ++b) {
      const int64_t a = block_alive[b];
      block_alive[b] = alive_prefix;
      alive_prefix += a;
    }
    alive_before[rows] = alive_prefix;
  }

  /// Per row: survivors before it; destroyed rows free their slot (FIFO, generation bumped).
  template <class Policy>
  MV_HD void commitRankRows(const Policy& policy) {
    if (status & kStatusCapacityOverflow) return;
    const int64_t free_tail = free_head + (capacity - rows);
    parallelFor(policy, blockCount(), [&](int64_t b) {
      int64_t alive_rank = block_alive[b];
      for (int64_t r = b * kCommitBlockRows; r < blockEnd(b); ++r) {
        alive_before[r] = alive_rank;
        if (dead[r] != 0u) {
          const uint32_t index = entity[r].index;
          slot_gen[index] += 1;
          free_ring[(free_tail + (r - alive_rank)) % capacity] = index;
        } else {
          ++alive_rank;
        }
      }
    });
  }

  /// Sorted pending positions of experiment e whose key is below `k`.
  MV_HD int64_t newRowsBelow(const uint32_t* sorted, ExpId e, uint64_t k) const {
    int64_t lo = exp_pending_before[e];
    int64_t hi = exp_pending_before[e + 1];
    const int64_t first = lo;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (pending_key[sorted[mid]] < k) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo - first;
  }
  /// First row of experiment e (old order) whose key is not below `k`.
  MV_HD int64_t firstOldRowNotBelow(ExpId e, uint64_t k) const {
    int64_t lo = exp_begin[e];
    int64_t hi = exp_begin[e + 1];
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (key[mid] < k) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  template <class C>
  MV_HD void copyColumn(int64_t from, int64_t to) const {
    const auto& slot = static_cast<const detail::ColumnSlot<C>&>(columns);
    slot.alt[to] = slot.cur[from];
  }
  template <class C>
  MV_HD void copyPendingColumn(int64_t from, int64_t to) const {
    const auto& slot = static_cast<const detail::ColumnSlot<C>&>(columns);
    slot.alt[to] = slot.pending[from];
  }
  template <class... Cs>
  MV_HD void copyRow(TypeList<Cs...>, int64_t from, int64_t to) const {
    (copyColumn<Cs>(from, to), ...);
  }
  template <class... Cs>
  MV_HD void copyPendingRow(TypeList<Cs...>, int64_t from, int64_t to) const {
    (copyPendingColumn<Cs>(from, to), ...);
  }
  template <class... Cs>
  MV_HD void swapColumns(TypeList<Cs...>) {
    (detail::swapPointers(static_cast<detail::ColumnSlot<Cs>&>(columns).cur,
                          static_cast<detail::ColumnSlot<Cs>&>(columns).alt),
     ...);
  }

  /// Moves survivors and new rows to their merged place: within an experiment, rows are
  /// ordered by creation key.
  template <class Policy>
  MV_HD void commitScatter(const Policy& policy) {
    if (status & kStatusCapacityOverflow) return;
    const uint32_t* sorted = sortedPending();
    parallelFor(policy, blockCount(), [&](int64_t b) {
      for (int64_t r = b * kCommitBlockRows; r < blockEnd(b); ++r) {
        if (dead[r] != 0u) {
          dead[r] = 0u;
          continue;
        }
        const ExpId e = exp[r];
        const int64_t dest = exp_begin_alt[e] + (alive_before[r] - alive_before[exp_begin[e]]) +
                             newRowsBelow(sorted, e, key[r]);
        copyRow(Components{}, r, dest);
        entity_alt[dest] = entity[r];
        exp_alt[dest] = e;
        key_alt[dest] = key[r];
        slot_row[entity[r].index] = static_cast<uint32_t>(dest);
      }
    });
    parallelFor(policy, pendingCount(), [&](int64_t j) {
      const uint32_t s = sorted[j];
      const ExpId e = pending_exp[s];
      const uint64_t k = pending_key[s];
      const bool twin_new = j > 0 && pending_exp[sorted[j - 1]] == e && pending_key[sorted[j - 1]] == k;
      const int64_t p = firstOldRowNotBelow(e, k);
      const bool twin_old = p < exp_begin[e + 1] && key[p] == k && alive_before[p + 1] > alive_before[p];
      if (twin_new || twin_old) atomicFetchOr<uint32_t>(&status, kStatusDuplicateKey);
      const int64_t dest = exp_begin_alt[e] + (j - exp_pending_before[e]) + (alive_before[p] - alive_before[exp_begin[e]]);
      copyPendingRow(Components{}, s, dest);
      exp_alt[dest] = e;
      key_alt[dest] = k;
      pending_dest[j] = dest;
    });
  }

  /// Hands free entity indices (oldest first) to the new rows in sorted order.
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitAssignEntities(const Policy& policy) {
    if (status & kStatusCapacityOverflow) return;
    parallelFor(policy, pendingCount(), [&](int64_t j) {
      const uint32_t index = free_ring[(free_head + j) % capacity];
      const int64_t dest = pending_dest[j];
      entity_alt[dest] = Entity{index, slot_gen[index]};
      slot_row[index] = static_cast<uint32_t>(dest);
    });
    parallelFor(policy, num_exps, [&](int64_t e) {
      if (exp_pending[e] != 0) exp_generation[e] += 1;
      if (exp_pending[e] != 0 || exp_destroyed[e] != 0) exp_layout[e] += 1;
      exp_pending[e] = 0;
      exp_destroyed[e] = 0;
    });
  }

  MV_HD void commitFinish() {
    if (!(status & kStatusCapacityOverflow)) {
      swapColumns(Components{});
      detail::swapPointers(entity, entity_alt);
      detail::swapPointers(exp, exp_alt);
      detail::swapPointers(key, key_alt);
      detail::swapPointers(exp_begin, exp_begin_alt);
      free_head += pendingCount();
      rows = exp_begin[num_exps];
    }
    pending = 0;
    destroyed = 0;
  }
};

}  // namespace mv
