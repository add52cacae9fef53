/**
 * @file test_memory.cpp
 * Per-GPU memory: Korthikanti Table 2 activations, pipeline in-flight counts, a
 * hand-computed breakdown, and whether known configurations fit on 80 GB GPUs.
 */
#include <catch2/catch.hpp>

#include "workloads/memory.hpp"

using namespace mv;

namespace {

/// A100/H100 "80GB": 81,920 MiB.
const Bytes k80GB = mebibytes(80 * 1024);

TrainingConfig job(uint32_t global, uint32_t micro = 1, uint32_t seq = 0) {
  TrainingConfig c;
  c.global_batch = global;
  c.micro_batch = micro;
  c.seq = seq;
  return c;
}

Parallelism split(uint32_t tp, uint32_t pp, uint32_t dp, Recompute recompute, bool sp = false) {
  Parallelism p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.recompute = recompute;
  p.sequence_parallel = sp;
  return p;
}

}  // namespace

TEST_CASE("activations per layer follow Korthikanti et al. Table 2", "[workloads][memory]") {
  // GPT-3 175B: s 2048, b 1, h 12288, a 96, t 8: 5·a·s/h = 80.
  const ModelSpec gpt = modelByName("gpt3-175b");
  const TrainingConfig c = job(8);
  const int64_t sbh = 2048LL * 12288;
  auto act = [&](uint32_t t, bool sp, Recompute r) {
    return layerActivationBytes(gpt, c, split(t, 1, 1, r, sp), r).count;
  };
  CHECK(act(1, false, Recompute::kNone) == sbh * (34 + 80));      // no parallelism
  CHECK(act(8, false, Recompute::kNone) == sbh * (10 + 3 + 10));  // TP: 10 + 24/t + 5as/(ht)
  CHECK(act(8, true, Recompute::kNone) == sbh * (34 + 80) / 8);   // TP + SP
  CHECK(act(8, false, Recompute::kSelective) == sbh * (10 + 3));  // TP + selective
  CHECK(act(8, true, Recompute::kSelective) == sbh * 34 / 8);     // TP + SP + selective
  CHECK(act(8, false, Recompute::kFull) == sbh * 2);              // full: the layer input
  CHECK(act(8, true, Recompute::kFull) == sbh * 2 / 8);
  TrainingConfig fp32 = c;
  fp32.precision = TrainingPrecision::kFp32;
  // fp32 doubles the 2-byte terms but not the 1-byte masks: selective TP-only 10 → 18, 24/t → 6.
  CHECK(layerActivationBytes(gpt, fp32, split(8, 1, 1, Recompute::kSelective), Recompute::kSelective).count ==
        sbh * (18 + 6));
}

TEST_CASE("GQA and gated MLPs change the split terms", "[workloads][memory]") {
  // Llama-3 8B, s 8192, t 1, selective: 2+2+1+2+2+1 replicated; Q,K 2(1+1/4), V 2/4, proj 2,
  // gate+up 2·2·3.5, SwiGLU out 2·3.5 → 10 + 2.5 + 0.5 + 2 + 14 + 7 = 36 s·b·h.
  const ModelSpec l8 = modelByName("llama3-8b");
  const int64_t sbh = 8192LL * 4096;
  CHECK(layerActivationBytes(l8, job(8), split(1, 1, 8, Recompute::kSelective), Recompute::kSelective).count ==
        sbh * 36);
}

