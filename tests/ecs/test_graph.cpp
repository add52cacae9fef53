/**
 * @file test_graph.cpp
 * Queries (which archetypes a system runs on), graph levels and barriers, node order,
 * and the printable form.
 */
#include <omp.h>

#include <catch2/catch.hpp>

#include "ecs/graph.hpp"

using namespace mv;

namespace {

struct A {
  int64_t a = 0;
};
struct B {
  int64_t b = 0;
};
struct C {
  int64_t c = 0;
};
struct ArchAB : Archetype<A, B> {
  static constexpr const char* kName = "AB";
};
struct ArchABC : Archetype<A, B, C> {
  static constexpr const char* kName = "ABC";
};
struct ArchC : Archetype<C> {
  static constexpr const char* kName = "C";
};
struct NoConfig {};

/// One thread of a team as a policy without a barrier (the test runs one phase): contiguous
/// loop shares (the CPU's), or grid-stride ones (a CUDA grid's).
struct BlockedThread {
  int64_t r;
  int64_t n;
  int64_t rank() const { return r; }
  int64_t count() const { return n; }
  void barrier() const {}
};
struct StridedThread : BlockedThread {
  static constexpr bool kGridStride = true;
};
using View = WorldView<NoConfig, ArchAB, ArchABC, ArchC>;
using Ctx = RowContext<View>;

/// Writes a into b on every row that has both.
struct CopyAToB {
  static constexpr const char* kName = "copy_a_to_b";
  static constexpr const char* kWhy = "test: first writer";
  MV_HD static void run(const Ctx&, const A& a, B& b) { b.b = a.a; }
};
/// Increments c on every row that has it.
struct BumpC {
  static constexpr const char* kName = "bump_c";
  static constexpr const char* kWhy = "test: independent of copy_a_to_b";
  MV_HD static void run(const Ctx&, C& c) { c.c += 1; }
};
/// Reads b (written by CopyAToB this step) into c, doubled.
struct BToC {
  static constexpr const char* kName = "b_to_c";
  static constexpr const char* kWhy = "test: reads what copy_a_to_b wrote";
  using After = TypeList<CopyAToB, BumpC>;
  MV_HD static void run(const Ctx&, const B& b, C& c) { c.c += 2 * b.b; }
};
/// Keeps every experiment busy until time 10 ps.
struct KeepAlive {
  static constexpr const char* kName = "keep_alive";
  static constexpr const char* kWhy = "test: report a pending event until t = 10";
  MV_HD static void run(const Ctx& ctx, const A&) {
    if (ctx.now.ps < 10) ctx.wakeAt(ctx.now + picoseconds(1));
  }
};

using TestGraph = Graph<System<CopyAToB>, System<BumpC>, System<KeepAlive>, System<BToC>, CommitAll, AdvanceClocks>;

}  // namespace

TEST_CASE("a system's query matches exactly the archetypes holding its components", "[graph][query]") {
  STATIC_REQUIRE(kSystemMatches<CopyAToB, ArchAB>);
  STATIC_REQUIRE(kSystemMatches<CopyAToB, ArchABC>);
  STATIC_REQUIRE_FALSE(kSystemMatches<CopyAToB, ArchC>);
  STATIC_REQUIRE(kSystemMatches<BumpC, ArchC>);
  STATIC_REQUIRE(kSystemMatches<BumpC, ArchABC>);
  STATIC_REQUIRE_FALSE(kSystemMatches<BumpC, ArchAB>);
  STATIC_REQUIRE(std::is_same_v<SystemComponents<BToC>, TypeList<B, C>>);
}

TEST_CASE("levels follow dependencies and engine nodes stand alone", "[graph]") {
  // copy_a_to_b, bump_c and keep_alive are independent: one level, no barriers between.
  STATIC_REQUIRE(TestGraph::kLevels[0] == 0);
  STATIC_REQUIRE(TestGraph::kLevels[1] == 0);
  STATIC_REQUIRE(TestGraph::kLevels[2] == 0);
  STATIC_REQUIRE(TestGraph::kLevels[3] == 1);  // b_to_c after both writers
  STATIC_REQUIRE(TestGraph::kLevels[4] == 2);  // commit
  STATIC_REQUIRE(TestGraph::kLevels[5] == 3);  // advance_clocks
  STATIC_REQUIRE_FALSE(TestGraph::barrierAfter<0>());
  STATIC_REQUIRE_FALSE(TestGraph::barrierAfter<1>());
  STATIC_REQUIRE(TestGraph::barrierAfter<2>());
  STATIC_REQUIRE(TestGraph::barrierAfter<3>());
  STATIC_REQUIRE(TestGraph::barrierAfter<5>());
}

