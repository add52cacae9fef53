/**
 * @file units.hpp
 * Strong unit types: simulated time in integer picoseconds, sizes in bytes, rates in bits
 * per second. No floating-point time anywhere; conversions are named.
 */
#pragma once

#include <compare>
#include <cstdint>
#include <limits>

#include "ecs/macros.hpp"

namespace mv {

/// 128-bit intermediate for exact rate arithmetic (a GCC/nvcc extension on both sides).
__extension__ using Int128 = __int128;
__extension__ using UInt128 = unsigned __int128;

/// A span or instant of simulated time, in integer picoseconds.
struct Picoseconds {
  int64_t ps = 0;

  MV_HD constexpr Picoseconds() = default;
  MV_HD constexpr explicit Picoseconds(int64_t v) : ps(v) {}

  MV_HD static constexpr Picoseconds infinity() {
    return Picoseconds{std::numeric_limits<int64_t>::max()};
  }
  MV_HD constexpr bool isInfinite() const { return ps == std::numeric_limits<int64_t>::max(); }
  MV_HD constexpr double toMicroseconds() const { return static_cast<double>(ps) * 1e-6; }
  MV_HD constexpr double toSeconds() const { return static_cast<double>(ps) * 1e-12; }

  MV_HD constexpr Picoseconds operator+(Picoseconds o) const { return Picoseconds{ps + o.ps}; }
  MV_HD constexpr Picoseconds operator-(Picoseconds o) const { return Picoseconds{ps - o.ps}; }
  MV_HD constexpr Picoseconds operator*(int64_t k) const { return Picoseconds{ps * k}; }
  MV_HD constexpr Picoseconds operator/(int64_t k) const { return Picoseconds{ps / k}; }
  MV_HD constexpr Picoseconds& operator+=(Picoseconds o) {
    ps += o.ps;
    return *this;
  }
  MV_HD constexpr Picoseconds& operator-=(Picoseconds o) {
    ps -= o.ps;
    return *this;
  }
  MV_HD constexpr auto operator<=>(const Picoseconds&) const = default;
};

MV_HD constexpr Picoseconds picoseconds(int64_t v) { return Picoseconds{v}; }
MV_HD constexpr Picoseconds nanoseconds(int64_t v) { return Picoseconds{v * 1000}; }
MV_HD constexpr Picoseconds microseconds(int64_t v) { return Picoseconds{v * 1000 * 1000}; }
MV_HD constexpr Picoseconds milliseconds(int64_t v) { return Picoseconds{v * 1000 * 1000 * 1000}; }
MV_HD constexpr Picoseconds minTime(Picoseconds a, Picoseconds b) { return a < b ? a : b; }
MV_HD constexpr Picoseconds maxTime(Picoseconds a, Picoseconds b) { return a < b ? b : a; }

/**
 * The engine's time horizon: every experiment's clock stops here (Outcome::kTimeLimit)
 * unless it ends sooner. 10^17 ps is 100,000 s (about 27.8 h) of simulated time, 1/92 of
 * int64's range, so an instant before the horizon plus any duration an input may hold
 * (each at most the horizon, docs/sweep.md "Input limits") never wraps.
 */
inline constexpr int64_t kTimeHorizonPs = 100'000LL * 1000 * 1000 * 1000 * 1000;

/// The longest time one compute task (an operator, a Chakra node) may take: 1,000 s.
inline constexpr int64_t kMaxTaskPs = 1000LL * 1000 * 1000 * 1000 * 1000;

/// The shortest link delay: 1 ns (the lookahead is the smallest link delay, so a shorter
/// one makes every experiment of its batch take more, shorter steps).
inline constexpr int64_t kMinLinkDelayPs = 1000;

/// The longest latency of one step, kernel launch or link: 1 s. Link rings hold a link's
/// rate × delay in packets, so long delays are also bounded by the memory budget.
inline constexpr int64_t kMaxLatencyPs = 1000LL * 1000 * 1000 * 1000;

/// A number of bytes.
struct Bytes {
  int64_t count = 0;

  MV_HD constexpr Bytes() = default;
  MV_HD constexpr explicit Bytes(int64_t v) : count(v) {}

