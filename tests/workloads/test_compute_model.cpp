/**
 * @file test_compute_model.cpp
 * Roofline kernel times, the shape-based GEMM efficiency, overrides, pipeline bubbles, and
 * compute alone against Megatron-LM SC'21 Table 1.
 */
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "workloads/compute_model.hpp"
#include "workloads/flops.hpp"
#include "workloads/memory.hpp"

using namespace mv;
using Catch::Matchers::Contains;

namespace {

const Operator& findOp(const std::vector<Operator>& ops, std::string_view name) {
  for (const auto& op : ops) {
    if (op.name == name) return op;
  }
  FAIL("no operator " << name);
  return ops.front();
}

/// Equal up to 1 ps (seconds are converted to picoseconds by rounding up).
bool near(Picoseconds a, Picoseconds b) {
  return a.ps - b.ps <= 1 && b.ps - a.ps <= 1;
}

/// A square-ish GEMM shape with `flops` FLOPs (m = n = 2048).
GemmShape flopsOf(double flops) {
  return {2048, 2048, flops / (2.0 * 2048 * 2048)};
}

TrainingConfig job(uint32_t global, uint32_t micro = 1, uint32_t seq = 0) {
  TrainingConfig c;
  c.global_batch = global;
  c.micro_batch = micro;
  c.seq = seq;
  return c;
}

/// The kernels of one layer of the SC'21 18.4B model (h 6144) at TP 8 running `c`.
std::vector<Operator> tp8Layer(const TrainingConfig& c) {
  Parallelism par;
  par.tp = 8;
  return layerOperators(megatronSc21Table()[3].model, c, par);
}

/// The shipped knobs with a ceiling of 0.8 and 128×128 tiles at 0.9 of full speed.
ComputeModelParams quantisedParams() {
  ComputeModelParams params = megatronA100Params();
  params.gemm = {0.8, 0.9, true};
  return params;
}

}  // namespace

TEST_CASE("compute alone is faster than Megatron-LM SC'21 Table 1, whose runs include communication",
          "[workloads][compute]") {
  // The calibration is end to end (tests/systems/test_calibration.cpp): this roofline plus
  // the simulated TP, PP and DP traffic. Compute alone must therefore beat every row, and by
  // no more than the largest communication share the simulation adds (26 %, docs/workloads.md).
  const ComputeModel cm(a100Compute());
  for (const auto& row : megatronSc21Table()) {
    Parallelism par;
    par.tp = row.tp;
    par.pp = row.pp;
    par.dp = row.gpus / (row.tp * row.pp);
    par.recompute = Recompute::kFull;
    const TrainingConfig c = job(row.global_batch, 1, 2048);
    REQUIRE(validateParallelism(row.model, c, par, row.gpus).empty());
    const IterationTime it = cm.iterationTime(row.model, c, par);
    const double flops = megatronFormulaFlops(row.model, row.global_batch, 2048, true);
    const double tflops = achievedFlopsPerGpu(flops, row.gpus, it.total) / 1e12;
    INFO(row.model.name << ": " << tflops << " TFLOP/s compute only vs " << row.tflops_per_gpu);
    CHECK(tflops > 0.95 * row.tflops_per_gpu);
    CHECK(tflops < 1.35 * row.tflops_per_gpu);
    // The bubble is the 1F1B (p-1)/(m+p-1) up to the heavier last stage (logits).
    const double m = it.micro_batches, p = row.pp;
    CHECK(it.bubbleFraction() == Approx((p - 1) / (m + p - 1)).margin(0.01));
  }
}

