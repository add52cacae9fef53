/**
 * @file self_check.cpp
 * The backend self-check (self_check.hpp).
 */
#include "systems/self_check.hpp"

#include <exception>
#include <memory>
#include <sstream>
#include <vector>

#include "kernels/cpu/cpu_executor.hpp"
#include "kernels/cpu/step_session.hpp"
#include "network/builder.hpp"
#include "systems/network_layout.hpp"
#include "systems/training_sim.hpp"
#include "topologies/generators.hpp"
#include "topologies/routing.hpp"

namespace mv {
namespace {

constexpr uint32_t kSenders = 8;
constexpr int64_t kFlowBytes = 200'000;
constexpr int64_t kStepsPerCall = int64_t{1} << 20;

/// One experiment per congestion control, each an 8-to-1 incast over a 100 Gb/s star.
std::unique_ptr<net::NetWorld> checkWorld() {
  const Topology star = makeStar(kSenders + 1);
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

/// The training check batch: one small experiment at each network fidelity.
std::vector<TrainingExperiment> checkTrainingBatch() {
  TrainingExperiment x;
  x.name = "self-check";
  x.model.name = "self-check-gpt";
  x.model.layers = 4;
  x.model.hidden = 1024;
  x.model.heads = 16;
  x.model.kv_heads = 16;
  x.model.ffn = 4096;
  x.model.vocab = 1024;
  x.model.seq = 512;
  x.parallelism.tp = 2;
  x.parallelism.pp = 2;
  x.parallelism.dp = 2;
  x.training.micro_batch = 1;
  x.training.global_batch = 4;
  x.cluster.gpus = 8;
  x.cluster.gpus_per_server = 4;
  x.cluster.nics_per_server = 1;
  x.topology = makeStar(2);
  x.network.cc = net::CcKind::kDctcp;
  std::vector<TrainingExperiment> batch;
  for (NetworkFidelity f : {NetworkFidelity::kPacket, NetworkFidelity::kFlow, NetworkFidelity::kAnalytical}) {
    x.fidelity = f;
    x.id = batch.size() + 1;
    batch.push_back(x);
  }
  return batch;
}

/// What a backend must reproduce of a training batch.
std::string fingerprint(const std::vector<TrainingResult>& results) {
  std::ostringstream out;
  for (size_t i = 0; i < results.size(); ++i) {
    const TrainingResult& r = results[i];
    out << "experiment " << i << ": iteration " << r.iteration.ps << " tp " << r.exposed_tp.ps << " pp "
        << r.exposed_pp.ps << " dp " << r.exposed_dp.ps << " events " << r.events << " hops " << r.network.packet_hops
        << " done " << r.network.flows_done << '\n';
  }
  return out.str();
}

/// "" when `got` equals `expected`, else the first line that differs.
std::string firstDifference(const std::string& expected, const std::string& got) {
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
    return firstDifference(expected, got);
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string compareTrainingWithCpu(const TrainingStepRunner& device) {
  try {
    const std::vector<TrainingExperiment> batch = checkTrainingBatch();
    SimulationOptions cpu;
    cpu.threads = 1;
    SimulationOptions dev;
    dev.device_runner = device;
    const std::vector<TrainingResult> on_device = simulateTraining(batch, dev);
    for (const TrainingResult& r : on_device) {
      if (!r.error.empty()) return r.error;
    }
    return firstDifference(fingerprint(simulateTraining(batch, cpu)), fingerprint(on_device));
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace mv
