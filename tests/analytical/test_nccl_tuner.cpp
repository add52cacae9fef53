/**
 * @file test_nccl_tuner.cpp
 * NCCL's tuner model (analytical/nccl_tuner.hpp): its latency formula worked by hand from
 * NCCL 2.19's tables, and its choices against what NCCL is known to do: the tree with LL
 * for small all-reduces, the ring for large ones across many servers of one GPU, the ring
 * only for all-gather, and on the 2 × 8 A100 cluster of the shared nccl-tests log the
 * switch from LL128 to Simple between 512 MiB and 1 GiB where the log's bus bandwidth jumps
 * from 156 to 219 GB/s.
 */
#include <catch2/catch.hpp>

#include "analytical/nccl_tuner.hpp"

namespace mv {
namespace {

/// ../shared/external/nccl_tests_oci_a100_roce/: 16 ranks on 2 servers, 16 NICs each (one
/// ring channel per NIC at 12 GB/s), the tree's 16 channels over NVLink (300 GB/s / 16),
/// AMD hosts.
NcclTunerShape ociShape() {
  NcclTunerShape s;
  s.ranks = 16;
  s.nodes = 2;
  s.ring_channels = 16;
  s.tree_channels = 16;
  s.ring_bw_gbs = 12;
  s.tree_bw_gbs = 18.75;
  s.net_overhead_us = 2.0;
  return s;
}

TEST_CASE("the tuner's ring latency is NCCL's formula", "[analytical][nccl]") {
  NcclTunerShape s = ociShape();
  s.net_overhead_us = 1.0;
  // Ring LL: base 6.6 µs, 2(n−1) − 2·nodes = 26 steps inside servers at max(0.6, 1 µs of
  // network overhead), 4 between them at 2.7 µs; 8 B add nothing measurable.
  CHECK(ncclTunerTime(s, NcclAlgorithm::kRing, NcclProtocol::kLl, 8) == Approx(6.6 + 26 * 1.0 + 4 * 2.7).epsilon(1e-4));
  // Tree LL: base 6.8, 2 · ((8 − 1) · 0.6 + log2(2) · 5.0).
  CHECK(ncclTunerTime(s, NcclAlgorithm::kTree, NcclProtocol::kLl, 8) ==
        Approx(6.8 + 2 * (7 * 0.6 + 5.0)).epsilon(1e-4));
  // The tree runs only all-reduce.
  s.op = CollectiveOp::kAllGather;
  CHECK(ncclTunerTime(s, NcclAlgorithm::kTree, NcclProtocol::kSimple, 1 << 20) < 0);
  CHECK(ncclTunerChoice(s, 8).algorithm == NcclAlgorithm::kRing);
  CHECK(ncclTunerChoice(s, int64_t{1} << 30).algorithm == NcclAlgorithm::kRing);
}

TEST_CASE("on the nccl-tests cluster the tuner runs the tree, LL to LL128 to Simple", "[analytical][nccl]") {
  const NcclTunerShape s = ociShape();
  NcclProtocol last = NcclProtocol::kLl;
  for (int64_t bytes = 8; bytes <= (int64_t{8} << 30); bytes *= 2) {
    const NcclChoice c = ncclTunerChoice(s, bytes);
    INFO(bytes);
    CHECK(c.algorithm == NcclAlgorithm::kTree);
    CHECK(static_cast<int>(c.protocol) >= static_cast<int>(last));  // protocols only grow with the size
    last = c.protocol;
  }
  CHECK(ncclTunerChoice(s, 8).protocol == NcclProtocol::kLl);
  CHECK(ncclTunerChoice(s, 1 << 20).protocol == NcclProtocol::kLl128);
  // Where the log's busbw jumps from 156 (512 MiB) to 219 GB/s (1 GiB).
  CHECK(ncclTunerChoice(s, int64_t{512} << 20).protocol == NcclProtocol::kLl128);
  CHECK(ncclTunerChoice(s, int64_t{1} << 30).protocol == NcclProtocol::kSimple);
}

TEST_CASE("across many servers of one GPU the ring takes the large all-reduces", "[analytical][nccl]") {
  // 64 servers, one GPU each behind a 400 Gb/s NIC (about 48 GB/s in one channel per tree).
  NcclTunerShape s;
  s.ranks = 64;
  s.nodes = 64;
  s.ring_channels = 2;
  s.tree_channels = 2;
  s.ring_bw_gbs = 24;
  s.tree_bw_gbs = 24;
  s.arch = GpuArchitecture::kHopper;
  // Small: the tree's 2·log2(64) steps beat the ring's 126.
  CHECK(ncclTunerChoice(s, 8).algorithm == NcclAlgorithm::kTree);
  // Large: the ring's bandwidth (n / 2(n−1) of its bus bandwidth) beats the tree's half of 92 %.
  const NcclChoice big = ncclTunerChoice(s, int64_t{1} << 30);
  CHECK(big.algorithm == NcclAlgorithm::kRing);
  CHECK(big.protocol == NcclProtocol::kSimple);
}

}  // namespace
}  // namespace mv
