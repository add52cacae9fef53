/**
 * @file test_table.cpp
 * Archetype tables: growth, creation and destruction with compaction, stable handles,
 * grouping by experiment, concurrent reservations, and the error bits.
 */
#include <catch2/catch.hpp>
#include <omp.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "ecs/system.hpp"
#include "ecs/world.hpp"

using namespace mv;

namespace {

struct Value {
  int64_t v = 0;
};
struct Tag {
  uint32_t t = 0;
};
struct Item : Archetype<Value, Tag> {
  static constexpr const char* kName = "Item";
};
struct NoConfig {};
using ItemWorld = World<NoConfig, Item>;

/// A static archetype: host-filled pooled storage whose rows have no handles.
struct Pooled : Archetype<Value> {
  static constexpr const char* kName = "Pooled";
  static constexpr bool kStatic = true;
};
using PooledWorld = World<NoConfig, Pooled>;

/// Writes what a system sees of each row: key · 10, plus 1 when the row has no handle.
struct SeeRow {
  static void run(const RowContext<PooledWorld::View>& ctx, Value& v) {
    v.v = static_cast<int64_t>(ctx.key) * 10 + (ctx.self.isNone() ? 1 : 0);
  }
};

/// Values of experiment e in row order.
std::vector<int64_t> valuesOf(ItemWorld& w, ExpId e) {
  std::vector<int64_t> out;
  auto& t = w.table<Item>();
  for (int64_t r = t.expBegin(e); r < t.expEnd(e); ++r) out.push_back(t.get<Value>(r).v);
  return out;
}

/// OpenMP threads as an execution policy: contiguous loop shares (the CPU's), or
/// grid-stride ones (a CUDA grid's) when `kStride`.
template <bool kStride>
struct OmpPolicy {
  static constexpr bool kGridStride = kStride;
  int64_t rank() const { return omp_get_thread_num(); }
  int64_t count() const { return omp_get_num_threads(); }
  void barrier() const {
#pragma omp barrier
  }
};

/// Thread `r` of a team of `n` that runs one after another (a barrier is the end of a
/// phase): a grid of any width on one host thread.
template <bool kStride>
struct VirtualThread {
  static constexpr bool kGridStride = kStride;
  int64_t r;
  int64_t n;
  int64_t rank() const { return r; }
  int64_t count() const { return n; }
  void barrier() const {}
};

/// Commits table Item as a team of `threads` virtual threads, each phase thread by thread,
/// for a run that visits experiments [run_first, run_end) (by default all).
template <bool kGridStride>
void commitVirtual(ItemWorld& w, int threads, uint32_t run_first = 0, uint32_t run_end = UINT32_MAX) {
  auto& t = w.table<Item>();
  const int phases = t.commitPhaseCount();
  for (int p = 0; p < phases; ++p) {
    for (int r = 0; r < threads; ++r) t.commitPhase(VirtualThread<kGridStride>{r, threads}, p, run_first, run_end);
  }
  t.commitFinish();
}

/// Commits table Item with a policy of `threads` OpenMP threads, for a run that visits
/// experiments [run_first, run_end) (a block of the CPU executor; by default all).
template <bool kGridStride = false>
void commitParallel(ItemWorld& w, int threads, uint32_t run_first = 0, uint32_t run_end = UINT32_MAX) {
  auto& t = w.table<Item>();
  const int phases = t.commitPhaseCount();
#pragma omp parallel num_threads(threads)
  {
    const OmpPolicy<kGridStride> policy;
    for (int p = 0; p < phases; ++p) {
      t.commitPhase(policy, p, run_first, run_end);
#pragma omp barrier
    }
  }
  t.commitFinish();
}

}  // namespace

TEST_CASE("a table grows past its initial capacity and keeps its rows", "[table]") {
  ItemWorld w(3, TableCapacity{4, 2});
  for (int i = 0; i < 100; ++i) w.createHost<Item>(static_cast<ExpId>(i % 3), static_cast<uint64_t>(i), Value{i}, Tag{1});
  w.commitAllHost();
  auto& t = w.table<Item>();
  CHECK(t.rows == 100);
  CHECK(t.capacity >= 100);
  // Rows are grouped by experiment and, within one, ordered by creation key.
  for (ExpId e = 0; e < 3; ++e) {
    const std::vector<int64_t> v = valuesOf(w, e);
    CHECK(static_cast<int64_t>(v.size()) == t.expRows(e));
    CHECK(std::is_sorted(v.begin(), v.end()));
    for (int64_t x : v) CHECK(x % 3 == e);
  }
  CHECK(t.expBegin(0) == 0);
  CHECK(t.expEnd(2) == 100);
}

