/**
 * @file test_connections.cpp
 * Training traffic on persistent connections (docs/training.md "Connections"): a ring's
 * channels keep their ECMP paths for the whole collective, so a collision made certain by
 * construction costs what it costs on a real fabric (at packet and at flow level), and
 * congestion control acts on the connections across the ring's steps.
 */
#include <catch2/catch.hpp>

#include "systems/training_sim.hpp"
#include "tests/systems/training_fixture.hpp"
#include "topologies/generators.hpp"

using namespace mv;

namespace {
/// A DP all-reduce of 2 GPUs on two leaves of a 2:1 spine-leaf with two spines, in 3 channels:
/// 3 connections each way over 2 uplinks of 25 Gb/s behind 100 Gb/s NICs.
TrainingExperiment collidingRing(net::CcKind cc, net::LoadBalance lb) {
  TrainingExperiment x = test::tinyExperiment(1, 1, 2, 1, 1);
  x.model = test::tinyGpt(4, 512);
  x.collectives.dp_bucket = mebibytes(1024);  // one bucket: the whole all-reduce is exposed
  x.collectives.channels = 3;
  SpineLeafParams p;
  p.leaves = 2;
  p.nics_per_leaf = 1;
  p.spines = 2;
  p.oversubscription = 2;
  p.fabric_rate = BitsPerSecond{0};
  x.topology = makeSpineLeaf(p);
  x.network.cc = cc;
  x.network.load_balance = lb;
  return x;
}
}  // namespace

TEST_CASE("a ring's connections keep their ECMP paths: three channels on two uplinks collide, spraying does not") {
  const TrainingResult ecmp = test::runOne(collidingRing(net::CcKind::kDcqcn, net::LoadBalance::kEcmp));
  const TrainingResult spray = test::runOne(collidingRing(net::CcKind::kDcqcn, net::LoadBalance::kSpray));
  REQUIRE(ecmp.error.empty());
  REQUIRE(spray.error.empty());
  // By pigeonhole an uplink carries at least 2 of the 3 connections of each direction for
  // the whole all-reduce: 2/3 of the bytes at 25 Gb/s against all of them at 50 Gb/s, 4/3
  // of the sprayed time (measured: 1.19, DCQCN keeps the sprayed connections below line rate
  // too, and NCCL's loops leave a connection idle a round trip now and then). With a new
  // hash per transfer, the ring's 2 × 3 × chunks transfers would spread over both uplinks.
  INFO("exposed DP: ECMP " << ecmp.exposed_dp.ps << " ps, spraying " << spray.exposed_dp.ps << " ps");
  CHECK(static_cast<double>(ecmp.exposed_dp.ps) > 1.15 * static_cast<double>(spray.exposed_dp.ps));
  // The NICs send at 100 Gb/s into 25 Gb/s uplinks: DCQCN marks and cuts the connections.
  CHECK(ecmp.network.ecn_marks > 0);
  CHECK(ecmp.network.cnps > 0);
  CHECK(spray.network.cnps > 0);
  // HPCC reacts to the same queues through its INT: another iteration, and far fewer marks.
  const TrainingResult hpcc = test::runOne(collidingRing(net::CcKind::kHpcc, net::LoadBalance::kEcmp));
  REQUIRE(hpcc.error.empty());
  CHECK(hpcc.iteration.ps != ecmp.iteration.ps);
  CHECK(hpcc.network.ecn_marks < ecmp.network.ecn_marks);
}

TEST_CASE("qps_per_connection: a connection's messages take its QPs in turn, each on a path of its own") {
  // One channel: a connection each way, on one of the two uplinks with one QP.
  TrainingExperiment x = collidingRing(net::CcKind::kDcqcn, net::LoadBalance::kEcmp);
  x.collectives.channels = 1;
  const TrainingResult one = test::runOne(x);
  x.collectives.qps_per_connection = 3;
  const TrainingResult three = test::runOne(x);
  x.network.load_balance = net::LoadBalance::kSpray;
  const TrainingResult spray = test::runOne(x);
  REQUIRE(one.error.empty());
  REQUIRE(three.error.empty());
  INFO("exposed DP: 1 QP " << one.exposed_dp.ps << " ps, 3 QPs " << three.exposed_dp.ps << " ps, sprayed "
                           << spray.exposed_dp.ps << " ps");
  // With three QPs taking the messages in turn, two of them share an uplink (pigeonhole) and
  // the third has the other to itself. A connection has one loop's two slices in flight,
  // posted one after the other on two QPs: a third of the pairs share the uplink, 4/3 of a
  // pair's time at 25 Gb/s where one QP takes 2 (1.5x at most; measured 1.20), and
  // spraying puts every message on both uplinks.
  CHECK(static_cast<double>(one.exposed_dp.ps) > 1.15 * static_cast<double>(three.exposed_dp.ps));
  CHECK(static_cast<double>(three.exposed_dp.ps) > 1.2 * static_cast<double>(spray.exposed_dp.ps));
}

TEST_CASE("at flow level a ring's connections keep their paths too: the collision costs what the packet level says") {
  TrainingExperiment x = collidingRing(net::CcKind::kDcqcn, net::LoadBalance::kEcmp);
  const TrainingResult packet = test::runOne(x);
  x.fidelity = NetworkFidelity::kFlow;
  const TrainingResult flow = test::runOne(x);
  x.collectives.channels = 1;
  const TrainingResult one = test::runOne(x);
  x.collectives.qps_per_connection = 3;
  const TrainingResult three = test::runOne(x);
  for (const TrainingResult* r : {&packet, &flow, &one, &three}) REQUIRE(r->error.empty());
  INFO("exposed DP: packet " << packet.exposed_dp.ps << " ps, flow "
                             << flow.exposed_dp.ps << " ps, flow with 1 channel " << one.exposed_dp.ps
                             << " ps, with 3 QPs " << three.exposed_dp.ps << " ps");
  // Fluid connections hash as the packet level's QPs. With one channel each direction's one
  // connection has one 25 Gb/s uplink for all its bytes; with three, two of them share one
  // uplink for the whole all-reduce (pigeonhole): 2/3 of the bytes at 25 Gb/s, 2/3 of the one
  // channel's time. A new path per transfer would have spread them over both uplinks.
  CHECK(static_cast<double>(flow.exposed_dp.ps) ==
        Approx(2.0 / 3.0 * static_cast<double>(one.exposed_dp.ps)).epsilon(0.03));
  // Max-min rates without CC: a little faster than DCQCN on the same collision.
  CHECK(flow.exposed_dp.ps < packet.exposed_dp.ps);
  CHECK(static_cast<double>(flow.exposed_dp.ps) > 0.8 * static_cast<double>(packet.exposed_dp.ps));
  // Three QPs split the one channel's messages 2 + 1 over the uplinks, two slices at a time
  // (as at packet level: 1.5x at most; measured 1.29).
  CHECK(static_cast<double>(one.exposed_dp.ps) > 1.2 * static_cast<double>(three.exposed_dp.ps));
}
