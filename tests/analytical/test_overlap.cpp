/**
 * @file test_overlap.cpp
 * Overlap slow-down: defaults inside the measured ranges, validation, exact stretching.
 */
#include <catch2/catch.hpp>

#include "analytical/overlap.hpp"

using namespace mv;

TEST_CASE("default slow-downs lie inside the Echo/Moye ranges", "[analytical][overlap]") {
  const OverlapSlowdown ampere = defaultOverlapSlowdown(GpuArchitecture::kAmpere);
  CHECK(ampere.gemm.ppm == 1150000);
  // A800: GEMM x1.134-1.178, LayerNorm x1.091-1.207.
  CHECK(ampere.gemm.toDouble() >= 1.134);
  CHECK(ampere.gemm.toDouble() <= 1.178);
  CHECK(ampere.memory_bound.toDouble() >= 1.091);
  CHECK(ampere.memory_bound.toDouble() <= 1.207);
  for (const GpuArchitecture arch : {GpuArchitecture::kHopper, GpuArchitecture::kBlackwell}) {
    const OverlapSlowdown s = defaultOverlapSlowdown(arch);
    CHECK(s.gemm.toDouble() >= 1.13);
    CHECK(s.gemm.toDouble() <= 1.39);
    CHECK(s.memory_bound.toDouble() >= 1.09);
    CHECK(s.memory_bound.toDouble() <= 1.94);
    CHECK(s.communication.ppm == kSlowdownOne);
    CHECK(s.forKernel(KernelClass::kGemm).ppm == s.gemm.ppm);
    CHECK(s.forKernel(KernelClass::kMemoryBound).ppm == s.memory_bound.ppm);
    CHECK_FALSE(overlapSlowdownError(s).has_value());
  }
}

TEST_CASE("slow-down factors are validated", "[analytical][overlap]") {
  OverlapSlowdown s = defaultOverlapSlowdown(GpuArchitecture::kHopper);
  s.memory_bound = slowdownFactor(0.9);
  REQUIRE(overlapSlowdownError(s).has_value());
  CHECK_THAT(*overlapSlowdownError(s), Catch::Contains("memory_bound") && Catch::Contains("1 .. 4"));
  s.memory_bound = slowdownFactor(4.5);
  CHECK(overlapSlowdownError(s).has_value());
  s.memory_bound = slowdownFactor(1.0);
  CHECK_FALSE(overlapSlowdownError(s).has_value());
  CHECK(slowdownFactor(1.15).ppm == 1150000);
  CHECK(slowdownFactor(-1.0).ppm == 0);
}

TEST_CASE("stretched durations are exact and monotone in the overlap", "[analytical][overlap]") {
  const Slowdown f = slowdownFactor(1.15);
  CHECK(slowedDown(microseconds(100), f) == microseconds(115));
  CHECK(slowedDown(picoseconds(1), f) == picoseconds(2));  // rounded up
  CHECK(slowedDown(microseconds(100), Slowdown{}) == microseconds(100));

  const Picoseconds d = microseconds(100);
  CHECK(overlappedDuration(d, f, Picoseconds{0}) == d);
  CHECK(overlappedDuration(d, f, microseconds(115)) == microseconds(115));
  CHECK(overlappedDuration(d, f, milliseconds(1)) == microseconds(115));
  // Half the slowed run overlapped: 57.5 us at 1/1.15 speed = 50 us of work, 50 us left.
  CHECK(overlappedDuration(d, f, nanoseconds(57500)) == nanoseconds(107500));
  Picoseconds prev = d;
  for (int64_t w = 0; w <= 120; ++w) {
    const Picoseconds t = overlappedDuration(d, f, microseconds(w));
    CHECK(t >= prev);
    CHECK(t <= microseconds(115));
    prev = t;
  }
}