TEST_CASE("destroyed rows disappear, survivors keep order and handles, stale handles fail", "[table]") {
  ItemWorld w(2, TableCapacity{64, 64});
  for (int i = 0; i < 20; ++i) w.createHost<Item>(static_cast<ExpId>(i / 10), static_cast<uint64_t>(i), Value{i}, Tag{0});
  w.commitAllHost();
  auto& t = w.table<Item>();
  std::vector<Entity> handles;
  for (int64_t r = 0; r < t.rows; ++r) handles.push_back(t.entity[r]);

  for (int i = 0; i < 20; i += 3) CHECK(t.destroy(handles[static_cast<size_t>(i)]));
  t.destroyRow(t.rowOf(handles[0]));  // twice: harmless
  w.commitAllHost();

  CHECK(t.rows == 20 - 7);
  for (int i = 0; i < 20; ++i) {
    const bool destroyed = i % 3 == 0;
    CHECK(t.isAlive(handles[static_cast<size_t>(i)]) == !destroyed);
    if (!destroyed) CHECK(t.get<Value>(t.rowOf(handles[static_cast<size_t>(i)])).v == i);
  }
  CHECK_FALSE(t.destroy(handles[0]));
  CHECK(valuesOf(w, 0) == std::vector<int64_t>{1, 2, 4, 5, 7, 8});
  CHECK(valuesOf(w, 1) == std::vector<int64_t>{10, 11, 13, 14, 16, 17, 19});

  // A recycled slot gets a new generation: the old handle stays dead. New rows are merged
  // in creation-key order among the survivors.
  w.createHost<Item>(0, 100, Value{100}, Tag{0});
  w.createHost<Item>(0, 3, Value{-3}, Tag{0});
  w.commitAllHost();
  for (int i = 0; i < 20; i += 3) CHECK_FALSE(t.isAlive(handles[static_cast<size_t>(i)]));
  CHECK(valuesOf(w, 0) == std::vector<int64_t>{1, 2, -3, 4, 5, 7, 8, 100});
  for (int64_t r = 0; r < t.rows; ++r) CHECK(t.rowOf(t.entity[r]) == r);
}

TEST_CASE("concurrent creation and destruction lose and duplicate nothing, for any thread count", "[table]") {
  constexpr int kExps = 5;
  constexpr int kPerExp = 3000;
  std::vector<std::vector<int64_t>> reference;
  for (int threads : {1, 2, 4}) {
    ItemWorld w(kExps, TableCapacity{kExps * kPerExp * 2, kExps * kPerExp});
    for (int i = 0; i < kExps * kPerExp; ++i) {
      w.createHost<Item>(static_cast<ExpId>(i % kExps), static_cast<uint64_t>(i), Value{i}, Tag{0});
    }
    w.commitAllHost();
    auto& t = w.table<Item>();
    const int64_t rows = t.rows;
    // In parallel: destroy every row whose value is divisible by 4, and create one new
    // row per row whose value is odd (key derived from the creator, value negated).
#pragma omp parallel for num_threads(threads) schedule(dynamic, 7)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t v = t.get<Value>(r).v;
      if (v % 4 == 0) t.destroyRow(r);
      if (v % 2 == 1) t.create(t.exp[r], static_cast<uint64_t>(1'000'000 + v), Value{-v}, Tag{1});
    }
    commitParallel(w, threads);
    REQUIRE(t.status == kStatusOk);
    CHECK(t.rows == kExps * kPerExp - kExps * kPerExp / 4 + kExps * kPerExp / 2);

    std::set<int64_t> seen;
    std::set<uint32_t> indices;
    for (int64_t r = 0; r < t.rows; ++r) {
      CHECK(seen.insert(t.get<Value>(r).v).second);
      CHECK(indices.insert(t.entity[r].index).second);
      CHECK(t.rowOf(t.entity[r]) == r);
    }
    for (int i = 0; i < kExps * kPerExp; ++i) {
      CHECK(seen.count(i) == (i % 4 == 0 ? 0u : 1u));
      if (i % 2 == 1) CHECK(seen.count(-i) == 1u);
    }
    std::vector<std::vector<int64_t>> per_exp;
    for (ExpId e = 0; e < kExps; ++e) {
      per_exp.push_back(valuesOf(w, e));
      for (int64_t x : per_exp.back()) CHECK((x < 0 ? -x : x) % kExps == static_cast<int64_t>(e));
    }
    if (reference.empty()) {
      reference = per_exp;
    } else {
      CHECK(per_exp == reference);  // identical rows, identical order
    }
  }
}

