/**
 * @file test_quantity.cpp
 * Exact parsing of rates, times and sizes with units.
 */
#include <catch2/catch.hpp>

#include "ecs/quantity.hpp"

using namespace mv;

TEST_CASE("quantities with units parse exactly", "[quantity]") {
  int64_t v = 0;
  CHECK(parseRate("2.5Gbps", v) == QuantityStatus::kOk);
  CHECK(v == 2'500'000'000);
  CHECK(parseDuration("0.001ms", v) == QuantityStatus::kOk);
  CHECK(v == 1'000'000);
  CHECK(parseDuration("500ns", v) == QuantityStatus::kOk);
  CHECK(v == 500'000);
  CHECK(parseSize("32MB", v) == QuantityStatus::kOk);
  CHECK(v == 32'000'000);
  CHECK(parseSize("4KiB", v) == QuantityStatus::kOk);
  CHECK(v == 4096);
  CHECK(parseSize("1.5KiB", v) == QuantityStatus::kOk);
  CHECK(v == 1536);
  CHECK(parseSize("1000", v) == QuantityStatus::kOk);
  CHECK(v == 1000);
}

TEST_CASE("malformed quantities are rejected with the accepted units", "[quantity]") {
  int64_t v = 0;
  CHECK(parseRate("100Gbs", v) == QuantityStatus::kMalformed);
  CHECK(parseDuration("0.5ps", v) == QuantityStatus::kTooFine);
  CHECK(parseSize("99999999999999999999B", v) == QuantityStatus::kTooLarge);
  CHECK(quantityError(QuantityStatus::kMalformed, "100Gbs", "rate") ==
        "bad rate '100Gbs' (expected a number with bps, Kbps, Mbps, Gbps or Tbps)");
  CHECK(quantityError(QuantityStatus::kTooFine, "0.5ps", "delay") == "bad delay '0.5ps' (finer than one picosecond)");
}
