/**
 * @file test_cpu_executor.cpp
 * The OpenMP backend on a complete simulation (tests/support/demo_world.hpp): identical
 * results for 1, 2 and 4 threads, for lookahead Δ and Δ/2, and for an experiment alone or
 * in a batch with others of different configuration; clock jumps and early exit.
 */
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <thread>

#include "kernels/cpu/cpu_executor.hpp"
#include "tests/support/demo_world.hpp"

using namespace mv;
using namespace mv::demo;

namespace {

constexpr int64_t kLookahead = 500;  // ps; below the shortest hop period (700 ps)

/// Configuration of experiment `i` of the test batches: each different.
Config configFor(uint32_t i) {
  Config c;
  c.horizon_ps = 60'000 + 5'000 * static_cast<int64_t>(i);
  c.spawn_probability = 0.15 + 0.02 * i;
  c.death_probability = 0.08 + 0.01 * i;
  c.max_step = 5 + i;
  return c;
}

/// Runs `exps` experiments (configs 0..exps-1, or only `only` when given) and returns the
/// walkers of each, plus the world's step count.
struct BatchResult {
  std::vector<std::vector<WalkerState>> walkers;
  std::vector<int64_t> tallies;
  std::vector<int64_t> exp_steps;
  int64_t steps = 0;
};

BatchResult runBatch(const std::vector<uint32_t>& config_ids, int threads, int64_t lookahead, int64_t block = 0,
                     bool yield_to_load = false) {
  DemoWorld world(static_cast<uint32_t>(config_ids.size()), TableCapacity{256, 256});
  for (ExpId e = 0; e < config_ids.size(); ++e) {
    world.config(e) = configFor(config_ids[e]);
    world.clock(e).stable_id = config_ids[e];
    seedExperiment(world, e, 24, lookahead, 42);
  }
  world.commitAllHost();
  // Enough room for the population to grow without a host-side resize mid-run.
  world.grow<Walker>(TableCapacity{1 << 16, 1 << 14});
  const CpuExecutor exec(threads, block, yield_to_load);
  const RunReport r = exec.runToEnd<DemoGraph>(world.view(), 64);
  REQUIRE(r.finished);
  REQUIRE(r.status == 0u);
  BatchResult out;
  out.steps = r.steps;
  for (ExpId e = 0; e < config_ids.size(); ++e) {
    out.walkers.push_back(walkersOf(world, e));
    const auto& counters = world.table<Counter>();
    out.tallies.push_back(counters.get<Tally>(counters.expBegin(e)).sum);
    out.exp_steps.push_back(world.clock(e).steps);
    CHECK(world.clock(e).outcome == Outcome::kDrained);
  }
  return out;
}

}  // namespace

TEST_CASE("the demo population really grows, moves and dies", "[cpu]") {
  const BatchResult r = runBatch({0, 1, 2}, 1, kLookahead);
  for (const auto& w : r.walkers) {
    CHECK(w.size() > 24);  // children were born ...
    uint32_t max_depth = 0;
    for (const WalkerState& s : w) max_depth = std::max(max_depth, s.depth);
    CHECK(max_depth >= 2);
  }
  // ... and some died: fewer survivors than births (each parent counts its children).
  uint32_t births = 0;
  for (const WalkerState& s : r.walkers[0]) births += s.children;
  CHECK(r.walkers[0].size() < 24 + births);
}

TEST_CASE("results are identical for 1, 2 and 4 threads", "[cpu][determinism]") {
  const std::vector<uint32_t> ids{0, 1, 2, 3, 4, 5};
  const BatchResult one = runBatch(ids, 1, kLookahead);
  for (int threads : {2, 4}) {
    const BatchResult many = runBatch(ids, threads, kLookahead);
    CHECK(many.steps == one.steps);
    CHECK(many.tallies == one.tallies);
    for (size_t e = 0; e < ids.size(); ++e) CHECK(many.walkers[e] == one.walkers[e]);  // same rows, same order
  }
}

