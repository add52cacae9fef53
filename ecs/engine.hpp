/**
 * @file engine.hpp
 * Engine nodes of the system graph: commit of created and destroyed rows, and the clock
 * advance with done detection. Written once over an execution policy.
 */
#pragma once

#include <cstdint>

#include "ecs/macros.hpp"
#include "ecs/policy.hpp"
#include "ecs/type_list.hpp"
#include "ecs/world.hpp"

namespace mv {

/// Commits creations and destructions of every table, all tables in lockstep phases. Each
/// table's finish (TableView::commitFinish) runs in the next node's phase, AdvanceClocks',
/// which touches no table: the graph puts CommitAll right before it.
struct CommitAll {
  static constexpr const char* kName = "commit";
  static constexpr const char* kWhy = "make rows created and destroyed this step real, compacted and grouped by experiment";
  static constexpr bool kEngine = true;
  using After = TypeList<>;

  /// Phases this step: none when no table created or destroyed anything (every thread
  /// reads the same counters, settled by the barrier before this node).
  template <class WV>
  MV_HD static int phaseCount(const WV& world) {
    return allNoop(world, typename WV::Archetypes{}) ? 0 : maxPhases(world, typename WV::Archetypes{}, false);
  }
  /// Phases in the worst case (fixed by the capacities), for launches planned on the host.
  template <class WV>
  MV_HD static int maxPhaseCount(const WV& world) {
    return maxPhases(world, typename WV::Archetypes{}, true);
  }

  MV_EXEC_CHECK_DISABLE
  template <class Policy, class WV>
  MV_HD static void runPhase(const Policy& policy, WV& world, int phase) {
    runTables(policy, world, phase, typename WV::Archetypes{});
  }

 private:
  template <class WV, class... As>
  MV_HD static bool allNoop(const WV& world, TypeList<As...>) {
    return (world.template table<As>().commitIsNoop() && ...);
  }
  /// The most phases any table's commit takes: this step's (from the rows pending), or the
  /// capacities' worst case.
  template <class WV, class... As>
  MV_HD static int maxPhases(const WV& world, TypeList<As...>, bool worst_case) {
    int n = 0;
    (
        [&] {
          const auto& t = world.template table<As>();
          const int k = worst_case ? t.commitMaxPhaseCount() : t.commitPhaseCount();
          n = k > n ? k : n;
        }(),
        ...);
    return n;
  }
  MV_EXEC_CHECK_DISABLE
  template <class Policy, class WV, class... As>
  MV_HD static void runTables(const Policy& policy, WV& world, int phase, TypeList<As...>) {
    // Every table sees every phase; each does nothing past its own count.
    (world.template table<As>().commitPhase(policy, phase, world.run_first, world.run_end), ...);
  }
};

/**
 * Ends a step: each running experiment's clock moves to max(now + lookahead, earliest
 * reported event); an experiment with no reported event has drained and is done, one whose
 * clock reaches its end time stops there. Then decides, once for all threads, whether the
 * run goes on (some experiment running and no error raised). One phase: every thread that
 * advanced a clock adds its running count and one arrival to the step parity's counter in
 * one acquire-release add, and the last to arrive decides and readies the next step (the
 * step's closing barrier then publishes it), so the decision needs no barrier of its own.
 */
struct AdvanceClocks {
  static constexpr const char* kName = "advance_clocks";
  static constexpr const char* kWhy = "move each experiment to its next window, skipping idle time, and detect the end";
  static constexpr bool kEngine = true;
  using After = TypeList<>;
  /// One arrival in the step counter; the running experiments are its low 32 bits.
  static constexpr int64_t kArrival = int64_t{1} << 32;

  template <class WV>
  MV_HD static int phaseCount(const WV&) {
    return 1;
  }
  template <class WV>
  MV_HD static int maxPhaseCount(const WV&) {
    return 1;
  }

  MV_EXEC_CHECK_DISABLE
  template <class Policy, class WV>
  MV_HD static void runPhase(const Policy& policy, WV& world, int) {
    if (policy.rank() == 0) finishCommits(world, typename WV::Archetypes{});
    int64_t visited = 0;
    int64_t running = 0;
    parallelFor(policy, world.num_exps, [&](int64_t e) {
      ++visited;
      ExperimentClock& c = world.clocks[e];
      if (c.done()) return;
      const int64_t next_window = c.now_ps + c.lookahead_ps;
      c.steps += 1;
      if (c.next_wake_ps == INT64_MAX) {
        c.now_ps = next_window;  // the end of the last window it simulated
        c.outcome = Outcome::kDrained;
        return;
      }
      c.now_ps = c.next_wake_ps > next_window ? c.next_wake_ps : next_window;
      if (c.now_ps >= c.end_ps) {
        c.now_ps = c.end_ps;
        c.outcome = Outcome::kTimeLimit;
      } else {
        ++running;
      }
      c.next_wake_ps = INT64_MAX;
    });
    const int64_t arrivals = parallelForThreads(policy, world.num_exps);
    if (arrivals == 0) {
      if (policy.rank() == 0) decide(world, static_cast<int>(world.steps_run & 1), 0);
      return;
    }
    // Only arriving threads read steps_run: the last arrival changes it.
    if (visited == 0) return;
    const int parity = static_cast<int>(world.steps_run & 1);
    const int64_t before = atomicFetchAddAcqRel<int64_t>(&world.active[parity], kArrival + running);
    if (before / kArrival + 1 == arrivals) decide(world, parity, before % kArrival + running);
  }

 private:
  /// Finishes the commit of every table whose commit ran this step (CommitAll). The
  /// finish writes only its table's view; this phase's other threads read the clocks and,
  /// in `decide`, the tables' status, which the finish does not write.
  template <class WV, class... As>
  MV_HD static void finishCommits(WV& world, TypeList<As...>) {
    (world.template table<As>().commitFinish(), ...);
  }
  /// The last arrival: stop when nothing runs or an error was raised; clear the other
  /// parity's counter for the next step.
  template <class WV>
  MV_HD static void decide(WV& world, int parity, int64_t running) {
    world.stop[parity] = (running == 0 || world.allStatus() != 0) ? 1u : 0u;
    world.active[parity ^ 1] = 0;
    world.steps_run += 1;
  }
};

}  // namespace mv