TEST_CASE("GEMM efficiency: tiles in whole waves reach the ceiling, a partial wave costs its idle SMs",
          "[workloads][compute]") {
  GemmEfficiency g;
  g.ceiling = 0.8;
  g.small_tile = 0.9;
  const uint32_t sms = 108;  // A100
  // 2048 x 3456: 8 x 27 = 216 tiles of 256 x 128, exactly two waves.
  CHECK(g.quantizationFactor({2048, 3456, 4096}, sms) == Approx(1.0));
  CHECK(g({2048, 3456, 4096}, sms) == Approx(0.8));
  // 2048 x 2304: 144 large tiles fill 2 waves of 108 (2/3); 128 x 128 tiles: 288 tiles in
  // 3 waves (8/9) at 0.9 speed = 0.8 beats it and the smaller tiles.
  CHECK(g.quantizationFactor({2048, 2304, 6144}, sms) == Approx(0.8));
  // Padding and split-K: 2048 x 100 in 256 x 128 tiles is 8 tiles, 100/128 of each useful;
  // k = 8192 is split 13 ways to fill 104 of the 108 SMs.
  CHECK(g.quantizationFactor({2048, 100, 8192}, sms) == Approx(100.0 / 128 * 104.0 / 108));
  // A batch multiplies the tiles: 16 products of 512 x 512 in 128 x 64 tiles are 512 tiles,
  // 5 waves (512/540), at 0.81 speed.
  CHECK(g.quantizationFactor({512, 512, 128, 16}, sms) == Approx(0.81 * 512 / 540));
  // Large GEMMs approach the ceiling.
  CHECK(g.quantizationFactor({65536, 65536, 65536}, sms) > 0.99);
  // Quantisation off: the ceiling.
  g.quantization = false;
  CHECK(g({2048, 2304, 6144}, sms) == 0.8);
}

TEST_CASE("the backward GEMMs run at their own shapes' efficiency", "[workloads][compute]") {
  // qkv of a TP-8 layer with h 6144: forward 2048 x 2304 x 6144 (quantised 0.8); the input
  // gradient 2048 x 6144 x 2304 (8/9) and the weight gradient 6144 x 2304 x 2048 (1) fill
  // their waves better, so the backward is 1.7 times the forward, not 2.
  const TrainingConfig c = job(8, 1, 2048);
  const ComputeModel cm(a100Compute(), quantisedParams());
  const std::vector<Operator> ops = tp8Layer(c);
  const Operator& qkv = findOp(ops, "qkv");
  CHECK(qkv.shape.n == 2304);
  const double fwd = static_cast<double>(cm.forwardTime(qkv, c.precision).ps);
  const double bwd = static_cast<double>(cm.backwardTime(qkv, c.precision).ps);
  const double expected = fwd * (cm.gemmEfficiency(qkv.shape) / cm.gemmEfficiency(qkv.shape.inputGradient()) +
                                 cm.gemmEfficiency(qkv.shape) / cm.gemmEfficiency(qkv.shape.weightGradient()));
  CHECK(bwd == Approx(expected).epsilon(1e-6));
  CHECK(bwd == Approx(1.7 * fwd).epsilon(1e-6));
}

TEST_CASE("gemm.gradient slows the gradient GEMMs alone", "[workloads][compute]") {
  // The same qkv at 0.8 of the backward's efficiency: its two gradient GEMMs take 1/0.8 as
  // long, each of them apart too; the forward and the memory-bound kernels do not move.
  const TrainingConfig c = job(8, 1, 2048);
  ComputeModelParams params = quantisedParams();
  const ComputeModel same(a100Compute(), params);
  params.gemm.gradient = 0.8;
  const ComputeModel slow(a100Compute(), params);
  const std::vector<Operator> ops = tp8Layer(c);
  const Operator& qkv = findOp(ops, "qkv");
  const Operator& norm = findOp(ops, "input_norm");
  CHECK(slow.forwardTime(qkv, c.precision) == same.forwardTime(qkv, c.precision));
  CHECK(slow.backwardTime(norm, c.precision) == same.backwardTime(norm, c.precision));
  const auto ratio = [&](const Picoseconds a, const Picoseconds b) {
    return static_cast<double>(a.ps) / static_cast<double>(b.ps);
  };
  CHECK(ratio(slow.backwardTime(qkv, c.precision), same.backwardTime(qkv, c.precision)) == Approx(1.25).epsilon(1e-6));
  for (const bool weight : {false, true}) {
    CHECK(ratio(slow.gradientGemmTime(qkv, c.precision, weight), same.gradientGemmTime(qkv, c.precision, weight)) ==
          Approx(1.25).epsilon(1e-6));
  }
}

