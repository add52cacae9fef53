#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "systems/training_spec.hpp"
#include "tests/systems/training_fixture.hpp"
#include "workloads/chakra_program.hpp"
#include "workloads/memory.hpp"
#include "workloads/task_graph.hpp"

namespace mv {
namespace {

using Key = std::tuple<bool, uint32_t, uint32_t>;

/// Each (pass, micro-batch, chunk) appears once, and a micro-batch's backward of a chunk
/// comes after its forward.
void checkOrder(const std::vector<ScheduleItem>& order, uint32_t m, uint32_t v) {
  std::map<Key, size_t> at;
  for (size_t i = 0; i < order.size(); ++i) {
    const Key k{order[i].forward, order[i].micro_batch, order[i].chunk};
    REQUIRE(at.count(k) == 0);
    at[k] = i;
  }
  REQUIRE(at.size() == 2u * m * v);
  for (uint32_t mb = 0; mb < m; ++mb) {
    for (uint32_t c = 0; c < v; ++c) CHECK(at.at({true, mb, c}) < at.at({false, mb, c}));
  }
}

TEST_CASE("1F1B: stage s runs p-s-1 warm-up forwards, then alternates") {
  const auto order = pipelineOrder(0, 4, 8, 1);
  checkOrder(order, 8, 1);
  for (size_t i = 0; i < 3; ++i) CHECK(order[i].forward);
  CHECK(order[3].forward);
  CHECK_FALSE(order[4].forward);
  CHECK(order[4].micro_batch == 0);
  const auto last = pipelineOrder(3, 4, 8, 1);
  checkOrder(last, 8, 1);
  for (size_t i = 0; i < last.size(); ++i) CHECK(last[i].forward == (i % 2 == 0));
}

TEST_CASE("interleaved 1F1B visits every chunk of every micro-batch once, forward before backward") {
  for (uint32_t s = 0; s < 4; ++s) checkOrder(pipelineOrder(s, 4, 8, 2), 8, 2);
  const auto order = pipelineOrder(0, 4, 8, 2);
  // Megatron's order: micro-batches 0..3 on chunk 0, then 0..3 on chunk 1.
  CHECK(order[3].chunk == 0);
  CHECK(order[4].chunk == 1);
  CHECK(order[4].micro_batch == 0);
  // Stage 0 warms up with (p - 1) * 2 + (v - 1) * p = 10 forwards; each steady-state
  // backward is paired with the forward before it (Megatron-LM exchanges both at once), the
  // cool-down's are not.
  for (size_t i = 0; i < order.size(); ++i) {
    const bool steady_backward = i >= 10 && i < 2 * 16 - 10 && (i - 10) % 2 == 1;
    CHECK(order[i].paired == steady_backward);
    if (order[i].paired) CHECK(order[i - 1].forward);
  }
  for (const ScheduleItem& it : pipelineOrder(0, 4, 8, 1)) CHECK_FALSE(it.paired);
}

/// A GPT-3-like layer at TP 8 on A100s (h 6144, micro-batch 4, seq 2048).
struct TpLayer {
  ModelSpec model = test::tinyExperiment(8, 1, 1, 1, 1).model;
  TrainingConfig config;
  ProgramOptions po;
  Parallelism par;
  int64_t ar = 0;
  int64_t ag = 0;
  int64_t rs = 0;

