/**
 * @file test_context_parallel.cpp
 * Context parallelism: the Megatron rules, the work each CP rank does, its memory, the ring
 * attention exchange in the programs, and its cost against the ring formula.
 */
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "network/nic_system.hpp"
#include "systems/training_sim.hpp"
#include "tests/systems/training_fixture.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/memory.hpp"
#include "workloads/task_graph.hpp"

namespace mv {
namespace {

using test::runOne;

bool hasProblem(const std::vector<ConfigProblem>& problems, const std::string& key, const std::string& text) {
  for (const auto& p : problems) {
    if (p.key == key && p.message.find(text) != std::string::npos) return true;
  }
  return false;
}

/// Llama-3 8B at 32k tokens on tp · cp · dp GPUs with FlashAttention.
struct LongContext {
  ModelSpec model = modelByName("llama3-8b");
  TrainingConfig config;
  Parallelism par;

  LongContext(uint32_t tp, uint32_t cp, uint32_t dp) {
    config.global_batch = 8;
    config.seq = 32768;
    config.flash_attention = true;
    par.tp = tp;
    par.cp = cp;
    par.dp = dp;
  }
};

double layerFlops(const LongContext& j) {
  double sum = 0;
  for (const Operator& op : layerOperators(j.model, j.config, j.par)) sum += op.flops * op.count;
  return sum;
}

TEST_CASE("context parallelism: Megatron's rules, each with its key") {
  LongContext j(8, 4, 2);
  CHECK(validateParallelism(j.model, j.config, j.par, 64).empty());
  CHECK(gpuCount(j.par) == 64);
  CHECK(dataParallelRanks(j.par) == 8);
  CHECK(localSequence(j.model, j.config, j.par) == 8192);
  CHECK(hasProblem(validateParallelism(j.model, j.config, j.par, 16), "parallelism", "tp*cp*pp*dp"));
  j.config.flash_attention = false;
  CHECK(hasProblem(validateParallelism(j.model, j.config, j.par, 64), "parallelism.cp", "flash_attention"));
  j.config.flash_attention = true;
  j.config.seq = 32768 + 4;  // divisible by cp, not by 2·cp
  CHECK(hasProblem(validateParallelism(j.model, j.config, j.par, 64), "parallelism.cp", "2*cp"));
  j.config.seq = 32768 + 8;  // by 2·cp, not by 2·cp·tp with sequence parallelism
  CHECK(validateParallelism(j.model, j.config, j.par, 64).empty());
  j.par.sequence_parallel = true;
  CHECK(hasProblem(validateParallelism(j.model, j.config, j.par, 64), "parallelism.cp", "2*cp*tp"));
  // Experts are spread over the data-parallel ranks with CP: ep 8 divides dp · cp = 8.
  LongContext moe(1, 4, 2);
  moe.model = modelByName("mixtral-8x7b");
  moe.par.ep = 8;
  CHECK(validateParallelism(moe.model, moe.config, moe.par, 8).empty());
  moe.par.cp = 2;
  moe.par.dp = 2;
  CHECK(hasProblem(validateParallelism(moe.model, moe.config, moe.par, 4), "parallelism.ep", "dp*cp"));
}

TEST_CASE("a CP rank does 1/cp of the layer's work, its attention in cp ring steps") {
  const LongContext one(8, 1, 1);
  const LongContext four(8, 4, 1);
  CHECK(layerFlops(four) == Approx(layerFlops(one) / 4).epsilon(1e-12));
  for (const Operator& op : layerOperators(four.model, four.config, four.par)) {
    if (op.name != "flash_attention") continue;
    CHECK(op.count == 4);
    CHECK(op.shape.m == 8192);  // local queries against one rank's keys
    CHECK(op.shape.n == 8192);
  }
}

TEST_CASE("a CP rank keeps 1/cp of the activations; the DP group with CP shards the optimizer") {
  LongContext one(8, 1, 4);
  LongContext two(8, 2, 2);
  for (LongContext* j : {&one, &two}) {
    j->par.recompute = Recompute::kSelective;
    j->par.zero = Zero::kOptimizer;
  }
  const MemoryBreakdown m1 = stageMemory(one.model, one.config, one.par, 0);
  const MemoryBreakdown m2 = stageMemory(two.model, two.config, two.par, 0);
  CHECK(m2.activation_per_layer.count == Approx(m1.activation_per_layer.count / 2.0).epsilon(1e-6));
  CHECK(m2.logits.count == Approx(m1.logits.count / 2.0).epsilon(1e-6));
  CHECK(m2.optimizer == m1.optimizer);  // sharded over dp · cp = 4 either way
  CHECK(m2.weights == m1.weights);
}

/// The CP collectives of a stage program, and its compute.
struct CpTasks {
  std::vector<TaskDef> forward, backward;
  int64_t compute_ps = 0;
};
CpTasks cpTasks(const StageProgram& p) {
  CpTasks out;
  for (const TaskDef& t : p.tasks) {
    if (t.kind == TaskKind::kCompute) out.compute_ps += t.compute_ps;
    if (t.comm != CommKind::kCp) continue;
    CHECK(t.stream == kCpStream);
    (t.forward ? out.forward : out.backward).push_back(t);
  }
  return out;
}

TEST_CASE(
    "ring attention in the program: an all-gather per forward block, all-gather and reduce-scatter per backward") {
  LongContext j(1, 4, 1);
  j.model.layers = 4;
  j.config.global_batch = 2;  // two micro-batches
  const ComputeModel compute(h100Compute());
  const ProgramOptions options;
  // Keys and values of one rank: 2 · s/cp tokens · kv_width · 2 bytes; all-gather buffer cp
  // times that, per layer.
  const int64_t per_layer = 4 * 2 * int64_t{8192} * 1024 * 2;
  for (Recompute r : {Recompute::kNone, Recompute::kSelective}) {
    j.par.recompute = r;
    const TrainingProgram prog = buildTrainingProgram(j.model, j.config, j.par, compute, options);
    const CpTasks t = cpTasks(prog.stages[0]);
    REQUIRE(t.forward.size() == 2);
    REQUIRE(t.backward.size() == 4);
    CHECK(prog.stages[0].cp_collectives == 6);
    for (const TaskDef& f : t.forward) {
      CHECK(f.op == CollectiveOp::kAllGather);
      CHECK(f.bytes == 4 * per_layer);
    }
    for (size_t i = 0; i < t.backward.size(); i += 2) {
      CHECK(t.backward[i].op == CollectiveOp::kAllGather);
      CHECK(t.backward[i].bytes == 4 * per_layer * (r == Recompute::kNone ? 1 : 2));  // again for recomputation
      CHECK(t.backward[i + 1].op == CollectiveOp::kReduceScatter);
      CHECK(t.backward[i + 1].bytes == 4 * per_layer);
    }
    // Splitting the blocks around the exchange keeps every picosecond of compute.
    const StageTimes st = compute.stageTimes(j.model, j.config, j.par, 0);
    CHECK(t.compute_ps == st.perMicroBatch().ps * 2 + st.optimizer.ps);
    // dp = 1, but the CP ranks hold the same parameters: their gradients are reduced.
    CHECK(prog.stages[0].dp_collectives > 0);
  }
}

/// tp 1, cp 2, one GPU per server, 2 servers: the CP group crosses the network.
TrainingExperiment cpPair() {
  TrainingExperiment x = test::tinyExperiment(1, 1, 1, 1, 1);
  x.parallelism.cp = 2;
  x.cluster.gpus = 2;
  x.topology = makeStar(2);
  x.training.seq = 4096;
  x.training.flash_attention = true;
  x.collectives.dp_bucket = mebibytes(1024);
  return x;
}

TEST_CASE("ring attention's exchange is exposed by what it takes beyond the attention kernels") {
  TrainingExperiment x = cpPair();
  REQUIRE(checkTrainingExperiment(x).empty());
  const ComputeModel compute(a100Compute(), x.cluster.compute);
  // Attention kernels per pass of the 4 layers, and the exchange: each rank sends the other
  // its half of an all-gather (forward; backward again, then the reduce-scatter of the
  // gradients) over one 100 Gb/s link, which also carries the other flow's ACKs.
  int64_t attention_ps = 0;
  for (const Operator& op : layerOperators(x.model, x.training, x.parallelism)) {
    if (op.attention_core) {
      attention_ps +=
          4 * (compute.forwardTime(op, x.training.precision) + compute.backwardTime(op, x.training.precision)).ps;
    }
  }
  const double buffer = 2.0 * 2 * 2048 * 1024 * 2 * 4;  // cp · K and V · s/cp · h · 2 B · layers
  const double wire = static_cast<double>(net::dataWireBytes(x.network.payload_bytes, x.network.cc) + net::kAckBytes) /
                      x.network.payload_bytes;
  const double step_ps = buffer / 2 * wire * 8 / 100e9 * 1e12 + (2e6 + 4e6);  // one ring step + its latency
  const double expected = 3 * step_ps - static_cast<double>(attention_ps);
  for (NetworkFidelity f : {NetworkFidelity::kAnalytical, NetworkFidelity::kPacket}) {
    x.fidelity = f;
    const TrainingResult one = runOne(x, 1);
    const TrainingResult two = runOne(x, 2);
    INFO("fidelity " << static_cast<int>(f) << ": exposed CP " << one.exposed_cp.ps << " ps, formula " << expected);
    REQUIRE(one.error.empty());
    CHECK(std::abs(static_cast<double>(one.exposed_cp.ps) - expected) / expected < 0.03);
    CHECK(one.exposed_dp.ps > 0);  // the two CP ranks' gradients, all-reduced
    CHECK(one.iteration == two.iteration);
    CHECK(one.exposed_cp == two.exposed_cp);
  }
}

TEST_CASE("ring attention hides behind attention kernels that take longer than the exchange") {
  TrainingExperiment x = cpPair();
  x.topology = makeStar(2, gigabitsPerSecond(3200));
  x.fidelity = NetworkFidelity::kAnalytical;
  const TrainingResult r = runOne(x);
  REQUIRE(r.error.empty());
  CHECK(r.exposed_cp.ps == 0);
  CHECK(r.bubble.ps == 0);  // one stage: the compute stream never waits on anything else
}

}  // namespace
}  // namespace mv