TEST_CASE("a commit gives the same rows and handles at every width, grid-stride or contiguous", "[table]") {
  // 13 experiments (groups of 4 in the scan over experiments, the last one short) and
  // about 9,000 rows: 1 to 142 chunks of at least 64 rows, in groups of up to 12.
  constexpr int kExps = 13;
  constexpr int kPerExp = 700;
  struct Snapshot {
    std::vector<int64_t> values;
    std::vector<Entity> handles;
    std::vector<int64_t> begins;
    bool operator==(const Snapshot&) const = default;
  };
  const auto run = [&](int threads, bool grid_stride) {
    ItemWorld w(kExps, TableCapacity{kExps * kPerExp * 2, kExps * kPerExp});
    for (int i = 0; i < kExps * kPerExp; ++i) {
      w.createHost<Item>(static_cast<ExpId>(i % kExps), static_cast<uint64_t>(4 * i), Value{i}, Tag{0});
    }
    w.commitAllHost();
    auto& t = w.table<Item>();
    // Two commits: destroy every fifth row and create one per seventh (none in experiment
    // 4), then destroy all of experiment 9 and create in experiment 0 only. The new keys
    // fall between the old ones (runs of survivors and new rows alternate), and the
    // second commit's also after them all.
    for (int round = 0; round < 2; ++round) {
      const int64_t rows = t.rows;
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t r = round == 0 ? rows - 1 - i : i;  // pending in reverse order, then in order
        const int64_t v = t.get<Value>(r).v;
        if (round == 0 ? v % 5 == 0 : t.exp[r] == 9) t.destroyRow(r);
        if (round == 0 && v % 7 == 0 && t.exp[r] != 4) {
          t.create(t.exp[r], static_cast<uint64_t>(4 * v + 1), Value{-v - 1}, Tag{1});
        }
        if (round == 1 && t.exp[r] == 0 && v > 0) {
          const uint64_t k = v % 3 == 0 ? 4 * v + 2 : 1'000'000 + v;
          t.create(0, k, Value{v + 100'000}, Tag{2});
        }
      }
      // Up to 3 threads run concurrently (OpenMP); wider teams, GPU-like, one by one.
      if (threads <= 3) {
        grid_stride ? commitParallel<true>(w, threads) : commitParallel<false>(w, threads);
      } else {
        grid_stride ? commitVirtual<true>(w, threads) : commitVirtual<false>(w, threads);
      }
      REQUIRE(t.status == kStatusOk);
    }
    Snapshot s;
    int64_t rows_of_exps = 0;
    for (ExpId e = 0; e <= kExps; ++e) s.begins.push_back(e < kExps ? t.expBegin(e) : t.rows);
    for (ExpId e = 0; e < kExps; ++e) rows_of_exps += t.expRows(e);
    CHECK(rows_of_exps == t.live);
    CHECK(t.rows == t.live);
    for (int64_t r = 0; r < t.rows; ++r) {
      s.values.push_back(t.get<Value>(r).v);
      s.handles.push_back(t.entity[r]);
      CHECK(t.rowOf(t.entity[r]) == r);
      if (r > 0 && t.exp[r - 1] == t.exp[r]) CHECK(t.key[r - 1] < t.key[r]);  // sorted by key
    }
    return s;
  };
  const Snapshot reference = run(1, false);
  CHECK(reference.begins[10] == reference.begins[9]);  // experiment 9 is empty
  CHECK(static_cast<int64_t>(reference.values.size()) == reference.begins.back());
  for (int threads : {2, 3, 64, 257}) {
    for (bool grid_stride : {false, true}) {
      INFO(threads << " threads, grid-stride " << grid_stride);
      CHECK(run(threads, grid_stride) == reference);
    }
  }
}

TEST_CASE("a commit takes 4 phases up to 1,024 pending rows, then one more per doubling", "[table]") {
  // Pending keys in descending order, so that every sort round has work; both paths at
  // widths that split the runs differently must give the one sorted order.
  for (const int pending : {1, 2, 255, 256, 257, 512, 513, 1500}) {
    for (const int threads : {1, 3, 64, 700}) {
      for (const bool grid_stride : {false, true}) {
        INFO(pending << " pending, " << threads << " threads, grid-stride " << grid_stride);
        ItemWorld w(2, TableCapacity{4096, 2048});
        for (int i = 0; i < pending; ++i) {
          const auto e = static_cast<ExpId>(i % 2);
          w.table<Item>().create(e, static_cast<uint64_t>(3 * (pending - i)), Value{pending - i}, Tag{0});
        }
        // Runs of 256 sorted in the first phase, one merge round per doubling beyond; the
        // prefix sums' two phases run beside the first two rounds; then the scatter.
        CHECK(w.table<Item>().commitPhaseCount() == (pending <= 1024 ? 4 : 5));
        if (threads <= 3) {
          grid_stride ? commitParallel<true>(w, threads) : commitParallel<false>(w, threads);
        } else {
          grid_stride ? commitVirtual<true>(w, threads) : commitVirtual<false>(w, threads);
        }
        REQUIRE(w.table<Item>().status == kStatusOk);
        for (ExpId e = 0; e < 2; ++e) {
          const std::vector<int64_t> values = valuesOf(w, e);
          CHECK(static_cast<int>(values.size()) == (pending + 1 - static_cast<int>(e)) / 2);
          CHECK(std::is_sorted(values.begin(), values.end()));
        }
      }
    }
  }
  CHECK(ItemWorld(1, TableCapacity{64, 300}).table<Item>().commitMaxPhaseCount() == 4);
  CHECK(ItemWorld(1, TableCapacity{64, 5000}).table<Item>().commitMaxPhaseCount() == 7);
}

TEST_CASE("random commits leave the same table on the contiguous and grid-stride paths, at any width", "[table]") {
  // Two worlds take the same creations and destructions; one commits on the CPU's path
  // (contiguous shares, survivors copied in runs), the other on a GPU's (grid-stride), each
  // at a width drawn per commit, blocked or not. Destructions come scattered, in runs or
  // not at all; new keys fall anywhere, reuse keys destroyed in the same commit, or are the
  // largest keys there are. After every commit both tables must hold the same rows, and
  // one must be consistent: handles find their rows, keys grow within each experiment,
  // slack rows are gaps and no destruction mark is left.
  constexpr int kWidths[] = {1, 2, 3, 5, 17, 64, 300, 1000, 5000};
  int in_place = 0;
  int reused_keys = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    uint64_t state = seed * 0x9E3779B97F4A7C15ull;
    const auto draw = [&state](uint64_t n) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return (state >> 33) % n;
    };
    const auto exps = static_cast<uint32_t>(1 + draw(7));
    ItemWorld cpu(exps, TableCapacity{4000, 2000});
    ItemWorld gpu(exps, TableCapacity{4000, 2000});
    for (ExpId e = 0; e < exps; ++e) {
      const uint64_t rows = draw(200);
      for (uint64_t k = 0; k < 4 * rows; k += 4) {
        for (ItemWorld* w : {&cpu, &gpu})
          w->createHost<Item>(e, k, Value{static_cast<int64_t>(e * 100000 + k)}, Tag{0});
      }
    }
    cpu.commitAllHost();
    gpu.commitAllHost();
    auto& a = cpu.table<Item>();
    auto& b = gpu.table<Item>();
    int64_t next_value = 1'000'000;
    for (int step = 0; step < 40; ++step) {
      INFO("seed " << seed << ", step " << step);
      uint32_t run_first = 0;
      uint32_t run_end = UINT32_MAX;
      if (draw(3) != 0) {
        run_first = static_cast<uint32_t>(draw(exps));
        run_end = run_first + 1 + static_cast<uint32_t>(draw(exps - run_first));
      }
      const bool outside_block = draw(4) == 0;  // changes outside the block: the table is laid out again
      const uint64_t destroy_percent = 1 + draw(60);
      const uint64_t create_percent = draw(60);
      for (ExpId e = 0; e < exps; ++e) {
        if (!outside_block && (e < run_first || e >= (run_end == UINT32_MAX ? exps : run_end))) continue;
        std::set<uint64_t> used;
        std::vector<uint64_t> destroyed;
        const uint64_t mode = draw(3);  // destructions scattered, in runs, or none
        for (int64_t r = a.expBegin(e); r < a.expEnd(e); ++r) {
          used.insert(a.key[r]);
          const bool kill = mode == 0 ? draw(100) < destroy_percent : mode == 1 && (r / 7) % 3 == 0 && draw(2) == 0;
          if (!kill) continue;
          destroyed.push_back(a.key[r]);
          a.destroyRow(r);
          b.destroyRow(r);
        }
        const uint64_t creations = draw(100) < create_percent ? draw(30) : 0;
        for (uint64_t i = 0; i < creations; ++i) {
          const uint64_t kind = draw(10);
          uint64_t k = draw(4 * 220);
          const bool reuse = kind == 0 && !destroyed.empty();
          if (reuse) {  // a key destroyed in this commit, taken once
            const auto pick = static_cast<std::ptrdiff_t>(draw(destroyed.size()));
            k = destroyed[pick];
            destroyed.erase(destroyed.begin() + pick);
          } else if (kind == 1) {
            k = ~uint64_t{0} - draw(2);
          }
          if (!reuse && !used.insert(k).second) continue;
          reused_keys += reuse ? 1 : 0;
          ++next_value;
          REQUIRE(a.create(e, k, Value{next_value}, Tag{1}));
          REQUIRE(b.create(e, k, Value{next_value}, Tag{1}));
        }
      }
      commitVirtual<false>(cpu, kWidths[draw(9)], run_first, run_end);
      commitVirtual<true>(gpu, kWidths[draw(9)], run_first, run_end);
      in_place += a.commit_in_place != 0u ? 1 : 0;
      REQUIRE(a.status == kStatusOk);
      REQUIRE(b.status == kStatusOk);
      REQUIRE(a.rows == b.rows);
      REQUIRE(a.live == b.live);
      for (ExpId e = 0; e < exps; ++e) {
        REQUIRE(a.expBegin(e) == b.expBegin(e));
        REQUIRE(a.expRows(e) == b.expRows(e));
        for (int64_t r = a.expEnd(e); r < a.expBegin(e + 1); ++r) REQUIRE(a.exp[r] == kGapRow);
      }
      bool same = true;
      bool consistent = true;
      for (int64_t r = 0; r < a.rows; ++r) {
        same = same && a.exp[r] == b.exp[r];
        if (a.exp[r] == kGapRow) continue;
        same = same && a.entity[r] == b.entity[r] && a.key[r] == b.key[r] && a.get<Value>(r).v == b.get<Value>(r).v &&
               a.get<Tag>(r).t == b.get<Tag>(r).t;
        consistent = consistent && a.rowOf(a.entity[r]) == r && (r == a.expBegin(a.exp[r]) || a.key[r - 1] < a.key[r]);
      }
      CHECK(same);
      CHECK(consistent);
      CHECK(std::all_of(a.dead, a.dead + a.capacity, [](uint32_t d) { return d == 0u; }));
      if (draw(10) == 0) {
        cpu.view().closeGaps();
        gpu.view().closeGaps();
      }
    }
  }
  CHECK(in_place > 0);     // the in-place path was taken
  CHECK(reused_keys > 0);  // and keys destroyed in a commit were created again in it
}