  MV_HD constexpr int64_t bits() const { return count * 8; }
  MV_HD constexpr Bytes operator+(Bytes o) const { return Bytes{count + o.count}; }
  MV_HD constexpr Bytes operator-(Bytes o) const { return Bytes{count - o.count}; }
  MV_HD constexpr Bytes operator*(int64_t k) const { return Bytes{count * k}; }
  MV_HD constexpr Bytes& operator+=(Bytes o) {
    count += o.count;
    return *this;
  }
  MV_HD constexpr Bytes& operator-=(Bytes o) {
    count -= o.count;
    return *this;
  }
  MV_HD constexpr auto operator<=>(const Bytes&) const = default;
};

MV_HD constexpr Bytes bytes(int64_t v) { return Bytes{v}; }
MV_HD constexpr Bytes kibibytes(int64_t v) { return Bytes{v * 1024}; }
MV_HD constexpr Bytes mebibytes(int64_t v) { return Bytes{v * 1024 * 1024}; }

/// A bit rate in bits per second.
struct BitsPerSecond {
  int64_t bps = 0;

  MV_HD constexpr BitsPerSecond() = default;
  MV_HD constexpr explicit BitsPerSecond(int64_t v) : bps(v) {}

  MV_HD constexpr double toGbps() const { return static_cast<double>(bps) * 1e-9; }
  MV_HD constexpr auto operator<=>(const BitsPerSecond&) const = default;
};

MV_HD constexpr BitsPerSecond bitsPerSecond(int64_t v) { return BitsPerSecond{v}; }
MV_HD constexpr BitsPerSecond megabitsPerSecond(int64_t v) { return BitsPerSecond{v * 1000 * 1000}; }
MV_HD constexpr BitsPerSecond gigabitsPerSecond(int64_t v) {
  return BitsPerSecond{v * 1000 * 1000 * 1000};
}

/// Link and NIC rates an input may give: 100 Mb/s to 100 Tb/s. A packet takes at least a
/// few picoseconds on the wire, and the longest serialisation the engine computes (a ring's
/// busiest NIC over a 16 TiB collective, about 32 TiB: 2.8·10^18 ps at 100 Mb/s) fits int64.
inline constexpr int64_t kMinRateBps = 100LL * 1000 * 1000;
inline constexpr int64_t kMaxRateBps = 100LL * 1000 * 1000 * 1000 * 1000;

/// The largest size an input may give for one transfer, flow or collective: 16 TiB
/// (2^44 B; its bits times any in-range picoseconds per bit fit 128-bit arithmetic, and its
/// bytes stay far inside int64 when summed over a collective's chunks).
inline constexpr int64_t kMaxInputBytes = int64_t{1} << 44;

/// Bit-picoseconds per second per byte: 8 bits/byte × 1e12 ps/s.
inline constexpr int64_t kBitPsPerSecond = 8LL * 1000 * 1000 * 1000 * 1000;

/**
 * Picoseconds per byte on a wire of `rate` when that is a whole number, as for the usual
 * rates (1, 10, 25, 40, 100, 200, 400, 800 Gb/s); else 0. Links keep it, so that their
 * serialisation times are one multiplication.
 */
MV_HD constexpr int64_t exactPsPerByte(BitsPerSecond rate) {
  const int64_t ps_per_byte = kBitPsPerSecond / rate.bps;
  return ps_per_byte * rate.bps == kBitPsPerSecond ? ps_per_byte : 0;
}

/**
 * Time to put `size` on a wire of `rate`, rounded up to the next picosecond so that a
 * sender never finishes early. Exact in integers for every rate up to 1.8 Tb/s.
 */
MV_HD constexpr Picoseconds serializationTime(Bytes size, BitsPerSecond rate) {
  if (const int64_t ps_per_byte = exactPsPerByte(rate); ps_per_byte > 0) return Picoseconds{size.count * ps_per_byte};
  const Int128 bit_ps = static_cast<Int128>(size.count) * kBitPsPerSecond;
  return Picoseconds{static_cast<int64_t>((bit_ps + rate.bps - 1) / rate.bps)};
}

/**
 * Time to put `size` on a wire of `rate` truncated to whole nanoseconds, as the ns-3 RDMA
 * reference computes it (83 ns for 1048 B at 100 Gb/s instead of 83.84).
 */
MV_HD constexpr Picoseconds serializationTimeWholeNs(Bytes size, BitsPerSecond rate) {
  constexpr int64_t kBitNsPerSecond = 8LL * 1000 * 1000 * 1000;
  const Int128 bit_ns = static_cast<Int128>(size.count) * kBitNsPerSecond;
  return Picoseconds{static_cast<int64_t>(bit_ns / rate.bps) * 1000};
}

/// Bytes a wire of `rate` carries in `span` (rounded down).
MV_HD constexpr Bytes bytesInTime(Picoseconds span, BitsPerSecond rate) {
  constexpr int64_t kPsPerSecond = 1000LL * 1000 * 1000 * 1000;
  const Int128 bits = static_cast<Int128>(span.ps) * rate.bps / kPsPerSecond;
  return Bytes{static_cast<int64_t>(bits / 8)};
}

}  // namespace mv
