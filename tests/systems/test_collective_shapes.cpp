#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "systems/collective_shapes.hpp"

namespace mv::train {
namespace {

/// Transfers in an order where each comes after everything it waits for; fails on a cycle.
std::vector<uint32_t> topological(const CollectiveShape& s) {
  std::vector<uint32_t> left(s.transfers.size());
  std::vector<uint32_t> order;
  for (size_t i = 0; i < s.transfers.size(); ++i) {
    left[i] = s.transfers[i].dep_count;
    if (left[i] == 0) order.push_back(static_cast<uint32_t>(i));
  }
  for (size_t k = 0; k < order.size(); ++k) {
    const TransferDef& t = s.transfers[order[k]];
    for (uint32_t j = 0; j < t.succ_count; ++j) {
      const uint32_t next = s.succs[t.succ_begin + j];
      if (--left[next] == 0) order.push_back(next);
    }
  }
  REQUIRE(order.size() == s.transfers.size());
  return order;
}

/**
 * informed[b][a]: member b received, directly or through a chain of transfers each waiting
 * for the previous one's arrival, something member a sent. After an all-reduce or an
 * all-gather every member is informed by every other.
 */
std::vector<std::vector<bool>> informed(const CollectiveShape& s, uint32_t n) {
  const std::vector<uint32_t> order = topological(s);
  std::vector<std::vector<bool>> carries(s.transfers.size(), std::vector<bool>(n, false));
  std::vector<std::vector<bool>> out(n, std::vector<bool>(n, false));
  for (uint32_t t : order) {
    const TransferDef& d = s.transfers[t];
    carries[t][d.src] = true;
    for (uint32_t a = 0; a < n; ++a) {
      if (!carries[t][a]) continue;
      out[d.dst][a] = true;
      for (uint32_t j = 0; j < d.succ_count; ++j) carries[s.succs[d.succ_begin + j]][a] = true;
    }
  }
  return out;
}

/// Fraction of the buffer member m sends over the whole collective.
double sentBy(const CollectiveShape& s, uint32_t m) {
  double f = 0;
  for (const TransferDef& t : s.transfers) {
    if (t.src == m) f += 1.0 / t.den;
  }
  return f;
}

void checkEveryoneInformed(const CollectiveShape& s, uint32_t n) {
  const auto info = informed(s, n);
  for (uint32_t b = 0; b < n; ++b) {
    for (uint32_t a = 0; a < n; ++a) {
      if (a != b) CHECK(info[b][a]);
    }
  }
}

TEST_CASE("ring all-reduce: 2(n-1) steps, each member sends 2(n-1)/n of the buffer, everyone informed") {
  for (uint32_t n : {2u, 3u, 8u}) {
    for (uint32_t chunks : {1u, 3u}) {
      const CollectiveShape s = makeShape(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, n, chunks);
      CHECK(s.transfers.size() == 2u * (n - 1) * n * chunks);
      for (uint32_t m = 0; m < n; ++m) CHECK(sentBy(s, m) == Approx(2.0 * (n - 1) / n));
      checkEveryoneInformed(s, n);
    }
  }
}

TEST_CASE("halving-doubling: log2 n steps each way, the ring's volume, everyone informed") {
  const CollectiveShape ar = makeShape(CollectiveOp::kAllReduce, CollectiveAlgorithm::kHalvingDoubling, 8, 1);
  CHECK(ar.transfers.size() == 2u * 3u * 8u);
  for (uint32_t m = 0; m < 8; ++m) CHECK(sentBy(ar, m) == Approx(2.0 * 7 / 8));
  checkEveryoneInformed(ar, 8);
  const CollectiveShape ag = makeShape(CollectiveOp::kAllGather, CollectiveAlgorithm::kHalvingDoubling, 8, 1);
  for (uint32_t m = 0; m < 8; ++m) CHECK(sentBy(ag, m) == Approx(7.0 / 8));
  checkEveryoneInformed(ag, 8);
  CHECK_FALSE(algorithmSupports(CollectiveAlgorithm::kHalvingDoubling, CollectiveOp::kAllReduce, 6));
  CHECK_THROWS_AS(makeShape(CollectiveOp::kAllReduce, CollectiveAlgorithm::kHalvingDoubling, 6, 1),
                  std::invalid_argument);
}

TEST_CASE("double binary tree: each tree reduces and broadcasts half the buffer; everyone informed") {
  for (uint32_t n : {2u, 5u, 8u}) {
    const CollectiveShape s = makeShape(CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, n, 2, 1, 2);  // 2 channels: 2 trees
    // Per chunk and tree: n−1 sends up and n−1 sends down.
    CHECK(s.transfers.size() == 2u * 2u * 2u * (n - 1));
    checkEveryoneInformed(s, n);
    double total = 0;
    for (uint32_t m = 0; m < n; ++m) total += sentBy(s, m);
    CHECK(total == Approx(2.0 * (n - 1)));  // 2 trees × 2(n−1) sends × 1/2 of the buffer
  }
}

TEST_CASE("NCCL's tree: a double binary tree between servers over chains inside them") {
  // 3 servers of 4 members, 4 channels (2 per tree), 2 NICs per member.
  const uint32_t n = 12, g = 4, k = 3, channels = 4;
  for (uint32_t chunks : {1u, 3u}) {
    const CollectiveShape s = makeShape(CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, n, chunks, g, channels, 2);
    // Per chunk and channel: each server's chain up and down, 2(g−1) hops, and the tree's
    // k−1 sends up and k−1 down between the servers' heads.
    const uint32_t per_chunk = channels * (2 * k * (g - 1) + 2 * (k - 1));
    REQUIRE(s.transfers.size() == chunks * per_chunk);
    if (chunks == 1) checkEveryoneInformed(s, n);
    // NVLink streams at once: the chains' depth is g − 1 + ⌈log₂k⌉ = 5 hops; 2 · channels
    // streams once the chunks fill it, 2 · 4 · chunks / 5 before.
    const uint32_t sharing = chunks == 1 ? 1 : 4;
    for (size_t i = 0; i < s.transfers.size(); ++i) {
      const TransferDef& t = s.transfers[i];
      CHECK(t.den == channels * chunks);  // a channel's share of a chunk
      if (t.src / g != t.dst / g) {
        // Between servers only channel c's heads, local member ⌊c / 2⌋ (the owner of its NIC).
        CHECK(t.src % g == t.channel / 2 % g);
        CHECK(t.dst % g == t.channel / 2 % g);
      } else {
        CHECK(t.sharing == sharing);
        // A hop inside a server of a later chunk waits for the same hop of the chunk before.
        if (i >= per_chunk) {
          const TransferDef& before = s.transfers[i - per_chunk];
          CHECK(before.src == t.src);
          CHECK(before.dst == t.dst);
          const auto* first = s.succs.data() + before.succ_begin;
          CHECK(std::find(first, first + before.succ_count, i) != first + before.succ_count);
        }
      }
    }
    double total = 0;
    for (uint32_t m = 0; m < n; ++m) total += sentBy(s, m);
    // Per channel every member but the root's head sends its share up once, and every one
    // but the root's head receives it back down once: 2(n − 1) channel shares, as the ring.
    CHECK(total == Approx(2.0 * (n - 1)));
  }
  // One member per server and two channels: the double binary tree over the members.
  const CollectiveShape flat = makeShape(CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, 8, 1, 1, 2);
  CHECK(flat.transfers.size() == 2u * 2u * 7u);
  checkEveryoneInformed(flat, 8);
  CHECK(treeBlock(12, 4) == 4);
  CHECK(treeBlock(12, 5) == 1);   // not whole servers
  CHECK(treeBlock(12, 12) == 1);  // one server: no tree between servers
}

TEST_CASE("hierarchical all-reduce: only 1/g of the buffer crosses servers per member") {
  const uint32_t n = 8;
  const uint32_t g = 4;  // 2 servers of 4 members
  const CollectiveShape s = makeShape(CollectiveOp::kAllReduce, CollectiveAlgorithm::kHierarchical, n, 1, g);
  checkEveryoneInformed(s, n);
  for (uint32_t m = 0; m < n; ++m) {
    double across = 0;
    for (const TransferDef& t : s.transfers) {
      if (t.src == m && t.src / g != t.dst / g) across += 1.0 / t.den;
    }
    CHECK(across == Approx(2.0 * (2 - 1) / (2 * g)));
  }
  const CollectiveShape rs = makeShape(CollectiveOp::kReduceScatter, CollectiveAlgorithm::kHierarchical, n, 1, g);
  CHECK(topological(rs).size() == rs.transfers.size());
}

TEST_CASE("ring channels: hops between servers stay on one rail, each NIC carries 1/g of the single ring's") {
  const uint32_t g = 4;
  for (uint32_t servers : {2u, 3u, 4u}) {
    const uint32_t n = g * servers;
    const CollectiveShape one = makeShape(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, n, 1, g);
    const CollectiveShape four = makeShape(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, n, 1, g, g);
    checkEveryoneInformed(four, n);
    auto across = [&](const CollectiveShape& s, uint32_t m) {
      double f = 0;
      for (const TransferDef& t : s.transfers) {
        if (t.src == m && t.src / g != t.dst / g) f += 1.0 / t.den;
      }
      return f;
    };
    const double ring_exit = 2.0 * (n - 1) / n;  // one member per server sends the ring's whole volume out
    double most_one = 0;
    for (uint32_t m = 0; m < n; ++m) {
      INFO("servers " << servers << " member " << m);
      most_one = std::max(most_one, across(one, m));
      CHECK(sentBy(four, m) == Approx(ring_exit));
      CHECK(across(four, m) == Approx(ring_exit / g));
    }
    CHECK(most_one == Approx(ring_exit));
    // Per channel and step, a hop leaves every server; it changes rail only on the wrap
    // from the last server to the first, when the servers are odd in number.
    uint32_t off_rail = 0;
    uint32_t between = 0;
    for (const TransferDef& t : four.transfers) {
      if (t.src / g == t.dst / g) continue;
      ++between;
      if (t.src % g != t.dst % g) {
        ++off_rail;
        CHECK(t.src / g == servers - 1);
        CHECK(t.dst / g == 0);
      }
    }
    CHECK(between == g * servers * 2 * (n - 1));
    CHECK(off_rail == (servers % 2 == 1 ? g * 2 * (n - 1) : 0));
  }
}

TEST_CASE("ring channels: the busiest member's NVLink carries every channel it does not exit") {
  // Per channel a member sends steps/(n·c) of the buffer; counted in channels, the intra-
  // server share of the busiest member is what nvlinkSharing charges side by side.
  struct Case {
    uint32_t n, g, c, sharing;
  };
  for (const Case& k : {Case{16, 8, 8, 7}, Case{16, 8, 4, 4}, Case{16, 8, 12, 11}, Case{16, 8, 16, 14},
                        Case{12, 4, 6, 5}, Case{10, 4, 3, 3}}) {
    INFO("n " << k.n << " g " << k.g << " channels " << k.c);
    const CollectiveShape s = makeShape(CollectiveOp::kAllGather, CollectiveAlgorithm::kRing, k.n, 1, k.g, k.c);
    double busiest = 0;
    for (uint32_t m = 0; m < k.n; ++m) {
      double intra = 0;
      for (const TransferDef& t : s.transfers) {
        if (t.src == m && t.src / k.g == t.dst / k.g) intra += 1.0 / t.den;
      }
      busiest = std::max(busiest, intra * k.n * k.c / (k.n - 1));
    }
    CHECK(busiest == Approx(k.sharing));
    const std::vector<RingPhaseDef> phases =
        ringPhases(CollectiveOp::kAllGather, CollectiveAlgorithm::kRing, k.n, k.g, k.c);
    REQUIRE(phases.size() == 1);
    CHECK(nvlinkSharing(phases[0]) == k.sharing);
  }
  // A single ring and the hierarchical phases send one hop at a time.
  CHECK(nvlinkSharing(ringPhases(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 16, 8)[0]) == 1);
  for (const RingPhaseDef& p : ringPhases(CollectiveOp::kAllReduce, CollectiveAlgorithm::kHierarchical, 16, 8)) {
    CHECK(nvlinkSharing(p) == 1);
  }
}

TEST_CASE("direct all-to-all: every ordered pair once, 1/n each") {
  const CollectiveShape s = makeShape(CollectiveOp::kAllToAll, CollectiveAlgorithm::kDirect, 5, 1);
  CHECK(s.transfers.size() == 20);
  for (const TransferDef& t : s.transfers) {
    CHECK(t.src != t.dst);
    CHECK(t.dep_count == 0);
  }
  for (uint32_t m = 0; m < 5; ++m) CHECK(sentBy(s, m) == Approx(4.0 / 5));
}

TEST_CASE("generated rings walk makeShape's DAG transfer by transfer") {
  struct Case {
    CollectiveAlgorithm algorithm;
    uint32_t n;
    uint32_t per_server;
    uint32_t channels = 1;
  };
  const Case cases[] = {{CollectiveAlgorithm::kRing, 2, 1},         {CollectiveAlgorithm::kRing, 5, 1},
                        {CollectiveAlgorithm::kRing, 8, 4},         {CollectiveAlgorithm::kRing, 8, 4, 4},
                        {CollectiveAlgorithm::kRing, 12, 4, 2},     {CollectiveAlgorithm::kRing, 12, 4, 6},
                        {CollectiveAlgorithm::kRing, 5, 1, 3},      {CollectiveAlgorithm::kRing, 8, 8, 2},
                        {CollectiveAlgorithm::kHierarchical, 8, 2}, {CollectiveAlgorithm::kHierarchical, 12, 4},
                        {CollectiveAlgorithm::kHierarchical, 6, 3}, {CollectiveAlgorithm::kHierarchical, 6, 6},
                        {CollectiveAlgorithm::kHierarchical, 6, 1}};
  for (const Case& c : cases) {
    for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
      for (const auto& [chunks, window] : {std::pair{1u, 0u}, {3u, 0u}, {3u, 1u}, {4u, 2u}, {5u, 2u}, {2u, 2u}}) {
        if (window > 0 && c.algorithm != CollectiveAlgorithm::kRing) continue;
        INFO(algorithmName(c.algorithm) << " " << collectiveOpName(op) << " n " << c.n << " per server " << c.per_server
                                        << " channels " << c.channels << " chunks " << chunks << " window " << window);
        const CollectiveShape dag = makeShape(op, c.algorithm, c.n, chunks, c.per_server, c.channels, 1, window);
        const std::vector<RingPhaseDef> phases = ringPhases(op, c.algorithm, c.n, c.per_server, c.channels);
        const uint32_t per_chunk = phases.back().first + phases.back().count;
        REQUIRE(dag.transfers.size() == size_t{per_chunk} * chunks);
        // What arrive() starts: the first step of every ring of the first phase, of every
        // chunk or with a window of the first loop's.
        std::vector<bool> starts(dag.transfers.size(), false);
        const uint32_t first_chunks = window > 0 ? std::min(chunks, window) : chunks;
        for (uint32_t chunk = 0; chunk < first_chunks; ++chunk) {
          for (uint32_t q = 0; q < phases[0].rings; ++q) {
            for (uint32_t i = 0; i < phases[0].size; ++i) {
              starts[chunk * per_chunk + ringStepTransfer(phases[0], q, 0, i)] = true;
            }
          }
        }
        for (uint32_t k = 0; k < dag.transfers.size(); ++k) {
          const TransferDef& d = dag.transfers[k];
          const RingTransfer g =
              ringTransfer(phases.data(), static_cast<uint32_t>(phases.size()), chunks, window, per_chunk, k);
          CHECK(g.src == d.src);
          CHECK(g.dst == d.dst);
          CHECK(g.den == d.den);
          CHECK(starts[k] == (d.dep_count == 0));
          CHECK(d.dep_count <= 1);
          REQUIRE(d.succ_count <= 1);
          CHECK(g.next == (d.succ_count == 1 ? dag.succs[d.succ_begin] : kNoTransfer));
        }
      }
    }
  }
  CHECK_THROWS_AS(ringPhases(CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, 8), std::invalid_argument);
  CHECK_THROWS_AS(ringPhases(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 1u << 17), std::length_error);
}

TEST_CASE("NCCL's Simple ring chunking: loops of buffer/2 chunks, two slices each above buffer/128") {
  const int64_t mib = int64_t{1} << 20;
  const int64_t buffer = 4 * mib;
  // One loop: a 1 MiB share in two slices, a 10 KiB one (under the 32 KiB floor) in one.
  CHECK(ncclRingChunking(mib, buffer).chunks == 2);
  CHECK(ncclRingChunking(mib, buffer).window == 2);
  CHECK(ncclRingChunking(10 << 10, buffer).chunks == 1);
  CHECK(ncclRingChunking(10 << 10, buffer).window == 1);
  CHECK(ncclRingChunking(0, buffer).chunks == 1);
  // 5 MiB: 3 loops of 2 MiB chunks (the last short), 6 slices; exactly 2 MiB is one loop.
  CHECK(ncclRingChunking(5 * mib, buffer).chunks == 6);
  CHECK(ncclRingChunking(2 * mib, buffer).chunks == 2);
  CHECK(ncclRingChunking(2 * mib + 1, buffer).chunks == 4);
  // At most 32 loops: 1 GiB goes in 32 loops of 32 MiB.
  CHECK(ncclRingChunking(1024 * mib, buffer).chunks == 2 * kMaxRingLoops);
  // A 64 KiB buffer: 32 KiB chunks, a floor of 512 B.
  CHECK(ncclRingChunking(64 << 10, 64 << 10).chunks == 4);
  CHECK(ncclRingChunking(512, 64 << 10).window == 1);
  CHECK(ncclRingChunking(513, 64 << 10).window == 2);
}

TEST_CASE("NCCL's tree chunks: a slot of buffer/8, halved to a quarter while a hop of the depth has fewer than 8") {
  const int64_t kib = 1024;
  // 4 MiB buffer: 512 KiB chunks when the share has 8 per hop of depth 4 (16 MiB: 32).
  CHECK(ncclTreeChunks(16 * 1024 * kib, 4, 4096 * kib) == 32);
  // 4 MiB at depth 4 halves twice to 128 KiB: 32 chunks, fewer than 8 per hop still.
  CHECK(ncclTreeChunks(4096 * kib, 4, 4096 * kib) == 32);
  // 1 MiB at depth 2: 256 KiB gives 4 < 16, and the halving stops at 128 KiB: 8 chunks.
  CHECK(ncclTreeChunks(1024 * kib, 2, 4096 * kib) == 8);
  // At most 64, at least 1.
  CHECK(ncclTreeChunks(int64_t{1} << 30, 1, 4096 * kib) == 64);
  CHECK(ncclTreeChunks(8, 3, 4096 * kib) == 1);
  // A 1 MiB buffer: slots of 128 KiB, 1 MiB at depth 2 halved once to 64 KiB (16 chunks).
  CHECK(ncclTreeChunks(1024 * kib, 2, 1024 * kib) == 16);
}

TEST_CASE("the longest analytical time of the input ranges fits int64: 16 TiB over a 2^20-rank ring at 100 Mb/s") {
  // The ring all-reduce's busiest NIC sends 2(n - 1)/n of the bytes: about 32 TiB, 2.8e18 ps
  // at the slowest link rate an input may give (kMinRateBps), inside int64's 9.2e18.
  const int64_t s = int64_t{1} << 44;
  const int64_t n = int64_t{1} << 20;
  const AnalyticalPath slow{kMinRateBps, 0};
  const int64_t t = analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, n, s, slow);
  const double expected = 2.0 * static_cast<double>(n - 1) / static_cast<double>(n) * static_cast<double>(s) * 8 /
                          static_cast<double>(kMinRateBps) * 1e12;
  CHECK(t > 0);
  CHECK(std::abs(static_cast<double>(t) / expected - 1) < 1e-9);
}

