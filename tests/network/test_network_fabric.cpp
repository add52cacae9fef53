/**
 * @file test_network_fabric.cpp
 * Multi-tier fabrics: ECMP spreads many flows over all uplinks, per-packet spraying with
 * the out-of-order receiver delivers everything without retransmissions; and the DCQCN
 * reaction point follows the timer rules of network.md step by step.
 */
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

#include "network/cc.hpp"
#include "tests/support/net_scenario.hpp"
#include "topologies/generators.hpp"

using namespace mv;
using namespace mv::test;

namespace {

/// Flows from every NIC of pods 0 and 1 to NICs of pods 2 and 3 of a k=4 fat-tree.
NetCase crossPodTraffic(const Topology& tree, net::LoadBalance lb, uint32_t flows_per_nic, int64_t bytes) {
  NetCase c;
  c.topo = &tree;
  c.cfg.load_balance = lb;
  for (uint32_t src = 0; src < 8; ++src) {
    for (uint32_t k = 0; k < flows_per_nic; ++k) {
      c.flows.push_back(FlowDef{src, 8 + (src * 5 + k * 3) % 8, bytes, static_cast<int64_t>(k) * 1000});
    }
  }
  return c;
}

/// Largest share of one uplink in the bytes its switch sent upwards, over the edge and
/// aggregation switches of pods 0 and 1 (port rows are per switch, in topology port order).
double worstUplinkShare(const Topology& tree, const NetResult& r) {
  double worst = 0;
  uint32_t base = 0;
  for (uint32_t node : tree.switches()) {
    const uint8_t tier = tree.node(node).tier;
    int64_t up_total = 0;
    int64_t up_max = 0;
    uint32_t p = 0;
    for (const TopoPort& port : tree.ports(node)) {
      if (tree.isSwitch(port.peer) && tree.node(port.peer).tier > tier) {
        up_total += r.ports[base + p].tx_bytes;
        up_max = std::max(up_max, r.ports[base + p].tx_bytes);
      }
      ++p;
    }
    if (tier < 3 && up_total > 1'000'000) worst = std::max(worst, static_cast<double>(up_max) / up_total);
    base += p;
  }
  return worst;
}

}  // namespace

TEST_CASE("ECMP spreads many flows over all uplinks; spraying balances per packet", "[network][ecmp]") {
  const Topology tree = makeFatTree(FatTreeParams{4});
  const NetResult ecmp = runNet(crossPodTraffic(tree, net::LoadBalance::kEcmp, 32, 64'000));
  CHECK(ecmp.flows.size() == 256u);
  const double ecmp_share = worstUplinkShare(tree, ecmp);
  const NetResult spray = runNet(crossPodTraffic(tree, net::LoadBalance::kSpray, 32, 64'000));
  const double spray_share = worstUplinkShare(tree, spray);
  std::printf("worst uplink share of 2: ECMP %.3f, spraying %.3f; spraying timeouts %ld, retransmits %ld\n",
              ecmp_share, spray_share, static_cast<long>(spray.counters.timeouts),
              static_cast<long>(spray.counters.retransmits));
  CHECK(ecmp_share < 0.65);   // 2 uplinks: ideal 0.5
  CHECK(spray_share < 0.55);
  CHECK(spray.flows.size() == 256u);  // out-of-order arrivals are accepted ...
  CHECK(spray.counters.retransmits == 0);  // ... without go-back-N
  CHECK(spray.counters.nacks == 0);
}

TEST_CASE("a DCQCN flow's rate follows the timer rules step by step", "[network][dcqcn]") {
  const net::DcqcnParams p;  // defaults of network.md at 100 Gb/s
  const int64_t line = 100'000'000'000;
  const net::CcPath path{line, 8'000'000, 100'000};
  net::FlowCc cc;
  net::FlowSend s;
  net::ccStart(net::NetworkConfig{}, path, cc, s);
  const int64_t us = 1'000'000;
  const int64_t ns = 1'000;

  // First CNP at 10 µs: timers start, no cut.
  net::dcqcnOnCnp(p, path, cc, s, 10 * us);
  CHECK(s.rate_bps == line);
  // The first CNP arms only the decrease (as the reference): α decays at the ticks 11, 12,
  // 13 and 14 µs; the decrease tick, 1 ns after the α tick of 14 µs, cuts.
  net::dcqcnAdvance(p, path, cc, s, 14 * us);
  CHECK(s.rate_bps == line);
  net::dcqcnAdvance(p, path, cc, s, 14 * us + ns);
  double alpha = 1.0;
  for (int i = 0; i < 4; ++i) alpha = (1 - p.g) * alpha;
  CHECK(cc.alpha == alpha);
  const int64_t cut1 = static_cast<int64_t>(static_cast<double>(line) * (1 - alpha / 2));
  CHECK(s.rate_bps == cut1);
  CHECK(cc.target_bps == line);
  // No CNP since: later decrease ticks change nothing.
  net::dcqcnAdvance(p, path, cc, s, 300 * us);
  CHECK(s.rate_bps == cut1);
  // Increase timer 300 µs after the cut (314 µs + 1 ns): stage 0 < F, fast recovery.
  net::dcqcnAdvance(p, path, cc, s, 314 * us + ns);
  const int64_t r1 = cut1 / 2 + line / 2;
  CHECK(s.rate_bps == r1);
  // 614 µs + 1 ns: stage = F, additive increase of Rt (20 Mb/s at 100 Gb/s), capped at
  // line rate.
  net::dcqcnAdvance(p, path, cc, s, 614 * us + ns);
  CHECK(cc.target_bps == line);
  CHECK(s.rate_bps == r1 / 2 + line / 2);
  // A second CNP at 700 µs: the next decrease tick (702 µs + 1 ns) cuts from the current
  // rate with α raised by the α tick at 701 µs; the rate rose since the last cut, so the
  // target becomes the current rate.
  const int64_t before = s.rate_bps;
  const double alpha_before = cc.alpha;
  net::dcqcnOnCnp(p, path, cc, s, 700 * us);
  net::dcqcnAdvance(p, path, cc, s, 702 * us + ns);
  double a = alpha_before;
  for (int64_t t = 615; t <= 700; ++t) a = (1 - p.g) * a;  // ticks after the last advance (614 µs)
  a = (1 - p.g) * a + p.g;                                // 701 µs: CNP seen
  a = (1 - p.g) * a;                                      // 702 µs
  CHECK(cc.alpha == Approx(a).epsilon(1e-12));
  CHECK(cc.target_bps == before);
  CHECK(s.rate_bps == static_cast<int64_t>(static_cast<double>(before) * (1 - cc.alpha / 2)));
}