  TpLayer() {
    model.hidden = 6144;
    model.heads = 64;
    config.global_batch = 4;
    config.micro_batch = 4;
    config.seq = 2048;
    po.tp_model = makeCollectiveModel(gpuByName("a100-80gb"));
    po.tp_bandwidth_factor = 1;
    par.tp = 8;
    const Bytes act{int64_t{4} * 2048 * 6144 * 2};
    ar = collectiveTime(po.tp_model, CollectiveOp::kAllReduce, 8, act).ps;
    ag = collectiveTime(po.tp_model, CollectiveOp::kAllGather, 8, act).ps;
    rs = collectiveTime(po.tp_model, CollectiveOp::kReduceScatter, 8, act).ps;
  }
  /// The layer's passes with QKV's and MLP up's forward set to `gemm` (each gradient GEMM
  /// then takes `gemm` too), or from the roofline when `gemm` is 0.
  LayerPassTimes passes(bool overlap, int64_t gemm = 0) {
    OperatorTimes times;
    if (gemm > 0) times = {{"qkv", Picoseconds{gemm}}, {"mlp_up", Picoseconds{gemm}}};
    const ComputeModel compute(a100Compute(), megatronA100Params(), times);
    par.tp_comm_overlap = overlap;
    return layerPassTimes(model, config, par, compute, po);
  }
};

TEST_CASE("a layer's backward TP collectives: what waits, and what overlaps the gradient GEMMs") {
  TpLayer l;
  const int64_t long_gemm = 1'000'000'000'000;  // 1 s: hides any collective
  for (const bool sp : {false, true}) {
    CAPTURE(sp);
    l.par.sequence_parallel = sp;
    const int64_t forward = sp ? 2 * (l.ag + l.rs) : 2 * l.ar;
    // Without overlap every backward collective waits: 2 all-reduces, or with SP the
    // row-parallel linears' 2 all-gathers, and per column-parallel linear the input's
    // all-gather again and the reduce-scatter.
    const int64_t waiting = sp ? 4 * l.ag + 2 * l.rs : 2 * l.ar;
    CHECK(l.passes(false).tp_forward.ps == forward);
    CHECK(l.passes(false).tp_backward.ps == waiting);
    // Long gradient GEMMs hide the column-parallel linears' collectives entirely.
    CHECK(l.passes(true, long_gemm).tp_backward.ps == (sp ? 2 * l.ag : 0));
    CHECK(l.passes(true, long_gemm).tp_forward.ps == forward);
    // One-picosecond GEMMs hide one picosecond of each.
    const int64_t tiny = 1;  // forward; each gradient GEMM is the backward's half, 1 ps
    CHECK(l.passes(true, tiny).tp_backward.ps == waiting - (sp ? 4 : 2) * tiny);
    // Full recomputation reruns the forward's collectives, which nothing hides.
    l.par.recompute = Recompute::kFull;
    CHECK(l.passes(true, long_gemm).tp_backward.ps == (sp ? 2 * l.ag : 0) + forward);
    l.par.recompute = Recompute::kNone;
    // MoE: the expert linears communicate through the dispatcher, so only QKV overlaps.
    TpLayer moe;
    moe.model.experts = 8;
    moe.model.top_k = 2;
    moe.par.sequence_parallel = sp;
    CHECK(moe.passes(true, long_gemm).tp_backward.ps == (sp ? 3 * moe.ag + moe.rs : moe.ar));
  }
}

TEST_CASE("a collective beside a GEMM costs its excess, or the work the slowed GEMM loses") {
  CHECK(overlapCost(100, 1000, 1.25) == 20);  // the GEMM runs at 1/1.25 for 100 ps: 20 ps lost
  CHECK(overlapCost(100, 50, 1.25) == 50);    // the collective outlasts the GEMM
  CHECK(overlapCost(100, 1000, 1.0) == 0);
  CHECK(overlapCost(0, 10, 2.0) == 0);
  // In a layer: long GEMMs hide the column-parallel collectives but lose their share.
  TpLayer l;
  l.po.overlap_slowdown = 1.25;
  const int64_t long_gemm = 1'000'000'000'000;
  const auto lost = [](int64_t c) { return static_cast<int64_t>(std::llround(static_cast<double>(c) * 0.2)); };
  CHECK(l.passes(true, long_gemm).tp_backward.ps == 2 * lost(l.ar));
  l.par.sequence_parallel = true;
  CHECK(l.passes(true, long_gemm).tp_backward.ps == 2 * l.ag + 2 * lost(l.ag) + 2 * lost(l.rs));
}

TEST_CASE("overlapping the backward's TP collectives never makes a layer slower") {
  TpLayer l;
  l.po.overlap_slowdown = 1.15;  // Ampere's default
  for (const uint32_t hidden : {512u, 2048u, 6144u, 16384u}) {
    for (const uint32_t micro : {1u, 4u}) {
      for (const bool sp : {false, true}) {
        CAPTURE(hidden, micro, sp);
        l.model.hidden = hidden;
        l.model.heads = hidden / 128;
        l.config.micro_batch = micro;
        l.par.sequence_parallel = sp;
        const LayerPassTimes on = l.passes(true);
        const LayerPassTimes off = l.passes(false);
        CHECK(on.tp_backward <= off.tp_backward);
        CHECK(on.backward_compute == off.backward_compute);
        CHECK(on.forward() == off.forward());
        // The two gradient GEMMs, each at its own shape, add up to the backward (rounded apart).
        const ComputeModel compute(a100Compute());
        for (const Operator& op : layerOperators(l.model, l.config, l.par)) {
          if (op.kind != OpKind::kGemm) continue;
          const int64_t both = compute.gradientGemmTime(op, l.config.precision, false).ps +
                               compute.gradientGemmTime(op, l.config.precision, true).ps;
          CHECK(std::abs(both - compute.backwardTime(op, l.config.precision).ps) <= 1);
        }
      }
    }
  }
}

TEST_CASE("programs: every send meets a receive of the same size on its peer stage") {
  for (uint32_t vpp : {1u, 2u}) {
    TrainingExperiment x = test::tinyExperiment(1, 4, 2, 8, 8);
    x.parallelism.vpp = vpp;
    x.parallelism.schedule = vpp > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B;
    x.parallelism.zero = mv::Zero::kOptimizer;
    const ComputeModel compute(a100Compute());
    const TrainingProgram prog = buildTrainingProgram(x.model, x.training, x.parallelism, compute, ProgramOptions{});
    REQUIRE(prog.stages.size() == 4);
    std::set<std::pair<uint32_t, uint32_t>> matched;
    for (const StageProgram& s : prog.stages) {
      uint32_t deps = 0;
      for (const TaskDef& t : s.tasks) deps += t.dep_count;
      CHECK(deps == s.succs.size());
      for (const TaskDef& t : s.tasks) {
        if (t.kind != TaskKind::kSend) continue;
        REQUIRE(t.peer_task != kNoTask);
        const TaskDef& r = prog.stages[t.peer_stage].tasks[t.peer_task];
        CHECK(r.kind == TaskKind::kRecv);
        CHECK(r.bytes == t.bytes);
        CHECK(r.micro_batch == t.micro_batch);
        CHECK(r.forward == t.forward);
        CHECK(matched.insert({t.peer_stage, t.peer_task}).second);
      }
    }
    // Each of the 8 micro-batches crosses 4·vpp − 1 virtual-stage boundaries each way.
    CHECK(matched.size() == 2u * 8u * (4u * vpp - 1u));
    // The schedule never deadlocks; making stage 0's first send wait for its last task does
    // (the last task needs stage 1's backward, which needs that send).
    CHECK_FALSE(firstStuckTask(prog).has_value());
    TrainingProgram looped = prog;
    StageProgram& first = looped.stages[0];
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    for (uint32_t i = 0; i < first.tasks.size(); ++i) {
      for (uint32_t k = 0; k < first.tasks[i].succ_count; ++k)
        edges.emplace_back(i, first.succs[first.tasks[i].succ_begin + k]);
    }
    uint32_t send = 0;
    while (first.tasks[send].kind != TaskKind::kSend) ++send;
    edges.emplace_back(static_cast<uint32_t>(first.tasks.size() - 1), send);
    first.succs.clear();
    for (TaskDef& t : first.tasks) t.dep_count = t.succ_count = t.succ_begin = 0;
    linkProgram(first, edges);
    const std::optional<TaskRef> stuck = firstStuckTask(looped);
    REQUIRE(stuck.has_value());
    CHECK(stuck->stage == 0);
    CHECK(stuck->task == send);
    // Compute of a stage = m × its per-micro-batch time + its optimizer step (compute model).
    for (uint32_t s = 0; s < 4; ++s) {
      const StageTimes st = compute.stageTimes(x.model, x.training, x.parallelism, s);
      CHECK(prog.stages[s].computePs() == 8 * st.perMicroBatch().ps + st.optimizer.ps);
    }
  }
}

/// Bytes of a stage's gradient reductions of group kind `comm` (all chunks).
int64_t reducedBytes(const StageProgram& s, CommKind comm) {
  int64_t bytes = 0;
  for (const TaskDef& t : s.tasks) {
    const bool reduction = t.op == CollectiveOp::kAllReduce || t.op == CollectiveOp::kReduceScatter;
    if (t.kind == TaskKind::kCollective && t.comm == comm && reduction) bytes += t.bytes;
  }
  return bytes;
}

TEST_CASE("MoE: expert gradients are reduced over the expert-DP group, dense ones over DP") {
  TrainingExperiment x = test::tinyExperiment(1, 1, 8, 4, 8);
  x.model.experts = 4;
  x.model.top_k = 2;
  const ComputeModel compute(a100Compute());
  ProgramOptions po;
  po.dp_bucket = mebibytes(1);
  for (bool dist_opt : {false, true}) {
    x.parallelism.zero = dist_opt ? mv::Zero::kOptimizer : mv::Zero::kNone;
    for (uint32_t ep : {2u, 4u, 8u}) {
      x.parallelism.ep = ep;
      const TrainingProgram prog = buildTrainingProgram(x.model, x.training, x.parallelism, compute, po);
      const StageProgram& s = prog.stages.at(0);
      const StageParameters params = stageParameters(x.model, x.parallelism, 0);
      INFO("ep " << ep << ", distributed optimizer " << dist_opt);
      // A bf16 model's gradients are reduced in fp32.
      CHECK(reducedBytes(s, CommKind::kDp) == static_cast<int64_t>(params.dense * 4));
      // dp / ep ranks hold the same experts; with ep = dp each expert has one owner.
      CHECK(reducedBytes(s, CommKind::kExpertDp) == (ep < 8 ? static_cast<int64_t>(params.expert * 4) : 0));
      CHECK((s.expert_dp_collectives > 0) == (ep < 8));
      CHECK(s.ep_collectives > 0);
      uint32_t seq = 0;
      for (const TaskDef& t : s.tasks) {
        if (t.kind == TaskKind::kCollective && t.comm == CommKind::kExpertDp) CHECK(t.seq == seq++);
      }
      CHECK(seq == s.expert_dp_collectives);
      // The group kinds survive a Chakra round trip (pg_name dp, ep, expert_dp).
      const TrainingProgram back = programFromChakra(programToChakra(prog, x.parallelism), x.parallelism);
      const StageProgram& r = back.stages.at(0);
      REQUIRE(r.tasks.size() == s.tasks.size());
      for (size_t i = 0; i < s.tasks.size(); ++i) CHECK(r.tasks[i].comm == s.tasks[i].comm);
      CHECK(r.expert_dp_collectives == s.expert_dp_collectives);
    }
  }
}

/// Bytes and count of a stage's DP collectives of operation `op`.
std::pair<int64_t, int64_t> dpTraffic(const StageProgram& s, CollectiveOp op) {
  int64_t bytes = 0;
  int64_t count = 0;
  for (const TaskDef& t : s.tasks) {
    if (t.kind != TaskKind::kCollective || t.comm != CommKind::kDp || t.op != op) continue;
    bytes += t.bytes;
    count += 1;
  }
  return {bytes, count};
}

TEST_CASE("DP buckets count parameters as Megatron-core's do: max(40 M, 1 M x dp), bytes from each type") {
  // GPT-3 175B, TP 8, PP 16, DP 256, distributed optimizer: a stage holds about 1.37 G
  // parameters; Megatron-core's buckets hold 256 M of them at this DP size, so 6 buckets
  // of fp32 gradients reduce-scattered and 6 of bf16 parameters gathered, where 40 MiB
  // buckets of bytes made 130 reductions on this stage.
  TrainingExperiment x = test::tinyExperiment(8, 16, 256, 1, 8);
  x.model = modelByName("gpt3-175b");
  x.parallelism.zero = Zero::kOptimizer;
  const StageParameters params = stageParameters(x.model, x.parallelism, 1);
  REQUIRE(dpBucketParameters(x.parallelism) == 256'000'000);
  auto buckets = [&](CollectiveOp op) { return dpTraffic(trainingProgramOf(x).stages.at(1), op); };
  const int64_t expected = static_cast<int64_t>(std::ceil(params.dense / 256e6));
  CHECK(expected == 6);
  const auto reduced = buckets(CollectiveOp::kReduceScatter);
  const auto gathered = buckets(CollectiveOp::kAllGather);
  CHECK(reduced.second == expected);
  CHECK(gathered.second == expected);
  CHECK(reduced.first == 2 * gathered.first);  // fp32 gradients, bf16 parameters
  // At DP 8 the floor of 40 M parameters holds.
  x.parallelism.dp = 8;
  x.cluster.gpus = 8 * 16 * 8;
  x.training.global_batch = 8;
  CHECK(dpBucketParameters(x.parallelism) == 40'000'000);
  CHECK(buckets(CollectiveOp::kReduceScatter).second == static_cast<int64_t>(std::ceil(params.dense / 40e6)));
  // parallelism.dp_bucket sets the parameters; collectives.dp_bucket, in bytes, overrides it.
  x.parallelism.dp_bucket = 100'000'000;
  CHECK(buckets(CollectiveOp::kReduceScatter).second == static_cast<int64_t>(std::ceil(params.dense / 100e6)));
  x.collectives.dp_bucket = mebibytes(40);
  const auto by_bytes = buckets(CollectiveOp::kReduceScatter);
  const int64_t mib40 = mebibytes(40).count;
  CHECK(by_bytes.second == (by_bytes.first + mib40 - 1) / mib40);
  CHECK(by_bytes.second == 130);
  CHECK(buckets(CollectiveOp::kAllGather).second == (by_bytes.first / 2 + mib40 - 1) / mib40);
}

TEST_CASE("ZeRO stages: what the DP group gathers and reduces, and when") {
  // pp 2, dp 4, 6 micro-batches, 4 layers per stage, 1 MiB DP buckets.
  TrainingExperiment x = test::tinyExperiment(1, 2, 4, 6, 1);
  const ComputeModel compute(a100Compute());
  ProgramOptions po;
  po.dp_bucket = mebibytes(1);
  const uint32_t m = 6;
  const uint32_t layers = 4;
  for (Zero zero : {Zero::kNone, Zero::kOptimizer, Zero::kGradients, Zero::kParameters}) {
    x.parallelism.zero = zero;
    const TrainingProgram prog = buildTrainingProgram(x.model, x.training, x.parallelism, compute, po);
    INFO("zero " << static_cast<int>(zero));
    CHECK_FALSE(firstStuckTask(prog).has_value());
    for (uint32_t st = 0; st < 2; ++st) {
      const StageProgram& s = prog.stages[st];
      // The pieces of the blocks add up to the compute model's time whatever the split.
      const StageTimes times = compute.stageTimes(x.model, x.training, x.parallelism, st);
      CHECK(s.computePs() == m * times.perMicroBatch().ps + times.optimizer.ps);
      // bf16 parameters are gathered as they are; their gradients are reduced in fp32.
      const double dense = stageParameters(x.model, x.parallelism, st).dense;
      const auto bytes = static_cast<int64_t>(dense * 2);
      const auto grad_bytes = static_cast<int64_t>(dense * 4);
      const auto [ar_bytes, ar_count] = dpTraffic(s, CollectiveOp::kAllReduce);
      const auto [rs_bytes, rs_count] = dpTraffic(s, CollectiveOp::kReduceScatter);
      const auto [ag_bytes, ag_count] = dpTraffic(s, CollectiveOp::kAllGather);
      switch (zero) {
        case Zero::kNone:  // one all-reduce of the gradients, after the last micro-batch
          CHECK(ar_bytes == grad_bytes);
          CHECK(rs_count + ag_count == 0);
          break;
        case Zero::kOptimizer:  // gradients reduce-scattered and parameters gathered once
          CHECK(rs_bytes == grad_bytes);
          CHECK(ag_bytes == bytes);
          CHECK(ar_count == 0);
          break;
        case Zero::kGradients:  // gradients reduce-scattered after every micro-batch
          CHECK(rs_bytes == m * grad_bytes);
          CHECK(ag_bytes == bytes);
          CHECK(ar_count == 0);
          break;
        case Zero::kParameters:  // per layer: gathered for each pass, reduced after backward
          CHECK(ag_count == 2 * m * layers);
          CHECK(rs_count == m * layers);
          CHECK(std::abs(ag_bytes - 2 * m * bytes) <= ag_count);  // the stage's extra params spread over layers
          CHECK(std::abs(rs_bytes - m * grad_bytes) <= rs_count);
          CHECK(ar_count == 0);
          break;
      }
      if (zero != Zero::kParameters) continue;
      // Per-layer gathers survive a Chakra round trip.
      const TrainingProgram back = programFromChakra(programToChakra(prog, x.parallelism), x.parallelism);
      CHECK(back.stages[st].tasks.size() == s.tasks.size());
      CHECK(dpTraffic(back.stages[st], CollectiveOp::kAllGather) == dpTraffic(s, CollectiveOp::kAllGather));
      // Every compute piece waits for exactly one gather, which waits for the piece two
      // before (one layer of prefetch).
      std::vector<uint32_t> computes;
      for (uint32_t i = 0; i < s.tasks.size(); ++i) {
        if (s.tasks[i].kind == TaskKind::kCompute && s.tasks[i].micro_batch != kNoTask) computes.push_back(i);
      }
      REQUIRE(computes.size() == 2 * m * layers);
      std::map<uint32_t, std::vector<uint32_t>> preds;
      for (uint32_t i = 0; i < s.tasks.size(); ++i) {
        for (uint32_t k = 0; k < s.tasks[i].succ_count; ++k) preds[s.succs[s.tasks[i].succ_begin + k]].push_back(i);
      }
      for (size_t n = 0; n < computes.size(); ++n) {
        std::vector<uint32_t> gathers;
        for (uint32_t pr : preds[computes[n]]) {
          if (s.tasks[pr].op == CollectiveOp::kAllGather && s.tasks[pr].kind == TaskKind::kCollective)
            gathers.push_back(pr);
        }
        REQUIRE(gathers.size() == 1);
        const std::vector<uint32_t>& waits = preds[gathers[0]];
        if (n < 2) {
          CHECK(waits.empty());
        } else {
          REQUIRE(waits.size() == 1);
          CHECK(waits[0] == computes[n - 2]);
        }
      }
    }
  }
}

}  // namespace
}  // namespace mv