TEST_CASE("a block's commits rewrite only its regions and, slack removed, equal unblocked commits", "[table]") {
  constexpr uint32_t kExps = 6;
  ItemWorld blocked(kExps, TableCapacity{4000, 256});
  ItemWorld plain(kExps, TableCapacity{4000, 256});
  // Keys spaced 1000 apart at first; later keys are drawn anywhere below 10^6, so new rows
  // land before, between and after the live ones (the merge must move survivors up).
  std::set<uint64_t> used;
  for (int i = 0; i < 60; ++i) {
    const auto k = static_cast<uint64_t>(i) * 1000;
    used.insert(k);
    for (ItemWorld* w : {&blocked, &plain}) {
      w->createHost<Item>(static_cast<ExpId>(i % kExps), k, Value{i}, Tag{0});
    }
  }
  blocked.commitAllHost();
  plain.commitAllHost();
  auto& tb = blocked.table<Item>();
  auto& tp = plain.table<Item>();
  int in_place = 0;
  int inserted_between = 0;
  uint64_t state = 12345;
  constexpr int kSteps = 200;
  for (int step = 0; step < kSteps; ++step) {
    // The block: 1 or 2 consecutive experiments; each of them destroys two rows and
    // creates three (so regions must grow), identically in both worlds.
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const auto first = static_cast<uint32_t>((state >> 33) % kExps);
    const uint32_t end = std::min(kExps, first + 1 + static_cast<uint32_t>((state >> 20) & 1u));
    const std::vector<int64_t> begins(tb.exp_begin, tb.exp_begin + kExps + 1);
    for (uint32_t e = first; e < end; ++e) {
      const int64_t n = tb.expRows(e);
      for (int64_t i = 0; i < n; i += n / 2 + 1) {
        const int64_t v = tb.get<Value>(tb.expBegin(e) + i).v;
        tb.destroyRow(tb.expBegin(e) + i);
        tp.destroyRow(tp.rowOf(tb.entity[tb.expBegin(e) + i]));
        CHECK(tp.get<Value>(tp.rowOf(tb.entity[tb.expBegin(e) + i])).v == v);
      }
      for (int k = 0; k < 3; ++k) {
        uint64_t key = 0;
        do {
          state = state * 6364136223846793005ull + 1442695040888963407ull;
          key = (state >> 24) % 1'000'000;
        } while (!used.insert(key).second);
        if (tb.expRows(e) > 0 && key < tb.key[tb.expEnd(e) - 1]) ++inserted_between;
        const auto v = static_cast<int64_t>(1'000'000 + key);
        CHECK(tb.create(e, key, Value{v}, Tag{1}));
        CHECK(tp.create(e, key, Value{v}, Tag{1}));
      }
    }
    commitParallel(blocked, 2, first, end);
    commitParallel(plain, 2);
    REQUIRE(tb.status == kStatusOk);
    REQUIRE(tp.status == kStatusOk);
    if (tb.commit_in_place != 0u) {
      ++in_place;
      CHECK(std::equal(begins.begin(), begins.end(), tb.exp_begin));
    }
    for (ExpId e = 0; e < kExps; ++e) {
      CHECK(valuesOf(blocked, e) == valuesOf(plain, e));
      CHECK(std::is_sorted(tb.key + tb.expBegin(e), tb.key + tb.expEnd(e)));
      for (int64_t r = tb.expEnd(e); r < tb.exp_begin[e + 1]; ++r) CHECK(tb.exp[r] == kGapRow);
    }
    for (int64_t r = 0; r < tb.rows; ++r) {
      if (tb.exp[r] != kGapRow) CHECK(tb.rowOf(tb.entity[r]) == r);
      CHECK(tb.dead[r] == 0u);
    }
  }
  // Regions got slack in the first commits and then kept their place; most new rows went
  // between live ones.
  CHECK(in_place > kSteps * 3 / 4);
  CHECK(inserted_between > kSteps);
  CHECK(tb.rows > tb.live);
  blocked.view().closeGaps();
  REQUIRE(tb.rows == tp.rows);
  CHECK(tb.live == tp.live);
  for (int64_t r = 0; r < tp.rows; ++r) {
    CHECK(tb.entity[r] == tp.entity[r]);
    CHECK(tb.key[r] == tp.key[r]);
    CHECK(tb.get<Value>(r).v == tp.get<Value>(r).v);
    CHECK(tb.rowOf(tb.entity[r]) == r);
  }
  for (ExpId e = 0; e <= kExps; ++e) CHECK(tb.exp_begin[e] == tp.exp_begin[e]);
}

