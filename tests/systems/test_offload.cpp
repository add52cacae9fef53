/**
 * @file test_offload.cpp
 * Activation offload: the rule, the memory it frees, the copies in the programs, and the
 * reload's exposed time against the layer-by-layer pipeline it stands for.
 */
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "systems/training_sim.hpp"
#include "tests/systems/training_fixture.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/memory.hpp"
#include "workloads/task_graph.hpp"

namespace mv {
namespace {

using test::runOne;

/// One GPU, 8 layers, two micro-batches, nothing to communicate.
TrainingExperiment single(uint32_t offload_layers) {
  TrainingExperiment x = test::tinyExperiment(1, 1, 1, 2, 1);
  x.model = test::tinyGpt(8, 2048);
  x.parallelism.offload_layers = offload_layers;
  x.fidelity = NetworkFidelity::kAnalytical;
  return x;
}

TEST_CASE("offload keeps at least one layer of every model chunk on the GPU") {
  TrainingExperiment x = single(7);
  CHECK(checkTrainingExperiment(x).empty());
  x.parallelism.offload_layers = 8;
  bool found = false;
  for (const std::string& p : checkTrainingExperiment(x)) found |= p.find("parallelism.offload_layers") == 0;
  CHECK(found);
}

TEST_CASE("offloaded layers leave the GPU's activations but for two in transit") {
  const ModelSpec model = modelByName("gpt3-13b");  // 40 layers
  TrainingConfig config;
  config.global_batch = 64;
  Parallelism par;
  par.tp = 8;
  par.pp = 4;
  par.dp = 2;
  const MemoryBreakdown kept = stageMemory(model, config, par, 0);
  par.offload_layers = 6;
  const MemoryBreakdown off = stageMemory(model, config, par, 0);
  const double per_layer = static_cast<double>(kept.activation_per_layer.count);
  CHECK(off.offloaded_layers == 6);
  CHECK(kept.in_flight == 4);
  CHECK(static_cast<double>(off.activations.count) == Approx((4.0 * 4 + 2) * per_layer).epsilon(1e-9));
  CHECK(static_cast<double>(kept.activations.count) == Approx(10.0 * 4 * per_layer).epsilon(1e-9));
}

TEST_CASE("offload in the program: a copy out per forward block, a copy back per backward block, no compute lost") {
  const TrainingExperiment x = single(3);
  const ComputeModel compute(a100Compute(), x.cluster.compute);
  ProgramOptions po;
  po.host_copy_bytes_per_s = 20e9;
  const TrainingProgram prog = buildTrainingProgram(x.model, x.training, x.parallelism, compute, po);
  const StageProgram& s = prog.stages[0];
  const double bytes =
      3.0 * static_cast<double>(layerActivationBytes(x.model, x.training, x.parallelism, Recompute::kNone).count);
  int stores = 0, reloads = 0;
  for (const TaskDef& t : s.tasks) {
    if (t.kind != TaskKind::kCopy) continue;
    CHECK(t.comm == CommKind::kOffload);
    CHECK(t.bytes == static_cast<int64_t>(bytes));
    CHECK(std::abs(static_cast<double>(t.compute_ps) - 3 * std::ceil(bytes / 3 / 20e9 * 1e12)) < 1);
    (t.stream == kOffloadStream ? stores : reloads) += 1;
    CHECK((t.stream == kOffloadStream) == t.forward);
  }
  CHECK(stores == 2);
  CHECK(reloads == 2);
  const StageTimes st = compute.stageTimes(x.model, x.training, x.parallelism, 0);
  CHECK(s.computePs() == st.perMicroBatch().ps * 2 + st.optimizer.ps);
  CHECK_FALSE(firstStuckTask(prog).has_value());
}

TEST_CASE("a reload slower than the backward pass is exposed by n (r - b) per micro-batch, a faster one not at all") {
  const TrainingExperiment plain = single(0);
  const ComputeModel compute(a100Compute(), plain.cluster.compute);
  const LayerTimes lt = compute.layerTimes(plain.model, plain.training, plain.parallelism);
  const double bytes =
      static_cast<double>(layerActivationBytes(plain.model, plain.training, plain.parallelism, Recompute::kNone).count);
  const TrainingResult base = runOne(plain);
  REQUIRE(base.error.empty());
  CHECK(base.exposed_offload.ps == 0);
  for (const double ratio : {0.5, 1.5, 2.5}) {
    // A host link on which one layer's reload takes `ratio` × its backward pass.
    TrainingExperiment x = single(2);
    const double bytes_per_s = bytes / (ratio * static_cast<double>(lt.backward.ps) * 1e-12);
    x.cluster.host_copy_efficiency = 1;
    x.cluster.gpu_overrides.host_link = BitsPerSecond{static_cast<int64_t>(bytes_per_s * 8)};
    const TrainingResult one = runOne(x, 1);
    const TrainingResult two = runOne(x, 2);
    REQUIRE(one.error.empty());
    const double r = std::ceil(bytes * 8 / static_cast<double>(x.cluster.gpu_overrides.host_link->bps) * 1e12);
    const double expected = 2 * 2 * std::max(0.0, r - static_cast<double>(lt.backward.ps));  // m · n · (r − b)
    INFO("ratio " << ratio << ": exposed " << one.exposed_offload.ps << " ps, expected " << expected);
    CHECK(std::abs(static_cast<double>(one.exposed_offload.ps) - expected) <= 8);
    CHECK(std::abs(static_cast<double>(one.iteration.ps - base.iteration.ps) - expected) <= 8);
    CHECK(one.compute == base.compute);
    CHECK(one.iteration == two.iteration);
  }
}

TEST_CASE("context parallelism, offload, ZeRO-3 and an interleaved pipeline together: no deadlock, no compute lost") {
  // 2 stages × 2 chunks, CP 2, DP 2: 8 GPUs, two per server.
  TrainingExperiment x = test::tinyExperiment(1, 2, 2, 4, 2);
  x.model = test::tinyGpt(8, 1024);
  x.training.seq = 2048;
  x.training.flash_attention = true;
  x.parallelism.cp = 2;
  x.parallelism.vpp = 2;
  x.parallelism.schedule = PipelineSchedule::kInterleaved;
  x.parallelism.offload_layers = 1;
  x.parallelism.recompute = Recompute::kSelective;
  x.cluster.gpus = 8;
  x.topology = makeStar(4);
  x.collectives.dp_bucket = mebibytes(2);
  for (const Zero zero : {Zero::kNone, Zero::kOptimizer, Zero::kParameters}) {
    x.parallelism.zero = zero;
    INFO("ZeRO-" << static_cast<int>(zero));
    for (const std::string& p : checkTrainingExperiment(x)) FAIL(p);
    const TrainingProgram prog = trainingProgramOf(x);
    CHECK_FALSE(firstStuckTask(prog).has_value());
    const ComputeModel compute(a100Compute(), x.cluster.compute);
    for (uint32_t s = 0; s < 2; ++s) {
      const StageTimes st = compute.stageTimes(x.model, x.training, x.parallelism, s);
      CHECK(prog.micro_batches == 4);
      CHECK(prog.stages[s].computePs() == st.perMicroBatch().ps * prog.micro_batches + st.optimizer.ps);
    }
    for (NetworkFidelity f : {NetworkFidelity::kAnalytical, NetworkFidelity::kPacket}) {
      x.fidelity = f;
      const TrainingResult one = runOne(x, 1);
      const TrainingResult two = runOne(x, 2);
      REQUIRE(one.error.empty());
      CHECK(one.iteration == two.iteration);
      CHECK(one.exposed_cp == two.exposed_cp);
      CHECK(one.iteration.ps > one.compute.ps);
    }
  }
}

}  // namespace
}  // namespace mv
