/**
 * @file quantity.hpp
 * Exact parsing of quantities written with units ("100Gbps", "0.001ms", "32MB", "4KiB"):
 * decimal mantissas are converted to integers without floating point.
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mv {

/// Outcome of parsing "<decimal><unit>".
enum class QuantityStatus : uint8_t { kOk, kMalformed, kTooFine, kTooLarge };

/// A rate in bps, Kbps, Mbps, Gbps or Tbps, to bits per second.
QuantityStatus parseRate(std::string_view token, int64_t& bps);
/// A time in s, ms, us, ns or ps, to picoseconds.
QuantityStatus parseDuration(std::string_view token, int64_t& ps);
/// A size in B, KB, MB, GB (powers of 10) or KiB, MiB, GiB (powers of 2), or a plain integer
/// number of bytes, to bytes.
QuantityStatus parseSize(std::string_view token, int64_t& bytes);
/// Why `token` is not a valid quantity of kind `what` ("rate", "time" or "delay", "size"), with the units accepted.
std::string quantityError(QuantityStatus status, std::string_view token, std::string_view what);

}  // namespace mv