TEST_CASE("in-flight micro-batches: 1F1B p - stage, interleaved MoFa", "[workloads][memory]") {
  Parallelism par = split(1, 8, 1, Recompute::kNone);
  const TrainingConfig c = job(64);  // m = 64
  for (uint32_t stage = 0; stage < 8; ++stage) CHECK(inFlightMicroBatches(c, par, stage) == 8 - stage);
  CHECK(inFlightMicroBatches(job(4), par, 0) == 4);  // capped by m
  par.schedule = PipelineSchedule::kInterleaved;
  par.vpp = 4;
  // First stage: p·(1 + (p−1)/(p·v)) = 8 + 7/4; stage r: (v·p + p − 2r − 1)/v.
  CHECK(inFlightMicroBatches(c, par, 0) == Approx(8 * (1 + 7.0 / 32)));
  CHECK(inFlightMicroBatches(c, par, 3) == Approx((32 + 8 - 6 - 1) / 4.0));
  CHECK(inFlightMicroBatches(c, split(8, 1, 8, Recompute::kNone), 0) == 1);
}

TEST_CASE("breakdown of a small case matches hand-computed bytes", "[workloads][memory]") {
  // GPT-style: 4 layers, h 1024, 16 heads, ffn 4096, vocab 1000, seq 512, tied embeddings,
  // learned positions. TP 2, PP 2, DP 2, micro-batch 2, global 16 (m = 4), selective
  // recompute without SP, distributed optimizer, bf16.
  ModelSpec m;
  m.name = "small";
  m.layers = 4;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn = 4096;
  m.vocab = 1000;
  m.seq = 512;
  Parallelism par = split(2, 2, 2, Recompute::kSelective);
  par.zero = mv::Zero::kOptimizer;
  const TrainingConfig c = job(16, 2);
  REQUIRE(validateParallelism(m, c, par, 8).empty());

  // Per layer: 12h² + 13h = 12,582,912 + 13,312 = 12,596,224; 2 layers per stage, / t = 12,596,224.
  // Stage 0 adds V·h/t = 512,000 and positions s·h = 524,288: 13,632,512 parameters.
  // Stage 1 adds the final LayerNorm 2h/t = 1,024 and the tied-embedding copy 512,000: 13,109,248.
  const MemoryBreakdown s0 = stageMemory(m, c, par, 0);
  CHECK(s0.parameters == 13632512.0);
  CHECK(s0.weights.count == 27265024);    // 2 bytes
  CHECK(s0.gradients.count == 54530048);  // 4 bytes
  CHECK(s0.optimizer.count == 81795072);  // 12 / dp = 6 bytes
  // Selective, TP only: s·b·h·(10 + 24/t) = 512·2·1024·22 = 23,068,672 per layer;
  // stage 0 holds p = 2 micro-batches of its 2 layers.
  CHECK(s0.activation_per_layer.count == 23068672);
  CHECK(s0.in_flight == 2);
  CHECK(s0.activations.count == 92274688);
  CHECK(s0.logits.count == 0);
  CHECK(s0.workspace == mebibytes(3 * 1024));
  CHECK(s0.total().count == 27265024 + 54530048 + 81795072 + 92274688 + 3221225472LL);

  const MemoryBreakdown s1 = stageMemory(m, c, par, 1);
  CHECK(s1.parameters == 13109248.0);
  CHECK(s1.weights.count == 26218496);
  CHECK(s1.gradients.count == 52436992);
  CHECK(s1.optimizer.count == 78655488);
  CHECK(s1.in_flight == 1);
  CHECK(s1.activations.count == 46137344);
  CHECK(s1.logits.count == 2048000);  // s·b·V/t·4 = 512·2·500·4
  CHECK(peakMemory(m, c, par).stage == 0);

  // Without the distributed optimizer the 12 bytes stay whole.
  par.zero = mv::Zero::kNone;
  CHECK(stageMemory(m, c, par, 0).optimizer.count == 13632512LL * 12);
  // Full recompute: 2·s·b·h per layer in flight, plus one layer's working set without recompute.
  par.recompute = Recompute::kFull;
  const int64_t working = 512LL * 2 * 1024 * (10 + 12) + 5LL * 16 * 512 * 512 * 2 / 2;
  CHECK(stageMemory(m, c, par, 0).activations.count == 2 * 2 * (2LL * 512 * 2 * 1024) + working);
}