/// Child processes that keep `n` cores busy until destroyed (other processes' load: this
/// process's own threads do not count as load).
class BusyLoops {
 public:
  explicit BusyLoops(int n) {
    for (int i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        volatile uint64_t spin = 0;
        for (;;) spin = spin + 1;
      }
      if (pid > 0) children_.push_back(pid);
    }
  }
  ~BusyLoops() {
    for (const pid_t pid : children_) kill(pid, SIGKILL);
    for (const pid_t pid : children_) waitpid(pid, nullptr, 0);
  }
  BusyLoops(const BusyLoops&) = delete;
  BusyLoops& operator=(const BusyLoops&) = delete;

 private:
  std::vector<pid_t> children_;
};

TEST_CASE("a busy machine gets fewer threads: what is free of its cores, at least one", "[cpu]") {
  CHECK(threadsForLoad(4, 8, 0) == 4);
  CHECK(threadsForLoad(4, 8, 5) == 3);
  CHECK(threadsForLoad(2, 2, 1) == 1);
  CHECK(threadsForLoad(2, 2, 9) == 1);
  CHECK(threadsForLoad(2, 2, -3) == 2);
  CHECK(usableCores() >= 1);
  CHECK(runnableOthers() >= 0);
  // Three spinning processes are runnable (running or queued) whatever else the machine does.
  const BusyLoops busy(3);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  int most = 0;
  for (int i = 0; i < 20; ++i) most = std::max(most, runnableOthers());
  CHECK(most >= 3);
}

TEST_CASE("a run that yields threads to load gives the results of a fixed team", "[cpu][determinism]") {
  const std::vector<uint32_t> ids{0, 1, 2, 3};
  const BatchResult fixed = runBatch(ids, 2, kLookahead);
  const BusyLoops busy(2 * usableCores());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(threadsForLoad(4, usableCores(), runnableOthers()) == 1);  // regions run on one thread
  const BatchResult yielding = runBatch(ids, 4, kLookahead, 0, true);
  CHECK(yielding.steps == fixed.steps);
  CHECK(yielding.tallies == fixed.tallies);
  for (size_t e = 0; e < ids.size(); ++e) CHECK(yielding.walkers[e] == fixed.walkers[e]);
}

TEST_CASE("results are identical for lookahead Δ and Δ/2", "[cpu][determinism]") {
  const std::vector<uint32_t> ids{0, 3};
  const BatchResult full = runBatch(ids, 2, kLookahead);
  const BatchResult halved = runBatch(ids, 2, kLookahead / 2);
  // Rows are kept sorted by creation key, so even the row order must not change.
  for (size_t e = 0; e < ids.size(); ++e) CHECK(halved.walkers[e] == full.walkers[e]);
  CHECK(halved.exp_steps[0] > full.exp_steps[0]);
}

TEST_CASE("an experiment gives the same result alone and in a mixed batch", "[cpu][isolation]") {
  const BatchResult batch = runBatch({5, 2, 7, 0}, 2, kLookahead);
  const std::vector<uint32_t> ids{5, 2, 7, 0};
  for (size_t i = 0; i < ids.size(); ++i) {
    const BatchResult alone = runBatch({ids[i]}, 1, kLookahead);
    CHECK(alone.walkers[0] == batch.walkers[i]);
    CHECK(alone.tallies[0] == batch.tallies[i]);
    CHECK(alone.exp_steps[0] == batch.exp_steps[i]);
  }
}

TEST_CASE("experiment blocking gives every experiment the result of an unblocked run", "[cpu][isolation]") {
  const std::vector<uint32_t> ids{5, 2, 7, 0, 3};
  const BatchResult together = runBatch(ids, 2, kLookahead);
  for (int64_t block : {1, 2, 4}) {
    const BatchResult blocked = runBatch(ids, 2, kLookahead, block);
    // Blocks run one after another (64-step chunks, several rounds), so the executor runs
    // more steps than the longest experiment, but each experiment runs exactly its own.
    CHECK(blocked.steps > together.steps);
    CHECK(blocked.exp_steps == together.exp_steps);
    CHECK(blocked.tallies == together.tallies);
    for (size_t e = 0; e < ids.size(); ++e) CHECK(blocked.walkers[e] == together.walkers[e]);
  }
  // Letting the executor choose by timing (sub-runs with and without blocks) changes
  // nothing either, whatever it chooses.
  for (int threads : {1, 2}) {
    const BatchResult chosen = runBatch(ids, threads, kLookahead, CpuExecutor::kAutoBlock);
    CHECK(chosen.exp_steps == together.exp_steps);
    CHECK(chosen.tallies == together.tallies);
    for (size_t e = 0; e < ids.size(); ++e) CHECK(chosen.walkers[e] == together.walkers[e]);
  }
}

