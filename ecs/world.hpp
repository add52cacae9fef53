/**
 * @file world.hpp
 * The batch of experiments: one table per archetype (all experiments in each), one clock
 * and one configuration row per experiment. `WorldView` is the device-compatible part
 * (pointers and counters); `World` owns its buffers on the host, grows tables between
 * runs, and lists every pointer field so a backend can mirror the view in device memory.
 */
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ecs/entity.hpp"
#include "ecs/host_buffer.hpp"
#include "ecs/macros.hpp"
#include "ecs/policy.hpp"
#include "ecs/table.hpp"
#include "ecs/type_list.hpp"
#include "ecs/units.hpp"

namespace mv {

/// Why an experiment stopped.
enum class Outcome : uint32_t {
  kRunning = 0,
  kDrained = 1,    ///< no event pending anywhere in the experiment
  kTimeLimit = 2,  ///< its clock reached its end time
  kHeld = 3,       ///< set aside by the CPU executor while other experiments of its batch run
                   ///< (experiment blocking); reset to kRunning before the run returns
};

/// Per-experiment clock. A step covers [now, now + lookahead); the clock then jumps to
/// max(now + lookahead, earliest pending event) so idle windows cost nothing.
struct ExperimentClock {
  int64_t now_ps = 0;
  int64_t lookahead_ps = 1;
  int64_t end_ps = kTimeHorizonPs;  ///< stop when the clock reaches this time
  int64_t next_wake_ps = INT64_MAX; ///< earliest pending event reported during this step
  int64_t steps = 0;
  uint64_t seed = 0;                ///< root of the experiment's random streams
  Outcome outcome = Outcome::kRunning;
  uint32_t stable_id = 0;  ///< the experiment's id in its sweep, independent of its batch slot

  MV_HD bool done() const { return outcome != Outcome::kRunning; }
};
static_assert(sizeof(ExperimentClock) == 56);

/// World-level status bits (in addition to the table bits of table.hpp).
enum WorldStatus : uint32_t {
  kWorldStepLimit = 1u << 8,  ///< the run stopped at its step budget with work left
};

namespace detail {
template <class... Archs>
struct TableSet : TableView<Archs>... {};
}  // namespace detail

/// Device-compatible state of a batch. One instance is shared by all threads of a run.
template <class Config, class... Archs>
struct WorldView {
  using Archetypes = TypeList<Archs...>;
  using ConfigType = Config;
  static_assert(AllDistinct<Archetypes>::value, "each archetype is declared once");
  static_assert(std::is_trivially_copyable_v<Config>, "config rows must be trivially copyable");

  detail::TableSet<Archs...> tables;
  ExperimentClock* clocks = nullptr;
  Config* configs = nullptr;
  uint32_t num_exps = 0;
  uint32_t status = 0;     ///< union of WorldStatus and every table's TableStatus
  /// Experiments outside [run_first, run_end) are held or done for the whole run (the CPU
  /// executor's block, see CpuExecutor), so systems visit only the rows of this range;
  /// run_end at or past num_exps means "to the last experiment".
  uint32_t run_first = 0;
  uint32_t run_end = UINT32_MAX;
  int64_t active[2] = {0, 0};  ///< per step parity: advance_clocks arrivals (from bit 32) and experiments still running
  uint32_t stop[2] = {0, 0};   ///< the run must stop after this step, per step parity
  int64_t steps_run = 0;       ///< steps run since the world was made