TEST_CASE("GPT-3 175B does not fit one 80 GB GPU", "[workloads][memory]") {
  const ModelSpec gpt = modelByName("gpt3-175b");
  const MemoryBreakdown mb = peakMemory(gpt, job(8), split(1, 1, 1, Recompute::kFull));
  CHECK_FALSE(mb.fits(k80GB));
  CHECK(mb.weights.count == Approx(parameterCount(gpt) * 2).epsilon(1e-9));  // all 174.6B parameters, 2 bytes each
}

TEST_CASE("GPT-3 175B with TP 8 and PP 8 fits 80 GB", "[workloads][memory]") {
  // 64 GPUs, DP 1, micro-batch 1, distributed optimizer (a no-op at DP 1).
  const ModelSpec gpt = modelByName("gpt3-175b");
  const TrainingConfig c = job(64);
  for (auto [recompute, sp] : {std::pair{Recompute::kFull, false}, std::pair{Recompute::kSelective, true}}) {
    Parallelism par = split(8, 8, 1, recompute, sp);
    par.zero = mv::Zero::kOptimizer;
    REQUIRE(validateParallelism(gpt, c, par, 64).empty());
    const MemoryBreakdown mb = peakMemory(gpt, c, par);
    INFO(toString(recompute) << " sp " << sp << ": " << mb.total().count / 1073741824.0 << " GiB");
    CHECK(mb.fits(k80GB));
    CHECK(mb.parameters == Approx(175e9 / 64).epsilon(0.05));
  }
}

TEST_CASE("Llama-3 8B on 8 GPUs with DP 8, distributed optimizer and selective recompute", "[workloads][memory]") {
  const ModelSpec l8 = modelByName("llama3-8b");
  Parallelism par = split(1, 1, 8, Recompute::kSelective);
  par.zero = mv::Zero::kOptimizer;
  // Weights, gradients and the sharded optimizer take 2 + 4 + 12/8 = 7.5 bytes/param ≈ 56 GiB.
  // At seq 2048 the activations (9 GiB) fit easily.
  const MemoryBreakdown short_seq = peakMemory(l8, job(64, 1, 2048), par);
  CHECK(short_seq.fits(k80GB));
  CHECK(short_seq.weights.count + short_seq.gradients.count + short_seq.optimizer.count ==
        Approx(8030261248.0 * 7.5).epsilon(1e-9));
  // At the model's own 8192 tokens selective recompute keeps 36·s·b·h per layer (36 GiB):
  // it does not fit (NeMo's Llama-3 8B recipe adds context parallelism 2 here), while full
  // recompute does.
  const MemoryBreakdown long_seq = peakMemory(l8, job(64, 1, 8192), par);
  CHECK_FALSE(long_seq.fits(k80GB));
  par.recompute = Recompute::kFull;
  CHECK(peakMemory(l8, job(64, 1, 8192), par).fits(k80GB));
}

TEST_CASE("ZeRO-2 shards the gradients, ZeRO-3 the weights as well, less what one or two layers hold in full",
          "[workloads][memory]") {
  const ModelSpec l8 = modelByName("llama3-8b");
  const ParameterCount pc = countParameters(l8);
  const double params = parameterCount(l8);
  const double layer = pc.attention_per_layer + pc.norms_per_layer + pc.mlp_per_layer;
  const double unsharded = layer * 7 / 8;  // a gathered layer beyond the GPU's own 1/8
  Parallelism par = split(1, 1, 8, Recompute::kSelective);
  const TrainingConfig c = job(64, 1, 2048);
  auto states = [&](Zero zero) {
    par.zero = zero;
    const MemoryBreakdown mb = stageMemory(l8, c, par, 0);
    return static_cast<double>(mb.weights.count + mb.gradients.count + mb.optimizer.count);
  };
  // Bytes per parameter: 2 + 4 + 12 replicated; the optimizer's 12 / 8 from ZeRO-1; the
  // gradients' 4 / 8 from ZeRO-2 (plus one layer waiting for its reduce-scatter); the
  // weights' 2 / 8 with ZeRO-3 (plus two gathered layers).
  CHECK(states(Zero::kNone) == Approx(params * 18).epsilon(1e-9));
  CHECK(states(Zero::kOptimizer) == Approx(params * 7.5).epsilon(1e-9));
  CHECK(states(Zero::kGradients) == Approx(params * 4 + 4 * unsharded).epsilon(1e-9));
  CHECK(states(Zero::kParameters) == Approx(params * 2.25 + (2 * 2 + 4) * unsharded).epsilon(1e-9));
  // With one replica nothing is sharded and nothing gathered.
  par.dp = 1;
  CHECK(states(Zero::kParameters) == Approx(params * 18).epsilon(1e-9));
}

