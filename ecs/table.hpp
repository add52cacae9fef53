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
 *
 * Regions and slack: experiment e's live rows are [expBegin(e), expEnd(e)), at the start of
 * its region [expBegin(e), expBegin(e + 1)); the rest of the region is slack, gap rows whose
 * experiment is kGapRow. Outside blocked runs regions have no slack. A commit during a run
 * restricted to a block of experiments (the CPU executor's experiment blocking) keeps every
 * region in place when only the block changed and each of its experiments fits its region:
 * it then rewrites only those regions' rows, within the current columns, instead of the
 * whole table. Otherwise it lays the whole table out again, and in a blocked run gives each
 * region its reserve (`exp_reserve`) and slack as large as its rows (within the capacity),
 * so that the next commits fit. `closeGaps` removes the slack once the blocked run is over.
 */
#pragma once

#include <cstdint>
#include <cstring>
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

/// True for static archetypes also declared with `static constexpr bool kPool = true`: the
/// records of a pool (FreeStack) that hands them out by number. Their rows keep no
/// experiment ids (no system visits them row by row) and start as zero bytes, written
/// first when the pool hands them out, so the pages of records never used are never
/// committed (allocateHostBuffer).
template <class A>
concept PoolArchetype = StaticArchetype<A> && requires {
  requires A::kPool;
};

/// Status bits a table (or world) raises during a run; the host turns them into errors.
enum TableStatus : uint32_t {
  kStatusOk = 0,
  kStatusPendingOverflow = 1u << 0,  ///< more creations in one step than the pending area holds
  kStatusCapacityOverflow = 1u << 1, ///< live rows would exceed the table capacity
  kStatusDuplicateKey = 1u << 2,     ///< two creations of one experiment used the same key
  kStatusStaticTable = 1u << 3,      ///< a row of a static (host-filled) table was destroyed
};

/// Fewest rows per chunk of the commit's row passes (its prefix sums over rows): a chunk
/// has ceil(rows / threads) rows, at least these, so the scratch stays small (two counters
/// per chunk) and a chunk's walk stays longer than the loads that start it.
inline constexpr int64_t kCommitChunkMinRows = 64;
/// The experiment of a gap row: slack at the end of an experiment's region, not a row.
inline constexpr ExpId kGapRow = UINT32_MAX;
/// Slack a blocked run's layout gives each region beyond its rows (as many again, plus this).
inline constexpr int64_t kCommitSlackRows = 16;
/// A commit's first phase sorts its pending rows in runs of kCommitSortRun (2^8), and each
/// later sort phase merges runs pairwise, doubling their width. On a GPU a pending row
/// finds its place in its run by comparing itself with every other row of the run: 256
/// comparisons per thread cost less than the 8 grid-wide barriers of the doublings up to
/// that width.
inline constexpr int kCommitSortRunLog2 = 8;
inline constexpr int64_t kCommitSortRun = int64_t{1} << kCommitSortRunLog2;

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

/// Merge rounds of a commit with n rows pending: one per doubling of the sorted runs' width
/// from kCommitSortRun up to n.
MV_HD constexpr int commitMergeRounds(int64_t n) {
  const int doublings = ceilLog2(n) - kCommitSortRunLog2;
  return doublings > 0 ? doublings : 0;
}
/// Barrier-separated phases of a commit with `merges` merge rounds: the first phase plans
/// the commit and sorts runs of kCommitSortRun; the prefix sums (two phases) run beside the
/// first two merge rounds; then the scatter, which also hands new rows their entity slots.
/// The finish (one thread, TableView::commitFinish) follows after one more barrier.
MV_HD constexpr int commitPhases(int merges) {
  return (merges > 2 ? merges : 2) + 2;
}

MV_HD constexpr int64_t ceilDiv(int64_t n, int64_t d) {
  return d > 0 ? (n + d - 1) / d : 0;
}

/// Smallest g with g * g >= n: the group size of a two-level scan over n items.
MV_HD constexpr int64_t ceilSqrt(int64_t n) {
  int64_t g = 0;
  while (g * g < n) ++g;
  return g;
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
  uint32_t* sort_a = nullptr;    ///< merge-sort permutations of pending slots
  uint32_t* sort_b = nullptr;

  uint32_t* slot_row = nullptr;  ///< per entity index: its current row
  uint32_t* slot_gen = nullptr;  ///< per entity index: its generation
  uint32_t* free_ring = nullptr; ///< FIFO of free entity indices (capacity entries)

  int64_t* exp_begin = nullptr;     ///< numExps + 1 region offsets
  int64_t* exp_begin_alt = nullptr;
  int64_t* exp_rows = nullptr;      ///< per experiment: its live rows, at the start of its region
  int64_t* exp_rows_alt = nullptr;
  int64_t* exp_pending = nullptr;   ///< per experiment: creations this step
  int64_t* exp_destroyed = nullptr; ///< per experiment: destructions this step
  /// Per experiment: commits that created rows of it. A system that caches something about
  /// an experiment's rows between steps compares it to know whether rows were added.
  uint32_t* exp_generation = nullptr;
  /// Per experiment: commits that created or destroyed rows of it. While it is unchanged,
  /// the experiment's rows keep their offsets from expBegin (a system may cache those).
  uint32_t* exp_layout = nullptr;
  /// Per experiment: rows its region should hold when a blocked run lays the table out
  /// (World::reserveRegion; 0: no reserve), e.g. the flow records an experiment will end
  /// with, so that a table sized exactly for them is not laid out again as it fills.
  int64_t* exp_reserve = nullptr;
  int64_t* exp_pending_before = nullptr;    ///< scratch: creations of experiments < e
  int64_t* exp_group_rows = nullptr;        ///< scratch: rows after the commit, per group of experiments
  int64_t* exp_group_pending = nullptr;     ///< scratch: creations per group of experiments
  int64_t* block_alive = nullptr;           ///< scratch: survivors per chunk, then their prefix within its group
  int64_t* block_dead = nullptr;            ///< scratch: destroyed rows per chunk, then their prefix within its group
  int64_t* group_alive = nullptr;           ///< scratch: survivors per group of chunks
  int64_t* group_dead = nullptr;            ///< scratch: destroyed rows per group of chunks
  int64_t* alive_before = nullptr; ///< scratch: per row (and one past the end), survivors before it

  // --- sizes and counters ----------------------------------------------------------
  int64_t capacity = 0;
  int64_t pending_capacity = 0;
  int64_t rows = 0;       ///< end of the last region: live rows plus slack (no slack outside blocked runs)
  int64_t live = 0;       ///< live rows over all experiments
  int64_t pending = 0;    ///< reservations this step (may overshoot pending_capacity)
  int64_t destroyed = 0;  ///< destructions this step
  int64_t free_head = 0;  ///< position in free_ring of the next free index, below capacity
  uint32_t num_exps = 0;
  uint32_t status = kStatusOk;
  // The current commit's plan (see commitPlan), set in its first phase.
  int64_t commit_first = 0;      ///< rows [commit_first, commit_end) are rewritten
  int64_t commit_end = 0;
  uint32_t commit_exp_first = 0; ///< experiments [commit_exp_first, commit_exp_end) get new regions
  uint32_t commit_exp_end = 0;
  uint32_t commit_in_place = 0;  ///< regions stay where they are (else the table is laid out again)
  uint32_t commit_slack = 0;     ///< a new layout gives regions slack (the run is blocked)
  int32_t commit_rounds = 0;     ///< merge rounds of the current commit (detail::commitMergeRounds)
  uint32_t commit_open = 0;      ///< a commit's phases ran and its commitFinish has not
  int64_t commit_chunk = 0;      ///< rows per chunk of the current commit's row passes

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
  MV_HD int64_t expEnd(ExpId e) const { return exp_begin[e] + exp_rows[e]; }
  MV_HD int64_t expRows(ExpId e) const { return exp_rows[e]; }

  /// True when `h` still names a live row (never for a StaticArchetype: its rows have no
  /// handles, World::visitTableBuffers).
  MV_HD bool isAlive(Entity h) const {
    if constexpr (StaticArchetype<Arch>) return false;
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
  /// Number of barrier-separated phases of this step's `commitPhase`, from the rows pending:
  /// with M = max(0, ceil(log2(P / kCommitSortRun))) merge rounds for P rows pending,
  /// max(M, 2) + 2. `commitFinish` follows them, after one more barrier.
  MV_HD int commitPhaseCount() const { return detail::commitPhases(detail::commitMergeRounds(pendingCount())); }
  /// The most phases a commit can take, fixed by the capacities (launches planned on the
  /// host, which cannot see the counters); phases past a commit's own count do nothing.
  MV_HD int commitMaxPhaseCount() const { return detail::commitPhases(detail::commitMergeRounds(pending_capacity)); }

  /// True when this step created or destroyed nothing (every phase is then a no-op).
  MV_HD bool commitIsNoop() const { return pending == 0 && destroyed == 0; }

  /**
   * Runs phase `phase` of the commit on the calling thread. Every thread of the policy
   * must call every phase in order with a barrier in between, and one thread then calls
   * `commitFinish` after one more. [run_first, run_end) are the experiments the run visits
   * (WorldView::run_first and run_end).
   */
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitPhase(const Policy& policy, int phase, uint32_t run_first = 0, uint32_t run_end = UINT32_MAX) {
    if (phase == 0) {
      if (commitIsNoop()) return;
      if (policy.rank() == 0) {
        commit_rounds = detail::commitMergeRounds(pendingCount());
        commit_open = 1u;
      }
      commitPrepare(policy, run_first, run_end);
      commitSortRuns(policy);
      return;
    }
    const int merges = commit_rounds;
    const int last = detail::commitPhases(merges) - 1;
    if (phase > last || commitIsNoop()) return;
    // The prefix sums and the merge rounds read nothing the other writes: phases 1 and 2
    // run both.
    if (phase <= merges) commitMergeRound(policy, phase);
    if (phase == 1) {
      commitScan(policy);
    } else if (phase == 2) {
      commitRankRows(policy);
    } else if (phase == last) {
      commitScatter(policy);
      commitCountChanges(policy);
    }
  }

  /**
   * Ends the commit, on one thread after the last phase and a barrier: swaps in the new
   * columns and regions and resets the counters commitIsNoop() reads. A no-op unless a
   * commit's first phase ran since the last finish. It reads and writes only this table's
   * view, so it may share its phase with work that does not touch the table (the engine
   * runs it in advance_clocks' phase).
   */
  MV_HD void commitFinish() {
    if (commit_open == 0u) return;
    commit_open = 0u;
    if (!(status & kStatusCapacityOverflow)) {
      if (commit_in_place == 0u) {
        swapColumns(Components{});
        detail::swapPointers(entity, entity_alt);
        detail::swapPointers(exp, exp_alt);
        detail::swapPointers(key, key_alt);
      }
      detail::swapPointers(exp_begin, exp_begin_alt);
      detail::swapPointers(exp_rows, exp_rows_alt);
      free_head = ringSlot(free_head + pendingCount());
      live += pendingCount() - destroyed;
      rows = exp_begin[num_exps];
    }
    pending = 0;
    destroyed = 0;
  }

  /**
   * Moves every experiment's rows back to back from row 0, without slack: the layout of a
   * table outside blocked runs. Rows keep their handles and their order. Host only, between
   * runs (the CPU executor calls it after a blocked run).
   */
  void closeGaps() {
    if (rows == live) return;
    int64_t to = 0;
    for (uint32_t e = 0; e < num_exps; ++e) {
      const int64_t from = exp_begin[e];
      exp_begin[e] = to;
      for (int64_t i = 0; i < exp_rows[e]; ++i) moveRow(Components{}, from + i, to + i);
      to += exp_rows[e];
    }
    exp_begin[num_exps] = to;
    rows = to;
  }

 private:
  /// What a commit rewrites, decided from the counters settled before it.
  struct CommitPlan {
    uint32_t exp_first = 0;  ///< experiments that get new regions
    uint32_t exp_end = 0;
    bool in_place = false;
    bool slack = false;
  };
  /// In place when the run is blocked, only experiments of the block changed and each of
  /// them fits its region: then only the regions from the first to the last changed one are
  /// rewritten. Otherwise every region is laid out again.
  MV_HD CommitPlan commitPlan(uint32_t run_first, uint32_t run_end) const {
    CommitPlan plan;
    plan.slack = run_first > 0 || run_end < num_exps;
    plan.exp_end = num_exps;
    if (!plan.slack) return plan;
    uint32_t first = num_exps;
    uint32_t last = 0;
    for (uint32_t e = 0; e < num_exps; ++e) {
      if (exp_pending[e] == 0 && exp_destroyed[e] == 0) continue;
      if (e < run_first || e >= run_end) return plan;
      if (exp_rows[e] - exp_destroyed[e] + exp_pending[e] > exp_begin[e + 1] - exp_begin[e]) return plan;
      first = e < first ? e : first;
      last = e;
    }
    if (first == num_exps) return plan;
    plan.in_place = true;
    plan.exp_first = first;
    plan.exp_end = last + 1;
    return plan;
  }
  MV_HD int64_t pendingCount() const { return pending < pending_capacity ? pending : pending_capacity; }
  /// Index into free_ring of position `pos` past its start, for pos below twice the
  /// capacity: what a commit reaches from free_head (below the capacity) by at most the
  /// capacity's worth of freed or taken indices. A subtraction, not a 64-bit division.
  MV_HD int64_t ringSlot(int64_t pos) const { return pos < capacity ? pos : pos - capacity; }
  /// Chunks of the row passes over rows [first, end), `chunk` rows each (the last fewer).
  MV_HD static int64_t chunkCount(int64_t first, int64_t end, int64_t chunk) {
    return (end - first + chunk - 1) / chunk;
  }
  /// Rows per chunk when `threads` share [first, end): one chunk per thread, each of at
  /// least kCommitChunkMinRows.
  MV_HD static int64_t chunkRows(int64_t first, int64_t end, int64_t threads) {
    const int64_t even = (end - first + threads - 1) / threads;
    return even > kCommitChunkMinRows ? even : kCommitChunkMinRows;
  }
  /// One past the last row of chunk c.
  MV_HD static int64_t chunkEnd(int64_t first, int64_t end, int64_t chunk, int64_t c) {
    return first + (c + 1) * chunk < end ? first + (c + 1) * chunk : end;
  }
  MV_HD int64_t chunkCount() const { return chunkCount(commit_first, commit_end, commit_chunk); }
  MV_HD int64_t chunkBegin(int64_t c) const { return commit_first + c * commit_chunk; }
  MV_HD int64_t chunkEnd(int64_t c) const { return chunkEnd(commit_first, commit_end, commit_chunk, c); }
  /// The permutation holding the sorted pending slots once all merge rounds ran (the runs
  /// are sorted into sort_b, and each merge round writes the other buffer).
  MV_HD uint32_t* sortedPending() const { return detail::commitMergeRounds(pendingCount()) % 2 == 0 ? sort_b : sort_a; }
  MV_HD bool pendingLess(uint32_t a, uint32_t b) const {
    return pending_exp[a] != pending_exp[b] ? pending_exp[a] < pending_exp[b]
                                            : pending_key[a] < pending_key[b];
  }

  /// Every thread makes the plan (the same one); thread 0 also records it for later phases.
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitPrepare(const Policy& policy, uint32_t run_first, uint32_t run_end) {
    const CommitPlan plan = commitPlan(run_first, run_end);
    const int64_t first = exp_begin[plan.exp_first];
    const int64_t end = exp_begin[plan.exp_end];
    if (policy.rank() == 0) {
      commit_first = first;
      commit_end = end;
      commit_exp_first = plan.exp_first;
      commit_exp_end = plan.exp_end;
      commit_in_place = plan.in_place ? 1u : 0u;
      commit_slack = plan.slack ? 1u : 0u;
    }
    const int64_t chunk = chunkRows(first, end, policy.count());
    if (policy.rank() == 0) commit_chunk = chunk;
    parallelFor(policy, chunkCount(first, end, chunk), [&](int64_t c) {
      int64_t n_alive = 0;
      int64_t n_dead = 0;
      for (int64_t r = first + c * chunk; r < chunkEnd(first, end, chunk, c); ++r) {
        if (exp[r] == kGapRow) continue;
        n_dead += dead[r];
        n_alive += 1 - dead[r];
      }
      block_alive[c] = n_alive;
      block_dead[c] = n_dead;
    });
  }

  /// Merges the sorted run of `width` slots at src[begin] with the next one, both cut at
  /// `limit`, into dst front to back, stably (the left run wins ties, though keys are unique).
  MV_HD void mergeRuns(const uint32_t* src, uint32_t* dst, int64_t begin, int64_t width, int64_t limit) const {
    const int64_t mid = begin + width < limit ? begin + width : limit;
    const int64_t end = mid + width < limit ? mid + width : limit;
    int64_t a = begin;
    int64_t b = mid;
    for (int64_t out = begin; out < end; ++out) {
      dst[out] = b < end && (a == mid || pendingLess(src[b], src[a])) ? src[b++] : src[a++];
    }
  }

  /// Merge round `round` (from 1) of the pending slots: merges sorted runs of width
  /// kCommitSortRun << (round - 1) pairwise, from one permutation buffer into the other
  /// (sort_b into sort_a in odd rounds). Every path gives the one stable order.
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitMergeRound(const Policy& policy, int round) {
    const int64_t n = pendingCount();
    const uint32_t* src = round % 2 == 1 ? sort_b : sort_a;
    uint32_t* dst = round % 2 == 1 ? sort_a : sort_b;
    const int64_t width = kCommitSortRun << (round - 1);
    if constexpr (!kGridStrideOf<Policy>) {
      // The CPU's few threads: each merges whole pairs of runs front to back, the same
      // stable order as the binary searches below in linear time per round.
      parallelFor(policy, detail::ceilDiv(n, 2 * width),
                  [&](int64_t q) { mergeRuns(src, dst, q * 2 * width, width, n); });
      return;
    }
    // Each element finds its place by binary search in its partner run.
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

  /// The first phase's sort: each run of kCommitSortRun pending slots (the last one
  /// shorter) sorted into sort_b, stably. It reads only the pending keys, which the systems
  /// wrote before the commit, so it shares a phase with commitPrepare.
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitSortRuns(const Policy& policy) {
    const int64_t n = pendingCount();
    if constexpr (!kGridStrideOf<Policy>) {
      // The CPU's few threads: each sorts whole runs, merging widths 1, 2, 4, ... back and
      // forth between the run's ranges of sort_a and sort_b, which no other thread touches
      // in this phase.
      parallelFor(policy, detail::ceilDiv(n, kCommitSortRun), [&](int64_t q) {
        const int64_t begin = q * kCommitSortRun;
        const int64_t end = begin + kCommitSortRun < n ? begin + kCommitSortRun : n;
        uint32_t* from = sort_a;
        uint32_t* to = sort_b;
        for (int64_t i = begin; i < end; ++i) from[i] = static_cast<uint32_t>(i);
        for (int64_t width = 1; width < end - begin; width *= 2) {
          for (int64_t lo = begin; lo < end; lo += 2 * width) mergeRuns(from, to, lo, width, end);
          uint32_t* const was = from;
          from = to;
          to = was;
        }
        if (from != sort_b) {
          for (int64_t i = begin; i < end; ++i) sort_b[i] = from[i];
        }
      });
      return;
    }
    // A GPU: a slot's place in its run is the number of the run's slots before it in the
    // stable order, counted against every other slot of the run (the threads of a warp
    // read the same slots together).
    parallelFor(policy, n, [&](int64_t i) {
      const int64_t begin = i / kCommitSortRun * kCommitSortRun;
      const int64_t end = begin + kCommitSortRun < n ? begin + kCommitSortRun : n;
      int64_t place = begin;
      for (int64_t j = begin; j < end; ++j) {
        place += j < i ? !pendingLess(static_cast<uint32_t>(i), static_cast<uint32_t>(j))
                       : pendingLess(static_cast<uint32_t>(j), static_cast<uint32_t>(i));
      }
      sort_b[place] = static_cast<uint32_t>(i);
    });
  }

  /// Adds the first `groups` totals of a two-level scan's two counts to `a` and `b`.
  MV_HD static void addGroupTotals(const int64_t* totals_a, const int64_t* totals_b, int64_t groups, int64_t& a,
                                   int64_t& b) {
    for (int64_t g = 0; g < groups; ++g) {
      a += totals_a[g];
      b += totals_b[g];
    }
  }
  /// Live rows once this commit is done, from the counters settled before it.
  MV_HD int64_t liveAfterCommit() const { return live - destroyed + pendingCount(); }

  /**
   * The prefix sums' first level: each group of experiments and each group of chunks,
   * about sqrt(n) of them, is scanned within itself by one thread, so that no thread walks
   * more than about sqrt(n) items; commitRankRows adds the groups before. A blocked run's
   * new layout, with slack, is laid out by one thread (it shares the room out in
   * experiment order; only the CPU executor blocks runs, on a few threads).
   */
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitScan(const Policy& policy) {
    if (commit_slack != 0u) {
      if (policy.rank() == 0) commitLayoutWithSlack();
    } else {
      if (policy.rank() == 0 && liveAfterCommit() > capacity) status |= kStatusCapacityOverflow;
      const int64_t group = detail::ceilSqrt(num_exps);
      parallelFor(policy, detail::ceilDiv(num_exps, group), [&](int64_t g) {
        int64_t rows_sum = 0;
        int64_t pending_sum = 0;
        const int64_t end = (g + 1) * group < num_exps ? (g + 1) * group : num_exps;
        for (int64_t e = g * group; e < end; ++e) {
          exp_rows_alt[e] = exp_rows[e] - exp_destroyed[e] + exp_pending[e];
          exp_begin_alt[e] = rows_sum;
          exp_pending_before[e] = pending_sum;
          rows_sum += exp_rows_alt[e];
          pending_sum += exp_pending[e];
        }
        exp_group_rows[g] = rows_sum;
        exp_group_pending[g] = pending_sum;
      });
    }
    const int64_t chunks = chunkCount();
    const int64_t group = detail::ceilSqrt(chunks);
    parallelFor(policy, detail::ceilDiv(chunks, group), [&](int64_t g) {
      int64_t alive_sum = 0;
      int64_t dead_sum = 0;
      const int64_t end = (g + 1) * group < chunks ? (g + 1) * group : chunks;
      for (int64_t c = g * group; c < end; ++c) {
        const int64_t a = block_alive[c];
        const int64_t d = block_dead[c];
        block_alive[c] = alive_sum;
        block_dead[c] = dead_sum;
        alive_sum += a;
        dead_sum += d;
      }
      group_alive[g] = alive_sum;
      group_dead[g] = dead_sum;
    });
  }

  /// Rows experiment e's reserve asks for beyond its rows after this commit.
  MV_HD int64_t reserveBeyond(ExpId e) const {
    return exp_reserve[e] > exp_rows_alt[e] ? exp_reserve[e] - exp_rows_alt[e] : 0;
  }
  /// A blocked run's prefix sums over experiments and its new regions (one thread).
  MV_HD void commitLayoutWithSlack() {
    int64_t created = 0;
    int64_t next_live = 0;
    int64_t wanted = 0;  // slack every region would get
    for (uint32_t e = 0; e < num_exps; ++e) {
      exp_rows_alt[e] = exp_rows[e] - exp_destroyed[e] + exp_pending[e];
      exp_pending_before[e] = created;
      created += exp_pending[e];
      next_live += exp_rows_alt[e];
      wanted += exp_rows_alt[e] + kCommitSlackRows;
    }
    exp_pending_before[num_exps] = created;
    if (commit_in_place != 0u) {
      for (uint32_t e = 0; e <= num_exps; ++e) exp_begin_alt[e] = exp_begin[e];
      return;
    }
    if (next_live > capacity) {
      status |= kStatusCapacityOverflow;
      return;
    }
    // First each region's reserve beyond its rows, when every reserve fits; then as much
    // slack as its rows plus kCommitSlackRows, or else an even share of the room left,
    // handed out in experiment order.
    int64_t room = capacity - next_live;
    int64_t reserved = 0;
    for (uint32_t e = 0; e < num_exps; ++e) reserved += reserveBeyond(e);
    const bool reserve = reserved <= room;
    room -= reserve ? reserved : 0;
    const bool all = wanted <= room;
    int64_t begin = 0;
    for (uint32_t e = 0; e < num_exps; ++e) {
      const int64_t want = exp_rows_alt[e] + kCommitSlackRows;
      const int64_t share = room / (num_exps - e);
      const int64_t slack = all || want < share ? want : share;
      room -= slack;
      exp_begin_alt[e] = begin;
      begin += exp_rows_alt[e] + slack + (reserve ? reserveBeyond(e) : 0);
    }
    exp_begin_alt[num_exps] = begin;
  }

  /**
   * The prefix sums' second level, then per row the survivors before it; destroyed rows
   * free their slot (FIFO, generation bumped). Each experiment and each chunk adds the
   * totals of the groups before its own.
   */
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitRankRows(const Policy& policy) {
    if (status & kStatusCapacityOverflow) return;
    if (commit_slack == 0u) {
      const int64_t group = detail::ceilSqrt(num_exps);
      parallelFor(policy, num_exps, [&](int64_t e) {
        addGroupTotals(exp_group_rows, exp_group_pending, e / group, exp_begin_alt[e], exp_pending_before[e]);
      });
      if (policy.rank() == 0) {
        exp_begin_alt[num_exps] = 0;
        exp_pending_before[num_exps] = 0;
        addGroupTotals(exp_group_rows, exp_group_pending, detail::ceilDiv(num_exps, group), exp_begin_alt[num_exps],
                       exp_pending_before[num_exps]);
      }
    }
    const int64_t chunks = chunkCount();
    const int64_t group = detail::ceilSqrt(chunks);
    const int64_t free_tail = free_head + (capacity - live);
    if (chunks == 0 && policy.rank() == 0) alive_before[commit_end] = 0;
    parallelFor(policy, chunks, [&](int64_t c) {
      int64_t alive_rank = block_alive[c];
      int64_t dead_rank = block_dead[c];
      addGroupTotals(group_alive, group_dead, c / group, alive_rank, dead_rank);
      for (int64_t r = chunkBegin(c); r < chunkEnd(c); ++r) {
        alive_before[r] = alive_rank;
        if (exp[r] == kGapRow) continue;
        if (dead[r] != 0u) {
          const uint32_t index = entity[r].index;
          slot_gen[index] += 1;
          free_ring[ringSlot(free_tail + dead_rank)] = index;
          ++dead_rank;
        } else {
          ++alive_rank;
        }
      }
      if (c == chunks - 1) alive_before[commit_end] = alive_rank;
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
  MV_HD int64_t firstOldRowNotBelow(ExpId e, uint64_t k) const { return firstRowNotBelow(expBegin(e), expEnd(e), k); }
  /// First row of [lo, hi), rows of one experiment in key order, whose key is not below `k`.
  MV_HD int64_t firstRowNotBelow(int64_t lo, int64_t hi, uint64_t k) const {
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
  /// Copies `n` consecutive rows of every column, the handles, experiments and keys to the
  /// alternate columns, one block copy per column (the buffers do not overlap).
  template <class... Cs>
  MV_HD void copyRun(TypeList<Cs...>, int64_t from, int64_t to, int64_t n) const {
    (copyBlock(static_cast<const detail::ColumnSlot<Cs>&>(columns).cur + from,
               static_cast<const detail::ColumnSlot<Cs>&>(columns).alt + to, n),
     ...);
    copyBlock(entity + from, entity_alt + to, n);
    copyBlock(exp + from, exp_alt + to, n);
    copyBlock(key + from, key_alt + to, n);
    for (int64_t i = 0; i < n; ++i) slot_row[entity[from + i].index] = static_cast<uint32_t>(to + i);
  }
  template <class T>
  MV_HD static void copyBlock(const T* from, T* to, int64_t n) {
    memcpy(to, from, static_cast<size_t>(n) * sizeof(T));
  }
  template <class... Cs>
  MV_HD void copyPendingRow(TypeList<Cs...>, int64_t from, int64_t to) const {
    (copyPendingColumn<Cs>(from, to), ...);
  }
  /// Stores pending slot `from` as row `to` of the current columns (in-place commits).
  template <class... Cs>
  MV_HD void putPendingRow(TypeList<Cs...>, int64_t from, int64_t to) const {
    ((column<Cs>()[to] = static_cast<const detail::ColumnSlot<Cs>&>(columns).pending[from]), ...);
  }
  /// Moves a live row within the current columns (`closeGaps`, in-place commits).
  template <class... Cs>
  MV_HD void moveRow(TypeList<Cs...>, int64_t from, int64_t to) {
    if (from == to) return;
    ((column<Cs>()[to] = column<Cs>()[from]), ...);
    entity[to] = entity[from];
    exp[to] = exp[from];
    key[to] = key[from];
    slot_row[entity[to].index] = static_cast<uint32_t>(to);
  }
  template <class... Cs>
  MV_HD void swapColumns(TypeList<Cs...>) {
    (detail::swapPointers(static_cast<detail::ColumnSlot<Cs>&>(columns).cur,
                          static_cast<detail::ColumnSlot<Cs>&>(columns).alt),
     ...);
  }

  /// Moves survivors and new rows to their merged place in the alternate columns: within
  /// an experiment, rows are ordered by creation key. The new regions' slack becomes gap rows.
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitScatter(const Policy& policy) {
    if (status & kStatusCapacityOverflow) return;
    if (commit_in_place != 0u) {
      commitScatterInPlace(policy);
      return;
    }
    const uint32_t* sorted = sortedPending();
    if constexpr (kGridStrideOf<Policy>) {
      // One row per iteration: a row's place depends only on counts settled before, so a
      // GPU spreads the rows over the grid instead of one thread walking a block.
      parallelFor(policy, commit_end - commit_first, [&](int64_t i) {
        const int64_t r = commit_first + i;
        const ExpId e = exp[r];
        if (e == kGapRow || dropDead(r)) return;
        scatterSurvivor(r, newRowsBelow(sorted, e, key[r]));
      });
      parallelFor(policy, pendingCount(), [&](int64_t j) {
        const uint32_t s = sorted[j];
        scatterNew(sorted, j, firstOldRowNotBelow(pending_exp[s], pending_key[s]));
      });
    } else {
      // A contiguous share per thread: along it keys grow within each experiment, so each
      // row's count of new rows below it (and each new row's first old row not below it)
      // continues from the previous one's instead of a binary search per row.
      const int64_t n = commit_end - commit_first;
      const int64_t rows_end = commit_first + partBegin(n, policy.count(), policy.rank() + 1);
      // Survivors go in runs that stay consecutive at their destination (survivorRunEnd),
      // one block copy per column and run.
      ExpId at = kGapRow;
      int64_t below = 0;
      int64_t r = commit_first + partBegin(n, policy.count(), policy.rank());
      while (r < rows_end) {
        const ExpId e = exp[r];
        if (e == kGapRow || dropDead(r)) {
          ++r;
          continue;
        }
        const int64_t first_new = exp_pending_before[e];
        const int64_t news = exp_pending_before[e + 1] - first_new;
        if (e != at) {
          at = e;
          below = newRowsBelow(sorted, e, key[r]);
        } else {
          while (below < news && pending_key[sorted[first_new + below]] < key[r]) ++below;
        }
        const uint64_t next_new = below < news ? pending_key[sorted[first_new + below]] : ~uint64_t{0};
        const int64_t run_end = survivorRunEnd(r, rows_end < expEnd(e) ? rows_end : expEnd(e), next_new);
        copyRun(Components{}, r, survivorDest(r, below), run_end - r);
        r = run_end;
      }
      const int64_t m = pendingCount();
      const int64_t new_end = partBegin(m, policy.count(), policy.rank() + 1);
      at = kGapRow;
      int64_t p = 0;
      for (int64_t j = partBegin(m, policy.count(), policy.rank()); j < new_end; ++j) {
        const uint32_t s = sorted[j];
        const ExpId e = pending_exp[s];
        const uint64_t k = pending_key[s];
        if (e != at) {
          at = e;
          p = firstOldRowNotBelow(e, k);
        } else {
          while (p < expEnd(e) && key[p] < k) ++p;
        }
        scatterNew(sorted, j, p);
      }
    }
    parallelFor(policy, commit_exp_end - commit_exp_first, [&](int64_t i) {
      const auto e = static_cast<ExpId>(commit_exp_first + i);
      for (int64_t r = exp_begin_alt[e] + exp_rows_alt[e]; r < exp_begin_alt[e + 1]; ++r) exp_alt[r] = kGapRow;
    });
  }
  /// Clears row r's destruction mark; true when it had one (the row is dropped).
  MV_HD bool dropDead(int64_t r) const {
    if (dead[r] == 0u) return false;
    dead[r] = 0u;
    return true;
  }
  /// Survivor r's row in the new layout: after its experiment's survivors before it and
  /// the `below` new rows whose keys are below its own.
  MV_HD int64_t survivorDest(int64_t r, int64_t below) const {
    const ExpId e = exp[r];
    return exp_begin_alt[e] + (alive_before[r] - alive_before[exp_begin[e]]) + below;
  }
  /// One past the last row of the run from survivor r: the rows after it, up to `limit`,
  /// with no destroyed row and no new row (the next one's key is `next_new`) among them.
  MV_HD int64_t survivorRunEnd(int64_t r, int64_t limit, uint64_t next_new) const {
    const int64_t before_new = firstRowNotBelow(r + 1, limit, next_new);
    int64_t end = r + 1;
    while (end < before_new && dead[end] == 0u) ++end;
    return end;
  }
  /// Copies survivor r to its place (survivorDest) in the alternate columns.
  MV_HD void scatterSurvivor(int64_t r, int64_t below) const {
    const ExpId e = exp[r];
    const int64_t dest = survivorDest(r, below);
    copyRow(Components{}, r, dest);
    entity_alt[dest] = entity[r];
    exp_alt[dest] = e;
    key_alt[dest] = key[r];
    slot_row[entity[r].index] = static_cast<uint32_t>(dest);
  }
  /// Copies the j-th new row in sorted order to its place in the alternate columns, given
  /// p, its experiment's first old row whose key is not below its own, with its entity
  /// (newEntity); flags a key that another new or surviving row of the experiment already has.
  MV_HD void scatterNew(const uint32_t* sorted, int64_t j, int64_t p) {
    const uint32_t s = sorted[j];
    const ExpId e = pending_exp[s];
    const uint64_t k = pending_key[s];
    const bool twin_new = j > 0 && pending_exp[sorted[j - 1]] == e && pending_key[sorted[j - 1]] == k;
    const bool twin_old = p < expEnd(e) && key[p] == k && alive_before[p + 1] > alive_before[p];
    if (twin_new || twin_old) atomicFetchOr<uint32_t>(&status, kStatusDuplicateKey);
    const int64_t dest =
        exp_begin_alt[e] + (j - exp_pending_before[e]) + (alive_before[p] - alive_before[exp_begin[e]]);
    copyPendingRow(Components{}, s, dest);
    exp_alt[dest] = e;
    key_alt[dest] = k;
    entity_alt[dest] = newEntity(j, dest);
  }
  /// The entity of the j-th new row in sorted order, placed at row `dest`: the free indices
  /// go oldest first (commitRankRows appended this commit's freed ones) to the new rows in
  /// sorted order.
  MV_HD Entity newEntity(int64_t j, int64_t dest) const {
    const uint32_t index = free_ring[ringSlot(free_head + j)];
    slot_row[index] = static_cast<uint32_t>(dest);
    return Entity{index, slot_gen[index]};
  }

  /**
   * The in-place scatter: each changed experiment's region is rewritten by one thread
   * within the current columns. Survivors move down over the destroyed rows (front to
   * back), then the new rows are merged in from the back, so rows before the first change
   * are not copied and no row goes through the alternate columns; rows the region no
   * longer needs become gap rows. Same rows, order and handles as the other scatter.
   */
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitScatterInPlace(const Policy& policy) {
    const uint32_t* sorted = sortedPending();
    parallelFor(policy, commit_exp_end - commit_exp_first, [&](int64_t i) {
      const auto e = static_cast<ExpId>(commit_exp_first + i);
      if (!changes(e)) return;
      const int64_t begin = exp_begin[e];
      const int64_t old_end = begin + exp_rows[e];
      int64_t survivors_end = begin;
      for (int64_t r = begin; r < old_end; ++r) {
        if (dead[r] != 0u) {
          dead[r] = 0u;
          continue;
        }
        moveRow(Components{}, r, survivors_end);
        ++survivors_end;
      }
      int64_t s = survivors_end;
      int64_t out = begin + exp_rows_alt[e];
      const int64_t first_new = exp_pending_before[e];
      for (int64_t j = exp_pending_before[e + 1] - 1; j >= first_new; --j) {
        const uint32_t p = sorted[j];
        const uint64_t k = pending_key[p];
        while (s > begin && key[s - 1] > k) moveRow(Components{}, --s, --out);
        const bool twin_new = j > first_new && pending_key[sorted[j - 1]] == k;
        const bool twin_old = s > begin && key[s - 1] == k;
        if (twin_new || twin_old) atomicFetchOr<uint32_t>(&status, kStatusDuplicateKey);
        --out;
        putPendingRow(Components{}, p, out);
        exp[out] = e;
        key[out] = k;
        entity[out] = newEntity(j, out);
      }
      for (int64_t r = begin + exp_rows_alt[e]; r < old_end; ++r) exp[r] = kGapRow;
    });
  }

  /// True when this commit creates or destroys rows of experiment e. Read from the prefix
  /// sums, not exp_pending and exp_destroyed, which the scatter's phase resets.
  MV_HD bool changes(ExpId e) const {
    return exp_pending_before[e + 1] != exp_pending_before[e] || exp_rows_alt[e] != exp_rows[e];
  }

  /// Counts the commit in each changed experiment's generation and layout and resets its
  /// counters. Runs in the scatter's phase: nothing there reads exp_pending or exp_destroyed.
  MV_EXEC_CHECK_DISABLE
  template <class Policy>
  MV_HD void commitCountChanges(const Policy& policy) {
    if (status & kStatusCapacityOverflow) return;
    parallelFor(policy, num_exps, [&](int64_t e) {
      if (exp_pending[e] != 0) exp_generation[e] += 1;
      if (exp_pending[e] != 0 || exp_destroyed[e] != 0) exp_layout[e] += 1;
      exp_pending[e] = 0;
      exp_destroyed[e] = 0;
    });
  }
};

}  // namespace mv
