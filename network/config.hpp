/**
 * @file config.hpp
 * Per-experiment network parameters: packet format, congestion control, ECN, PFC, load
 * balancing and loss recovery. Defaults and semantics follow ../shared/reference/network.md
 * (the HPCC authors' ns-3 code); every field is overridable per experiment.
 */
#pragma once

#include <cstdint>

#include "ecs/units.hpp"

namespace mv::net {

/// Congestion control of an experiment.
enum class CcKind : uint8_t { kNone = 0, kDcqcn = 1, kHpcc = 2, kDctcp = 3 };

/// How a switch picks among equal-cost next hops.
enum class LoadBalance : uint8_t {
  kEcmp = 0,   ///< per-flow hash of (src, dst, flow id) salted with the switch id
  kSpray = 1,  ///< per-packet random choice; needs the out-of-order receiver
};

/// Which class receivers send ACK/NACK in.
enum class AckPriority : uint8_t {
  kByCc = 0,  ///< strict-priority queue 0 for DCQCN, the data's class otherwise (the reference's runs)
  kHigh = 1,  ///< strict-priority queue 0
  kData = 2,  ///< the class of the data they acknowledge
};

/// DCQCN (reaction point in the NIC-firmware variant of the reference). Rates in b/s.
struct DcqcnParams {
  double g = 1.0 / 256;                     ///< α gain
  int64_t alpha_interval_ps = 1'000'000;    ///< α timer (1 µs)
  int64_t decrease_interval_ps = 4'000'000; ///< rate-decrease timer (4 µs)
  int64_t increase_interval_ps = 300'000'000;  ///< rate-increase timer (300 µs)
  uint32_t fast_recovery_stages = 1;        ///< F
  int64_t rai_per_25g_bps = 5'000'000;      ///< additive increase, scaled by line rate / 25 Gb/s
  int64_t rhai_per_25g_bps = 50'000'000;    ///< hyper increase, scaled likewise
  int64_t rmin_bps = 1'000'000'000;         ///< floor of the current rate
  bool clamp_target_rate = false;           ///< Rt <- Rc on every cut (else only after an increase)
};

/// Largest hpcc.int_multi accepted (the reference's scripts use line rate / 25 Gb/s).
inline constexpr uint32_t kMaxIntMulti = 1024;

/// HPCC (rate-based form). The base RTT defaults to the maximum over NIC pairs.
struct HpccParams {
  double eta = 0.95;                 ///< target utilisation
  uint32_t max_stage = 0;            ///< additive-increase stages before a multiplicative step
  int64_t rai_bps = 50'000'000;      ///< additive increase per update
  int64_t rmin_bps = 1'000'000'000;  ///< floor of the rate (the reference's MIN_RATE, shared by all CCs)
  int64_t base_rtt_ps = 0;           ///< T; 0 = computed from the topology
  /// 0: INT records exact counters. n > 0: records them as the reference's INT fields with
  /// INT_MULTI n (time in whole ns, bytes sent in units of 128·n, queue in units of 80·n).
  uint32_t int_multi = 0;
};

/// DCTCP in the hardware (rate and window) form of the reference.
struct DctcpParams {
  double g = 1.0 / 16;               ///< α gain
  int64_t rai_bps = 1'000'000'000;   ///< additive increase per window (the reference's DCTCP_RATE_AI)
  int64_t rmin_bps = 1'000'000'000;  ///< floor of the rate (the reference's MIN_RATE)
  int64_t k_per_10g_bytes = 30'000;  ///< marking threshold, scaled by port rate / 10 Gb/s
};

/// RED/ECN marking at switch egress (per port and priority, decided at dequeue).
struct EcnParams {
  bool enabled = true;
  int64_t kmin_per_25g_bytes = 100'000;  ///< scaled by port rate / 25 Gb/s
  int64_t kmax_per_25g_bytes = 400'000;
  double pmax = 0.2;
};

/// Shared switch buffer and priority flow control.
struct PfcParams {
  bool enabled = true;
  int64_t buffer_bytes = 32LL * 1024 * 1024;  ///< shared buffer per switch
  int64_t reserve_bytes = 4 * 1024;           ///< guaranteed per ingress queue
  int64_t resume_offset_bytes = 3 * 1024;     ///< XON hysteresis
  int32_t headroom_rtts = 3;                  ///< headroom per port = this × rate × link delay
  bool dynamic_threshold = true;              ///< else a static XOFF threshold
  int64_t static_xoff_bytes = 256 * 1024;     ///< used when dynamic_threshold is false
};