TEST_CASE("kernel times follow the roofline plus the per-kernel overhead", "[workloads][compute]") {
  ComputeModelParams params = megatronA100Params();
  params.gemm = {0.5, 1, false};  // flat 50%
  params.memory_efficiency = 0.8;
  params.kernel_overhead = microseconds(2);
  const ComputeModel cm(a100Compute(), params);
  const auto bf16 = TrainingPrecision::kBf16;
  // Memory-bound: 1.6 GB at 0.8 × 2 TB/s = 1 ms.
  CHECK(near(cm.kernelTime(OpKind::kMemory, {}, 1.6e9, bf16), milliseconds(1) + microseconds(2)));
  // Compute-bound: 156 TFLOP at 0.5 × 312 TFLOP/s = 1 s.
  CHECK(near(cm.kernelTime(OpKind::kGemm, flopsOf(156e12), 1e6, bf16), milliseconds(1000) + microseconds(2)));
  // A GEMM with little arithmetic intensity is memory-bound.
  CHECK(near(cm.kernelTime(OpKind::kGemm, flopsOf(1e9), 1.6e9, bf16), milliseconds(1) + microseconds(2)));
  // fp8 has no tensor cores on A100: the bf16 peak is used; TF32 for fp32.
  CHECK(near(cm.kernelTime(OpKind::kGemm, flopsOf(156e12), 0, TrainingPrecision::kFp8),
             milliseconds(1000) + microseconds(2)));
  CHECK(near(cm.kernelTime(OpKind::kGemm, flopsOf(78e12), 0, TrainingPrecision::kFp32),
             milliseconds(1000) + microseconds(2)));
  const ComputeModel h100(h100Compute(), params);
  CHECK(near(h100.kernelTime(OpKind::kGemm, flopsOf(1979e12 / 2), 0, TrainingPrecision::kFp8),
             milliseconds(1000) + microseconds(2)));
}

TEST_CASE("layer kernels add up to the layer's FLOPs", "[workloads][compute]") {
  for (const char* name : {"gpt3-175b", "llama3-70b", "mixtral-8x7b"}) {
    const ModelSpec m = modelByName(name);
    Parallelism par;
    par.tp = 8;
    par.dp = 8;
    par.ep = m.isMoe() ? 8 : 1;
    const TrainingConfig c = job(64, 1);
    double flops = 0;
    for (const auto& op : layerOperators(m, c, par)) flops += op.flops * op.count;
    const LayerFlops lf = layerForwardFlops(m, 1, sequenceLength(m, c));
    // Everything but the router is split over TP (the router runs on every TP rank).
    INFO(name);
    CHECK(flops == Approx((lf.total() - lf.router) / 8 + lf.router).epsilon(1e-12));
  }
}

TEST_CASE("MoE expert kernels: experts/ep kernels of tokens·k·ep/experts tokens", "[workloads][compute]") {
  const ModelSpec mixtral = modelByName("mixtral-8x7b");
  Parallelism par;
  par.dp = 8;
  par.ep = 2;
  const auto ops = layerOperators(mixtral, job(64, 1), par);
  const Operator& up = findOp(ops, "mlp_up");
  CHECK(up.count == 4);
  CHECK(up.flops == 2.0 * (4096.0 * 2 * 2 / 8) * 4096 * 2 * 14336);
  CHECK(findOp(ops, "activation").count == 4);
  CHECK(findOp(ops, "dispatch").kind == OpKind::kMemory);
}

TEST_CASE("recomputation reruns the whole forward (full) or the attention core (selective)", "[workloads][compute]") {
  const ModelSpec gpt = modelByName("gpt3-13b");
  const ComputeModel cm(a100Compute());
  Parallelism par;
  par.tp = 2;
  const TrainingConfig c = job(8);
  par.recompute = Recompute::kNone;
  const LayerTimes none = cm.layerTimes(gpt, c, par);
  CHECK(none.recompute == Picoseconds{0});
  par.recompute = Recompute::kFull;
  const LayerTimes full = cm.layerTimes(gpt, c, par);
  CHECK(full.recompute == full.forward);
  CHECK(full.forward == none.forward);
  par.recompute = Recompute::kSelective;
  Picoseconds core;
  for (const auto& op : layerOperators(gpt, c, par)) {
    if (op.attention_core) core += cm.forwardTime(op, c.precision);
  }
  CHECK(cm.layerTimes(gpt, c, par).recompute == core);
  CHECK(core > Picoseconds{0});
  CHECK(core < none.forward);
}

