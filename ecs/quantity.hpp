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
/// A size in B, KB, MB, GB, TB (powers of 10) or KiB, MiB, GiB, TiB (powers of 2), or a plain integer
/// number of bytes, to bytes.
QuantityStatus parseSize(std::string_view token, int64_t& bytes);
/// Why `token` is not a valid quantity of kind `what` ("rate", "time" or "delay", "size"), with the units accepted.
std::string quantityError(QuantityStatus status, std::string_view token, std::string_view what);

/// `ps` in the largest of s, ms, us, ns, ps that writes it as a whole number ("20s", "1500ns").
std::string formatDuration(int64_t ps);
/// `bps` in the largest of Tbps, Gbps, Mbps, Kbps, bps that writes it as a whole number.
std::string formatRate(int64_t bps);
/// `bytes` in the largest of TiB, GiB, MiB, KiB (else TB, GB, MB, KB, else B) that writes it
/// as a whole number.
std::string formatSize(int64_t bytes);

/// `bytes` for people, rounded: "512 B", "3.2 KiB", "1.5 GiB".
std::string formatBytes(int64_t bytes);

/// "" when lo <= v <= hi; else "<token> is out of range [<lo>, <hi>]", the bounds written by
/// `format` (formatDuration, formatRate or formatSize).
std::string outOfRange(std::string_view token, int64_t v, int64_t lo, int64_t hi, std::string (*format)(int64_t));

}  // namespace mv
