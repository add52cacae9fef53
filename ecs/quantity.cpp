/**
 * @file quantity.cpp
 * Exact decimal parsing of rates, times and sizes.
 */
#include "ecs/quantity.hpp"

#include "ecs/units.hpp"

#include <array>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <limits>
#include <span>

namespace mv {

namespace {

/// A unit suffix and the power of ten that converts it to the base unit (bit/s or ps).
struct Unit {
  std::string_view suffix;
  int exponent;
};

constexpr std::array<Unit, 5> kRateUnits{{{"bps", 0}, {"Kbps", 3}, {"Mbps", 6}, {"Gbps", 9}, {"Tbps", 12}}};
constexpr std::array<Unit, 5> kDelayUnits{{{"s", 12}, {"ms", 9}, {"us", 6}, {"ns", 3}, {"ps", 0}}};


/**
 * Parses "<digits>[.<digits>]<unit>" exactly into base units (no floating point), so that
 * "0.001ms" is 1'000'000 ps and "2.5Gbps" is 2'500'000'000 bps.
 */
QuantityStatus parseScaled(std::string_view token, std::span<const Unit> units, int64_t& value) {
  constexpr uint64_t kLimit = std::numeric_limits<int64_t>::max();
  uint64_t mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  bool seen_dot = false;
  size_t i = 0;
  for (; i < token.size(); ++i) {
    const char c = token[i];
    if (c == '.' && !seen_dot) {
      seen_dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    if (mantissa > (kLimit - 9) / 10) return QuantityStatus::kTooLarge;
    mantissa = mantissa * 10 + static_cast<uint64_t>(c - '0');
    ++digits;
    if (seen_dot) ++fraction_digits;
  }
  if (digits == 0) return QuantityStatus::kMalformed;
  const std::string_view suffix = token.substr(i);
  const Unit* unit = nullptr;
  for (const auto& u : units) {
    if (u.suffix == suffix) unit = &u;
  }
  if (unit == nullptr) return QuantityStatus::kMalformed;
  for (int shift = unit->exponent - fraction_digits; shift > 0; --shift) {
    if (mantissa > kLimit / 10) return QuantityStatus::kTooLarge;
    mantissa *= 10;
  }
  for (int shift = fraction_digits - unit->exponent; shift > 0; --shift) {
    if (mantissa % 10 != 0) return QuantityStatus::kTooFine;
    mantissa /= 10;
  }
  value = static_cast<int64_t>(mantissa);
  return QuantityStatus::kOk;
}

constexpr std::array<Unit, 5> kSizeUnits{{{"B", 0}, {"KB", 3}, {"MB", 6}, {"GB", 9}, {"TB", 12}}};
constexpr std::array<Unit, 4> kBinarySizeUnits{{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}}};

}  // namespace

QuantityStatus parseRate(std::string_view token, int64_t& bps) { return parseScaled(token, kRateUnits, bps); }

QuantityStatus parseDuration(std::string_view token, int64_t& ps) { return parseScaled(token, kDelayUnits, ps); }

QuantityStatus parseSize(std::string_view token, int64_t& bytes) {
  uint64_t plain = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), plain);
  if (ec == std::errc() && end == token.data() + token.size()) {
    if (plain > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return QuantityStatus::kTooLarge;
    bytes = static_cast<int64_t>(plain);
    return QuantityStatus::kOk;
  }
  for (const Unit& u : kBinarySizeUnits) {
    if (token.size() > u.suffix.size() && token.substr(token.size() - u.suffix.size()) == u.suffix) {
      // The number in billionths, then times 2^exponent: exact whenever the result is whole.
      constexpr std::array<Unit, 1> kBillionths{{{"", 9}}};
      int64_t billionths = 0;
      const QuantityStatus s = parseScaled(token.substr(0, token.size() - u.suffix.size()), kBillionths, billionths);
      if (s != QuantityStatus::kOk) return s;
      const Int128 scaled = static_cast<Int128>(billionths) << u.exponent;
      if (scaled % 1'000'000'000 != 0) return QuantityStatus::kTooFine;
      if (scaled / 1'000'000'000 > std::numeric_limits<int64_t>::max()) return QuantityStatus::kTooLarge;
      bytes = static_cast<int64_t>(scaled / 1'000'000'000);
      return QuantityStatus::kOk;
    }
  }
  return parseScaled(token, kSizeUnits, bytes);
}

std::string quantityError(QuantityStatus status, std::string_view token, std::string_view what) {
  std::string units = "B, KB, MB, GB, TB, KiB, MiB, GiB or TiB";
  std::string finest = "one byte";
  if (what == "rate") {
    units = "bps, Kbps, Mbps, Gbps or Tbps";
    finest = "one bit per second";
  } else if (what == "time" || what == "delay") {
    units = "s, ms, us, ns or ps";
    finest = "one picosecond";
  }
  const std::string t(token);
  switch (status) {
    case QuantityStatus::kOk:
      return {};
    case QuantityStatus::kTooFine:
      return "bad " + std::string(what) + " '" + t + "' (finer than " + finest + ")";
    case QuantityStatus::kTooLarge:
      return "bad " + std::string(what) + " '" + t + "' (too large)";
    case QuantityStatus::kMalformed:
      break;
  }
  return "bad " + std::string(what) + " '" + t + "' (expected a number with " + units + ")";
}

namespace {
struct Scale {
  int64_t factor;
  const char* name;
};

/// `v` in the first of `units` (largest first) that divides it; the last unit always does.
template <size_t N>
std::string formatExact(int64_t v, const Scale (&units)[N]) {
  for (const Scale& u : units) {
    if (v % u.factor == 0) return std::to_string(v / u.factor) + u.name;
  }
  return std::to_string(v);
}
}  // namespace

std::string formatDuration(int64_t ps) {
  static constexpr Scale kUnits[] = {
      {1'000'000'000'000, "s"}, {1'000'000'000, "ms"}, {1'000'000, "us"}, {1'000, "ns"}, {1, "ps"}};
  return ps == 0 ? "0s" : formatExact(ps, kUnits);
}

std::string formatRate(int64_t bps) {
  static constexpr Scale kUnits[] = {
      {1'000'000'000'000, "Tbps"}, {1'000'000'000, "Gbps"}, {1'000'000, "Mbps"}, {1'000, "Kbps"}, {1, "bps"}};
  return bps == 0 ? "0bps" : formatExact(bps, kUnits);
}

std::string formatSize(int64_t bytes) {
  static constexpr Scale kUnits[] = {{int64_t{1} << 40, "TiB"}, {int64_t{1} << 30, "GiB"}, {int64_t{1} << 20, "MiB"},
                                    {int64_t{1} << 10, "KiB"}, {1'000'000'000'000, "TB"}, {1'000'000'000, "GB"},
                                    {1'000'000, "MB"},         {1'000, "KB"},              {1, "B"}};
  return bytes == 0 ? "0B" : formatExact(bytes, kUnits);
}

std::string formatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return text;
}

std::string outOfRange(std::string_view token, int64_t v, int64_t lo, int64_t hi, std::string (*format)(int64_t)) {
  if (v >= lo && v <= hi) return {};
  return std::string(token) + " is out of range [" + format(lo) + ", " + format(hi) + "]";
}

}  // namespace mv
