/**
 * @file test_rng.cpp
 * Counter-based RNG: the published Philox known-answer vectors, stream independence and
 * uniformity.
 */
#include <catch2/catch.hpp>

#include <array>
#include <cmath>

#include "ecs/rng.hpp"

using namespace mv;

TEST_CASE("philox4x32-10 reproduces the Random123 known-answer vectors", "[rng]") {
  const RandomBlock zero = philox4x32(0, 0, 0, 0, 0, 0);
  CHECK(zero.w[0] == 0x6627e8d5u);
  CHECK(zero.w[1] == 0xe169c58du);
  CHECK(zero.w[2] == 0xbc57ac4cu);
  CHECK(zero.w[3] == 0x9b00dbd8u);
  const RandomBlock ones = philox4x32(~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
  CHECK(ones.w[0] == 0x408f276du);
  CHECK(ones.w[1] == 0x41c83b0eu);
  CHECK(ones.w[2] == 0xa20bc7c6u);
  CHECK(ones.w[3] == 0x6d5451fdu);
  const RandomBlock pi = philox4x32(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
  CHECK(pi.w[0] == 0xd16cfe09u);
  CHECK(pi.w[1] == 0x94fdccebu);
  CHECK(pi.w[2] == 0x5001e420u);
  CHECK(pi.w[3] == 0x24126ea1u);
}

TEST_CASE("streams differ by seed, experiment and entity, and repeat by counter", "[rng]") {
  const RandomStream a{7, 1, 42};
  CHECK(a.bits64(5) == RandomStream{7, 1, 42}.bits64(5));
  CHECK(a.bits64(5) != a.bits64(6));
  CHECK(a.bits64(5) != RandomStream{8, 1, 42}.bits64(5));
  CHECK(a.bits64(5) != RandomStream{7, 2, 42}.bits64(5));
  CHECK(a.bits64(5) != RandomStream{7, 1, 43}.bits64(5));
}

TEST_CASE("uniform draws pass a chi-square test and stay in range", "[rng]") {
  constexpr int kBins = 16;
  constexpr int kDraws = 160'000;
  std::array<int, kBins> bins{};
  const RandomStream s{123, 0, 9};
  for (int i = 0; i < kDraws; ++i) {
    const double u = s.uniform(static_cast<uint64_t>(i));
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    bins[static_cast<int>(u * kBins)] += 1;
  }
  double chi2 = 0;
  const double expected = static_cast<double>(kDraws) / kBins;
  for (int b : bins) chi2 += (b - expected) * (b - expected) / expected;
  // 15 degrees of freedom: P(chi2 > 37.7) = 0.001.
  CHECK(chi2 < 37.7);
  for (int i = 0; i < 1000; ++i) CHECK(s.below(static_cast<uint64_t>(i), 21) < 21u);
}
