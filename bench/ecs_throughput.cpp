/**
 * @file ecs_throughput.cpp
 * Benchmarks of the ECS on the CPU backend (`mv_bench_ecs`), printed as plain tables:
 *   1. rows per second of a simple system (p += v * dt) as a batch is split into 1 to 256
 *      experiments, with the total row count fixed and with the rows per experiment fixed;
 *   2. the cost of one barrier of the CPU executor, from a graph with 64 extra chained
 *      nodes against the same graph without them.
 * Every run is checked (step counts, clock outcomes, final values) so a figure is never
 * the time of work that did not happen. See bench/README.md for how to read the output.
 */
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ecs/graph.hpp"
#include "kernels/cpu/cpu_executor.hpp"

namespace mv::bench {

// --- model -------------------------------------------------------------------------------

struct Position {
  int64_t x = 0;
};
struct Velocity {
  int64_t v = 0;
};
struct Counter {
  int64_t n = 0;
};
static_assert(sizeof(Position) == 8 && sizeof(Velocity) == 8 && sizeof(Counter) == 8);

/// A moving body: the rows of the throughput benchmark.
struct Body : Archetype<Position, Velocity> {
  static constexpr const char* kName = "Body";
};
/// A bare counter: the single row of the barrier benchmark.
struct Probe : Archetype<Counter> {
  static constexpr const char* kName = "Probe";
};

struct NoConfig {};
using BodyView = WorldView<NoConfig, Body>;
using BodyWorld = World<NoConfig, Body>;
using ProbeView = WorldView<NoConfig, Probe>;
using ProbeWorld = World<NoConfig, Probe>;

/// Simulated time covered by one step (every experiment's lookahead).
constexpr int64_t kLookaheadPs = 1000;

/// The system under test in benchmark 1.
struct Move {
  static constexpr const char* kName = "move";
  static constexpr const char* kWhy = "benchmark: p += v * dt, and keep the experiment running";
  MV_HD static void run(const RowContext<BodyView>& ctx, const Velocity& vel, Position& pos) {
    pos.x += vel.v * (ctx.window_end.ps - ctx.now.ps);
    ctx.wakeAt(ctx.window_end);
  }
};

/// The first node of every barrier-benchmark graph; it alone keeps the experiment running.
struct Tick {
  static constexpr const char* kName = "tick";
  static constexpr const char* kWhy = "benchmark: count steps and keep the experiment running";
  MV_HD static void run(const RowContext<ProbeView>& ctx, Counter& counter) {
    counter.n += 1;
    ctx.wakeAt(ctx.window_end);
  }
};

/// Link I of a chain of near-empty systems, each after the previous one (one level each).
template <int I>
struct Chain {
  static constexpr const char* kName = "chain";
  static constexpr const char* kWhy = "benchmark: one more level, hence one more barrier per step";
  using After = TypeList<std::conditional_t<I == 0, Tick, Chain<I - 1>>>;
  MV_HD static void run(const RowContext<ProbeView>&, Counter& counter) { counter.n += 1; }
};

/// Extra nodes of the chained graph.
constexpr int kChainLength = 64;

/// Names the graph `tick, chain<0..n-1>, commit, advance_clocks` (used in decltype only).
template <int... Is>
Graph<System<Tick>, System<Chain<Is>>..., CommitAll, AdvanceClocks> chainedGraph(std::integer_sequence<int, Is...>);

using MoveGraph = Graph<System<Move>, AdvanceClocks>;
using TickGraph = Graph<System<Tick>, AdvanceClocks>;
using TickCommitGraph = Graph<System<Tick>, CommitAll, AdvanceClocks>;
using ChainGraph = decltype(chainedGraph(std::make_integer_sequence<int, kChainLength>{}));

// --- measurement helpers ---------------------------------------------------------------------

/// How long and how often to measure.
struct Settings {
  int64_t steps = 200;            ///< timed steps per repetition, benchmark 1
  int64_t barrier_steps = 20000;  ///< timed steps per repetition, benchmark 2
  int64_t warmup_steps = 20;      ///< untimed steps before the first repetition
  int repetitions = 7;            ///< timed repetitions; the median is reported
};

/// The `--quick` settings: enough to exercise every code path.
Settings quickSettings() {
  return Settings{.steps = 10, .barrier_steps = 200, .warmup_steps = 2, .repetitions = 1};
}

/// Median of a non-empty sample.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Sum over the nodes of graph G of the barriers each node ends with.
template <class G, class WV, class... Nodes, std::size_t... Is>
int64_t countBarriers(const WV& world, TypeList<Nodes...>, std::index_sequence<Is...>) {
  return (int64_t{0} + ... + (Nodes::phaseCount(world) - 1 + (G::template barrierAfter<Is>() ? 1 : 0)));
}

/// Barriers one step of graph G executes on `world` (the rule of detail::runStepImpl).
template <class G, class WV>
int64_t barriersPerStep(const WV& world) {
  return countBarriers<G>(world, typename G::NodeList{}, std::make_index_sequence<G::kSize>{});
}

/// Runs exactly `steps` steps of G and returns the wall time; anything else is an error.
template <class G, class WV>
double timedRun(const CpuExecutor& exec, WV& world, int64_t steps) {
  const RunReport r = exec.run<G>(world, steps);
  if (r.steps != steps || r.status != 0u) {
    throw std::runtime_error("a benchmark run stopped after " + std::to_string(r.steps) + " of " +
                             std::to_string(steps) + " steps (status " + std::to_string(r.status) + ")");
  }
  return r.wall_seconds;
}

// --- benchmark 1: rows per second ------------------------------------------------------------

/// How a batch's rows are split.
struct Layout {
  uint32_t exps = 1;
  int64_t rows_per_exp = 1;

