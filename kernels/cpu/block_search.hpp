/**
 * @file block_search.hpp
 * How CpuExecutor's `auto` blocking chooses a block count from measured rates. Pure logic
 * (the executor times the sub-runs), so the search is tested with synthetic rates.
 */
#pragma once

#include <cstdint>

namespace mv {

/**
 * A search over block counts 1 (no blocks), 4, 16, ... (kFactor apart) and one experiment
 * per block, driven by the rates of measured sub-runs.
 *
 * A search first measures the current choice, then its neighbours: more blocks while more
 * keep winning; if the first step up lost, fewer blocks while fewer keep winning. Each
 * probe is followed by a second measurement of the best so far, and the probe is compared
 * with the mean of the best's measurements before and after it: a batch's cost per step
 * drifts (it rises for hundreds of steps while every flow starts, then falls), and sub-runs
 * measured one after another see different phases; bracketing the probe cancels a steady
 * drift. A probe wins when it is more than kMinGain times as fast as that reference:
 * timings on a shared machine vary by several per cent from one sub-run to the next, and a
 * wrong move costs a whole period. The search stops at the first loss and adopts the
 * fastest count measured, which is then used for `period()` sub-runs' worth of steps before
 * the next search, or until a sub-run with it runs kDrift times faster or slower than
 * measured (a new phase of the batch). The period starts at kPeriod and doubles, up to kMaxPeriod, while
 * searches keep the batch blocked (or keep it unblocked); a change between the two resets
 * it. The first search starts from one experiment per block (kAll): a block's commits cost
 * only its own rows (table.hpp), so blocks of one lose little where they do not help, and
 * where an experiment's working set fills the caches they run several times faster than
 * no blocks, in every phase of the batch. A later search starts from the choice, so a batch
 * that runs best in blocks of one experiment pays for near-optimal probes (the choice and
 * 4x fewer blocks) rather than for a sub-run without blocks, which can be several times
 * slower.
 */
class BlockSearch {
 public:
  static constexpr int64_t kFactor = 4;
  static constexpr int64_t kPeriod = 16;
  static constexpr int64_t kMaxPeriod = 256;
  static constexpr double kMinGain = 1.1;
  static constexpr double kDrift = 2;
  /// The block count "one experiment per block", whatever the batch (the first search's start).
  static constexpr int64_t kAll = INT64_MAX;

  /// True while the next sub-run is measured (a search is on); false while the choice is used.
  bool measuring() const { return measuring_; }
  /// Blocks of the next sub-run: while measuring the probe or, right after it, the best so
  /// far again; else the choice (1 = no blocks).
  int64_t blocks() const { return measuring_ ? (recheck_ ? best_ : probe_) : choice_; }
  /// The count in use since the last search ended.
  int64_t choice() const { return choice_; }
  /// Sub-runs' worth of steps the choice is used for before the next search.
  int64_t period() const { return period_; }

  /// The measured sub-run with blocks() blocks ran at `rate` (any unit, higher is faster)
  /// with `running` experiments not done; block counts above `running` act as `running`.
  void measured(double rate, int64_t running);
  /// The choice was used for its period: the next sub-run starts a search from it.
  void searchAgain();
  /// A sub-run with the choice ran at `rate`. When that is more than kDrift times faster or
  /// slower than the choice measured in its search, the batch has changed phase (its flows
  /// started or drained) and the next sub-run starts a search, before the period ends.
  void used(double rate);

 private:
  void finish();

  bool measuring_ = true;
  int64_t choice_ = kAll;
  int64_t probe_ = kAll;
  int direction_ = 0;  ///< 0: measuring the choice; +1: more blocks; -1: fewer
  bool recheck_ = false;  ///< the probe was measured; the next sub-run measures the best again
  int64_t best_ = kAll;
  double best_rate_ = 0;
  double probe_rate_ = 0;
  int64_t period_ = 0;
};

}  // namespace mv