TEST_CASE("analytical times follow the algorithms' step counts and volumes") {
  const int64_t rate = 100'000'000'000;
  const int64_t step = 1'000'000;
  const int64_t s = 100'000'000;
  // Ring of one member per server: 2(n−1) steps, each a step and its n-th of S at the rate
  // (8 bits per byte, ps): 2(n−1)/n·S in all.
  const AnalyticalPath path{rate, step};
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 4, s, path) ==
        6 * step + 150'000'000LL * 8 * 10);
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kHalvingDoubling, 4, s, path) ==
        4 * step + 150'000'000LL * 8 * 10);

  // Hierarchical over 4 servers of 8 (n = 32): 7 NVLink steps of S/8 = 12.5 MB at 1.6 Tb/s
  // (62.5 µs each plus a 2 µs step latency) on each side, and the rails' rings across the
  // 4 servers: 6 steps of S/32, 18.75 MB in all at the NIC rate (1.5 ms).
  AnalyticalPath rails = path;
  rails.per_server = 8;
  rails.nvlink_bps = 1'600'000'000'000;
  rails.nvlink_step_ps = 2'000'000;
  const int64_t intra = 7 * (2'000'000 + 62'500'000);
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kHierarchical, 32, s, rails) ==
        2 * intra + 6 * step + 18'750'000LL * 8 * 10);
  // Reduce-scatter: the first intra phase and k − 1 = 3 inter steps; all-gather: the last.
  CHECK(analyticalTime(CollectiveOp::kReduceScatter, CollectiveAlgorithm::kHierarchical, 32, s, rails) ==
        intra + 3 * step + 9'375'000LL * 8 * 10);
  CHECK(analyticalTime(CollectiveOp::kAllGather, CollectiveAlgorithm::kHierarchical, 32, s, rails) ==
        intra + 3 * step + 9'375'000LL * 8 * 10);
  // The rails carry 1/8 of what one ring's crossing NIC does: 8x less NIC time than the ring,
  // whose 62 hops of S/32 (8 between servers at a step and 250 µs, 54 over NVLink at 2 µs and
  // 15.6 µs: 2.96 ms) take less than its crossing NIC's 62/32 of S after one step (15.5 ms).
  const int64_t ring = analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 32, s, rails);
  CHECK(8 * (step + 250'000'000) + 54 * (2'000'000 + 15'625'000) < 193'750'000LL * 8 * 10);
  CHECK(ring == step + 193'750'000LL * 8 * 10);
  // Channels: 8 rings on S/8 each leave every server on 8 different NICs (8x less per NIC);
  // 4 channels use 4 of the 8 NICs (4x), 16 use each twice (8x, of hops rounded up to whole
  // bytes: S/512 is 195,312.5 B). One channel is the ring.
  rails.channels = 8;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 32, s, rails) ==
        step + 24'218'750LL * 8 * 10);
  rails.channels = 4;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 32, s, rails) ==
        step + 48'437'500LL * 8 * 10);
  rails.channels = 16;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 32, s, rails) ==
        step + 2 * 62 * 195'313LL * 8 * 10);
  // Two NICs per GPU: 16 channels exit every member twice, once by each NIC, which halves
  // the NIC's bytes (0.97 ms) below one chunk's chain: 8 hops of 195,313 B between servers
  // (15.625 µs each) and 54 over NVLink beside 13 other channels' (13.7 µs each).
  rails.nics_per_member = 2;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 32, s, rails) ==
        8 * (step + 195'313LL * 80) + 54 * (2'000'000 + 195'313LL * 14 * 5));
  rails.nics_per_member = 1;
  // Behind a slow NVLink (400 Gb/s) the busiest GPU's 7 channel hops inside its server,
  // 7·62/256 of S, set the pace instead.
  rails.channels = 8;
  rails.nvlink_bps = 400'000'000'000;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 32, s, rails) ==
        step + 169'531'250LL * 20);
  rails.nvlink_bps = 1'600'000'000'000;
  rails.channels = 1;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 32, s, rails) == ring);
  // A small buffer is latency-bound: one chunk's chain of 8 hops between servers and 54
  // NVLink ones (of 313 B, 312.5 rounded up: 80 ps a byte at the NIC rate, 5 over NVLink).
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 32, 10'000, rails) ==
        8 * (step + 313 * 80) + 54 * (2'000'000 + 313 * 5));
  // Chunks pipeline: 4 chunks of a large buffer take the busiest NIC's bytes, as one does.
  rails.chunks = 4;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 32, s, rails) == ring);
  rails.chunks = 1;
  // NCCL's loops (a window): 8 chunks in 4 loops of 2 over 4 servers of one member, hops of
  // S/32 (250 µs at 100 Gb/s). A slice's chain waits for the same slice's of the loop
  // before: 4 chains of 6 hops and a step (1.506 ms) and a hop behind for the second slice,
  // 6.274 ms, below the NIC's bytes after a step (12.001 ms): the loops stream as all the
  // chunks at once do.
  AnalyticalPath loops = path;
  loops.chunks = 8;
  loops.window = 2;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 4, s, loops) ==
        step + 150'000'000LL * 80);
  // A small buffer is latency-bound: 4 chunks in 2 loops of hops of 625 B (0.05 µs each)
  // take 2 chains of 6 hops and the second slice's hop behind (12.65 µs), where all 4 at
  // once take one chain (6.3 µs).
  loops.chunks = 4;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 4, 10'000, loops) ==
        2 * 6 * (step + 50'000) + 50'000);
  loops.window = 0;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 4, 10'000, loops) == 6 * (step + 50'000));
  // One loop of 2 slices: the first's chain and the second's hop behind it.
  loops.chunks = 2;
  loops.window = 2;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 4, 10'000, loops) ==
        6 * (step + 100'000) + 100'000);
  // One member per server, or all on one: the ring's time.
  for (const uint32_t g : {1u, 32u}) {
    rails.per_server = g;
    CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kHierarchical, 32, s, rails) ==
          analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 32, s, rails));
  }
  // One member per server: every hop crosses servers, 62 steps and 2(n−1)/n·S.
  rails.per_server = 1;
  CHECK(analyticalTime(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 32, s, rails) ==
        62 * step + 193'750'000LL * 8 * 10);
}

}  // namespace
}  // namespace mv::train