TEST_CASE("region reserves keep a table that fills to its capacity committing in place", "[table]") {
  // Eight experiments each end with 120 rows in a table of exactly 960, created 4 per
  // commit by blocks of one experiment, one experiment after the other (as the CPU
  // executor runs blocks, many steps each). With reserves, every commit after the first layout
  // is in place; without, the slack runs short as the table fills and the whole table is
  // laid out again, more and more often.
  constexpr uint32_t kExps = 8;
  constexpr int64_t kRows = 120;
  constexpr int64_t kPerCommit = 4;
  int relayouts[2] = {0, 0};
  for (const bool reserve : {false, true}) {
    ItemWorld w(kExps, TableCapacity{kExps * kRows, 16});
    auto& t = w.table<Item>();
    if (reserve) {
      for (ExpId e = 0; e < kExps; ++e) w.reserveRegion<Item>(e, kRows);
    }
    for (ExpId e = 0; e < kExps; ++e) {
      for (int64_t round = 0; round < kRows / kPerCommit; ++round) {
        for (int64_t k = 0; k < kPerCommit; ++k) {
          CHECK(t.create(e, static_cast<uint64_t>(k * 1000 + round), Value{k}, Tag{0}));
        }
        commitParallel(w, 2, e, e + 1);
        REQUIRE(t.status == kStatusOk);
        relayouts[reserve ? 1 : 0] += t.commit_in_place == 0u ? 1 : 0;
      }
    }
    for (ExpId e = 0; e < kExps; ++e) {
      CHECK(t.expRows(e) == kRows);
      CHECK(std::is_sorted(t.key + t.expBegin(e), t.key + t.expEnd(e)));
    }
    if (reserve) {
      for (ExpId e = 0; e < kExps; ++e) CHECK(t.exp_begin[e] == static_cast<int64_t>(e) * kRows);
    }
  }
  CHECK(relayouts[1] == 1);
  INFO("relayouts without reserves: " << relayouts[0]);
  CHECK(relayouts[0] > 20);
}

