/**
 * @file rng.hpp
 * Counter-based random numbers (Philox-4x32-10, Salmon et al., SC'11): a pure function of
 * (seed, experiment, entity, counter), so any thread on either backend draws the same value
 * for the same key, whatever the execution order.
 */
#pragma once

#include <cstdint>

#include "ecs/macros.hpp"
#include "ecs/units.hpp"

namespace mv {

/// Four 32-bit words of random output.
struct RandomBlock {
  uint32_t w[4];
};

namespace detail {
MV_HD constexpr void mulHiLo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}
}  // namespace detail

/// Philox-4x32 with 10 rounds over counter (c0..c3) and key (k0, k1).
MV_HD constexpr RandomBlock philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                       uint32_t k0, uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53u;
  constexpr uint32_t kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u;
  constexpr uint32_t kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0 = 0, lo0 = 0, hi1 = 0, lo1 = 0;
    detail::mulHiLo(kMul0, c0, hi0, lo0);
    detail::mulHiLo(kMul1, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n1 = lo1;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    const uint32_t n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return RandomBlock{{c0, c1, c2, c3}};
}

/// SplitMix64 finaliser: a bijective 64-bit mix (Steele et al., OOPSLA'14).
MV_HD constexpr uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/**
 * The key of one random stream: (seed, experiment, entity). Draw `n` gives the n-th value
 * of the stream; streams of different keys are independent. `experiment` is the stable id
 * of an experiment in its sweep and `entity` a row's creation key, so an experiment draws
 * the same numbers alone or in any batch.
 */
struct RandomStream {
  uint64_t seed = 0;
  uint32_t experiment = 0;
  uint64_t entity = 0;

  /// 64 uniformly distributed bits for counter `n`.
  MV_HD constexpr uint64_t bits64(uint64_t n) const {
    const uint64_t k = mix64(seed ^ mix64(experiment));
    const RandomBlock b = philox4x32(static_cast<uint32_t>(n), static_cast<uint32_t>(n >> 32),
                                     static_cast<uint32_t>(entity), static_cast<uint32_t>(entity >> 32),
                                     static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32));
    return (static_cast<uint64_t>(b.w[1]) << 32) | b.w[0];
  }

  /// A double in [0, 1) with 53 random bits, for counter `n`.
  MV_HD constexpr double uniform(uint64_t n) const {
    return static_cast<double>(bits64(n) >> 11) * (1.0 / 9007199254740992.0);
  }

  /// An integer in [0, bound) for counter `n` (multiply-shift; bias below bound / 2^64).
  MV_HD constexpr uint64_t below(uint64_t n, uint64_t bound) const {
    return static_cast<uint64_t>((static_cast<UInt128>(bits64(n)) * bound) >> 64);
  }
};

}  // namespace mv