TEST_CASE("MoE experts are split by EP and sharded over the expert-data-parallel group", "[workloads][memory]") {
  const ModelSpec mixtral = modelByName("mixtral-8x7b");
  const ParameterCount pc = countParameters(mixtral);
  Parallelism par = split(1, 1, 8, Recompute::kSelective);
  par.ep = 8;
  par.zero = mv::Zero::kOptimizer;
  const StageParameters sp = stageParameters(mixtral, par, 0);
  CHECK(sp.expert == Approx(pc.expert_per_layer * 32 / 8));
  CHECK(sp.dense == Approx(parameterCount(mixtral) - pc.expert_per_layer * 32));
  // Expert optimizer state is sharded over dp/ep = 1 rank, dense state over 8.
  const MemoryBreakdown mb = stageMemory(mixtral, job(64), par, 0);
  CHECK(mb.optimizer.count == Approx(12 * (sp.dense / 8 + sp.expert)).margin(2));
}

TEST_CASE("FlashAttention stores no attention scores", "[workloads][memory]") {
  const ModelSpec gpt = modelByName("gpt3-175b");
  TrainingConfig c = job(8);
  c.flash_attention = true;
  const Parallelism par = split(8, 1, 1, Recompute::kNone, true);
  CHECK(layerActivationBytes(gpt, c, par, Recompute::kNone).count == 2048LL * 12288 * 34 / 8);
  CHECK(layerActivationBytes(gpt, c, par, Recompute::kNone) ==
        layerActivationBytes(gpt, c, par, Recompute::kSelective));
}

TEST_CASE("FP8 keeps the four weight-gradient GEMM inputs in one byte, every other activation in two",
          "[workloads][memory]") {
  // Transformer Engine saves the FP8 copies of the QKV, projection and both MLP GEMM inputs;
  // LayerNorm inputs, Q/K/V, the first MLP output and the scores stay bf16.
  const ModelSpec gpt = modelByName("gpt3-175b");
  TrainingConfig bf16 = job(8);
  TrainingConfig fp8 = bf16;
  fp8.precision = TrainingPrecision::kFp8;
  const double sb = 2048, h = 12288, f = 4 * h, t = 8;
  for (const bool sp : {false, true}) {
    const Parallelism par = split(8, 1, 1, Recompute::kSelective, sp);
    const double r = sp ? t : 1;
    const double saved = sb * h / r + sb * h / r + sb * h / t + sb * f / t;  // one byte each
    INFO("sp " << sp);
    CHECK(layerActivationBytes(gpt, bf16, par, Recompute::kSelective).count -
              layerActivationBytes(gpt, fp8, par, Recompute::kSelective).count ==
          static_cast<int64_t>(saved));
  }
  // Full recomputation keeps the layer input, which is not a GEMM input: unchanged.
  const Parallelism full = split(8, 1, 1, Recompute::kFull);
  CHECK(layerActivationBytes(gpt, bf16, full, Recompute::kFull) ==
        layerActivationBytes(gpt, fp8, full, Recompute::kFull));
}