/// Largest pooled-storage knobs (the YAML range and the limit of automatic growth).
inline constexpr int32_t kMaxSwitchPoolSlots = 1 << 26;
inline constexpr int32_t kMaxLinkRingFactor = 1024;
inline constexpr int32_t kMaxNicControlSlots = 1 << 20;

/// How packets are framed on the wire (packet.hpp wire sizes).
enum class WireFormat : uint8_t {
  kNs3,   ///< the ns-3 RDMA reference's packets: a 48 B header, ACKs of 60 B, any payload up to 9000 B
  kRoce,  ///< RoCEv2 frames with Ethernet's preamble and gap; the payload is an RDMA MTU (256..4096 B)
};

/// RoCE's largest MTU: the most payload a RoCEv2 packet carries.
inline constexpr int32_t kRoceMaxMtu = 4096;

/// Everything network-side that an experiment may set.
struct NetworkConfig {
  CcKind cc = CcKind::kDcqcn;
  LoadBalance load_balance = LoadBalance::kEcmp;
  WireFormat wire = WireFormat::kNs3;
  int32_t payload_bytes = 1000;       ///< data payload per packet (with kRoce: the MTU)
  int32_t ack_interval = 1;           ///< ACK every this many data packets
  AckPriority ack_priority = AckPriority::kByCc;  ///< class of ACK/NACK
  int64_t nack_interval_ps = 500'000'000;  ///< at most one NACK per gap per this time (500 µs)
  int64_t rto_ps = 0;                 ///< retransmission timeout; 0 = 2 × (buffer drain at NIC rate) + T
  bool window = false;                ///< window limit for DCQCN (HPCC and DCTCP always use one)
  int32_t switch_pool_slots = 65536;  ///< packet records shared by the switches of an experiment
  int32_t link_ring_factor = 1;       ///< link-ring pool: factor × full packets on every wire at once (linkPoolSlots)
  int32_t nic_control_slots = 64;     ///< ACK/NACK records waiting at a NIC
  int64_t link_bin_ps = 0;            ///< link utilisation time bins (0 = off)
  bool whole_ns = false;              ///< serialisation and pacing truncated to whole ns (the ns-3 reference's timing)
  DcqcnParams dcqcn;
  HpccParams hpcc;
  DctcpParams dctcp;
  EcnParams ecn;
  PfcParams pfc;
};

/// The pooled packet storage of a run: what a restart doubles when it runs out.
struct PoolKnobs {
  int32_t switch_pool_slots = 0;
  int32_t link_ring_factor = 0;
  int32_t nic_control_slots = 0;
};
inline PoolKnobs poolKnobs(const NetworkConfig& c) {
  return PoolKnobs{c.switch_pool_slots, c.link_ring_factor, c.nic_control_slots};
}
/// Each knob the larger of `a`'s and `b`'s.
inline PoolKnobs largerPoolKnobs(const PoolKnobs& a, const PoolKnobs& b) {
  auto most = [](int32_t x, int32_t y) { return x > y ? x : y; };
  return PoolKnobs{most(a.switch_pool_slots, b.switch_pool_slots), most(a.link_ring_factor, b.link_ring_factor),
                   most(a.nic_control_slots, b.nic_control_slots)};
}
/// Raises each pooled-storage knob of `c` to `k`'s where that is larger.
inline void raisePoolKnobs(NetworkConfig& c, const PoolKnobs& k) {
  const PoolKnobs m = largerPoolKnobs(poolKnobs(c), k);
  c.switch_pool_slots = m.switch_pool_slots;
  c.link_ring_factor = m.link_ring_factor;
  c.nic_control_slots = m.nic_control_slots;
}

/// True when the experiment's receivers send ACK/NACK in the strict-priority queue 0.
MV_HD constexpr bool ackHighPriority(const NetworkConfig& c) {
  return c.ack_priority == AckPriority::kHigh || (c.ack_priority == AckPriority::kByCc && c.cc == CcKind::kDcqcn);
}

}  // namespace mv::net