TEST_CASE("overflow and duplicate keys raise status bits instead of corrupting rows", "[table]") {
  SECTION("pending area full") {
    ItemWorld w(1, TableCapacity{16, 2});
    auto& t = w.table<Item>();
    CHECK(t.create(0, 1, Value{1}, Tag{0}));
    CHECK(t.create(0, 2, Value{2}, Tag{0}));
    CHECK_FALSE(t.create(0, 3, Value{3}, Tag{0}));
    CHECK((t.status & kStatusPendingOverflow) != 0u);
    CHECK_THROWS_WITH(w.commitHost<Item>(), Catch::Contains("pending capacity"));
  }
  SECTION("live rows beyond capacity") {
    ItemWorld w(1, TableCapacity{2, 4});
    auto& t = w.table<Item>();
    for (uint64_t k = 0; k < 3; ++k) CHECK(t.create(0, k, Value{0}, Tag{0}));
    CHECK_THROWS_WITH(w.commitHost<Item>(), Catch::Contains("exceed its capacity"));
    CHECK(t.rows == 0);
  }
  SECTION("duplicate creation key within one experiment") {
    ItemWorld w(2, TableCapacity{16, 16});
    auto& t = w.table<Item>();
    CHECK(t.create(0, 5, Value{1}, Tag{0}));
    CHECK(t.create(1, 5, Value{2}, Tag{0}));  // same key, other experiment: fine
    w.commitHost<Item>();
    CHECK(t.create(0, 9, Value{3}, Tag{0}));
    CHECK(t.create(0, 9, Value{4}, Tag{0}));
    CHECK_THROWS_WITH(w.commitHost<Item>(), Catch::Contains("same key"));
  }
  SECTION("a new row with the key of a live row") {
    ItemWorld w(1, TableCapacity{16, 16});
    auto& t = w.table<Item>();
    CHECK(t.create(0, 5, Value{1}, Tag{0}));
    w.commitHost<Item>();
    CHECK(t.create(0, 5, Value{2}, Tag{0}));
    CHECK_THROWS_WITH(w.commitHost<Item>(), Catch::Contains("same key"));
  }
  SECTION("in place, in a block's commit: twice the same new key, or a live row's key") {
    for (const uint64_t twin : {uint64_t{7}, uint64_t{20}}) {
      ItemWorld w(2, TableCapacity{64, 16});
      auto& t = w.table<Item>();
      for (uint64_t k = 10; k < 40; k += 10) CHECK(t.create(1, k, Value{0}, Tag{0}));
      commitParallel(w, 2, 1, 2);  // lays the table out with slack
      const int64_t begin = t.expBegin(1);
      CHECK(t.create(1, twin, Value{1}, Tag{0}));
      if (twin == 7) CHECK(t.create(1, twin, Value{2}, Tag{0}));
      commitParallel(w, 2, 1, 2);
      CHECK(t.commit_in_place == 1u);
      CHECK(t.expBegin(1) == begin);
      CHECK((t.status & kStatusDuplicateKey) != 0u);
    }
  }
}

