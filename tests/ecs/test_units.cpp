/**
 * @file test_units.cpp
 * Strong unit types and their exact integer conversions.
 */
#include <catch2/catch.hpp>

#include "ecs/units.hpp"

using namespace mv;

TEST_CASE("serialization time is exact in picoseconds", "[units]") {
  // 1048 wire bytes at 100 Gb/s: 8384 bits / 1e11 b/s = 83.84 ns.
  CHECK(serializationTime(bytes(1048), gigabitsPerSecond(100)).ps == 83'840);
  // 1 byte at 3 Gb/s is 8/3 ns = 2666.67 ps: rounded up, never early.
  CHECK(serializationTime(bytes(1), gigabitsPerSecond(3)).ps == 2'667);
  // 1 GB at 400 Gb/s = 20 ms, with no overflow on the way.
  CHECK(serializationTime(bytes(1'000'000'000), gigabitsPerSecond(400)) == milliseconds(20));
}

TEST_CASE("bytes carried in a time span invert serialization", "[units]") {
  CHECK(bytesInTime(nanoseconds(80), gigabitsPerSecond(100)).count == 1000);
  CHECK(bytesInTime(microseconds(1), gigabitsPerSecond(400)).count == 50'000);
  const Bytes b = bytes(123'457);
  const Picoseconds t = serializationTime(b, gigabitsPerSecond(200));
  CHECK(bytesInTime(t, gigabitsPerSecond(200)).count == b.count);
}

TEST_CASE("time arithmetic and named constructors agree", "[units]") {
  CHECK(microseconds(1) == nanoseconds(1000));
  CHECK(milliseconds(2) - microseconds(500) == microseconds(1500));
  CHECK(maxTime(nanoseconds(3), picoseconds(3001)) == picoseconds(3001));
  CHECK(Picoseconds::infinity().isInfinite());
  CHECK(mebibytes(1).count == 1024 * kibibytes(1).count);
}
