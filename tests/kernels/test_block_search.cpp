/**
 * @file test_block_search.cpp
 * The block-count search of CpuExecutor's `auto` blocking, driven by synthetic rates: which
 * counts it measures, what it adopts and for how long.
 */
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cpu/block_search.hpp"

using namespace mv;

namespace {

/// Runs one search to its end with `rate(blocks)`; returns the block counts it measured.
/// As in the executor, a count above `running` runs as `running` blocks.
std::vector<int64_t> searchOnce(BlockSearch& s, const std::function<double(int64_t)>& rate, int64_t running) {
  std::vector<int64_t> probes;
  REQUIRE(s.measuring());
  while (s.measuring()) {
    probes.push_back(s.blocks());
    s.measured(rate(std::min(s.blocks(), running)), running);
    REQUIRE(probes.size() < 16);
  }
  return probes;
}

/// Rates that peak at `peak` blocks and fall by half per factor of 4 away from it.
std::function<double(int64_t)> peakAt(int64_t peak) {
  return [peak](int64_t blocks) {
    double r = 100;
    for (int64_t b = blocks; b < peak; b *= BlockSearch::kFactor) r /= 2;
    for (int64_t b = peak; b < blocks; b *= BlockSearch::kFactor) r /= 2;
    return r;
  };
}

}  // namespace

constexpr int64_t kAll = BlockSearch::kAll;

TEST_CASE("the first search starts at one experiment per block and descends while fewer blocks win",
          "[block_search]") {
  BlockSearch s;
  CHECK(s.blocks() == kAll);
  // Each probe is followed by the best so far again: 64 after 16, 16 after 4.
  CHECK(searchOnce(s, peakAt(16), 64) == std::vector<int64_t>{kAll, 16, 64, 4, 16});
  CHECK(s.choice() == 16);
  CHECK(s.blocks() == 16);
  CHECK(s.period() == BlockSearch::kPeriod);

  BlockSearch unblocked;
  CHECK(searchOnce(unblocked, peakAt(1), 64) == std::vector<int64_t>{kAll, 16, 64, 4, 16, 1, 4});
  CHECK(unblocked.choice() == 1);

  BlockSearch ones;
  CHECK(searchOnce(ones, peakAt(64), 64) == std::vector<int64_t>{kAll, 16, 64});
  CHECK(ones.choice() == 64);
}

TEST_CASE("a probe must beat the best by more than kMinGain to win", "[block_search]") {
  const auto gain = [](double g) {
    return [g](int64_t blocks) { return blocks == 64 ? 100.0 : 100.0 * g; };
  };
  BlockSearch close;
  CHECK(searchOnce(close, gain(1.05), 64) == std::vector<int64_t>{kAll, 16, 64});
  CHECK(close.choice() == 64);
  BlockSearch clear;
  CHECK(searchOnce(clear, gain(1.2), 64) == std::vector<int64_t>{kAll, 16, 64, 4, 16});
  CHECK(clear.choice() == 16);  // 4 blocks are no faster than 16
}

TEST_CASE("one experiment per block is as many blocks as experiments running", "[block_search]") {
  BlockSearch s;
  const auto more_is_faster = [](int64_t blocks) { return static_cast<double>(blocks * blocks); };
  CHECK(searchOnce(s, more_is_faster, 20) == std::vector<int64_t>{kAll, 5, 20});
  CHECK(s.choice() == 20);
}

TEST_CASE("later searches probe only the choice and its neighbours", "[block_search]") {
  BlockSearch s;
  searchOnce(s, peakAt(64), 64);
  REQUIRE(s.choice() == 64);
  s.searchAgain();
  // 64 blocks cannot go up (one experiment each): the choice, then one step down.
  CHECK(searchOnce(s, peakAt(64), 64) == std::vector<int64_t>{64, 16, 64});
  CHECK(s.choice() == 64);

  BlockSearch mid;
  searchOnce(mid, peakAt(16), 64);
  mid.searchAgain();
  CHECK(searchOnce(mid, peakAt(16), 64) == std::vector<int64_t>{16, 64, 16, 4, 16});
  CHECK(mid.choice() == 16);
}

TEST_CASE("a later search follows the rates when they move", "[block_search]") {
  BlockSearch s;
  searchOnce(s, peakAt(64), 64);
  s.searchAgain();
  // The batch now runs best without blocks: the search walks down while fewer blocks win.
  CHECK(searchOnce(s, peakAt(1), 64) == std::vector<int64_t>{64, 16, 64, 4, 16, 1, 4});
  CHECK(s.choice() == 1);
  s.searchAgain();
  CHECK(searchOnce(s, peakAt(4), 64) == std::vector<int64_t>{1, 4, 1, 16, 4});
  CHECK(s.choice() == 4);
  // Fewer running experiments than the choice: the count acts as one experiment per block.
  s.searchAgain();
  CHECK(searchOnce(s, peakAt(1), 2) == std::vector<int64_t>{4, 1, 2});
  CHECK(s.choice() == 1);
}

TEST_CASE("a probe is judged against the best measured before and after it, so a drift does not decide",
          "[block_search]") {
  // Steps get dearer with every sub-run (a batch's flows ramping up) and no blocks are 1.5x
  // as fast as 4: measured one after the other, no blocks would look slower than the
  // 4 blocks before them (1.5 x 100 / 2^1 = 75 < 100).
  int64_t subrun = 0;
  const auto ramp = [&subrun](int64_t blocks) {
    const double cost = static_cast<double>(int64_t{1} << subrun++);
    return (blocks == 1 ? 150.0 : 100.0) / cost;
  };
  BlockSearch s;
  // 4 at cost 1, 1 at cost 2, 4 at cost 4: the reference is (100 + 25) / 2 = 62.5 < 75 / 1.1.
  CHECK(searchOnce(s, ramp, 4) == std::vector<int64_t>{kAll, 1, 4});
  CHECK(s.choice() == 1);
}

TEST_CASE("a sub-run with the choice twice as fast or slow as measured starts a new search", "[block_search]") {
  BlockSearch s;
  searchOnce(s, peakAt(1), 64);  // choice 1 at rate 100
  REQUIRE_FALSE(s.measuring());
  s.used(190);
  s.used(55);
  CHECK_FALSE(s.measuring());
  s.used(210);  // e.g. the opening burst of a batch is over
  CHECK(s.measuring());
  CHECK(s.blocks() == 1);
  CHECK(searchOnce(s, peakAt(4), 64) == std::vector<int64_t>{1, 4, 1, 16, 4});
  s.used(100.0 / 2.1);
  CHECK(s.measuring());
}

TEST_CASE("the period doubles while blocking keeps winning or keeps losing, and resets on a change",
          "[block_search]") {
  BlockSearch s;
  searchOnce(s, peakAt(16), 64);
  std::vector<int64_t> periods{s.period()};
  for (int i = 0; i < 6; ++i) {
    s.searchAgain();
    searchOnce(s, peakAt(i < 5 ? (i % 2 == 0 ? 64 : 16) : 1), 64);
    periods.push_back(s.period());
  }
  // 16 and 64 blocks are both blocked: the period doubles up to the cap; unblocked resets it.
  CHECK(periods == std::vector<int64_t>{16, 32, 64, 128, 256, 256, 16});
}