TEST_CASE("experiments are isolated: rows of one never appear in another's range", "[table]") {
  ItemWorld w(4, TableCapacity{8, 8});
  // Interleaved creation across experiments, with per-experiment values.
  for (int i = 0; i < 200; ++i) {
    const ExpId e = static_cast<ExpId>((i * 7) % 4);
    w.createHost<Item>(e, static_cast<uint64_t>(i), Value{1000 * static_cast<int64_t>(e) + i}, Tag{e});
  }
  w.commitAllHost();
  auto& t = w.table<Item>();
  for (ExpId e = 0; e < 4; ++e) {
    CHECK(t.expRows(e) == 50);
    for (int64_t r = t.expBegin(e); r < t.expEnd(e); ++r) {
      CHECK(t.exp[r] == e);
      CHECK(t.get<Tag>(r).t == e);
    }
  }
}

TEST_CASE("per-experiment counters tell creations and layout changes apart", "[table]") {
  ItemWorld w(3, TableCapacity{32, 32});
  for (int i = 0; i < 6; ++i) w.createHost<Item>(static_cast<ExpId>(i % 2), static_cast<uint64_t>(i), Value{i}, Tag{0});
  w.commitAllHost();
  auto& t = w.table<Item>();
  const auto counters = [&](ExpId e) { return std::pair{t.exp_generation[e], t.exp_layout[e]}; };
  CHECK(counters(0) == std::pair{1u, 1u});
  CHECK(counters(1) == std::pair{1u, 1u});
  CHECK(counters(2) == std::pair{0u, 0u});  // no rows, no commit of its rows

  // Destroying a row of experiment 0 moves its rows (layout) but creates nothing; experiment
  // 1's rows shift in the table, yet keep their offsets from its first row.
  CHECK(t.destroy(t.entity[t.expBegin(0)]));
  w.commitAllHost();
  CHECK(counters(0) == std::pair{1u, 2u});
  CHECK(counters(1) == std::pair{1u, 1u});

  w.createHost<Item>(1, 100, Value{100}, Tag{0});
  w.commitAllHost();
  CHECK(counters(0) == std::pair{1u, 2u});
  CHECK(counters(1) == std::pair{2u, 2u});
  w.commitAllHost();  // nothing pending: nothing counted
  CHECK(counters(1) == std::pair{2u, 2u});
}

TEST_CASE("the world lists every buffer so a backend can mirror it", "[table]") {
  ItemWorld w(2, TableCapacity{100, 10});
  const auto& view = w.view();
  std::size_t bytes = 0;
  for (std::size_t off : w.pointerFields()) {
    const void* p = *reinterpret_cast<void* const*>(reinterpret_cast<const std::byte*>(&view) + off);
    REQUIRE(p != nullptr);
    bytes += w.bufferBytes(p);
  }
  CHECK(bytes == w.totalBytes());
  CHECK(w.totalBytes() > 100 * (sizeof(Value) + sizeof(Tag)) * 2);
}