TEST_CASE("nodes run in graph order within one step, on matching rows only", "[graph]") {
  World<NoConfig, ArchAB, ArchABC, ArchC> w(2, TableCapacity{16, 16});
  w.createHost<ArchAB>(0, 1, A{3}, B{0});
  w.createHost<ArchABC>(1, 1, A{5}, B{0}, C{100});
  w.createHost<ArchC>(1, 2, C{7});
  w.commitAllHost();
  const SerialPolicy serial;
  prepareRun(w.view());
  runStep<TestGraph>(serial, w.view());

  CHECK(w.table<ArchAB>().get<B>(0).b == 3);
  // ABC: bump (+1) then b_to_c (+2*5) in the same step, because b_to_c is after both.
  CHECK(w.table<ArchABC>().get<C>(0).c == 100 + 1 + 10);
  CHECK(w.table<ArchC>().get<C>(0).c == 8);
}

TEST_CASE("a run stops when every experiment drained, and clocks jump to the next event", "[graph]") {
  World<NoConfig, ArchAB, ArchABC, ArchC> w(2, TableCapacity{16, 16});
  w.createHost<ArchAB>(0, 1, A{3}, B{0});
  w.createHost<ArchC>(1, 1, C{0});  // experiment 1 has no event at all
  w.commitAllHost();
  w.clock(0).lookahead_ps = 4;
  const SerialPolicy serial;
  prepareRun(w.view());
  const int64_t steps = runSteps<TestGraph>(serial, w.view(), 100);
  // Experiment 0: windows start at 0, 4, 8, 12 (the last sees now >= 10 and reports nothing).
  CHECK(w.clock(0).steps == 4);
  CHECK(w.clock(0).outcome == Outcome::kDrained);
  CHECK(w.clock(1).steps == 1);
  CHECK(w.clock(1).outcome == Outcome::kDrained);
  CHECK(steps == 4);
  CHECK(w.table<ArchC>().get<C>(0).c == 1);  // drained experiments are not stepped again
}

TEST_CASE("an end time stops an experiment that still has events", "[graph]") {
  World<NoConfig, ArchAB, ArchABC, ArchC> w(1, TableCapacity{16, 16});
  w.createHost<ArchAB>(0, 1, A{3}, B{0});
  w.commitAllHost();
  w.clock(0).lookahead_ps = 2;
  w.clock(0).end_ps = 5;
  const SerialPolicy serial;
  prepareRun(w.view());
  runSteps<TestGraph>(serial, w.view(), 100);
  CHECK(w.clock(0).outcome == Outcome::kTimeLimit);
  CHECK(w.clock(0).now_ps == 5);
}

TEST_CASE("advance_clocks decides once per step at any width: the last thread to arrive stops the run", "[graph]") {
  // Experiment e reports an event every step until its end time, (e % 5 + 1) windows; the
  // run must go on while one runs and stop in the step the last one ends.
  for (const int64_t exps : {1, 5, 64, 100}) {
    for (const int threads : {1, 3, 8, 64}) {
      for (const bool grid_stride : {false, true}) {
        INFO(exps << " experiments, " << threads << " threads, grid-stride " << grid_stride);
        World<NoConfig, ArchC> w(static_cast<uint32_t>(exps), TableCapacity{4, 4});
        for (ExpId e = 0; e < exps; ++e) {
          w.clock(e).lookahead_ps = 10;
          w.clock(e).end_ps = 10 * (e % 5 + 1);
        }
        auto view = w.view();
        prepareRun(view);
        int64_t steps = 0;
        bool stopped = false;
        while (!stopped && steps < 20) {
          for (ExpId e = 0; e < exps; ++e) {
            if (!w.clock(e).done()) w.clock(e).next_wake_ps = w.clock(e).now_ps + 1;
          }
          const auto run = [&](int64_t rank, int64_t count) {
            if (grid_stride) {
              AdvanceClocks::runPhase(StridedThread{rank, count}, view, 0);
            } else {
              AdvanceClocks::runPhase(BlockedThread{rank, count}, view, 0);
            }
          };
          // Up to 3 threads run concurrently (OpenMP); wider teams, GPU-like, one by one.
          if (threads <= 3) {
#pragma omp parallel num_threads(threads)
            run(omp_get_thread_num(), omp_get_num_threads());
          } else {
            for (int r = 0; r < threads; ++r) run(r, threads);
          }
          ++steps;
          CHECK(view.steps_run == steps);
          stopped = view.stop[(view.steps_run - 1) & 1] != 0u;
        }
        CHECK(steps == (exps < 5 ? exps : 5));
        for (ExpId e = 0; e < exps; ++e) CHECK(w.clock(e).outcome == Outcome::kTimeLimit);
      }
    }
  }
}

TEST_CASE("the graph prints its nodes, levels, barriers and reasons", "[graph]") {
  const std::string text = formatGraph(TestGraph::describe());
  CHECK_THAT(text, Catch::Contains("level 1  b_to_c  [system]  after: copy_a_to_b bump_c"));
  CHECK_THAT(text, Catch::Contains("level 2  commit  [engine]"));
  CHECK_THAT(text, Catch::Contains("why: test: reads what copy_a_to_b wrote"));
  const std::string dot = formatGraphDot(TestGraph::describe());
  CHECK_THAT(dot, Catch::Contains("\"copy_a_to_b\" -> \"b_to_c\""));
}