TEST_CASE("a user time table overrides the roofline", "[workloads][compute]") {
  const ModelSpec gpt = modelByName("gpt3-13b");
  const TrainingConfig c = job(8);
  const Parallelism par;
  const auto ops = layerOperators(gpt, c, par);
  const Operator& qkv = findOp(ops, "qkv");
  const Operator& norm = findOp(ops, "input_norm");
  const ComputeModel plain(a100Compute());
  const ComputeModel measured(a100Compute(), megatronA100Params(),
                              {{"qkv", microseconds(700)},
                               {"input_norm", microseconds(30)},
                               {"input_norm.backward", microseconds(50)},
                               {"optimizer", milliseconds(5)}});
  CHECK(measured.forwardTime(qkv, c.precision) == microseconds(700));
  CHECK(measured.backwardTime(qkv, c.precision) == microseconds(1400));
  CHECK(measured.forwardTime(norm, c.precision) == microseconds(30));
  CHECK(measured.backwardTime(norm, c.precision) == microseconds(50));
  const Operator& proj = findOp(ops, "projection");
  CHECK(measured.forwardTime(proj, c.precision) == plain.forwardTime(proj, c.precision));
  const LayerTimes a = plain.layerTimes(gpt, c, par);
  const LayerTimes b = measured.layerTimes(gpt, c, par);
  CHECK(b.forward - a.forward ==
        microseconds(730) - plain.forwardTime(qkv, c.precision) - plain.forwardTime(norm, c.precision));
  CHECK(measured.stageTimes(gpt, c, par, 0).optimizer == milliseconds(5));
}

TEST_CASE("pipeline bubble: (p-1)/(m+p-1) for 1F1B, divided by v when interleaved", "[workloads][compute]") {
  const ModelSpec gpt = modelByName("gpt3-175b");
  // Zero the stage-specific kernels so that every stage takes the same time.
  const OperatorTimes zero = {{"embedding", Picoseconds{0}},     {"embedding.backward", Picoseconds{0}},
                              {"final_norm", Picoseconds{0}},    {"final_norm.backward", Picoseconds{0}},
                              {"logits", Picoseconds{0}},        {"logits.backward", Picoseconds{0}},
                              {"cross_entropy", Picoseconds{0}}, {"cross_entropy.backward", Picoseconds{0}},
                              {"optimizer", Picoseconds{0}}};
  const ComputeModel cm(a100Compute(), megatronA100Params(), zero);
  Parallelism par;
  par.tp = 8;
  par.pp = 8;
  par.dp = 4;
  const TrainingConfig c = job(128);  // m = 32
  const IterationTime it = cm.iterationTime(gpt, c, par);
  REQUIRE(it.micro_batches == 32);
  const Picoseconds t = it.stages[0].perMicroBatch();
  for (const auto& st : it.stages) CHECK(st.perMicroBatch() == t);
  CHECK(it.busy == t * 32);
  CHECK(it.bubble == t * 7);
  CHECK(it.total == t * 39);
  CHECK(it.bubbleFraction() == Approx(7.0 / 39));
  par.schedule = PipelineSchedule::kInterleaved;
  par.vpp = 3;
  const IterationTime inter = cm.iterationTime(gpt, c, par);
  CHECK(inter.bubble == t * 7 / 3);
  CHECK(inter.busy == t * 32);
}

TEST_CASE("stage times: embedding on the first stage, logits on the last", "[workloads][compute]") {
  const ModelSpec gpt = modelByName("gpt3-175b");
  const ComputeModel cm(a100Compute());
  Parallelism par;
  par.tp = 8;
  par.pp = 4;
  par.dp = 1;
  const TrainingConfig c = job(16);
  const StageTimes first = cm.stageTimes(gpt, c, par, 0);
  const StageTimes middle = cm.stageTimes(gpt, c, par, 1);
  const StageTimes last = cm.stageTimes(gpt, c, par, 3);
  CHECK(first.layers == 24);
  CHECK(first.forward > middle.forward);
  CHECK(last.forward > first.forward);  // the logit GEMM outweighs the embedding lookup
  const IterationTime it = cm.iterationTime(gpt, c, par);
  CHECK(it.slowest_stage == 3);
  CHECK(it.total == it.busy + it.bubble + it.optimizer);
}

