/**
 * @file test_policy.cpp
 * The static partitioning shared by the CPU's loops, experiment blocks and CPU workers,
 * and how a grid-stride policy shares a system's rows over warps.
 */
#include <catch2/catch.hpp>

#include <vector>

#include "ecs/policy.hpp"

using namespace mv;

namespace {

TEST_CASE("contiguous parts cover every index once, their sizes differing by at most one", "[policy]") {
  // 10 indices in 4 parts: 2, 3, 2, 3 (begins 0, 2, 5, 7, end 10).
  std::vector<int64_t> begins;
  for (int64_t k = 0; k <= 4; ++k) begins.push_back(partBegin(10, 4, k));
  CHECK(begins == std::vector<int64_t>{0, 2, 5, 7, 10});
  CHECK(partBegin(3, 3, 1) == 1);
  // n * k does not overflow for batches of 2^32 rows or more.
  CHECK(partBegin(4'000'000'000, 2, 1) == 2'000'000'000);
  CHECK(partBegin(4'000'000'000, 2, 2) == 4'000'000'000);
  // parallelFor visits exactly the calling thread's part.
  struct Rank {
    int64_t r;
    int64_t rank() const { return r; }
    int64_t count() const { return 4; }
    void barrier() const {}
  };
  std::vector<int> hits(10, 0);
  for (int64_t r = 0; r < 4; ++r) {
    parallelFor(Rank{r}, 10, [&](int64_t i) {
      CHECK(i >= partBegin(10, 4, r));
      CHECK(i < partBegin(10, 4, r + 1));
      hits[static_cast<size_t>(i)] += 1;
    });
  }
  CHECK(hits == std::vector<int>(10, 1));
}

/// A thread of a grid-stride policy (a CUDA grid of `threads` threads) on the host.
struct GridThread {
  static constexpr bool kGridStride = true;
  int64_t r;
  int64_t threads;
  bool spread = true;
  int64_t rank() const { return r; }
  int64_t count() const { return threads; }
  bool spreadRows() const { return spread; }
  void barrier() const {}
};

/// Runs parallelForUnits for every thread of a grid of `threads`; per row, the thread
/// that ran it (-1: none; a row run twice fails the test).
std::vector<int64_t> unitOwners(int64_t threads, int64_t n, bool spread = true) {
  std::vector<int64_t> owner(static_cast<size_t>(n), -1);
  for (int64_t r = 0; r < threads; ++r) {
    parallelForUnits(GridThread{r, threads, spread}, n, [&](int64_t i) {
      REQUIRE(i >= 0);
      REQUIRE(i < n);
      REQUIRE(owner[static_cast<size_t>(i)] == -1);
      owner[static_cast<size_t>(i)] = r;
    });
  }
  return owner;
}

TEST_CASE("a grid shares a system's rows over all its warps before a warp takes a second", "[policy]") {
  const int64_t threads = 256;  // 8 warps
  for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{100},
                          int64_t{255}, int64_t{256}, int64_t{257}, int64_t{1000}}) {
    const std::vector<int64_t> owner = unitOwners(threads, n);
    std::vector<int64_t> rows_of_warp(8, 0);
    for (int64_t i = 0; i < n; ++i) {
      REQUIRE(owner[static_cast<size_t>(i)] >= 0);  // every row ran
      rows_of_warp[static_cast<size_t>(owner[static_cast<size_t>(i)] / kWarpLanes)] += 1;
    }
    // Warps' shares differ by at most one sweep's lanes: ceil(n / 8) rows each at most
    // while rows are fewer than threads; one row per thread per sweep beyond.
    const int64_t most = n < threads ? (n + 7) / 8 : kWarpLanes * ((n + threads - 1) / threads);
    for (const int64_t k : rows_of_warp) CHECK(k <= most);
  }
  // Fewer rows than warps: one row per warp, on its first lane.
  const std::vector<int64_t> few = unitOwners(threads, 5);
  CHECK(few == std::vector<int64_t>{0, 32, 64, 96, 128});
  // A warp's rows are consecutive (their loads coalesce): 20 rows are 3 per warp.
  const std::vector<int64_t> some = unitOwners(threads, 20);
  CHECK(some[0] == 0);
  CHECK(some[2] == 2);
  CHECK(some[3] == 32);
  // From one row per thread on it is the grid-stride loop: row i on thread i % threads.
  const std::vector<int64_t> full = unitOwners(threads, 600);
  for (int64_t i = 0; i < 600; ++i) CHECK(full[static_cast<size_t>(i)] == i % threads);
  // A grid whose size is not a whole number of warps falls back to the grid-stride loop.
  const std::vector<int64_t> odd = unitOwners(48, 5);
  CHECK(odd == std::vector<int64_t>{0, 1, 2, 3, 4});
  // So does a policy that turns spreading off (MV_CUDA_SPREAD_ROWS=0).
  const std::vector<int64_t> off = unitOwners(threads, 5, false);
  CHECK(off == std::vector<int64_t>{0, 1, 2, 3, 4});
}

TEST_CASE("on the CPU a system's rows are the contiguous parts of parallelFor", "[policy]") {
  struct Rank {
    int64_t r;
    int64_t rank() const { return r; }
    int64_t count() const { return 3; }
    void barrier() const {}
  };
  for (int64_t r = 0; r < 3; ++r) {
    std::vector<int64_t> seen;
    parallelForUnits(Rank{r}, 10, [&](int64_t i) { seen.push_back(i); });
    std::vector<int64_t> expected;
    for (int64_t i = partBegin(10, 3, r); i < partBegin(10, 3, r + 1); ++i) expected.push_back(i);
    CHECK(seen == expected);
  }
}

}  // namespace
