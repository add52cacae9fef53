/**
 * @file test_cuda_network.cpp
 * The packet-level network on the GPU, through the backend netsim uses
 * (systems/cuda's cudaNetworkRunner: the megakernel compiled once, in the library, and the
 * world kept on the device over the run): an incast under each congestion control must
 * equal the CPU backend bit for bit. Exits with 77 (CTest: skipped) without a GPU. Built
 * against systems/emu instead, the same test runs on the emulated device.
 */
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <memory>

#include "kernels/cpu/cpu_executor.hpp"
#include "kernels/cpu/step_session.hpp"
#include "kernels/cuda/device_query.hpp"
#include "network/builder.hpp"
#include "network/network_sim.hpp"
#include "systems/cuda/network_device.hpp"
#include "systems/network_layout.hpp"
#include "topologies/routing.hpp"

using namespace mv;

namespace {

/// Finish times of a 8-to-1 incast with `cc`, on the GPU or the CPU.
std::vector<int64_t> incastFinishTimes(net::CcKind cc, bool gpu) {
  Topology star;
  for (uint32_t i = 0; i < 9; ++i) star.addNic(i);
  const uint32_t sw = star.addSwitch(1);
  for (uint32_t i = 0; i < 9; ++i) star.addLink(star.nicNode(i), sw, gigabitsPerSecond(100), microseconds(1));
  const Routing routing = computeRouting(star);
  net::NetworkConfig cfg;
  cfg.cc = cc;
  const net::NetworkLayout layout = makeNetworkLayout(star, routing, cfg.payload_bytes);
  net::NetWorld world(1, TableCapacity{256, 256});
  world.config(0).net = net::pathQuantities(layout, cfg);
  world.clock(0).lookahead_ps = layout.min_delay_ps;
  net::buildNetwork(world, 0, layout, cfg, layout.min_delay_ps);
  for (uint32_t i = 1; i < 9; ++i) net::addFlow(world, 0, i, 0, 200'000, 0, i);
  world.commitAllHost();
  RunReport r;
  if (gpu) {
    const std::unique_ptr<StepSession<net::NetWorld>> session = cudaNetworkRunner(0)(world);
    do {
      r = session->run(100'000);
    } while (!r.finished && r.steps > 0);
    session->syncHost();
  } else {
    r = CpuExecutor(2).runToEnd<net::NetGraph>(world.view());
  }
  REQUIRE(r.status == 0u);
  std::vector<int64_t> out;
  auto& records = world.table<net::FlowRecord>();
  for (int64_t row = 0; row < records.rows; ++row) out.push_back(records.get<net::FlowResult>(row).finish_ps);
  return out;
}

}  // namespace

TEST_CASE("the network on the GPU equals the CPU backend", "[gpu][network]") {
  for (net::CcKind cc : {net::CcKind::kDcqcn, net::CcKind::kHpcc, net::CcKind::kDctcp}) {
    CHECK(incastFinishTimes(cc, true) == incastFinishTimes(cc, false));
  }
}

int main(int argc, char** argv) {
  if (cudaDeviceCount() == 0) {
    std::printf("skipped: %s", describeCudaDevices().c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
