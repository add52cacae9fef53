/**
 * @file memory.cpp
 * Per-GPU memory: parameters held per stage, Korthikanti activation formulas, pipeline in-flight counts.
 */
#include "workloads/memory.hpp"

#include <algorithm>
#include <cmath>

namespace mv {

namespace {

/// Bytes rounded up and held at 2^60 (1 EiB, far beyond any GPU): a breakdown's six parts
/// then add up inside int64, and a shape that large is simply out of memory.
Bytes ceilBytes(double b) {
  constexpr int64_t kMost = int64_t{1} << 60;
  return Bytes{b < static_cast<double>(kMost) ? static_cast<int64_t>(std::ceil(b)) : kMost};
}

}  // namespace

uint32_t stageLayers(const ModelSpec& model, const Parallelism& par, uint32_t stage) {
  const uint32_t p = std::max<uint32_t>(par.pp, 1);
  const uint32_t base = model.layers / p;
  const uint32_t extra = model.layers % p;
  return base + (stage < extra ? 1 : 0);
}

StageParameters layerParameters(const ModelSpec& model, const Parallelism& par) {
  const ParameterCount pc = countParameters(model);
  const double t = std::max<uint32_t>(par.tp, 1);
  const double ep = std::max<uint32_t>(par.ep, 1);
  StageParameters lp;
  lp.dense = (pc.attention_per_layer + pc.norms_per_layer + pc.mlp_per_layer - pc.expert_per_layer) / t;
  lp.expert = pc.expert_per_layer / (t * ep);
  return lp;
}

double shardedParameters(const StageParameters& params, const Parallelism& par) {
  const double dp = std::max<uint32_t>(dataParallelRanks(par), 1);
  const double expert_dp = std::max(1.0, dp / std::max<uint32_t>(par.ep, 1));
  return params.dense / dp + params.expert / expert_dp;
}

StageParameters stageParameters(const ModelSpec& model, const Parallelism& par, uint32_t stage) {
  const ParameterCount pc = countParameters(model);
  const double t = std::max<uint32_t>(par.tp, 1);
  const double layers = stageLayers(model, par, stage);
  const uint32_t last = std::max<uint32_t>(par.pp, 1) - 1;

  const StageParameters layer = layerParameters(model, par);
  StageParameters sp;
  sp.dense = layers * layer.dense;
  sp.expert = layers * layer.expert;
  if (stage == 0) sp.dense += pc.embedding / t + pc.positions;  // vocab-parallel embedding; positions replicated
  if (stage == last) {
    sp.dense += pc.final_norm / t;
    if (!model.tied_embeddings) {
      sp.dense += pc.output / t;
    } else if (last != 0) {
      sp.dense += pc.embedding / t;  // Megatron keeps a copy of the tied embedding on the last stage
    }
  }
  return sp;
}

Bytes layerActivationBytes(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                           Recompute recompute) {
  const double e = activationBytes(config.precision);  // stored activation element
  // Inputs kept for the weight-gradient GEMMs: FP8 training (Transformer Engine) keeps the
  // FP8 copy it cast for the forward GEMM, 1 byte; otherwise as every activation.
  const double g = config.precision == TrainingPrecision::kFp8 ? 1 : e;
  const double mask = 1;  // dropout mask element
  const double s = localSequence(model, config, par);  // CP ranks keep their s / cp tokens
  const double b = config.micro_batch;
  const double h = model.hidden;
  const double a = model.heads;
  const double t = std::max<uint32_t>(par.tp, 1);
  const double r = sequenceParallelActive(par) ? t : 1.0;  // divisor of the LayerNorm/dropout region
  const double kv = model.kvWidth();
  const double f = model.ffn;
  const double k = model.isMoe() ? model.top_k : 1.0;
  const double sb = s * b;

  if (recompute == Recompute::kFull) return ceilBytes(e * sb * h / r);  // the layer's input only

  // Korthikanti et al. 2022 §4.1, term by term (for GPT: 10 replicated + 24/t split + 5as/(ht)).
  const double replicated = e * sb * h        // input LayerNorm input
                            + g * sb * h      // QKV GEMM input
                            + mask * sb * h   // attention-output dropout mask
                            + e * sb * h      // MLP LayerNorm input
                            + g * sb * h * k  // first MLP GEMM input (one copy per routed expert)
                            + mask * sb * h;  // MLP-output dropout mask
  const double split = e * sb * (h + kv)      // Q and K
                       + e * sb * kv          // V
                       + g * sb * h           // output-projection input
                       + e * sb * f * (model.gated_mlp ? 2 : 1) * k  // first MLP GEMM output
                       + g * sb * f * k;                             // activation output (second GEMM input)
  const double scores = (e + mask + e) * a * s * s * b;              // softmax output, dropout mask, dropout output
  double bytes = replicated / r + split / t;
  if (recompute == Recompute::kNone && !config.flash_attention) bytes += scores / t;  // FlashAttention keeps no scores
  return ceilBytes(bytes);
}

double inFlightMicroBatches(const TrainingConfig& config, const Parallelism& par, uint32_t stage) {
  const double m = microBatchCount(config, par);
  const uint32_t p = std::max<uint32_t>(par.pp, 1);
  if (p == 1 || stage >= p) return std::min(1.0, m);
  if (par.schedule == PipelineSchedule::kInterleaved && par.vpp > 1) {
    const double v = par.vpp;
    const double chunks = v * p + p - 2.0 * stage - 1.0;  // MoFa: chunks of layers/(p·v) layers at stage r
    return std::min(chunks / v, m);
  }
  return std::min(static_cast<double>(p - stage), m);
}

MemoryBreakdown stageMemory(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                            uint32_t stage, const MemoryOptions& options) {
  const bool fp32 = config.precision == TrainingPrecision::kFp32;
  const double weight_bytes = fp32 ? 4 : 2;
  const double grad_bytes = 4;
  const double optimizer_bytes = fp32 ? 8 : 12;  // (master weights +) Adam m and v, fp32
  const StageParameters params = stageParameters(model, par, stage);

  const double layers = stageLayers(model, par, stage);
  const double shard = shardedParameters(params, par);
  // The unsharded part of one layer: what a gather or a pending reduce-scatter holds in full.
  const StageParameters layer = layerParameters(model, par);
  const double layer_full = layers > 0 ? layer.total() - shardedParameters(layer, par) : 0;

  MemoryBreakdown mb;
  mb.stage = stage;
  mb.parameters = params.total();
  mb.weights = ceilBytes(weight_bytes *
                         (par.zero >= Zero::kParameters ? shard + std::min(2.0, layers) * layer_full : params.total()));
  mb.gradients = ceilBytes(grad_bytes * (par.zero >= Zero::kGradients ? shard + layer_full : params.total()));
  mb.optimizer = ceilBytes(optimizer_bytes * (par.zero >= Zero::kOptimizer ? shard : params.total()));

  mb.activation_per_layer = layerActivationBytes(model, config, par, par.recompute);
  mb.in_flight = inFlightMicroBatches(config, par, stage);
  // Offloaded layers (the first offload_layers of each chunk) wait in host memory; the GPU
  // holds two of them in transit, the one being copied out and the one being copied back.
  const double offloaded = std::min(layers, static_cast<double>(par.offload_layers) * std::max<uint32_t>(par.vpp, 1));
  mb.offloaded_layers = offloaded;
  double activations = ((layers - offloaded) * mb.in_flight + std::min(offloaded, 2.0)) *
                       static_cast<double>(mb.activation_per_layer.count);
  if (par.recompute == Recompute::kFull && layers > 0) {
    // The layer being recomputed holds its whole working set during its backward pass.
    activations += static_cast<double>(layerActivationBytes(model, config, par, Recompute::kNone).count);
  }
  mb.activations = ceilBytes(activations);

  if (stage == std::max<uint32_t>(par.pp, 1) - 1) {
    const double t = std::max<uint32_t>(par.tp, 1);
    const double s = localSequence(model, config, par);
    mb.logits = ceilBytes(s * config.micro_batch * model.vocab / t * options.logits_bytes);
  }
  mb.workspace = options.workspace;
  return mb;
}

MemoryBreakdown peakMemory(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                           const MemoryOptions& options) {
  MemoryBreakdown best = stageMemory(model, config, par, 0, options);
  for (uint32_t stage = 1; stage < par.pp; ++stage) {
    MemoryBreakdown mb = stageMemory(model, config, par, stage, options);
    if (mb.total() > best.total()) best = mb;
  }
  return best;
}

}  // namespace mv
