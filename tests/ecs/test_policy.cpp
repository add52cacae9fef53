/**
 * @file test_policy.cpp
 * The static partitioning shared by the CPU's loops, experiment blocks and CPU workers.
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

}  // namespace
