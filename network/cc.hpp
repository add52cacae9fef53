/**
 * @file cc.hpp
 * Congestion-control reactions at the sender: DCQCN, HPCC and DCTCP as described in
 * ../shared/reference/network.md. Pure functions of a flow's state, the feedback and the
 * time, so they are unit-tested step by step and run unchanged on both backends. Rates are
 * integer bits per second; α and U are doubles updated with the same IEEE operations on
 * host and device (the CUDA build disables FMA contraction).
 */
#pragma once

#include <cstdint>

#include "ecs/macros.hpp"
#include "network/components.hpp"
#include "network/config.hpp"
#include "network/packet.hpp"

namespace mv::net {

/// What a sender's CC needs to know about its path.
struct CcPath {
  int64_t line_bps = 0;     ///< NIC rate
  int64_t base_rtt_ps = 0;  ///< T
  int64_t bdp_bytes = 0;    ///< initial window
};

MV_HD constexpr int64_t clampRate(int64_t r, int64_t lo, int64_t hi) { return r < lo ? lo : (r > hi ? hi : r); }
MV_HD constexpr int64_t scaledBy25g(int64_t per_25g, int64_t line_bps) {
  return static_cast<int64_t>((static_cast<Int128>(per_25g) * line_bps) / 25'000'000'000LL);
}

// --- DCQCN -------------------------------------------------------------------------------
enum DcqcnFlag : uint32_t { kDcqcnCnpAlpha = 1, kDcqcnCnpDecrease = 2, kDcqcnStarted = 4 };

/// The reference schedules a flow's first rate-decrease check 1 ns after the α update of the
/// same microsecond, so that the cut sees the α of that tick; its later checks keep the offset.
inline constexpr int64_t kDcqcnDecreaseOffsetPs = 1000;

/**
 * Runs every DCQCN timer tick due at or before `now`, in time order. Timers run only after
 * the flow's first CNP. Ties between the increase and the decrease timer resolve as in an
 * event simulator that fires same-time events in the order they were scheduled: the timer
 * with the longer interval was scheduled first (with the defaults the increase timer, which
 * the decrease checks meet every 300 µs). The earliest pending tick is kept in FlowSend, so
 * a call with nothing due reads no FlowCc.
 */
MV_HD inline void dcqcnAdvance(const DcqcnParams& p, const CcPath& path, FlowCc& cc, FlowSend& s, int64_t now) {
  if (now < s.cc_next_ps) return;
  const int64_t rai = scaledBy25g(p.rai_per_25g_bps, path.line_bps);
  const int64_t rhai = scaledBy25g(p.rhai_per_25g_bps, path.line_bps);
  const bool increase_first = p.increase_interval_ps >= p.decrease_interval_ps;
  for (;;) {
    const int64_t ta = cc.alpha_next_ps;
    const int64_t td = cc.decrease_next_ps;
    const int64_t ti = cc.increase_next_ps > 0 ? cc.increase_next_ps : INT64_MAX;
    const int64_t t = ta < td ? (ta < ti ? ta : ti) : (td < ti ? td : ti);
    if (t > now) {
      s.cc_next_ps = t;
      return;
    }
    if (t == ta) {
      cc.alpha = (1.0 - p.g) * cc.alpha + ((cc.flags & kDcqcnCnpAlpha) != 0u ? p.g : 0.0);
      cc.flags &= ~uint32_t{kDcqcnCnpAlpha};
      cc.alpha_next_ps += p.alpha_interval_ps;
    } else if (t == td && (t != ti || !increase_first)) {
      if ((cc.flags & kDcqcnCnpDecrease) != 0u) {
        // The target follows the current rate only if the rate rose since the last cut
        // (CLAMP_TARGET_RATE off), so a run of cuts keeps the target from before the first.
        if (p.clamp_target_rate || cc.stage > 0) cc.target_bps = s.rate_bps;
        const double cut = static_cast<double>(s.rate_bps) * (1.0 - cc.alpha / 2.0);
        s.rate_bps = clampRate(static_cast<int64_t>(cut), p.rmin_bps, path.line_bps);
        cc.stage = 0;
        cc.increase_next_ps = t + p.increase_interval_ps;
        cc.flags &= ~uint32_t{kDcqcnCnpDecrease};
      }
      cc.decrease_next_ps += p.decrease_interval_ps;
    } else {
      if (cc.stage == p.fast_recovery_stages) {
        cc.target_bps += rai;
      } else if (cc.stage > p.fast_recovery_stages) {
        cc.target_bps += rhai;
      }
      if (cc.target_bps > path.line_bps) cc.target_bps = path.line_bps;
      s.rate_bps = s.rate_bps / 2 + cc.target_bps / 2;
      cc.stage += 1;
      cc.increase_next_ps += p.increase_interval_ps;
    }
  }
}

/// A CNP (ECN-echo ACK) reached the sender at `now`.
MV_HD inline void dcqcnOnCnp(const DcqcnParams& p, const CcPath& path, FlowCc& cc, FlowSend& s, int64_t now) {
  dcqcnAdvance(p, path, cc, s, now);
  if ((cc.flags & kDcqcnStarted) == 0u) {
    // As the reference: the first CNP starts the timers and arms only the decrease.
    cc.flags |= kDcqcnStarted | kDcqcnCnpDecrease;
    cc.alpha_next_ps = now + p.alpha_interval_ps;
    cc.decrease_next_ps = now + p.decrease_interval_ps + kDcqcnDecreaseOffsetPs;
    cc.target_bps = s.rate_bps;
    s.cc_next_ps = cc.alpha_next_ps < cc.decrease_next_ps ? cc.alpha_next_ps : cc.decrease_next_ps;
    return;
  }
  cc.flags |= kDcqcnCnpAlpha | kDcqcnCnpDecrease;
}

// --- HPCC --------------------------------------------------------------------------------
/// HPCC's reaction to one utilisation sample `u` taken over `tau` picoseconds.
MV_HD inline void hpccUpdateRate(const HpccParams& p, const CcPath& path, FlowCc& cc, FlowSend& s, double tau, double u,
                                 int64_t ack_seq) {
  const double t_rtt = static_cast<double>(path.base_rtt_ps);
  if (tau > t_rtt) tau = t_rtt;
  cc.u = (1.0 - tau / t_rtt) * cc.u + (tau / t_rtt) * u;
  const double ratio = cc.u / p.eta;
  double rate;
  uint32_t stage;
  if (ratio >= 1.0 || cc.stage >= p.max_stage) {
    // Rc / (U/η) grows without bound as U → 0: clamp in floating point before converting.
    rate = ratio > 0 ? static_cast<double>(cc.committed_bps) / ratio + static_cast<double>(p.rai_bps)
                     : static_cast<double>(path.line_bps);
    stage = 0;
  } else {
    rate = static_cast<double>(cc.committed_bps + p.rai_bps);
    stage = cc.stage + 1;
  }
  const double line = static_cast<double>(path.line_bps);
  const int64_t r = clampRate(static_cast<int64_t>(rate < line ? rate : line), p.rmin_bps, path.line_bps);
  s.rate_bps = r;
  if (ack_seq > cc.update_seq) {
    cc.committed_bps = r;
    cc.stage = stage;
    cc.update_seq = s.next_seq;
  }
  s.window_bytes = static_cast<int64_t>((static_cast<Int128>(path.bdp_bytes) * r) / path.line_bps);
  if (s.window_bytes < 1) s.window_bytes = 1;
}

/// Per-ACK HPCC reaction to the INT records `hops` echoed for bytes up to `ack_seq`.
MV_HD inline void hpccOnAck(const HpccParams& p, const CcPath& path, FlowCc& cc, FlowSend& s, const IntHop* hops,
                            uint32_t n_hops, int64_t ack_seq) {
  const double t_rtt = static_cast<double>(path.base_rtt_ps);
  if (cc.update_seq == 0) {
    cc.update_seq = s.next_seq;  // the first RTT only records INT (as the reference)
  } else if (cc.int_hops == n_hops && n_hops > 0) {
    double u_max = 0;
    double tau = 0;
    bool sampled = false;
    for (uint32_t i = 0; i < n_hops; ++i) {
      const uint32_t dt = hops[i].ts_ps - cc.prev[i].ts_ps;
      const uint32_t db = hops[i].tx_bytes - cc.prev[i].tx_bytes;
      if (dt == 0u) continue;
      const double rate = static_cast<double>(hops[i].rate_mbps) * 1e6;
      const double tx_rate = static_cast<double>(db) * 8.0 * 1e12 / static_cast<double>(dt);
      const uint32_t q = hops[i].qlen_bytes < cc.prev[i].qlen_bytes ? hops[i].qlen_bytes : cc.prev[i].qlen_bytes;
      const double u = tx_rate / rate + static_cast<double>(q) * 8.0 * 1e12 / (rate * t_rtt);
      if (!sampled || u > u_max) {
        u_max = u;
        tau = static_cast<double>(dt);
        sampled = true;
      }
    }
    if (sampled) hpccUpdateRate(p, path, cc, s, tau, u_max, ack_seq);
  }
  cc.int_hops = n_hops;
  for (uint32_t i = 0; i < n_hops; ++i) cc.prev[i] = hops[i];
}

// --- DCTCP -------------------------------------------------------------------------------
enum DctcpFlag : uint32_t { kDctcpCwr = 1 };

/**
 * Per-ACK DCTCP reaction (hardware form of the reference). Every window of data (an ACK
 * passing the sequence sent at the last update) α ← (1−g)α + g·F with F the fraction of
 * the window's packets whose ACK echoed CE. A marked ACK outside congestion-window
 * reduction cuts the rate by α/2 and starts a reduction that lasts until the data sent
 * so far is acknowledged; a new window outside reduction adds R_AI. Window = BDP × rate / line.
 */
MV_HD inline void dctcpOnAck(const DctcpParams& p, const CcPath& path, int32_t mtu, FlowCc& cc, FlowSend& s,
                             bool marked, int64_t ack_seq) {
  bool new_window = false;
  if (marked) cc.marked_in_window += 1;
  if (ack_seq > cc.update_seq) {
    new_window = true;
    if (cc.update_seq > 0) {
      double f = static_cast<double>(cc.marked_in_window) / static_cast<double>(cc.acked_in_window);
      f = f < 1.0 ? f : 1.0;
      cc.alpha = (1.0 - p.g) * cc.alpha + p.g * f;
      cc.marked_in_window = 0;
      cc.acked_in_window = (s.next_seq > ack_seq ? (s.next_seq - ack_seq) / mtu : 0) + 1;
    } else {
      cc.acked_in_window = s.next_seq / mtu + 1;
    }
    cc.update_seq = s.next_seq;
  }
  if ((cc.flags & kDctcpCwr) != 0u && ack_seq > cc.cut_seq) cc.flags &= ~uint32_t{kDctcpCwr};
  if (marked && (cc.flags & kDctcpCwr) == 0u) {
    cc.flags |= kDctcpCwr;
    cc.cut_seq = s.next_seq;
    const double cut = static_cast<double>(s.rate_bps) * (1.0 - cc.alpha / 2.0);
    s.rate_bps = clampRate(static_cast<int64_t>(cut), p.rmin_bps, path.line_bps);
  }
  if ((cc.flags & kDctcpCwr) == 0u && new_window) {
    s.rate_bps = clampRate(s.rate_bps + p.rai_bps, p.rmin_bps, path.line_bps);
  }
  s.window_bytes = static_cast<int64_t>((static_cast<Int128>(path.bdp_bytes) * s.rate_bps) / path.line_bps);
  if (s.window_bytes < 1) s.window_bytes = 1;
}

/// Initial sender state of a flow: line rate, window = BDP where the CC uses one.
MV_HD inline void ccStart(const NetworkConfig& cfg, const CcPath& path, FlowCc& cc, FlowSend& s) {
  s.rate_bps = path.line_bps;
  s.cc_next_ps = INT64_MAX;
  cc = FlowCc{};
  cc.committed_bps = path.line_bps;
  cc.target_bps = path.line_bps;
  const bool windowed = cfg.cc == CcKind::kHpcc || cfg.cc == CcKind::kDctcp || cfg.window;
  s.window_bytes = windowed ? path.bdp_bytes : 0;
}

}  // namespace mv::net