TEST_CASE("the optimizer step: 30 bytes per updated parameter, 4 more with gradient clipping", "[workloads][compute]") {
  ComputeModelParams params = megatronA100Params();
  params.memory_efficiency = 0.8;
  params.kernel_overhead = Picoseconds{0};
  const ComputeModel cm(a100Compute(), params);
  const ModelSpec gpt = modelByName("gpt3-13b");
  Parallelism par;
  par.tp = 8;
  par.dp = 4;
  TrainingConfig c = job(16);
  // Memory-bound at 0.8 × 2 TB/s = 1.6 GB/ms.
  auto ms = [](Picoseconds t) { return static_cast<double>(t.ps) * 1e-9; };
  const double params_held = stageParameters(gpt, par, 0).total();
  c.grad_clip = false;
  CHECK(ms(cm.stageTimes(gpt, c, par, 0).optimizer) == Approx(30 * params_held / 1.6e9).epsilon(1e-6));
  c.grad_clip = true;
  CHECK(ms(cm.stageTimes(gpt, c, par, 0).optimizer) == Approx(34 * params_held / 1.6e9).epsilon(1e-6));
  par.zero = Zero::kOptimizer;  // the shard only
  CHECK(ms(cm.stageTimes(gpt, c, par, 0).optimizer) == Approx(34 * params_held / 4 / 1.6e9).epsilon(1e-6));
}

TEST_CASE("GPU presets and names", "[workloads][compute]") {
  CHECK(gpuComputeByName("a100-80gb").peak_flops == 312e12);
  CHECK(gpuComputeByName("h800").peak_flops == 989e12);
  CHECK(gpuComputeByName("h200").hbm_bandwidth == 4.8e12);
  CHECK_THROWS_WITH(gpuComputeByName("v100"), Contains("a100-80gb") && Contains("b200"));
  // One catalogue: every compute preset is its analytical/gpu.hpp entry.
  for (const GpuSpec& gpu : gpuCatalogue()) {
    const GpuComputeSpec c = gpuComputeByName(gpu.name);
    INFO(gpu.name);
    CHECK(c.name == gpu.name);
    CHECK(c.peak_flops == peakFlops(gpu, Precision::kBf16));
    CHECK(c.peak_flops_fp32 == peakFlops(gpu, Precision::kTf32));
    CHECK(c.hbm_bandwidth * 8 == static_cast<double>(gpu.hbm_bandwidth.bps));
    CHECK(c.sms == gpu.sms);
  }
  CHECK(gpuComputeByName("a100-40gb").hbm_bandwidth == 1.555e12);
  CHECK(achievedFlopsPerGpu(1e15, 10, milliseconds(1000)) == Approx(1e14));
  CHECK(achievedFlopsPerGpu(1e15, 0, milliseconds(1)) == 0);
}

TEST_CASE("FlashAttention replaces the three attention-core kernels by one", "[workloads][compute]") {
  const ModelSpec l8 = modelByName("llama3-8b");
  TrainingConfig c = job(8);
  Parallelism par;
  par.dp = 8;
  const auto unfused = layerOperators(l8, c, par);
  c.flash_attention = true;
  const auto fused = layerOperators(l8, c, par);
  CHECK(fused.size() + 2 == unfused.size());
  const Operator& flash = findOp(fused, "flash_attention");
  CHECK(flash.attention_core);
  // Causal: the kernel skips the tiles above the diagonal, half of both products.
  CHECK(flash.flops == (findOp(unfused, "attention_scores").flops + findOp(unfused, "attention_values").flops) / 2);
  CHECK(flash.flops == 2.0 * 8192 * 8192 * 4096);
  CHECK(flash.bytes == 2.0 * 8192 * (2 * 4096 + 2 * 1024));  // Q, K, V and the output in bf16
  // At 8192 tokens the unfused softmax traffic dominates: FlashAttention is much faster.
  const ComputeModel cm(h100Compute());
  TrainingConfig plain = c;
  plain.flash_attention = false;
  CHECK(cm.layerTimes(l8, c, par).forward.ps < cm.layerTimes(l8, plain, par).forward.ps * 3 / 4);
}
