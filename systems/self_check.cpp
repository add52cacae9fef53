/**
 * @file self_check.cpp
 * The backend self-check (self_check.hpp).
 */
#include "systems/self_check.hpp"

#include <exception>
#include <memory>
#include <sstream>

#include "kernels/cpu/cpu_executor.hpp"
#include "kernels/cpu/step_session.hpp"
#include "network/builder.hpp"
#include "systems/network_layout.hpp"
#include "topologies/routing.hpp"

namespace mv {
namespace {

constexpr uint32_t kSenders = 8;
constexpr int64_t kFlowBytes = 200'000;
constexpr int64_t kStepsPerCall = int64_t{1} << 20;

/// One experiment per congestion control, each an 8-to-1 incast over a 100 Gb/s star.
std::unique_ptr<net::NetWorld> checkWorld() {
  Topology star;
  for (uint32_t i = 0; i <= kSenders; ++i) star.addNic(i);
  const uint32_t sw = star.addSwitch(1);
  for (uint32_t i = 0; i <= kSenders; ++i) star.addLink(star.nicNode(i), sw, gigabitsPerSecond(100), microseconds(1));
  const Routing routing = computeRouting(star);
  const net::CcKind ccs[] = {net::CcKind::kDcqcn, net::CcKind::kHpcc, net::CcKind::kDctcp};
  auto world = std::make_unique<net::NetWorld>(3, TableCapacity{256, 256});
  for (ExpId e = 0; e < 3; ++e) {
    net::NetworkConfig cfg;
    cfg.cc = ccs[e];
    const net::NetworkLayout layout = makeNetworkLayout(star, routing, cfg.payload_bytes);
    world->config(e).net = net::pathQuantities(layout, cfg);
    world->clock(e).lookahead_ps = layout.min_delay_ps;
    world->clock(e).seed = 17 + e;
    net::buildNetwork(*world, e, layout, cfg, layout.min_delay_ps);
    for (uint32_t i = 1; i <= kSenders; ++i) net::addFlow(*world, e, i, 0, kFlowBytes, 0, i);
  }
  world->commitAllHost();
  return world;
}

/// The results a backend must reproduce: every flow record and every counter.
std::string fingerprint(net::NetWorld& world, const RunReport& r) {
  std::ostringstream out;
  out << "status " << r.status << " finished " << r.finished << '\n';
  auto& records = world.table<net::FlowRecord>();
  for (int64_t row = 0; row < records.rows; ++row) {
    const net::FlowResult& f = records.get<net::FlowResult>(row);
    out << "flow " << f.id << ' ' << f.src_nic << ' ' << f.finish_ps << ' ' << f.retransmits << '\n';
  }
  for (ExpId e = 0; e < world.numExperiments(); ++e) {
    const net::NetCounters c = net::experimentCounters(world, e);
    out << "experiment " << e << ": hops " << c.packet_hops << " marks " << c.ecn_marks << " cnps " << c.cnps
        << " pauses " << c.pauses << " done " << c.flows_done << '\n';
  }
  return out.str();
}

}  // namespace

RunReport runNetworkToEnd(const net::NetworkStepRunner& device, net::NetWorld& world, int64_t chunk) {
  const std::unique_ptr<StepSession<net::NetWorld>> session = device(world);
  return runSessionToEnd(*session, chunk);
}

std::string compareBackendWithCpu(const net::NetworkStepRunner& device) {
  try {
    const std::unique_ptr<net::NetWorld> cpu_world = checkWorld();
    const std::string expected =
        fingerprint(*cpu_world, CpuExecutor(1).runToEnd<net::NetGraph>(cpu_world->view(), kStepsPerCall));
    const std::unique_ptr<net::NetWorld> dev_world = checkWorld();
    const std::string got = fingerprint(*dev_world, runNetworkToEnd(device, *dev_world, kStepsPerCall));
    if (got == expected) return "";
    std::istringstream a(expected);
    std::istringstream b(got);
    std::string la;
    std::string lb;
    while (std::getline(a, la) && std::getline(b, lb)) {
      if (la != lb) return "results differ from the CPU's: '" + lb + "' instead of '" + la + "'";
    }
    return "results differ from the CPU's (" + std::to_string(got.size()) + " against " +
           std::to_string(expected.size()) + " bytes of results)";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace mv