TEST_CASE("a held experiment's rows are not run and its clock does not move", "[cpu]") {
  DemoWorld world(2, TableCapacity{64, 64});
  for (ExpId e = 0; e < 2; ++e) {
    world.config(e) = configFor(e);
    seedExperiment(world, e, 4, kLookahead, 7);
  }
  world.commitAllHost();
  world.grow<Walker>(TableCapacity{1 << 12, 1 << 12});
  const std::vector<WalkerState> before = walkersOf(world, 1);
  world.clock(1).outcome = Outcome::kHeld;
  const RunReport r = CpuExecutor(2).run<DemoGraph>(world.view(), 10);
  CHECK(r.steps == 10);
  CHECK(world.clock(0).steps == 10);
  CHECK(world.clock(1).steps == 0);
  CHECK(world.clock(1).now_ps == 0);
  CHECK(walkersOf(world, 1) == before);
}

TEST_CASE("idle windows are skipped and the run ends with the last experiment", "[cpu]") {
  DemoWorld world(2, TableCapacity{64, 64});
  world.config(0) = configFor(0);
  world.config(0).spawn_probability = 0;
  world.config(1) = world.config(0);
  world.config(1).horizon_ps = 10'000'000;
  // One walker each, hopping every 1 µs while the lookahead is 1 ns: without jumps an
  // experiment would take 1000 steps per hop.
  world.clock(0).lookahead_ps = world.clock(1).lookahead_ps = 1000;
  world.createHost<Walker>(0, 1, Position{0}, Timer{0, 1'000'000}, Life{});
  world.createHost<Walker>(1, 1, Position{0}, Timer{0, 1'000'000}, Life{});
  world.commitAllHost();
  const RunReport r = CpuExecutor(2).runToEnd<DemoGraph>(world.view());
  REQUIRE(r.finished);
  // Experiment 0 (horizon 60 ns): one hop at 0, then nothing pending: drained after 1 step.
  CHECK(world.table<Walker>().get<Life>(0).hops == 1);
  CHECK(world.clock(0).steps == 1);
  // Experiment 1 (horizon 10 µs): hops at 0..9 µs, one step each; the clock jumps 1 µs
  // and stops at the end of the last window it simulated.
  CHECK(world.table<Walker>().get<Life>(1).hops == 10);
  CHECK(world.clock(1).steps == 10);
  CHECK(world.clock(1).now_ps == 9'000'000 + 1000);
  CHECK(r.steps == 10);
}

TEST_CASE("a step budget stops the run and a later run continues it exactly", "[cpu]") {
  const std::vector<uint32_t> ids{1, 4};
  const BatchResult reference = runBatch(ids, 2, kLookahead);
  DemoWorld world(2, TableCapacity{256, 256});
  for (ExpId e = 0; e < 2; ++e) {
    world.config(e) = configFor(ids[e]);
    world.clock(e).stable_id = ids[e];
    seedExperiment(world, e, 24, kLookahead, 42);
  }
  world.commitAllHost();
  world.grow<Walker>(TableCapacity{1 << 16, 1 << 14});
  const CpuExecutor exec(2);
  const RunReport first = exec.run<DemoGraph>(world.view(), 7);
  CHECK(first.steps == 7);
  CHECK_FALSE(first.finished);
  exec.runToEnd<DemoGraph>(world.view(), 5);
  for (ExpId e = 0; e < 2; ++e) CHECK(walkersOf(world, e) == reference.walkers[e]);
}

TEST_CASE("an overflow inside a run stops it with a status instead of corrupting", "[cpu]") {
  DemoWorld world(1, TableCapacity{32, 4});
  world.config(0) = configFor(0);
  world.config(0).spawn_probability = 1.0;
  world.config(0).death_probability = 0.0;
  seedExperiment(world, 0, 8, kLookahead, 1);
  world.commitAllHost();
  const RunReport r = CpuExecutor(2).runToEnd<DemoGraph>(world.view());
  CHECK(r.finished);
  CHECK((r.status & (kStatusPendingOverflow | kStatusCapacityOverflow)) != 0u);
}