  template <class A>
  MV_HD TableView<A>& table() {
    static_assert(kContains<A, Archetypes>, "archetype not declared in this world");
    return static_cast<TableView<A>&>(tables);
  }
  template <class A>
  MV_HD const TableView<A>& table() const {
    static_assert(kContains<A, Archetypes>, "archetype not declared in this world");
    return static_cast<const TableView<A>&>(tables);
  }
  /// Reports that experiment `e` has an event at `t`: the clock will not jump past it.
  MV_HD void wakeAt(ExpId e, Picoseconds t) { atomicFetchMin<int64_t>(&clocks[e].next_wake_ps, t.ps); }
  /// Union of the status bits of the world and all its tables.
  MV_HD uint32_t allStatus() const { return (status | ... | table<Archs>().status); }
  /// Removes the slack a blocked run left in the tables (TableView::closeGaps). Host only.
  void closeGaps() { (table<Archs>().closeGaps(), ...); }
};

/// Sizes of one table.
struct TableCapacity {
  int64_t rows = 1024;           ///< live rows over all experiments
  int64_t pending_per_step = 1024;  ///< creations per step over all experiments
};

/**
 * Host owner of a `WorldView`'s buffers. Not copyable; tables keep their capacity during a
 * run and grow only between runs (`grow`, or automatically in `createHost`).
 */
template <class Config, class... Archs>
class World {
 public:
  using View = WorldView<Config, Archs...>;
  using Archetypes = TypeList<Archs...>;

  /// Creates a batch of `num_exps` experiments; every table starts with `capacity`.
  explicit World(uint32_t num_exps, TableCapacity capacity = {}) {
    if (num_exps == 0) throw std::invalid_argument("a world needs at least one experiment");
    view_.num_exps = num_exps;
    allocate(view_.clocks, num_exps);
    allocate(view_.configs, num_exps);
    for (uint32_t e = 0; e < num_exps; ++e) {
      view_.clocks[e] = ExperimentClock{};
      view_.clocks[e].stable_id = e;
      view_.configs[e] = Config{};
    }
    (allocateTable<Archs>(capacity), ...);
  }
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  View& view() { return view_; }
  const View& view() const { return view_; }
  uint32_t numExperiments() const { return view_.num_exps; }
  Config& config(ExpId e) { return view_.configs[checkExp(e)]; }
  ExperimentClock& clock(ExpId e) { return view_.clocks[checkExp(e)]; }
  template <class A>
  TableView<A>& table() {
    return view_.template table<A>();
  }

  /// Creates a row from the host (set-up), committing and growing the table as needed.
  template <class A, class... Cs>
  void createHost(ExpId e, uint64_t key, const Cs&... values) {
    checkExp(e);
    TableView<A>& t = table<A>();
    if (t.pending >= t.pending_capacity) commitHost<A>();
    if (t.live + t.pending >= t.capacity) {
      commitHost<A>();
      grow<A>(TableCapacity{t.capacity * 2, t.pending_capacity});
    }
    t.create(e, key, values...);
  }

  /**
   * Appends `count` zeroed rows of experiment `e` to a static table (one made with
   * `pending_per_step = 0`: pooled storage filled by the host, never resized in a run).
   * Experiments must be filled in increasing order. Row keys are their index within the
   * experiment (a StaticArchetype stores none: its rows have no handles, see
   * visitTableBuffers, and systems see the index as the key). Returns the first new row.
   */
  template <class A>
  int64_t appendStatic(ExpId e, int64_t count) {
    checkExp(e);
    TableView<A>& t = table<A>();
    if (t.pending_capacity != 0) throw std::logic_error(std::string("table ") + A::kName + " is not static");
    if (t.rows != t.exp_begin[view_.num_exps]) throw std::logic_error("static table out of sync");
    if (t.rows > t.exp_begin[e + 1]) throw std::logic_error("static rows must be appended in experiment order");
    // At least double (appends stay amortised O(1)), but no more than needed: a first large
    // append (one experiment's packet storage) gets exactly its rows, not twice them.
    if (t.rows + count > t.capacity) grow<A>(TableCapacity{std::max(t.rows + count, 2 * t.capacity), 0});
    const int64_t first = t.rows;
    const int64_t local0 = first - t.exp_begin[e];
    if constexpr (!PoolArchetype<A>) {  // a pool's rows are zero bytes already and keep no experiment
      for (int64_t i = 0; i < count; ++i) {
        const int64_t r = first + i;
        t.exp[r] = e;
        if constexpr (!StaticArchetype<A>) {
          const uint32_t index = t.free_ring[(t.free_head + i) % t.capacity];
          t.entity[r] = Entity{index, t.slot_gen[index]};
          t.slot_row[index] = static_cast<uint32_t>(r);
          t.key[r] = static_cast<uint64_t>(local0 + i);
        }
      }
      zeroRows(t, first, count, typename A::Components{});
    }
    if (t.capacity > 0) t.free_head = (t.free_head + count) % t.capacity;
    t.rows += count;
    t.live += count;
    t.exp_rows[e] += count;
    for (uint32_t x = e + 1; x <= view_.num_exps; ++x) t.exp_begin[x] = t.rows;
    return first;
  }

