/**
 * @file packet.hpp
 * The packet record that travels on links and waits in queues: a fixed 48-byte header, plus
 * the INT records of HPCC, kept in pooled storage (link rings, switch packet pools, NIC
 * control rings; see PacketSlots). Wire sizes follow ../shared/reference/network.md.
 */
#pragma once

#include <cstdint>

#include "ecs/entity.hpp"
#include "ecs/macros.hpp"

namespace mv::net {

enum class PacketKind : uint8_t { kData = 0, kAck = 1, kNack = 2, kPause = 3, kResume = 4 };

/// Packet flags.
enum PacketFlag : uint8_t {
  kFlagCe = 1u << 0,       ///< congestion experienced (set by a switch)
  kFlagEcnEcho = 1u << 1,  ///< ACK echoes a CE mark (a CNP for DCQCN)
  kFlagRetransmit = 1u << 2,
  kFlagLast = 1u << 3,     ///< data: the last packet of a message on a connection (RDMA's "last" opcode)
};

inline constexpr int kMaxIntHops = 5;
inline constexpr int kPriorities = 8;
inline constexpr int kControlPriority = 0;

/// Wire sizes in bytes: the ns-3 reference's packets (WireFormat::kNs3).
inline constexpr int32_t kDataHeaderBytes = 48;  ///< L2 14 + IPv4 20 + UDP 8 + seq/prio 6
inline constexpr int32_t kIntHeaderBytes = 42;   ///< HPCC INT: 2 + 8 per hop, 5 hops
inline constexpr int32_t kAckBytes = 60;
inline constexpr int32_t kAckIntBytes = 88;
inline constexpr int32_t kPfcBytes = 43;
/// RoCEv2 (WireFormat::kRoce), each with Ethernet's 8 B preamble and 12 B inter-frame gap:
/// data = Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + payload + ICRC 4 + FCS 4; ACK = the same
/// headers with an AETH of 4 B and no payload; PFC = a 64 B MAC control frame.
inline constexpr int32_t kEthernetGapBytes = 20;
inline constexpr int32_t kRoceDataHeaderBytes = 14 + 20 + 8 + 12 + 4 + 4 + kEthernetGapBytes;  // 82
inline constexpr int32_t kRoceAckBytes = 14 + 20 + 8 + 12 + 4 + 4 + 4 + kEthernetGapBytes;     // 86
inline constexpr int32_t kRocePfcBytes = 64 + kEthernetGapBytes;                                // 84

/// One INT record pushed by a switch egress (HPCC). Counters wrap at 2^32; only their
/// differences between consecutive ACKs are used. No member initialisers: a packet being
/// built does not clear records it does not carry.
struct IntHop {
  uint32_t ts_ps;       ///< dequeue time, low 32 bits of picoseconds
  uint32_t tx_bytes;    ///< bytes the port sent before this packet (low 32 bits)
  uint32_t qlen_bytes;  ///< bytes queued on the port (all priorities) after removal
  uint32_t rate_mbps;   ///< port rate
};
/**
 * The INT record a switch egress pushes at `t_ps` (ps), having sent `tx_bytes` and holding
 * `queued_bytes`. With `int_multi` 0 the counters are exact. With n > 0 they are encoded
 * as the reference's INT fields with INT_MULTI n: time in whole nanoseconds, bytes sent in
 * units of 128·n, the queue in units of 80·n in a 17-bit field (which wraps as the
 * reference's does). The time and byte fields' own wrap (24 and 20 bits) is not emulated:
 * only differences between consecutive records are used, and those stay far below it.
 */
MV_HD inline IntHop intRecord(uint32_t int_multi, int64_t t_ps, int64_t tx_bytes, int64_t queued_bytes,
                              int64_t rate_bps) {
  constexpr int64_t kPsPerNs = 1000;
  constexpr int64_t kByteUnit = 128;
  constexpr int64_t kQlenUnit = 80;
  constexpr int64_t kQlenFieldUnits = int64_t{1} << 17;
  IntHop h;
  h.rate_mbps = static_cast<uint32_t>(rate_bps / 1'000'000);
  if (int_multi == 0) {
    h.ts_ps = static_cast<uint32_t>(t_ps);
    h.tx_bytes = static_cast<uint32_t>(tx_bytes);
    h.qlen_bytes = static_cast<uint32_t>(queued_bytes);
    return h;
  }
  const int64_t byte_unit = kByteUnit * int_multi;
  const int64_t qlen_unit = kQlenUnit * int_multi;
  h.ts_ps = static_cast<uint32_t>(t_ps / kPsPerNs * kPsPerNs);
  h.tx_bytes = static_cast<uint32_t>(tx_bytes / byte_unit * byte_unit);
  h.qlen_bytes = static_cast<uint32_t>(queued_bytes / qlen_unit % kQlenFieldUnits * qlen_unit);
  return h;
}

/// The INT records of one packet; only the first `hops` of its header are meaningful.
/// Pooled storage keeps them apart from the headers (PacketSlots), so a packet without INT
/// moves 48 bytes; a unit handles a header and a pointer to its records, never a copy of
/// both (on the GPU, such copies were 384 B of local memory in every NIC thread).
struct IntStack {
  IntHop hop[kMaxIntHops];
};

/// Bits of a packet's sequence number (signed): it counts bytes of one flow, and a flow
/// carries at most 2^44 bytes (kMaxInputBytes: checked by checkFlowArguments for flows added
/// from the host, and for training flows when an experiment is filled).
inline constexpr int kSeqBits = 48;
/// Bits of a flow id (the low bits of a flow's key, flowKey).
inline constexpr int kFlowIdBits = 40;

/// The fixed part of a packet, 48 bytes: the fields whose range is bounded (sequence
/// number, flow id, flags, INT hops) are bit-fields and sizes are 16-bit (a payload is at
/// most 9,000 bytes), so the millions of records a packet-level run queues take a sixth
/// less memory than with whole words. `time_ps` is when it is fully received at the far
/// end of its current link (in a link ring), or when it entered its queue (in a switch or
/// NIC).
struct PacketHeader {
  int64_t time_ps = 0;
  Entity flow;                 ///< handle of its flow's row: both ends find the flow without a search
  int64_t seq : kSeqBits = 0;  ///< data: first payload byte; ACK/NACK: next expected byte
  uint16_t wire_bytes = 0;
  uint64_t flow_id : kFlowIdBits = 0;  ///< id of its flow (the flow's key is flowKey(data source, id))
  uint8_t flags : 4 = 0;               ///< PacketFlag bits
  uint8_t hops : 4 = 0;                ///< INT records carried (at most kMaxIntHops)
  uint16_t payload = 0;
  uint32_t src_nic = 0;
  uint32_t dst_nic = 0;
  uint32_t next = 0;     ///< pool link (queue or free list)
  uint16_t in_port = 0;  ///< ingress port at the current switch
  PacketKind kind = PacketKind::kData;
  uint8_t prio = 0;  ///< queue class; for PFC frames the class paused/resumed

  MV_HD bool isControl() const { return kind != PacketKind::kData; }
};
static_assert(sizeof(PacketHeader) == 48);
static_assert(kMaxIntHops < 16 && kFlagLast < 16, "hops and flags fit their 4-bit fields");

}  // namespace mv::net
