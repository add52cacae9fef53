/**
 * @file memory.hpp
 * Memory per GPU of mixed-precision Adam training with Megatron-LM parallelism: weights,
 * gradients and optimizer state of the parameters a GPU holds, activations of the
 * micro-batches in flight (Korthikanti et al. 2022, Table 2, generalised to GQA, gated and
 * MoE MLPs), the logits buffer and a fixed workspace.
 */
#pragma once

#include <compare>  // ecs/units.hpp uses <=> without including it
#include <cstdint>

#include "ecs/units.hpp"
#include "workloads/model.hpp"
#include "workloads/parallelism.hpp"

namespace mv {

/// Parameters one GPU of a pipeline stage holds, after the TP and EP splits.
struct StageParameters {
  /// Parameters replicated over the whole data-parallel group (attention, norms, embeddings, router).
  double dense = 0;
  /// Expert parameters, replicated over the expert-data-parallel group (dp / ep ranks).
  double expert = 0;

  double total() const { return dense + expert; }
};

/**
 * Parameters of stage `stage` on one GPU: its layers (layers/pp; earlier stages take one
 * more when pp does not divide) divided by tp, experts by ep as well; the word embedding
 * V·h/tp and learned positions on the first stage; the output layer V·h/tp (a copy when
 * tied and pp > 1) and the final norm on the last stage. Norms and biases are counted as
 * if split by tp too, as training.md does (they are < 0.1 % of a layer).
 */
StageParameters stageParameters(const ModelSpec& model, const Parallelism& par, uint32_t stage);
/// Transformer layers on pipeline stage `stage`.
uint32_t stageLayers(const ModelSpec& model, const Parallelism& par, uint32_t stage);
/// Parameters of one transformer layer on one GPU (after the TP and EP splits).
StageParameters layerParameters(const ModelSpec& model, const Parallelism& par);
/// The share of `params` one GPU keeps when the data-parallel group (with CP) shards them:
/// dense parameters ÷ (dp · cp), expert parameters ÷ (dp · cp / ep).
double shardedParameters(const StageParameters& params, const Parallelism& par);

/**
 * Bytes one layer keeps for the backward pass for one micro-batch on one GPU (Korthikanti
 * Table 2 with a heads, t = tp, s the GPU's s / cp tokens; 2-byte activations and 1-byte
 * dropout masks at bf16):
 *  - no recompute: TP only s·b·h·(10 + 24/t + 5·a·s/(h·t)); with SP s·b·h/t·(34 + 5·a·s/h);
 *  - selective: the a·s² terms dropped: s·b·h·(10 + 24/t), with SP 34·s·b·h/t;
 *  - full: the layer input only, 2·s·b·h (÷t with SP);
 *  - with FlashAttention the a·s² terms are never stored, as with selective recompute.
 * For GQA, Q and K take 2·s·b·(h + kv_width)/t and V 2·s·b·kv_width/t instead of 6·s·b·h/t;
 * a gated MLP keeps 2·s·b·2f/t (gate and up) + 2·s·b·f/t instead of 16·s·b·h/t; MoE
 * multiplies the MLP-internal terms by top_k. fp32 doubles the 2-byte terms.
 */
Bytes layerActivationBytes(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                           Recompute recompute);

/**
 * Micro-batches' worth of its layers stage `stage` keeps in flight: 1F1B min(p − stage, m);
 * interleaved (v chunks) (v·p + p − 2·stage − 1) chunks of layers/(p·v) layers (MoFa),
 * i.e. p·(1 + (p−1)/(p·v)) on the first stage, capped at m; 1 without pipelining.
 */
double inFlightMicroBatches(const TrainingConfig& config, const Parallelism& par, uint32_t stage);

/// Knobs of the memory estimate.
struct MemoryOptions {
  /// CUDA context, NCCL buffers, cuBLAS workspace and allocator slack.
  Bytes workspace = mebibytes(3 * 1024);
  /// Bytes per logit element kept for the loss on the last stage (fp32 cross-entropy: 4).
  uint32_t logits_bytes = 4;
};

/// Memory of one GPU of one pipeline stage.
struct MemoryBreakdown {
  uint32_t stage = 0;
  /// Parameters this GPU holds.
  double parameters = 0;
  /// Model weights (2 bytes/param, 4 in fp32); with ZeRO-3 the GPU's shard plus two
  /// gathered layers (the one computing and the one prefetched).
  Bytes weights;
  /// fp32 main gradients (4 bytes/param); from ZeRO-2 on the GPU's shard plus one layer's
  /// gradients waiting for their reduce-scatter.
  Bytes gradients;
  /// fp32 master weights + Adam m and v (12 bytes/param, 8 in fp32); the GPU's shard from ZeRO-1 on.
  Bytes optimizer;
  /// One layer, one micro-batch (layerActivationBytes).
  Bytes activation_per_layer;
  /// Micro-batches in flight (inFlightMicroBatches).
  double in_flight = 0;
  /// Layers whose activations are offloaded to host memory (offload_layers per model chunk).
  double offloaded_layers = 0;
  /// All stored activations: (layers − offloaded) × in_flight × per layer, + 2 offloaded
  /// layers in transit, (+ one layer's working set with full recompute).
  Bytes activations;
  /// Logits kept for the loss: s·b·V/t × logits_bytes on the last stage, 0 elsewhere.
  Bytes logits;
  Bytes workspace;

  Bytes total() const { return weights + gradients + optimizer + activations + logits + workspace; }
  /// Whether the total fits in `capacity`.
  bool fits(Bytes capacity) const { return total() <= capacity; }
};

/// Memory of one GPU of stage `stage`.
MemoryBreakdown stageMemory(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                            uint32_t stage, const MemoryOptions& options = {});
/// The stage with the largest total (the one that decides whether the job fits).
MemoryBreakdown peakMemory(const ModelSpec& model, const TrainingConfig& config, const Parallelism& par,
                           const MemoryOptions& options = {});

}  // namespace mv
