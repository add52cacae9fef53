/**
 * @file estimate.hpp
 * A coarse estimate of the memory one experiment's simulation takes, from its
 * configuration alone (nothing is built): what `multiverse validate` prints and what a
 * batch can be sized by. An estimate, not a measurement: it counts the large tables and
 * rounds every row up; docs/sweep.md lists the constants.
 */
#pragma once

#include <cstdint>
#include <string>

#include "systems/training_spec.hpp"

namespace mv {

/// Training-side rows per GPU (rank, its tasks and collective state), rounded up.
inline constexpr int64_t kEstimateRankBytes = 4096;
/// Bookkeeping of one row of a static table (entity, experiment, key and slot columns).
inline constexpr int64_t kEstimateStaticRowBytes = 36;
/// One packet slot (link ring, switch pool or NIC control): a 56-byte header row, plus an
/// 80-byte row of INT records when the experiment runs HPCC.
inline constexpr int64_t kEstimatePacketHeaderBytes = 56 + kEstimateStaticRowBytes;
inline constexpr int64_t kEstimatePacketIntBytes = 80 + kEstimateStaticRowBytes;
/// One NIC, switch, port or directed-link row of the packet network with its routing rows.
inline constexpr int64_t kEstimatePacketRowBytes = 256;
/// One NIC or directed-link row of the flow-level network.
inline constexpr int64_t kEstimateFlowRowBytes = 64;

/// Bytes of one experiment, by what takes them.
struct MemoryEstimate {
  /// kEstimateRankBytes per GPU.
  int64_t ranks = 0;
  /// Rows of the network: NICs, switches, switch ports and directed links (packet level),
  /// or NICs and directed links (flow level); 0 at the analytical fidelity.
  int64_t network_rows = 0;
  /// Packet slots of the link rings (network/builder.hpp ringCapacity per directed link).
  int64_t link_slots = 0;
  /// The switches' shared packet pool (network.switch_pool_slots).
  int64_t switch_pool = 0;
  /// ACK/NACK slots of the NICs (network.nic_control_slots per NIC, rounded up to a power of two).
  int64_t nic_control = 0;

  int64_t total() const { return ranks + network_rows + link_slots + switch_pool + nic_control; }
};

/**
 * The estimate for `x`: ranks always; at packet fidelity every row and packet slot the
 * network builder allocates for the whole topology (the lookahead taken as its smallest
 * link delay); at flow fidelity one small row per NIC and directed link; nothing more at
 * the analytical fidelity.
 */
MemoryEstimate estimateMemory(const TrainingExperiment& x);

/// `bytes` for people: "512 B", "3.2 KiB", "1.5 GiB".
std::string formatBytes(int64_t bytes);

}  // namespace mv