TEST_CASE("static tables are pooled storage filled by the host in experiment order", "[table]") {
  ItemWorld w(3, TableCapacity{4, 0});
  auto& t = w.table<Item>();
  CHECK(w.appendStatic<Item>(0, 3) == 0);
  CHECK(w.appendStatic<Item>(2, 5) == 3);  // experiment 1 has none
  CHECK(t.rows == 8);
  CHECK(t.capacity >= 8);
  CHECK(t.expRows(0) == 3);
  CHECK(t.expRows(1) == 0);
  CHECK(t.expBegin(2) == 3);
  CHECK(t.key[4] == 1);  // keys are indices within the experiment
  CHECK_THROWS(w.appendStatic<Item>(1, 1));
  t.destroyRow(0);  // not allowed inside a run: flagged, nothing removed
  CHECK((t.status & kStatusStaticTable) != 0u);
  CHECK(t.rows == 8);
}

namespace mv {
namespace {

TEST_CASE("fitting static tables releases the growth headroom and keeps rows and handles", "[table]") {
  ItemWorld w(3, TableCapacity{4, 0});
  auto& t = w.table<Item>();
  w.appendStatic<Item>(0, 3);
  w.appendStatic<Item>(2, 2);
  REQUIRE(t.capacity == 8);  // the second append doubled the table
  for (int64_t r = 0; r < t.rows; ++r) t.get<Value>(r).v = 100 + r;
  std::vector<Entity> handles(t.entity, t.entity + t.rows);
  const std::size_t before = w.totalBytes();

  w.fitStaticTables();
  CHECK(t.capacity == 5);
  CHECK(t.rows == 5);
  CHECK(w.totalBytes() < before);
  CHECK(t.expRows(0) == 3);
  CHECK(t.expBegin(2) == 3);
  CHECK(t.expRows(2) == 2);
  for (int64_t r = 0; r < t.rows; ++r) {
    CHECK(t.get<Value>(r).v == 100 + r);
    CHECK(t.rowOf(handles[static_cast<std::size_t>(r)]) == r);
  }
  CHECK(t.key[4] == 1);

  // Filling goes on after a fit: the table grows again, old rows and handles unchanged.
  CHECK(w.appendStatic<Item>(2, 1) == 5);
  CHECK(t.expRows(2) == 3);
  CHECK(t.rowOf(t.entity[5]) == 5);
  CHECK(t.entity[5].index == 5);
  for (int64_t r = 0; r < 5; ++r) CHECK(t.rowOf(handles[static_cast<std::size_t>(r)]) == r);

  // An append larger than the table gets exactly its rows, not twice them (one
  // experiment's packet storage would otherwise peak at three times its size when fitted).
  ItemWorld big(1, TableCapacity{4, 0});
  big.appendStatic<Item>(0, 1000);
  CHECK(big.table<Item>().capacity == 1000);

  // Tables with creations per step are left alone.
  ItemWorld dynamic(1, TableCapacity{64, 8});
  dynamic.createHost<Item>(0, 1, Value{1}, Tag{});
  dynamic.commitAllHost();
  dynamic.fitStaticTables();
  CHECK(dynamic.table<Item>().capacity == 64);
}

TEST_CASE("a static archetype's rows cost their components and experiment id, and have no handles", "[table]") {
  PooledWorld w(2, TableCapacity{4, 0});
  auto& t = w.table<Pooled>();
  const std::size_t empty = w.totalBytes();
  w.appendStatic<Pooled>(0, 3);
  w.appendStatic<Pooled>(1, 1000);
  w.fitStaticTables();
  REQUIRE(t.capacity == 1003);
  // Per row: the Value column and the experiment id; per table a few fixed buffers.
  const std::size_t per_row = sizeof(Value) + sizeof(ExpId);
  CHECK(w.totalBytes() - empty == (1003 - 4) * per_row);
  CHECK(t.rowOf(Entity{0, 0}) == -1);
  CHECK(t.expBegin(1) == 3);

  // A system sees each row's index within its experiment as its key, and no handle.
  System<SeeRow>::runPhase(SerialPolicy{}, w.view(), 0);
  CHECK(t.get<Value>(2).v == 21);
  CHECK(t.get<Value>(3).v == 1);
  CHECK(t.get<Value>(1002).v == 9991);

  // Growth after a fit keeps the values.
  w.appendStatic<Pooled>(1, 1);
  CHECK(t.get<Value>(1002).v == 9991);
  CHECK(t.expRows(1) == 1001);
}

}  // namespace
}  // namespace mv