  /// Commits pending creations and destructions of table A on the calling thread.
  template <class A>
  void commitHost() {
    TableView<A>& t = table<A>();
    const SerialPolicy serial;
    const int phases = t.commitPhaseCount();
    for (int p = 0; p < phases; ++p) t.commitPhase(serial, p);
    t.commitFinish();
    if (t.status != kStatusOk) throw std::runtime_error(statusMessage(t.status, A::kName));
  }
  /// Commits every table.
  void commitAllHost() { (commitHost<Archs>(), ...); }

  /// Grows table A to at least `capacity` (rows are kept; pending rows must be committed).
  template <class A>
  void grow(TableCapacity capacity) {
    TableView<A>& t = table<A>();
    if (t.pending != 0 || t.destroyed != 0) commitHost<A>();
    if (capacity.rows <= t.capacity && capacity.pending_per_step <= t.pending_capacity) return;
    reallocate<A>(TableCapacity{std::max(capacity.rows, t.capacity),
                                std::max(capacity.pending_per_step, t.pending_capacity)});
  }

  /**
   * Asks that experiment e's region of table A hold `rows` rows whenever a blocked run lays
   * the table out (TableView::exp_reserve): for a table that fills up during the run and
   * whose final rows per experiment are known, such as flow records. Without it, a table
   * sized exactly is laid out again by most commits as it fills, each time whole. Layout
   * only: rows, handles and results do not depend on it.
   */
  template <class A>
  void reserveRegion(ExpId e, int64_t rows) {
    if (rows < 0) throw std::invalid_argument(std::string("negative region reserve for table ") + A::kName);
    table<A>().exp_reserve[e] = rows;
  }

  /**
   * Shrinks every static table to exactly its rows, releasing the headroom `appendStatic`
   * leaves when it doubles a table; rows, keys and handles stay as they are, and a later
   * `appendStatic` grows the table again. Call it once a batch is filled.
   */
  void fitStaticTables() { (fitStatic<Archs>(), ...); }

