/**
 * @file cpu_executor.hpp
 * The CPU backend: one OpenMP parallel region runs many steps of the system graph. Each
 * node is a loop over all rows of all experiments with static, contiguous partitioning;
 * an OpenMP barrier separates levels and engine phases. Results do not depend on the
 * number of threads (systems write only their own row; creation order is sorted at commit).
 */
#pragma once

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ecs/graph.hpp"
#include "ecs/policy.hpp"
#include "kernels/cpu/block_search.hpp"
#include "kernels/cpu/step_barrier.hpp"

namespace mv {

/// OpenMP execution policy; only valid inside the executor's parallel region, whose
/// threads share `barrier` (its count set to the team's size).
class CpuPolicy {
 public:
  explicit CpuPolicy(StepBarrier& barrier)
      : rank_(omp_get_thread_num()), count_(omp_get_num_threads()), barrier_(&barrier) {}
  int64_t rank() const { return rank_; }
  int64_t count() const { return count_; }
  void barrier() const { barrier_->arriveAndWait(); }

 private:
  int64_t rank_;
  int64_t count_;
  StepBarrier* barrier_;
};

/// What one call of a backend's `run` did.
struct RunReport {
  int64_t steps = 0;        ///< steps executed by this call
  bool finished = false;    ///< every experiment done, or an error raised
  uint32_t status = 0;      ///< union of world and table status bits (0 = fine)
  double wall_seconds = 0;  ///< host wall time of the call
};

/// The report of a run of `steps` steps started at `start`, read off the world (host view).
template <class WV>
RunReport reportRun(const WV& world, int64_t steps, std::chrono::steady_clock::time_point start) {
  RunReport r;
  r.steps = steps;
  r.finished = steps > 0 && world.stop[(world.steps_run - 1) & 1] != 0u;
  r.status = world.allStatus();
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

/// Number of hardware threads OpenMP would use by default.
int defaultCpuThreads();

/// Cores this process may run on (its affinity mask: omp_get_num_procs).
int availableCpuCores();

/// Threads for a region that yields to load: `want`, or fewer when the machine's other
/// runnable threads leave fewer of its `cores` free, and at least 1.
int threadsForLoad(int want, int cores, int runnable_others);

/// Threads other processes have runnable now (Linux: /proc/loadavg's running count less this
/// process's runnable threads, /proc/self/task); 0 where it cannot be read. The count is the
/// whole machine's: in a container limited to some of its cores, other containers' load
/// counts too.
int runnableOthers();

/// Cores this process may run on (its CPU affinity).
int usableCores();

/**
 * Runs a world's graph on CPU threads.
 *
 * Experiment blocking: with `block` > 0 and more running experiments than that, a run
 * advances the batch in blocks of about `block` experiments, one block after another, each
 * for up to `max_steps` steps while the others are held (Outcome::kHeld: their rows are
 * skipped and their clocks do not move). Experiments never interact, so results are the
 * same as with every experiment in every step; what changes is locality: a block's working
 * set stays in the caches from one step to the next instead of being evicted by the rest
 * of the batch. A block is a contiguous range of running experiments, so its rows are a
 * contiguous range of every table (rows are grouped by experiment): the executor sets the
 * world's [run_first, run_end) and systems visit only those rows, split evenly over the
 * threads, instead of skipping the held rows one by one. A block's commits rewrite only its
 * experiments' rows while they fit the slack their regions get (table.hpp), so a batch
 * whose tables churn pays for its own rows rather than the whole table's; the slack is
 * removed when the blocks are done.
 *
 * With `block` = kAutoBlock the executor chooses, and keeps choosing: after kAutoWarmUp
 * steps that are not timed (the first steps pay for start-up costs), a BlockSearch
 * (block_search.hpp) picks the block counts of timed sub-runs of up to kAutoSteps steps
 * (rates in experiment-steps per second; see runProbe): one experiment per block, then 4x
 * fewer blocks while fewer keep winning, each probe bracketed by measurements of the best.
 * The fastest is run for its period (BlockSearch::period() sub-runs' worth of steps, in
 * sub-runs of about kUseSeconds each, at least kAutoSteps steps, each timed: one 2x off the
 * search's rate ends the period early), then a new search measures that choice and its
 * neighbours. Each block's working set is brought back into the caches at the start of
 * every sub-run, so short sub-runs would cost a batch in blocks of one experiment about a
 * tenth of its speed. Work that scales with the whole batch (one pass over the
 * experiments' clocks per step) is paid once per block, so a batch of small experiments
 * can lose with blocks; a search stops at the first loss, which bounds the cost of a bad
 * probe to one sub-run. The choice depends on timing, the results do not.
 */
class CpuExecutor {
 public:
  /// The `block` that lets the executor choose between blocking and not.
  static constexpr int64_t kAutoBlock = -1;
  /// Steps per measured sub-run and untimed steps before the first, for kAutoBlock.
  static constexpr int64_t kAutoSteps = 64;
  static constexpr int64_t kAutoWarmUp = 8;
  /// A measured sub-run's first part, and the wall time its whole should fit in (see runProbe).
  static constexpr int64_t kProbeSteps = 8;
  static constexpr double kProbeSeconds = 0.25;
  /// The wall time a sub-run using the search's choice aims at (sized from the last sub-run).
  static constexpr double kUseSeconds = 1.0;

  /// `threads` = 0 means OpenMP's default (all cores); `block` = 0 runs every experiment in
  /// every step, kAutoBlock chooses. With `yield_to_load`, each parallel region runs on
  /// threadsForLoad(threads, usableCores(), runnableOthers()) threads (the load read at
  /// most every kLoadPeriod): on a machine
  /// with more runnable threads than cores, a barrier's partner is often descheduled and a
  /// team of two runs many times slower than one thread (bench/busy_machine.sh).
  explicit CpuExecutor(int threads = 0, int64_t block = 0, bool yield_to_load = false)
      : threads_(threads > 0 ? threads : defaultCpuThreads()),
        block_(block == kAutoBlock || block > 0 ? block : 0),
        yield_to_load_(yield_to_load) {}

  int threads() const { return threads_; }
  int64_t block() const { return block_; }

  /**
   * Runs up to `max_steps` steps of graph G on `world` (per block of experiments when
   * blocking: each experiment advances at most `max_steps` steps) and reports what
   * happened. `steps` counts every step executed, over all blocks.
   */
  template <class G, class WV>
  RunReport run(WV& world, int64_t max_steps) const {
    return block_ == kAutoBlock ? runAuto<G>(world, max_steps) : runBlocks<G>(world, max_steps, block_);
  }

  /// Runs until every experiment is done (or an error is raised), `chunk` steps per region.
  template <class G, class WV>
  RunReport runToEnd(WV& world, int64_t chunk = 1 << 20) const {
    RunReport total;
    for (;;) {
      const RunReport r = run<G>(world, chunk);
      total.steps += r.steps;
      total.wall_seconds += r.wall_seconds;
      total.status = r.status;
      if (r.finished || r.steps == 0) {
        total.finished = r.finished;
        return total;
      }
    }
  }

 private:
  /// kAutoBlock's state: untimed warm-up steps left, the search, steps left of the current
  /// use of its choice, and the last sub-run's wall seconds per step (0: none timed yet).
  struct AutoState {
    int64_t warm_up = kAutoWarmUp;
    BlockSearch search;
    int64_t left = 0;
    double step_seconds = 0;
  };

  /// Steps of the next sub-run using the choice: about kUseSeconds at the last sub-run's
  /// speed, at least kAutoSteps, at most what is left of the period.
  int64_t useSteps() const {
    const double fit = auto_.step_seconds > 0 ? kUseSeconds / auto_.step_seconds : 0;
    const int64_t steps = fit < static_cast<double>(auto_.left) ? static_cast<int64_t>(fit) : auto_.left;
    return std::min(std::max(steps, kAutoSteps), auto_.left);
  }

  template <class WV>
  static int64_t experimentSteps(const WV& world) {
    int64_t n = 0;
    for (int64_t e = 0; e < world.num_exps; ++e) n += world.clocks[e].steps;
    return n;
  }

  template <class G, class WV>
  RunReport runAuto(WV& world, int64_t max_steps) const {
    RunReport total;
    for (int64_t done = 0; done < max_steps;) {
      BlockSearch& search = auto_.search;
      // Sub-runs of kAutoSteps while measuring; of useSteps() while using the choice.
      const int64_t want = auto_.warm_up > 0 ? auto_.warm_up : search.measuring() ? kAutoSteps : useSteps();
      const int64_t k = max_steps - done < want ? max_steps - done : want;
      const int64_t running = runningExperiments(world);
      const int64_t blocks = std::min(search.blocks(), std::max<int64_t>(running, 1));
      const int64_t block = blocks <= 1 ? 0 : (running + blocks - 1) / blocks;
      const int64_t before = experimentSteps(world);
      int64_t advanced = k;  // steps each experiment was allowed
      const RunReport r = auto_.warm_up == 0 && search.measuring() ? runProbe<G>(world, k, block, advanced)
                                                                    : runBlocks<G>(world, k, block);
      const double rate =
          r.wall_seconds > 0 ? static_cast<double>(experimentSteps(world) - before) / r.wall_seconds : 0;
      if (r.wall_seconds > 0 && advanced > 0) auto_.step_seconds = r.wall_seconds / static_cast<double>(advanced);
      if (auto_.warm_up > 0) {
        auto_.warm_up -= advanced;
      } else if (search.measuring()) {
        search.measured(rate, running);
        if (!search.measuring()) auto_.left = search.period() * kAutoSteps;
      } else {
        auto_.left -= advanced;
        if (auto_.left <= 0) {
          search.searchAgain();
        } else {
          search.used(rate);
        }
      }
      addRun(total, r);
      total.finished = r.finished;
      done += advanced;
      if (r.finished || r.steps == 0) break;
    }
    return total;
  }

  /// A measured sub-run of up to `max_steps` steps: kProbeSteps first, then the rest only if
  /// it would fit in kProbeSeconds at that speed. Steps cost many times more while a batch
  /// starts (every flow at once) than later: this bounds what a probe of a bad block count
  /// costs then, while cheap steps still get long sub-runs (each block's working set is
  /// brought into the caches once per sub-run, which short sub-runs would overweight).
  /// `advanced` becomes the steps each experiment was allowed.
  template <class G, class WV>
  RunReport runProbe(WV& world, int64_t max_steps, int64_t block, int64_t& advanced) const {
    advanced = std::min(max_steps, kProbeSteps);
    RunReport total = runBlocks<G>(world, advanced, block);
    if (total.finished || total.steps == 0 || total.wall_seconds <= 0) return total;
    const auto fit = static_cast<int64_t>((kProbeSeconds - total.wall_seconds) / total.wall_seconds *
                                          static_cast<double>(advanced));
    const int64_t rest = std::min(max_steps - advanced, fit);
    if (rest < kProbeSteps) return total;
    const RunReport r = runBlocks<G>(world, rest, block);
    addRun(total, r);
    total.finished = r.finished;
    advanced += rest;
    return total;
  }

  /// Adds run `r`'s steps, time and status to `total`.
  static void addRun(RunReport& total, const RunReport& r) {
    total.steps += r.steps;
    total.wall_seconds += r.wall_seconds;
    total.status = r.status;
  }

  template <class G, class WV>
  RunReport runBlocks(WV& world, int64_t max_steps, int64_t block) const {
    const int64_t running = runningExperiments(world);
    if (block == 0 || running <= block) return runRegion<G>(world, max_steps);
    const int64_t blocks = (running + block - 1) / block;
    std::vector<uint32_t> order;  // the running experiments, in index order
    for (uint32_t e = 0; e < world.num_exps; ++e) {
      if (!world.clocks[e].done()) order.push_back(e);
    }
    RunReport total;
    for (int64_t b = 0; b < blocks; ++b) {
      // Block b: part b of the running experiments.
      const auto lo = static_cast<std::size_t>(partBegin(running, blocks, b));
      const auto hi = static_cast<std::size_t>(partBegin(running, blocks, b + 1));
      for (std::size_t i = 0; i < order.size(); ++i) {
        ExperimentClock& c = world.clocks[order[i]];
        if ((i < lo || i >= hi) && !c.done()) c.outcome = Outcome::kHeld;  // not those an earlier block finished
      }
      world.run_first = order[lo];
      world.run_end = order[hi - 1] + 1;
      const RunReport r = runRegion<G>(world, max_steps);
      world.run_first = 0;
      world.run_end = UINT32_MAX;
      for (const uint32_t e : order) {
        if (world.clocks[e].outcome == Outcome::kHeld) world.clocks[e].outcome = Outcome::kRunning;
      }
      total.steps += r.steps;
      total.wall_seconds += r.wall_seconds;
      total.status = world.allStatus();
      if (total.status != 0u) break;
    }
    world.closeGaps();
    total.finished = total.status != 0u || runningExperiments(world) == 0;
    return total;
  }

  template <class WV>
  static int64_t runningExperiments(const WV& world) {
    int64_t n = 0;
    for (int64_t e = 0; e < world.num_exps; ++e) n += world.clocks[e].done() ? 0 : 1;
    return n;
  }

  /// One parallel region of up to `max_steps` steps over the experiments not done or held.
  template <class G, class WV>
  RunReport runRegion(WV& world, int64_t max_steps) const {
    const auto start = std::chrono::steady_clock::now();
    prepareRun(world);
    int64_t steps = 0;
    StepBarrier barrier;
    const int team = teamSize();
#pragma omp parallel num_threads(team)
    {
#pragma omp single
      barrier.setCount(omp_get_num_threads());  // the team may be smaller than asked
      const CpuPolicy policy(barrier);
      const int64_t k = mv::runSteps<G>(policy, world, max_steps);
      if (policy.rank() == 0) steps = k;
    }
    return reportRun(world, steps, start);
  }

  /// How often yield_to_load reads the machine's load (/proc): a region can be a few
  /// milliseconds, and the read walks this process's threads.
  static constexpr std::chrono::milliseconds kLoadPeriod{100};

  /// Threads of the next region: threads_, or with yield_to_load what the load leaves
  /// (threadsForLoad), read again once kLoadPeriod has passed.
  int teamSize() const {
    if (!yield_to_load_ || threads_ <= 1) return threads_;
    const auto now = std::chrono::steady_clock::now();
    if (load_team_ == 0 || now - load_read_ >= kLoadPeriod) {
      load_team_ = threadsForLoad(threads_, usableCores(), runnableOthers());
      load_read_ = now;
    }
    return load_team_;
  }

  int threads_;
  int64_t block_;
  bool yield_to_load_;
  mutable AutoState auto_;  ///< an executor serves one host thread
  mutable int load_team_ = 0;  ///< teamSize()'s last answer (0: none yet)
  mutable std::chrono::steady_clock::time_point load_read_;
};

}  // namespace mv
