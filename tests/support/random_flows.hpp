/**
 * @file random_flows.hpp
 * Pseudo-random flow lists for the flow-level tests, the same on every platform (a 64-bit
 * LCG, no library distribution): the CPU tests and the GPU test that compares backends
 * draw their flows here.
 */
#pragma once

#include <cstdint>
#include <vector>

namespace mv::test {

/// `n` flows of type Flow (an aggregate that starts {src, dst, bytes, start_ps}) between
/// distinct pseudo-random NICs of `nics`: 10 kB plus up to `extra_bytes`, arriving over
/// `spread_ps` (all at 0 when it is 0).
template <class Flow>
std::vector<Flow> randomFlows(uint32_t nics, uint32_t n, uint64_t extra_bytes, uint64_t spread_ps, uint64_t seed) {
  uint64_t x = seed;
  auto next = [&x](uint64_t m) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return (x >> 33) % m;
  };
  std::vector<Flow> flows;
  for (uint32_t i = 0; i < n; ++i) {
    const auto src = static_cast<uint32_t>(next(nics));
    const auto dst = static_cast<uint32_t>((src + 1 + next(nics - 1)) % nics);
    const auto bytes = 10'000 + static_cast<int64_t>(next(extra_bytes));
    flows.push_back(Flow{src, dst, bytes, spread_ps > 0 ? static_cast<int64_t>(next(spread_ps)) : 0});
  }
  return flows;
}

}  // namespace mv::test