  /// Byte offsets (within the view) of every pointer field that refers to a buffer.
  const std::vector<std::size_t>& pointerFields() const { return fields_; }
  /// Size in bytes of the buffer a view pointer refers to.
  std::size_t bufferBytes(const void* p) const { return buffers_.at(p).bytes; }
  /// Byte range [first, second) of the view that table A's fields occupy.
  template <class A>
  std::pair<std::size_t, std::size_t> tableSpan() const {
    const auto* view = reinterpret_cast<const std::byte*>(&view_);
    const auto* table = reinterpret_cast<const std::byte*>(&view_.template table<A>());
    const auto lo = static_cast<std::size_t>(table - view);
    return {lo, lo + sizeof(TableView<A>)};
  }
  /// Byte range of the view holding the per-experiment clocks and configuration pointers.
  std::pair<std::size_t, std::size_t> clockAndConfigSpan() const {
    const auto* view = reinterpret_cast<const std::byte*>(&view_);
    const auto lo = static_cast<std::size_t>(reinterpret_cast<const std::byte*>(&view_.clocks) - view);
    const auto hi = static_cast<std::size_t>(reinterpret_cast<const std::byte*>(&view_.configs) - view);
    return {std::min(lo, hi), std::max(lo, hi) + sizeof(Config*)};
  }
  /// Bytes held by the buffers of table A (columns, compaction and pending areas, indices).
  template <class A>
  std::size_t tableBytes() const {
    const auto [lo, hi] = tableSpan<A>();
    const auto* view = reinterpret_cast<const std::byte*>(&view_);
    std::size_t n = 0;
    for (std::size_t field : fields_) {
      if (field < lo || field >= hi) continue;
      const void* buffer = nullptr;
      std::memcpy(&buffer, view + field, sizeof(buffer));
      n += buffers_.at(buffer).bytes;
    }
    return n;
  }
  /**
   * Bytes table A's buffers would hold at `capacity`, computed without allocating (the same
   * buffers `grow` allocates): how a caller counts a table it does not fill, such as a
   * static table fitted to a known number of rows.
   */
  template <class A>
  std::size_t tableBytesAt(TableCapacity capacity) const {
    TableView<A> t = view_.template table<A>();
    std::size_t n = 0;
    visitTableBuffers(t, capacity.rows, StaticArchetype<A> ? 0 : capacity.pending_per_step,
                      [&n](auto* field, int64_t count) { n += bufferBytesFor<std::remove_pointer_t<decltype(field)>>(count); });
    return n;
  }
  /// Bytes held by all buffers of the world.
  std::size_t totalBytes() const {
    std::size_t n = 0;
    for (const auto& [p, b] : buffers_) n += b.bytes;
    return n;
  }

  /// Explains table status bits for the user.
  static std::string statusMessage(uint32_t status, const char* table_name) {
    std::string m = std::string("table ") + table_name + ":";
    if (status & kStatusPendingOverflow) m += " more rows created in one step than its pending capacity;";
    if (status & kStatusCapacityOverflow) m += " live rows exceed its capacity;";
    if (status & kStatusDuplicateKey) m += " two rows of one experiment were created with the same key;";
    if (status & kStatusStaticTable) m += " rows of this static table were created or destroyed inside a run;";
    return m;
  }

 private:
  struct Buffer {
    HostBuffer data;
    std::size_t bytes = 0;
  };

  ExpId checkExp(ExpId e) const {
    if (e >= view_.num_exps) throw std::out_of_range("experiment id out of range");
    return e;
  }

  /// Bytes of a buffer of `count` T (at least one: every field points at a buffer).
  template <class T>
  static std::size_t bufferBytesFor(int64_t count) {
    return sizeof(T) * static_cast<std::size_t>(count > 0 ? count : 1);
  }