  int64_t rows() const { return static_cast<int64_t>(exps) * rows_per_exp; }
  bool operator==(const Layout&) const = default;
};

/// Median time per step of `Move` on one layout with one thread count.
struct ThroughputResult {
  Layout layout;
  int threads = 1;
  double seconds_per_step = 0;
};

/// Velocity of the row with creation key `key` (positions start at the key).
int64_t initialVelocity(uint64_t key) {
  return static_cast<int64_t>(key % 7) - 3;
}

/// Runs `Move` on one batch with each thread count and checks every row at the end.
std::vector<ThroughputResult> measureLayout(Layout layout, const std::vector<int>& thread_counts, const Settings& s) {
  const int64_t rows = layout.rows();
  // A pending area of up to 64 Ki rows keeps the set-up commits few; Move creates nothing.
  BodyWorld world(layout.exps, TableCapacity{rows, std::min<int64_t>(rows, int64_t{1} << 16)});
  const int64_t steps_per_thread_count = s.warmup_steps + s.repetitions * s.steps;
  const int64_t total_steps = steps_per_thread_count * static_cast<int64_t>(thread_counts.size());
  for (ExpId e = 0; e < layout.exps; ++e) {
    world.clock(e).lookahead_ps = kLookaheadPs;
    world.clock(e).end_ps = total_steps * kLookaheadPs;  // the last timed step ends every experiment
    for (int64_t i = 0; i < layout.rows_per_exp; ++i) {
      const uint64_t key = static_cast<uint64_t>(i);
      world.createHost<Body>(e, key, Position{i}, Velocity{initialVelocity(key)});
    }
  }
  world.commitAllHost();

  std::vector<ThroughputResult> out;
  for (int threads : thread_counts) {
    const CpuExecutor exec(threads);
    timedRun<MoveGraph>(exec, world.view(), s.warmup_steps);
    std::vector<double> times;
    for (int r = 0; r < s.repetitions; ++r) times.push_back(timedRun<MoveGraph>(exec, world.view(), s.steps));
    out.push_back(ThroughputResult{layout, threads, median(times) / static_cast<double>(s.steps)});
  }

  const TableView<Body>& t = world.table<Body>();
  for (ExpId e = 0; e < layout.exps; ++e) {
    const ExperimentClock& c = world.clock(e);
    if (c.steps != total_steps || c.outcome != Outcome::kTimeLimit) {
      throw std::runtime_error("experiment " + std::to_string(e) + " ran " + std::to_string(c.steps) + " of " +
                               std::to_string(total_steps) + " steps");
    }
    for (int64_t row = t.expBegin(e); row < t.expEnd(e); ++row) {
      const int64_t expected =
          static_cast<int64_t>(t.key[row]) + initialVelocity(t.key[row]) * kLookaheadPs * total_steps;
      if (t.get<Position>(row).x != expected) {
        throw std::runtime_error("wrong position in experiment " + std::to_string(e) + " row " + std::to_string(row));
      }
    }
  }
  return out;
}

/// The arithmetic of `Move` as a plain loop over two arrays on one thread, no ECS.
double plainLoopSecondsPerStep(int64_t rows, int64_t dt, const Settings& s) {
  std::vector<Position> pos(static_cast<std::size_t>(rows));
  std::vector<Velocity> vel(static_cast<std::size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) vel[static_cast<std::size_t>(i)].v = initialVelocity(static_cast<uint64_t>(i));
  const auto run_steps = [&](int64_t steps) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t k = 0; k < steps; ++k) {
      for (std::size_t i = 0; i < pos.size(); ++i) pos[i].x += vel[i].v * dt;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  run_steps(s.warmup_steps);
  std::vector<double> times;
  for (int r = 0; r < s.repetitions; ++r) times.push_back(run_steps(s.steps));
  const int64_t total_steps = s.warmup_steps + s.repetitions * s.steps;
  for (int64_t i = 0; i < rows; ++i) {
    if (pos[static_cast<std::size_t>(i)].x != initialVelocity(static_cast<uint64_t>(i)) * dt * total_steps) {
      throw std::runtime_error("wrong position in the plain loop");
    }
  }
  return median(times) / static_cast<double>(s.steps);
}

void printThroughputHeader() {
  std::printf("%6s %9s %9s %7s %9s %11s %11s %8s\n", "exps", "rows/exp", "rows", "threads", "ms/step", "Mrows/s",
              "Mrows/s/core", "ns/row");
}

void printThroughputRow(const ThroughputResult& r) {
  const double rows = static_cast<double>(r.layout.rows());
  const double rows_per_s = rows / r.seconds_per_step;
  std::printf("%6u %9lld %9lld %7d %9.3f %11.1f %11.1f %8.2f\n", r.layout.exps,
              static_cast<long long>(r.layout.rows_per_exp), static_cast<long long>(r.layout.rows()), r.threads,
              r.seconds_per_step * 1e3, rows_per_s * 1e-6, rows_per_s * 1e-6 / r.threads,
              r.seconds_per_step * 1e9 / rows);
}

/// Benchmark 1: measures every batch layout with each thread count and prints tables 1a-1c.
void runThroughputBenchmark(const Settings& s, const std::vector<int>& thread_counts) {
  constexpr int64_t kTotalRows = int64_t{1} << 20;
  constexpr int64_t kRowsPerExp = 4096;
  const std::vector<uint32_t> exp_counts = {1, 4, 16, 64, 256};
  std::vector<Layout> fixed_total;
  std::vector<Layout> fixed_per_exp;
  for (uint32_t n : exp_counts) {
    fixed_total.push_back(Layout{n, kTotalRows / n});
    fixed_per_exp.push_back(Layout{n, kRowsPerExp});
  }
  std::vector<ThroughputResult> results;
  const auto measure = [&](const std::vector<Layout>& layouts) {
    for (const Layout& l : layouts) {
      const bool seen =
          std::any_of(results.begin(), results.end(), [&](const ThroughputResult& r) { return r.layout == l; });
      if (seen) continue;
      for (const ThroughputResult& r : measureLayout(l, thread_counts, s)) results.push_back(r);
    }
  };
  const auto print = [&](const std::vector<Layout>& layouts) {
    printThroughputHeader();
    for (const Layout& l : layouts) {
      for (const ThroughputResult& r : results) {
        if (r.layout == l) printThroughputRow(r);
      }
    }
  };

  std::printf("== 1. rows/s of system Move (p += v*dt; wakeAt per row), graph: move, advance_clocks ==\n");
  std::printf("   %lld timed steps per repetition, median of %d; ns/row = wall time / (rows * steps)\n\n",
              static_cast<long long>(s.steps), s.repetitions);
  measure(fixed_total);
  std::printf("1a. total rows fixed at %lld\n", static_cast<long long>(kTotalRows));
  print(fixed_total);
  measure(fixed_per_exp);
  std::printf("\n1b. rows per experiment fixed at %lld\n", static_cast<long long>(kRowsPerExp));
  print(fixed_per_exp);

  const double plain = plainLoopSecondsPerStep(kTotalRows, kLookaheadPs, s);
  std::printf("\n1c. reference: the same arithmetic as a plain loop over two arrays, 1 thread, no ECS\n");
  std::printf("%9lld rows  %9.3f ms/step  %8.1f Mrows/s  %6.2f ns/row\n\n", static_cast<long long>(kTotalRows),
              plain * 1e3, static_cast<double>(kTotalRows) / plain * 1e-6,
              plain * 1e9 / static_cast<double>(kTotalRows));
}

// --- benchmark 2: barrier cost ------------------------------------------------------------

/// Barriers per step and median time per step of one graph.
struct GraphTiming {
  int64_t barriers = 0;
  double seconds_per_step = 0;
};

/// Times graph G on one experiment with one row; `counts_per_step` systems bump the counter.
template <class G>
GraphTiming timeGraph(int threads, int64_t counts_per_step, const Settings& s) {
  ProbeWorld world(1);
  world.createHost<Probe>(0, 0, Counter{0});
  world.commitAllHost();
  const CpuExecutor exec(threads);
  timedRun<G>(exec, world.view(), s.warmup_steps);
  std::vector<double> times;
  for (int r = 0; r < s.repetitions; ++r) times.push_back(timedRun<G>(exec, world.view(), s.barrier_steps));
  const int64_t total_steps = s.warmup_steps + s.repetitions * s.barrier_steps;
  if (world.table<Probe>().get<Counter>(0).n != counts_per_step * total_steps) {
    throw std::runtime_error("a barrier-benchmark graph skipped nodes");
  }
  return GraphTiming{barriersPerStep<G>(world.view()), median(times) / static_cast<double>(s.barrier_steps)};
}

void printGraphRow(const char* name, int threads, const GraphTiming& g) {
  std::printf("%-42s %7d %9lld %10.3f %14.1f\n", name, threads, static_cast<long long>(g.barriers),
              g.seconds_per_step * 1e6, g.seconds_per_step * 1e9 / static_cast<double>(g.barriers));
}

/// Benchmark 2: times the three probe graphs with each thread count and prints tables 2 and 2b.
void runBarrierBenchmark(const Settings& s, const std::vector<int>& thread_counts) {
  std::printf("== 2. barrier cost of the CPU executor (1 experiment, 1 row, default table capacity) ==\n");
  std::printf("   %lld timed steps per repetition, median of %d; ns/barrier (all-in) = step time / barriers\n\n",
              static_cast<long long>(s.barrier_steps), s.repetitions);
  std::printf("%-42s %7s %9s %10s %14s\n", "graph", "threads", "barriers", "us/step", "ns/barrier");
  struct Derived {
    int threads;
    double per_node_ns;
    double commit_ns;
    int64_t commit_barriers;
  };
  std::vector<Derived> derived;
  for (int threads : thread_counts) {
    const GraphTiming tick = timeGraph<TickGraph>(threads, 1, s);
    const GraphTiming commit = timeGraph<TickCommitGraph>(threads, 1, s);
    const GraphTiming chain = timeGraph<ChainGraph>(threads, 1 + kChainLength, s);
    printGraphRow("tick, advance_clocks", threads, tick);
    printGraphRow("tick, commit, advance_clocks", threads, commit);
    printGraphRow("tick, 64 x chain, commit, advance_clocks", threads, chain);
    derived.push_back(Derived{threads, (chain.seconds_per_step - commit.seconds_per_step) * 1e9 / kChainLength,
                              (commit.seconds_per_step - tick.seconds_per_step) * 1e9,
                              commit.barriers - tick.barriers});
  }
  std::printf("\n2b. derived: one chained node = one barrier + one system over 1 row\n");
  std::printf("%7s %16s %18s %17s\n", "threads", "ns/chained node", "ns/no-op commit", "commit barriers");
  for (const Derived& d : derived) {
    std::printf("%7d %16.1f %18.1f %17lld\n", d.threads, d.per_node_ns, d.commit_ns,
                static_cast<long long>(d.commit_barriers));
  }
}

}  // namespace mv::bench

int main(int argc, char** argv) {
  CLI::App app{"Multiverse ECS benchmarks: system throughput over 1-256 experiments and CPU barrier cost.",
               "mv_bench_ecs"};
  bool quick = false;
  app.add_flag("--quick", quick, "a few steps only, to check that the benchmark runs (figures meaningless)");
  CLI11_PARSE(app, argc, argv);

  const mv::bench::Settings settings = quick ? mv::bench::quickSettings() : mv::bench::Settings{};
  const std::vector<int> thread_counts = {1, 2};
  std::printf("mv_bench_ecs%s: OpenMP default threads on this machine: %d; measuring with 1 and 2 threads\n\n",
              quick ? " --quick" : "", mv::defaultCpuThreads());
  try {
    mv::bench::runThroughputBenchmark(settings, thread_counts);
    mv::bench::runBarrierBenchmark(settings, thread_counts);
  } catch (const std::exception& e) {
    std::cerr << "mv_bench_ecs: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