  template <class T>
  void allocate(T*& field, int64_t count) {
    const std::size_t offset = reinterpret_cast<const std::byte*>(&field) - reinterpret_cast<const std::byte*>(&view_);
    bool known = false;
    for (std::size_t f : fields_) known = known || f == offset;
    if (!known) fields_.push_back(offset);
    const std::size_t bytes = bufferBytesFor<T>(count);
    Buffer b{allocateHostBuffer(bytes), bytes};  // zero-filled
    field = reinterpret_cast<T*>(b.data.get());
    buffers_.emplace(b.data.get(), std::move(b));
  }
  /// Rows of table A's experiment-id column for `rows` rows (none for a pool).
  template <class A>
  static int64_t expIdRows(int64_t rows) {
    return PoolArchetype<A> ? 0 : rows;
  }
  /// Calls f(pointer field, element count) for every buffer of table A. Static tables
  /// (no creations per step) get no compaction or pending buffers, and a StaticArchetype
  /// no handles, keys or free list either: its rows are addressed by row, and a row costs
  /// its components and its experiment id (half the bytes of a task state, for example).
  template <class A, class F>
  void visitTableBuffers(TableView<A>& t, int64_t rows, int64_t pend, F&& f) const {
    const int64_t exps = view_.num_exps;
    const int64_t moving = pend > 0 ? rows : 0;
    const int64_t handles = StaticArchetype<A> ? 0 : rows;
    const int64_t chunks = detail::ceilDiv(moving, kCommitChunkMinRows);
    const int64_t chunk_groups = detail::ceilSqrt(chunks);
    const int64_t exp_groups = pend > 0 ? detail::ceilSqrt(exps) : 0;
    visitColumns(t, rows, moving, pend, f, typename A::Components{});
    f(t.entity, handles);
    f(t.entity_alt, moving);
    f(t.exp, expIdRows<A>(rows));
    f(t.exp_alt, moving);
    f(t.key, handles);
    f(t.key_alt, moving);
    f(t.dead, handles);
    f(t.pending_exp, pend);
    f(t.pending_key, pend);
    f(t.sort_a, pend);
    f(t.sort_b, pend);
    f(t.slot_row, handles);
    f(t.slot_gen, handles);
    f(t.free_ring, handles);
    f(t.exp_begin, exps + 1);
    f(t.exp_begin_alt, exps + 1);
    f(t.exp_rows, exps);
    f(t.exp_rows_alt, exps);
    f(t.exp_pending, exps);
    f(t.exp_destroyed, exps);
    f(t.exp_generation, exps);
    f(t.exp_layout, exps);
    f(t.exp_reserve, exps);
    f(t.exp_pending_before, exps + 1);
    f(t.exp_group_rows, exp_groups);
    f(t.exp_group_pending, exp_groups);
    f(t.block_alive, chunks);
    f(t.block_dead, chunks);
    f(t.group_alive, chunk_groups);
    f(t.group_dead, chunk_groups);
    f(t.alive_before, moving + 1);
  }
  template <class A, class F, class... Cs>
  void visitColumns(TableView<A>& t, int64_t rows, int64_t moving, int64_t pend, F& f, TypeList<Cs...>) const {
    ((f(static_cast<detail::ColumnSlot<Cs>&>(t.columns).cur, rows),
      f(static_cast<detail::ColumnSlot<Cs>&>(t.columns).alt, moving),
      f(static_cast<detail::ColumnSlot<Cs>&>(t.columns).pending, pend)),
     ...);
  }
  template <class A, class... Cs>
  void zeroRows(TableView<A>& t, int64_t first, int64_t count, TypeList<Cs...>) {
    ((std::fill(t.template column<Cs>() + first, t.template column<Cs>() + first + count, Cs{})), ...);
  }
  template <class A, class... Cs>
  void copyColumns(TableView<A>& to, const TableView<A>& from, TypeList<Cs...>) {
    (copyIntoZeroed(to.template column<Cs>(), from.template column<Cs>(), sizeof(Cs) * from.rows), ...);
  }

  template <class A>
  void fitStatic() {
    const TableView<A>& t = table<A>();
    if (t.pending_capacity == 0 && t.rows > 0 && t.rows < t.capacity) reallocate<A>(TableCapacity{t.rows, 0});
  }

  /// Moves table A into new buffers of `capacity` rows (at least its rows and slack; every
  /// entity index in use must stay below it), keeping rows, handles and the order of free
  /// indices.
  template <class A>
  void reallocate(TableCapacity capacity) {
    TableView<A>& t = table<A>();
    const TableView<A> old = t;
    const int64_t rows = capacity.rows;
    if constexpr (StaticArchetype<A>) {
      if (rows < old.rows) throw std::logic_error(std::string("table ") + A::kName + ": rows do not fit the new capacity");
      allocateTable<A>(capacity);
      copyColumns(t, old, typename A::Components{});
      copyExperimentRows(t, old);
      return;
    }
    std::vector<uint32_t> free_indices;
    for (int64_t i = 0; i < old.capacity - old.live; ++i) {
      const uint32_t index = old.free_ring[(old.free_head + i) % old.capacity];
      if (index < rows) free_indices.push_back(index);
    }
    for (int64_t i = old.capacity; i < rows; ++i) free_indices.push_back(static_cast<uint32_t>(i));
    if (rows < old.rows || static_cast<int64_t>(free_indices.size()) != rows - old.live) {
      throw std::logic_error(std::string("table ") + A::kName + ": live rows do not fit the new capacity");
    }
    allocateTable<A>(capacity);
    copyColumns(t, old, typename A::Components{});
    std::memcpy(t.entity, old.entity, sizeof(Entity) * old.rows);
    std::memcpy(t.key, old.key, sizeof(uint64_t) * old.rows);
    const int64_t slots = std::min(old.capacity, rows);
    std::memcpy(t.slot_row, old.slot_row, sizeof(uint32_t) * slots);
    std::memcpy(t.slot_gen, old.slot_gen, sizeof(uint32_t) * slots);
    if (!free_indices.empty()) {  // data() of an empty vector may be null, which memcpy may not take
      std::memcpy(t.free_ring, free_indices.data(), sizeof(uint32_t) * free_indices.size());
    }
    copyExperimentRows(t, old);
  }

  /// Part of `reallocate`: copies the experiment ids of `old`'s rows, its per-experiment
  /// regions and counters into the freshly allocated `t`, then releases `old`.
  template <class A>
  void copyExperimentRows(TableView<A>& t, const TableView<A>& old) {
    std::memcpy(t.exp, old.exp, sizeof(ExpId) * expIdRows<A>(old.rows));
    std::memcpy(t.exp_begin, old.exp_begin, sizeof(int64_t) * (view_.num_exps + 1));
    std::memcpy(t.exp_rows, old.exp_rows, sizeof(int64_t) * view_.num_exps);
    std::memcpy(t.exp_generation, old.exp_generation, sizeof(uint32_t) * view_.num_exps);
    std::memcpy(t.exp_layout, old.exp_layout, sizeof(uint32_t) * view_.num_exps);
    std::memcpy(t.exp_reserve, old.exp_reserve, sizeof(int64_t) * view_.num_exps);
    t.free_head = 0;
    t.rows = old.rows;
    t.live = old.live;
    t.status = old.status;
    releaseTable(old);
  }

  template <class A>
  void allocateTable(TableCapacity capacity) {
    if (capacity.rows <= 0 || capacity.pending_per_step < 0 || capacity.rows >= (int64_t{1} << 32)) {
      throw std::invalid_argument(std::string("bad capacity for table ") + A::kName);
    }
    TableView<A>& t = table<A>();
    const int64_t rows = capacity.rows;
    const int64_t pend = StaticArchetype<A> ? 0 : capacity.pending_per_step;
    visitTableBuffers(t, rows, pend, [&](auto*& field, int64_t count) { allocate(field, count); });
    if constexpr (!StaticArchetype<A>) {
      for (int64_t i = 0; i < rows; ++i) t.free_ring[i] = static_cast<uint32_t>(i);
    }
    t.capacity = rows;
    t.pending_capacity = pend;
    t.rows = 0;
    t.live = 0;
    t.pending = 0;
    t.destroyed = 0;
    t.free_head = 0;
    t.num_exps = view_.num_exps;
    t.status = kStatusOk;
  }

  template <class A>
  void releaseTable(TableView<A> t) {
    visitTableBuffers(t, 0, 0, [this](auto* field, int64_t) { buffers_.erase(field); });
  }

  View view_;
  std::vector<std::size_t> fields_;
  std::unordered_map<const void*, Buffer> buffers_;
};

/// World<Config, As...> for a TypeList<As...> of archetypes (composing modules' lists).
template <class Config, class List>
struct WorldOf;
template <class Config, class... As>
struct WorldOf<Config, TypeList<As...>> {
  using type = World<Config, As...>;
};
template <class Config, class List>
using WorldOfT = typename WorldOf<Config, List>::type;

}  // namespace mv
